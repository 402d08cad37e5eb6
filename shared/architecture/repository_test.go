// Package toolgate_test holds the checks that span the whole repository:
// every library package is documented, no file cites an issue number, and
// no test reads a file outside the repository.
package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// skipped are directories no check reads: tools' and builds' output, and
// what is not the project's source.
var skipped = map[string]bool{".git": true, "node_modules": true, ".cache": true, "cdk.out": true, "bin": true, "out": true}

// walk calls f for every file of the repository whose name ends in one of
// exts, with its path relative to the repository root.
func walk(t *testing.T, f func(path string), exts ...string) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(path, e) }) {
			f(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every library package (not main) under shared/, resolver/, functions/
// and infra/ has a package comment, in doc.go when it has several files
// (docs: STYLE's "doc.go in every package"; go doc shows it).
func TestLibraryPackagesHaveAPackageComment(t *testing.T) {
	dirs := map[string][]string{}
	walk(t, func(path string) {
		if strings.HasSuffix(path, "_test.go") || slices.Contains(strings.Split(path, string(filepath.Separator)), "testdata") {
			return
		}
		dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
	}, ".go")
	checked := 0
	for dir, files := range dirs {
		top, _, _ := strings.Cut(filepath.ToSlash(dir), "/")
		if !slices.Contains([]string{"shared", "resolver", "functions", "infra"}, top) {
			continue
		}
		fset := token.NewFileSet()
		var name string
		var documented []string
		for _, path := range files {
			f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			name = f.Name.Name
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				documented = append(documented, filepath.Base(path))
			}
		}
		if name == "main" {
			continue
		}
		checked++
		switch {
		case len(documented) == 0:
			t.Errorf("package %s (%s) has no package comment: write one in %s", name, dir, filepath.Join(dir, "doc.go"))
		case len(files) > 1 && !slices.Contains(documented, "doc.go"):
			t.Errorf("package %s (%s) has %d files and its package comment in %s: move it to doc.go", name, dir, len(files), strings.Join(documented, ", "))
		}
	}
	if checked < 20 {
		t.Fatalf("only %d library packages found: is the test run from the repository root?", checked)
	}
}

var (
	// issueWord is an issue or a pull request cited by its number.
	issueWord = regexp.MustCompile(`(?i)\b(?:issues?|bugs?|tickets?|pull requests?|PRs?)\s*#?[0-9]+\b`)
	// hashNumber is "#" and a number standing as a word: GitHub's way of
	// citing an issue ("see #" and the number). Six digits are a colour.
	hashNumber = regexp.MustCompile(`(?:^|[\s(\[,])#[0-9]{1,5}(?:[^0-9A-Za-z_.;-]|\.(?:\s|$)|$)`)
	// standardNumber is a standard cited by its number: "UTS #46" is the
	// Unicode Technical Standard on IDNA, not an issue.
	standardNumber = regexp.MustCompile(`\b(?:UTS|UAX|UTR|TR) #[0-9]+`)
)

// No .go or .md file cites an issue or pull request by its number: a
// reason is written out in docs/ instead, where a reader of the repository
// can read it.
func TestNoFileCitesAnIssueNumber(t *testing.T) {
	walk(t, func(path string) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(src), "\n") {
			line = standardNumber.ReplaceAllString(line, "")
			if m := issueWord.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q: say the reason itself, in docs/ if it is long", path, n+1, m)
			}
			if m := hashNumber.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q: say the reason itself, in docs/ if it is long", path, n+1, strings.TrimSpace(m))
			}
		}
	}, ".go", ".md")
}

// The citation patterns find the ways an issue is cited and leave
// standards, Markdown anchors, HTML entities and DynamoDB expression
// names alone. (The cases are split so that this file cites nothing.)
func TestIssueCitationPatterns(t *testing.T) {
	for _, c := range []struct {
		line string
		cite bool
	}{
		{"as issue " + "27 says", true},
		{"see Issue #" + "27.", true},
		{"fixed in #" + "12", true},
		{"(#" + "12)", true},
		{"see #" + "12.", true},
		{"PR " + "31 moved it", true},
		{"IDNA mapping (UTS #46) would change", false},
		{"[§7.2.1](#721-state-size)", false},
		{"`#34;` for `\"`", false},
		{`"SET #0.#1 = :0"`, false},
		{"#123;init", false},
		{"step 12 of 40", false},
		{"stroke:#757575,", false},
		{"fill #757575", false},
	} {
		line := standardNumber.ReplaceAllString(c.line, "")
		if got := issueWord.MatchString(line) || hashNumber.MatchString(line); got != c.cite {
			t.Errorf("%q: cites an issue %v, want %v", c.line, got, c.cite)
		}
	}
}

// No test reads a file outside the repository: a relative path in a test
// (a string literal, or a filepath.Join of literals) stays inside the
// repository, and no test names an absolute path under the repository's
// parent directory. A fresh clone then tests alone.
func TestTestsReadOnlyTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	outside := []string{filepath.Dir(root) + string(filepath.Separator)}
	walk(t, func(path string) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		check := func(at token.Pos, p string) {
			for _, o := range outside {
				if strings.HasPrefix(p, o) && !strings.HasPrefix(p, root+string(filepath.Separator)) {
					t.Errorf("%s names %q, outside the repository", fset.Position(at), p)
					return
				}
			}
			if !strings.HasPrefix(p, ".."+"/") {
				return
			}
			abs := filepath.Join(root, filepath.Dir(path), filepath.FromSlash(p))
			if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s reads %q, outside the repository", fset.Position(at), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Join" {
					var parts []string
					for _, a := range n.Args {
						lit, ok := a.(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							return true
						}
						s, _ := strconv.Unquote(lit.Value)
						parts = append(parts, s)
					}
					if len(parts) > 0 {
						check(n.Pos(), filepath.ToSlash(filepath.Join(parts...)))
					}
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil {
						check(n.Pos(), s)
					}
				}
			}
			return true
		})
	}, "_test.go")
}
