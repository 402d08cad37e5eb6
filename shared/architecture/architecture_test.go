package architecture

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pkg is one package of the module as `go list` reports it.
type pkg struct {
	path    string   // below Module ("" for the module's root)
	imports []string // direct imports of its non-test files
	deps    []string // every package it links, directly or not
}

// root is the module's root: TestMain makes it the working directory, so
// that every test here reads the repository as its own files name it.
const root = "."

func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// build is one way the module is built: files a build constraint leaves
// out of one are in another, and each must keep to the layers.
type build struct {
	name string
	env  []string // added to the environment of go list
	tags string   // go list -tags
}

// builds are the host's default build and the deployed functions' (linux
// on arm64 with the tags `make build` and the local stack use, and the
// crash-test hooks of the end-to-end tests).
var builds = []build{
	{name: "host"},
	{name: "linux/arm64 lambda.norpc,crashtest", env: []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0"}, tags: "lambda.norpc,crashtest"},
}

// listModule lists every package of the module with `go list`, in every
// build: a package appears once per build that has it.
func listModule(t *testing.T) []pkg {
	t.Helper()
	var ps []pkg
	for _, b := range builds {
		ps = append(ps, listBuild(t, b)...)
	}
	return ps
}

func listBuild(t *testing.T, b build) []pkg {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}"}
	if b.tags != "" {
		args = append(args, "-tags", b.tags)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), b.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (%s build): %v\n%s", b.name, err, stderr.String())
	}
	var ps []pkg
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list printed %q", line)
		}
		ps = append(ps, pkg{path: below(f[0]), imports: strings.Fields(f[1]), deps: strings.Fields(f[2])})
	}
	if len(ps) < 20 {
		t.Fatalf("go list (%s build) found %d packages; expected the whole module", b.name, len(ps))
	}
	return ps
}

// below is path relative to Module, and ok false when path is outside it.
func below(path string) string {
	if path == Module {
		return ""
	}
	return strings.TrimPrefix(path, Module+"/")
}

func inModule(path string) bool { return path == Module || strings.HasPrefix(path, Module+"/") }

