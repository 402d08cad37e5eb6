package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/resolver"
)

// docRefusal is a diagnostic quoted in a code block of docs/*.md:
// "FILE:LINE:COL: error: [rule] ..." (or warning).
var docRefusal = regexp.MustCompile(`^(\S+\.(?:yaml|json)):[0-9]+:[0-9]+: (?:error|warning): \[[a-z-]+\] `)

// inlineExamples are the files docs quote diagnostics of that are written
// out in the docs themselves, not kept in testdata: nothing here compiles
// them.
var inlineExamples = map[string]bool{
	"rev.yaml": true, "big.yaml": true, "big.json": true, "loop.yaml": true, "fb2.yaml": true, "fb3.yaml": true,
	"lists.yaml": true, "hosts.yaml": true,
}

// quotedRefusal is one quoted diagnostic and where the docs quote it.
type quotedRefusal struct {
	where, file, line string
}

// quotedRefusals reads every diagnostic quoted in a fenced code block of
// docs/*.md.
func quotedRefusals(t *testing.T) []quotedRefusal {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	var out []quotedRefusal
	for _, doc := range docs {
		f, err := os.Open(doc)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		fenced := false
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
				continue
			}
			if m := docRefusal.FindStringSubmatch(line); fenced && m != nil {
				out = append(out, quotedRefusal{where: filepath.Base(doc) + ":" + strconv.Itoa(n), file: m[1], line: line})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testdataFile finds the testdata file a doc names: a path from the
// repository's top (testdata/...), else the file of that name in
// testdata/solutions or testdata/toolsets; "" when there is none.
func testdataFile(name string) string {
	candidates := []string{filepath.Join("../..", name)}
	if !strings.HasPrefix(name, "testdata/") {
		candidates = []string{filepath.Join("../../testdata/solutions", filepath.Base(name)), filepath.Join("../../testdata/toolsets", filepath.Base(name))}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c
		}
	}
	return ""
}

// Every refusal the docs quote is what the CLI prints for the testdata
// file it names, word for word: toolgate check for a Solution, toolgate
// toolset for a toolset file (with the locks of testdata/toolsets), with
// the file named as the doc names it.
func TestDocsQuoteTheRefusalsTheCLIPrints(t *testing.T) {
	t.Parallel()
	quotes := quotedRefusals(t)
	printed := map[string][]string{} // by the doc's file name
	checked := 0
	for _, q := range quotes {
		path := testdataFile(q.file)
		if path == "" {
			if !inlineExamples[filepath.Base(q.file)] {
				t.Errorf("%s quotes a refusal of %s, which is neither in testdata nor an inline example", q.where, q.file)
			}
			continue
		}
		lines, ok := printed[q.file]
		if !ok {
			lines = cliDiagnostics(t, path, q.file)
			printed[q.file] = lines
		}
		checked++
		found := false
		for _, l := range lines {
			if l == q.line {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s quotes a refusal toolgate does not print for %s (-the closest line printed +quoted):\n%s", q.where, path, cmp.Diff(closest(lines, q.line), q.line))
		}
	}
	if checked < 40 {
		t.Fatalf("only %d quoted refusals checked: the pattern no longer finds them", checked)
	}
}

// cliDiagnostics runs the CLI on path and returns the diagnostics it
// prints, each naming the file as name instead of path.
func cliDiagnostics(t *testing.T, path, name string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"check", path, "--toolsets", "../../testdata/toolsets"}
	if resolver.IsToolsetFile(src) {
		args = []string{"toolset", path, "--toolsets", "../../testdata/toolsets"}
	}
	_, out, errs := run(args...)
	var lines []string
	for _, l := range strings.Split(out+errs, "\n") {
		if rest, ok := strings.CutPrefix(l, path+":"); ok {
			lines = append(lines, name+":"+rest)
		}
	}
	return lines
}

// closest is the printed line that shares the longest prefix with want,
// to show in a failure.
func closest(lines []string, want string) string {
	best, bestN := "", -1
	for _, l := range lines {
		n := 0
		for n < len(l) && n < len(want) && l[n] == want[n] {
			n++
		}
		if n > bestN {
			best, bestN = l, n
		}
	}
	return best
}
