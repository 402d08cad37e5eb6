package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/toolgate/toolgate/infra/local"
)

const solutions = "../../testdata/solutions"

// environ is an environment the package's tests run the CLI in: Env's
// Getenv reads it, and its AWS configuration comes from it
// (local.AWSConfigLoader), never from the process's environment, so that
// the tests can run in parallel.
type environ map[string]string

// localAWS is the environment every test starts from: the local
// stand-ins' fake credentials and region, and nothing else (no
// TOOLGATE_* variable: no publish function, no ledger table).
func localAWS() environ {
	return environ{"AWS_ACCESS_KEY_ID": local.FakeAccessKeyID, "AWS_SECRET_ACCESS_KEY": local.FakeSecretAccessKey, "AWS_REGION": local.Region}
}

// with is a copy of e with the variables of more added or replaced.
func (e environ) with(more map[string]string) environ {
	out := maps.Clone(e)
	maps.Copy(out, more)
	return out
}

// run runs the CLI in e and returns its exit code, stdout and stderr.
func (e environ) run(args ...string) (int, string, string) { return e.runPolling(0, args...) }

// runPolling is run with the direct lane reading its review every poll
// (0: defaultReviewPoll).
func (e environ) runPolling(poll time.Duration, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	vars := maps.Clone(e)
	code := RunWith(args, Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars), Stdout: &out, Stderr: &errb,
		reviewPoll: poll})
	return code, out.String(), errb.String()
}

// run runs the CLI in localAWS.
func run(args ...string) (int, string, string) { return localAWS().run(args...) }

func TestExitCodes(t *testing.T) {
	t.Parallel()
	good := filepath.Join(solutions, "newsletter.yaml")
	bad := filepath.Join(solutions, "refuse-no-review.yaml")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"no command", nil, ExitMisuse},
		{"unknown command", []string{"frobnicate"}, ExitMisuse},
		{"check clean", []string{"check", good}, ExitOK},
		{"check refused", []string{"check", good, bad}, ExitErrors},
		{"check no file", []string{"check"}, ExitMisuse},
		{"check missing file", []string{"check", "does-not-exist.yaml"}, ExitMisuse},
		{"check bad format", []string{"check", "--format", "xml", good}, ExitMisuse},
		{"check unknown flag", []string{"check", "--strict", good}, ExitMisuse},
		{"compile no -o", []string{"compile", good}, ExitMisuse},
		{"toolset two files", []string{"toolset", good, good}, ExitMisuse},
		{"toolset refused", []string{"toolset", bad}, ExitErrors},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if code, out, errs := run(c.args...); code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errs)
			}
		})
	}
}