// withGoFiles reports whether the package has non-test Go files: a folder
// of tests only (functions/, the module's root) belongs to no layer.
func withGoFiles(t *testing.T, p pkg) bool {
	t.Helper()
	entries, err := os.ReadDir(root + "/" + p.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

func TestEveryPackageHasOneLayer(t *testing.T) {
	for _, p := range listModule(t) {
		if !withGoFiles(t, p) {
			continue
		}
		if _, ok := LayerOf(p.path); !ok {
			t.Errorf("%s is in no layer: add it to architecture.Layers (and to the README's layout table)", p.path)
		}
	}
	for _, l := range Layers {
		for _, pattern := range l.Packages {
			if strings.HasSuffix(pattern, "/...") {
				continue
			}
			if _, err := os.Stat(root + "/" + pattern); err != nil {
				t.Errorf("layer %s names %s, which does not exist", l.Name, pattern)
			}
		}
	}
}

func TestImportsFollowTheLayers(t *testing.T) {
	for _, p := range listModule(t) {
		l, ok := LayerOf(p.path)
		if !ok {
			continue
		}
		for _, imp := range p.imports {
			if !inModule(imp) {
				continue
			}
			il, ok := LayerOf(below(imp))
			if !ok || il.Name == l.Name || slices.Contains(l.Uses, il.Name) {
				continue
			}
			t.Errorf("%s (%s) imports %s (%s); the %s layer may use only %v",
				p.path, l.Name, below(imp), il.Name, l.Name, append([]string{l.Name}, l.Uses...))
		}
	}
}

func TestLayersLinkNothingTheyForbid(t *testing.T) {
	for _, p := range listModule(t) {
		l, ok := LayerOf(p.path)
		if !ok {
			continue
		}
		for _, dep := range p.deps {
			for _, f := range l.Forbids {
				if matches(f, dep) {
					t.Errorf("%s (%s) links %s, which the %s layer may not link", p.path, l.Name, dep, l.Name)
				}
			}
		}
	}
}

// matches reports whether the import path dep is what forbidden names: a
// prefix, or with a trailing "$" the whole path.
func matches(forbidden, dep string) bool {
	if whole, ok := strings.CutSuffix(forbidden, "$"); ok {
		return dep == whole
	}
	return strings.HasPrefix(dep, forbidden)
}

// The rules the layers exist for, checked by name as well, so that a
// change to Layers cannot quietly drop one.
func TestTheHouseRules(t *testing.T) {
	byPath := map[string][]pkg{} // one per build
	for _, p := range listModule(t) {
		byPath[p.path] = append(byPath[p.path], p)
	}
	links := func(from, forbidden string) bool {
		ps, ok := byPath[from]
		if !ok {
			t.Fatalf("no package %s", from)
		}
		return slices.ContainsFunc(ps, func(p pkg) bool {
			return slices.ContainsFunc(p.deps, func(d string) bool { return matches(forbidden, d) })
		})
	}
	cases := []struct {
		name, from, forbidden string
	}{
		{"the compiler links no AWS client", "resolver", "github.com/aws/aws-sdk-go-v2/service/"},
		{"the compiler links no ledger", "resolver", Module + "/shared/ledger"},
		{"the compiler links no dispatcher", "resolver", Module + "/shared/dispatch"},
		{"the CLI links no local stand-in", "resolver/cmd/toolgate", Module + "/infra/local"},
		{"the CLI links no function's handler", "resolver/cmd/toolgate", Module + "/functions"},
		{"the CDK app links no function's handler", "infra", Module + "/functions"},
		{"the CDK app links no dispatcher", "infra", Module + "/shared/dispatch"},
		{"the CDK app links no Lambda runtime", "infra", "github.com/aws/aws-lambda-go/lambda$"},
		{"a team's CDK app links no AWS client", "examples/team-tool-cdk", "github.com/aws/aws-sdk-go-v2/service/"},
		{"send-email does not know the dispatcher", "shared/sendemail", Module + "/shared/dispatch"},
		{"the fetch tool does not know the dispatcher", "shared/fetch", Module + "/shared/dispatch"},
		{"the http tool does not know the dispatcher", "shared/httptool", Module + "/shared/dispatch"},
		{"the MCP tool does not know the dispatcher", "shared/mcptool", Module + "/shared/dispatch"},
		{"platform tools do not know the dispatcher", "shared/platformtool", Module + "/shared/dispatch"},
		{"the review domain links no DynamoDB store", "shared/review", Module + "/shared/review/dynamo"},
		{"the review domain links no AWS client", "shared/review", "github.com/aws/aws-sdk-go-v2/service/"},
		{"the review fixtures link no DynamoDB store", "shared/review/reviewtest", Module + "/shared/review/dynamo"},
		{"the contract links no AWS client", "shared/tool", "github.com/aws/aws-sdk-go-v2/service/"},
		{"the toolset rules link no AWS client", "shared/toolset", "github.com/aws/aws-sdk-go-v2/service/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if links(c.from, c.forbidden) {
				t.Errorf("%s links %s", c.from, c.forbidden)
			}
		})
	}
}

// TestTheReadmeListsEveryPackage reads the README's "## Layout" section:
// every package of a layer is named there in backquotes (a row may name a
// tree, "functions/<name>/", or several packages).
func TestTheReadmeListsEveryPackage(t *testing.T) {
	f, err := os.Open(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var layout strings.Builder
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layout"
			continue
		}
		if in {
			layout.WriteString(line + "\n")
		}
	}
	if layout.Len() == 0 {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	for _, p := range listModule(t) {
		if _, ok := LayerOf(p.path); !ok || !withGoFiles(t, p) {
			continue
		}
		if !strings.Contains(layout.String(), "`"+p.path+"`") && !strings.Contains(layout.String(), "`"+p.path+"/`") {
			t.Errorf("README.md's layout table does not name `%s`", p.path)
		}
	}
}