func TestCheckTextNamesFileLineRule(t *testing.T) {
	t.Parallel()
	code, out, _ := run("check", filepath.Join(solutions, "refuse-no-review.yaml"))
	if code != ExitErrors {
		t.Fatalf("exit %d", code)
	}
	re := regexp.MustCompile(`^\S+refuse-no-review\.yaml:\d+:\d+: error: \[review-before-tool\] .*fetch → urgent → send$`)
	if line := strings.TrimSpace(out); !re.MatchString(line) {
		t.Fatalf("diagnostic %q does not match %s", line, re)
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	code, out, _ := run("check", "--format", "json", filepath.Join(solutions, "refuse-structure.yaml"), filepath.Join(solutions, "newsletter.yaml"))
	if code != ExitErrors {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Valid       bool
		Errors      int
		Warnings    int
		Diagnostics []struct {
			File, Severity, Rule, Message string
			Line, Column                  int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if doc.Valid || doc.Errors != 5 || doc.Warnings != 2 || len(doc.Diagnostics) != 7 {
		t.Fatalf("doc %+v", doc)
	}
	// The text form carries the same diagnostics.
	_, text, _ := run("check", filepath.Join(solutions, "refuse-structure.yaml"))
	if n := strings.Count(text, "\n"); n != 7 {
		t.Fatalf("text has %d lines", n)
	}
	// A clean file gives valid true and an empty list, not null.
	_, out, _ = run("check", "--format", "json", filepath.Join(solutions, "newsletter.yaml"))
	if !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"diagnostics": []`) {
		t.Fatalf("clean json: %s", out)
	}
}

// check's totals count every diagnostic, those past the 200 listed
// included, in JSON and in the summary; and a summary of a file with only
// warnings says how many.
func TestCheckCountsEveryDiagnostic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("solution: many\nversion: 1\nsteps:\n")
	const n = 3000
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    pass: {}\n    next: nowhere%d\n", i, i) // an error each, unreachable but the first
	}
	many := filepath.Join(dir, "many.yaml")
	warned := filepath.Join(dir, "warned.yaml")
	os.WriteFile(many, []byte(b.String()), 0o644)
	os.WriteFile(warned, []byte("solution: w\nversion: 1\nsteps:\n  - id: a\n    pass: {}\n    next: end\n  - id: b\n    pass: {}\n"), 0o644)
	code, out, _ := run("check", "--format", "json", many)
	var doc struct {
		Errors, Warnings int
		Diagnostics      []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitErrors {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	if doc.Errors != n || doc.Warnings != n-1 || len(doc.Diagnostics) != 200 {
		t.Fatalf("errors %d, warnings %d, %d listed; want %d, %d and 200", doc.Errors, doc.Warnings, len(doc.Diagnostics), n, n-1)
	}
	_, out, _ = run("check", "--summary", many, warned)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], fmt.Sprintf("%s: refused (%d errors, %d warnings); first: ", many, n, n-1)) || !strings.HasSuffix(lines[1], ", 1 warning") {
		t.Fatalf("summary:\n%s", out)
	}
}

func TestCompileWritesThreeFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "new", "out")
	code, out, errs := run("compile", filepath.Join(solutions, "newsletter.yaml"), "-o", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "weekly-digest.asl.json,weekly-digest.json,weekly-digest.toolset.json" {
		t.Fatalf("wrote %v", names)
	}
	golden, _ := os.ReadFile(filepath.Join(solutions, "newsletter.asl.json"))
	got, _ := os.ReadFile(filepath.Join(dir, "weekly-digest.asl.json"))
	if !bytes.Equal(golden, got) {
		t.Fatal("written definition differs from the golden one")
	}
	var m map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, "weekly-digest.json"))
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	_, id, _ := run("toolset", filepath.Join(solutions, "newsletter.yaml"))
	if m["toolset_id"] != strings.TrimSpace(id) || !strings.Contains(out, strings.TrimSpace(id)) {
		t.Fatalf("manifest toolset %v, toolset command %q", m["toolset_id"], id)
	}
	ph := m["placeholders"].(map[string]any)
	if len(ph) != 3 || ph["FunctionSendEmail"] != "send-email" || ph["FunctionReviewRequest"] != "review-request" {
		t.Fatalf("placeholders %v", ph)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(m["source_digest"].(string)) {
		t.Fatalf("source_digest %v", m["source_digest"])
	}
}

func TestCompileWritesNothingOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errs := run("compile", "-o", dir, filepath.Join(solutions, "refuse-retry.yaml"))
	if code != ExitErrors || !strings.Contains(errs, "[retry]") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("wrote %d files", len(entries))
	}
}

// testRoot is the command tree of a run in localAWS.
func testRoot() *cobra.Command {
	e := localAWS()
	return newApp(Env{Getenv: func(k string) string { return e[k] }, LoadAWSConfig: local.AWSConfigLoader(e)}).newRoot()
}

// toolgate compile writes the pinned http host entries into the toolset
// it writes, as the golden toolset of the example holds them.
func TestCompileWritesHTTPHosts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errs := run("compile", filepath.Join(solutions, "chat-notify.yaml"), "-o", dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got, err := os.ReadFile(filepath.Join(dir, "chat-notify.toolset.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := os.ReadFile(filepath.Join(solutions, "chat-notify.toolset.json"))
	if !bytes.Equal(got, golden) || !bytes.Contains(got, []byte(`"http_hosts"`)) || !bytes.Contains(got, []byte(`"hooks.chat.example.com"`)) {
		t.Fatalf("written toolset:\n%s", got)
	}
}
