package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of toolset show and diff in testdata/toolsets")

// The toolset files and locks of docs/toolsets.md.
const (
	toolsetFiles = "../../testdata/toolsets"
	demoID       = "ts_d5b7c8bf3588b9d2f1c9cb86e0ce757a" // demo.lock.json
	reviewedID   = "ts_29dff830ea9f255fa6df2012c5d7d984" // demo-reviewed.lock.json, derived from demo
	unknownID    = "ts_00000000000000000000000000000000"
	// diffGolden is what toolgate toolset diff prints from demo to
	// demo-reviewed.
	diffGolden = toolsetFiles + "/demo-to-demo-reviewed.diff"
	// webhooksID and webhooksReadID are webhooks.lock.json, whose http
	// tool has two host entries, and webhooks-read.lock.json, derived from
	// it with one narrowed entry; httpDiffGolden is what diff prints from
	// the one to the other.
	webhooksID     = "ts_c961e5039cff878b82186bc7624829ba"
	webhooksReadID = "ts_8638a30987dcea6036012be42393e01a"
	httpDiffGolden = toolsetFiles + "/webhooks-to-webhooks-read.diff"
)

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./resolver/cli -run TestToolsetShowDiffLocks -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-golden +got):\n%s", path, diff)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// copyFiles copies testdata/toolsets' files rels into dir.
func copyFiles(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		data := readFile(t, filepath.Join(toolsetFiles, rel))
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolsetCase is one command line of toolset show, diff or register and
// what it must do: its exit code, its whole stdout (golden: a golden
// file's path instead) and what its stderr says.
type toolsetCase struct {
	name   string
	args   []string
	code   int
	stdout string
	golden string
	stderr []string
	// env is the CLI's environment; nil: localAWS.
	env environ
}

func (c toolsetCase) run(t *testing.T) {
	t.Helper()
	env := c.env
	if env == nil {
		env = localAWS()
	}
	code, out, errs := env.run(c.args...)
	if code != c.code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errs)
	}
	if c.golden != "" {
		golden(t, c.golden, out)
	} else if out != c.stdout {
		t.Errorf("stdout (-want +got):\n%s", cmp.Diff(c.stdout, out))
	}
	for _, want := range c.stderr {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if len(c.stderr) == 0 && errs != "" {
		t.Errorf("stderr: %s", errs)
	}
}

// toolset show and diff on the locks in --toolsets DIR, offline: no
// publish function is named, so an id no lock holds is not found.
func TestToolsetShowDiffLocks(t *testing.T) {
	t.Parallel()
	at := []string{"--toolsets", toolsetFiles}
	// A lock whose content was changed after it was written: it holds the
	// id, but its content digests to another.
	tampered := t.TempDir()
	lock := readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))
	os.WriteFile(filepath.Join(tampered, "demo.lock.json"), []byte(strings.Replace(lock, `"timeout_seconds": 30`, `"timeout_seconds": 300`, 1)), 0o644)
	empty := t.TempDir()
	missing := filepath.Join(t.TempDir(), "toolsets")
	locks, _ := filepath.Glob(filepath.Join(toolsetFiles, "*.lock.json"))
	for _, c := range []toolsetCase{
		{name: "show a lock", args: append([]string{"toolset", "show", demoID}, at...), stdout: lock},
		{name: "show a derived toolset's lock", args: append([]string{"toolset", "show", reviewedID}, at...),
			stdout: readFile(t, filepath.Join(toolsetFiles, "demo-reviewed.lock.json"))},
		{name: "diff two locks", args: append([]string{"toolset", "diff", demoID, reviewedID}, at...), code: ExitErrors, golden: diffGolden},
		{name: "diff a lock with itself", args: append([]string{"toolset", "diff", demoID, demoID}, at...)},
		{name: "show a lock with http hosts", args: append([]string{"toolset", "show", webhooksID}, at...), stdout: readFile(t, filepath.Join(toolsetFiles, "webhooks.lock.json"))},
		{name: "diff http host entries", args: append([]string{"toolset", "diff", webhooksID, webhooksReadID}, at...), code: ExitErrors, golden: httpDiffGolden},
		{name: "show an id no lock holds", args: append([]string{"toolset", "show", unknownID}, at...), code: ExitErrors,
			stderr: []string{"toolgate toolset show: toolset " + unknownID + ": not found: no lock file (*.lock.json) in --toolsets " + toolsetFiles + " holds it", "--url or $" + EnvPublishURL}},
		{name: "show in a directory without locks says where it looked", args: []string{"toolset", "show", demoID, "--toolsets", empty}, code: ExitErrors,
			stderr: []string{"toolset " + demoID + ": not found", "(looked in " + empty + ", which holds no lock file; --toolsets DIR looks in another directory)"}},
		{name: "show with no toolsets directory says where it looked", args: []string{"toolset", "show", demoID, "--toolsets", missing}, code: ExitErrors,
			stderr: []string{"toolset " + demoID + ": not found", "(looked in " + missing + ", which does not exist; --toolsets DIR looks in another directory)"}},
		{name: "show an id no lock holds counts the locks looked at", args: append([]string{"toolset", "show", unknownID}, at...), code: ExitErrors,
			stderr: []string{fmt.Sprintf("which holds %d lock files", len(locks))}},
		{name: "show a malformed id", args: append([]string{"toolset", "show", "ts_8DFE1BDA"}, at...), code: ExitMisuse,
			stderr: []string{`toolgate toolset show: "ts_8DFE1BDA" is not a toolset id (^ts_[0-9a-f]{32}$)`, "Usage:"}},
		{name: "show a file name", args: append([]string{"toolset", "show", "demo.lock.json"}, at...), code: ExitMisuse,
			stderr: []string{`"demo.lock.json" is not a toolset id`}},
		{name: "show a tampered lock", args: []string{"toolset", "show", demoID, "--toolsets", tampered}, code: ExitErrors,
			stderr: []string{"toolset " + demoID + ": --toolsets " + tampered + ": lock demo.lock.json: toolset " + demoID + " is refused [toolset-digest]"}},
		{name: "diff with an id no lock holds", args: append([]string{"toolset", "diff", demoID, unknownID}, at...), code: ExitMisuse,
			stderr: []string{"toolgate toolset diff: toolset " + unknownID + ": not found"}},
		{name: "diff with a malformed id", args: append([]string{"toolset", "diff", "ts_x", demoID}, at...), code: ExitMisuse,
			stderr: []string{`toolgate toolset diff: "ts_x" is not a toolset id`}},
		{name: "show without an id", args: append([]string{"toolset", "show"}, at...), code: ExitMisuse, stderr: []string{"name one toolset id"}},
		{name: "show two ids", args: append([]string{"toolset", "show", demoID, reviewedID}, at...), code: ExitMisuse, stderr: []string{"name one toolset id"}},
		{name: "diff one id", args: append([]string{"toolset", "diff", demoID}, at...), code: ExitMisuse, stderr: []string{"name two toolset ids"}},
		{name: "show --as without --function-endpoint", args: append([]string{"toolset", "show", demoID, "--as", "alice"}, at...), code: ExitMisuse,
			stderr: []string{"--as is for the local stack, with --function-endpoint"}},
		{name: "diff --function-endpoint without --as", args: append([]string{"toolset", "diff", demoID, reviewedID, "--function-endpoint", "http://127.0.0.1:1"}, at...), code: ExitMisuse,
			stderr: []string{"--function-endpoint needs --as NAME"}},
	} {
		t.Run(c.name, c.run)
	}
}

// toolset register resolves the toolset file and refuses it, naming the
// file, line, column and rule, before anything is sent: the URL named
// here answers nothing.
func TestToolsetRegisterRefusesFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "refuse-at-least-once.yaml", "demo-reviewed.yaml")
	nowhere := []string{"--url", "http://127.0.0.1:1", "--toolsets", t.TempDir()}
	atLeastOnce := filepath.Join(dir, "refuse-at-least-once.yaml")
	for _, c := range []toolsetCase{
		{name: "at_least_once without idempotency", args: append([]string{"toolset", "register", atLeastOnce}, nowhere...), code: ExitErrors,
			stderr: []string{atLeastOnce + `:9:13: error: [policy] tool "post-invoice" policy at_least_once`,
				atLeastOnce + `:17:12: error: [retry] tool "charge-card"`, atLeastOnce + ": the toolset file has errors: nothing was registered"}},
		{name: "a base no lock holds", args: append([]string{"toolset", "register", filepath.Join(dir, "demo-reviewed.yaml")}, nowhere...), code: ExitErrors,
			stderr: []string{filepath.Join(dir, "demo-reviewed.yaml") + ":4:7: error: [base] base " + demoID + " does not exist"}},
		{name: "no file", args: append([]string{"toolset", "register"}, nowhere...), code: ExitMisuse, stderr: []string{"name toolset files or directories"}},
		{name: "--function-endpoint without --as", args: []string{"toolset", "register", "--function-endpoint", "http://127.0.0.1:1", filepath.Join(toolsetFiles, "demo.yaml")}, code: ExitMisuse,
			stderr: []string{"toolgate toolset register: --function-endpoint needs --as NAME"}},
		{name: "the table and the function", args: []string{"toolset", "register", "--url", "http://127.0.0.1:1", "--endpoint", "http://127.0.0.1:2", "--table", "t", filepath.Join(toolsetFiles, "demo.yaml")}, code: ExitMisuse,
			stderr: []string{"--endpoint (the table, deploy role) and the publish function exclude each other"}},
	} {
		t.Run(c.name, c.run)
	}
	if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock.json")); len(locks) != 0 {
		t.Fatalf("a refused file wrote %v", locks)
	}
}

// toolset register, show and diff through the publish function: the real
// function (functions/publish) under the Lambda RIE, on dynalite, with
// caller proofs signed with local keys and verified against the STS
// stand-in. Registration reads create-ticket's floor: its placeholder
// from the SSM stand-in, its tags (demo's pin and no looser) from the
// Lambda stand-in.
func TestToolsetThroughPublishFunction(t *testing.T) {
	t.Parallel()
	_, flags := ledgerEnv(t)
	callers := localtest.StartCallers(t)
	cliEnv := localAWS().with(callers.CLIEnv())
	fn := startPublishFunction(t, callers, flags[1], flags[3], true)
	as := func(name string) []string { return []string{"--function-endpoint", fn.Endpoint(), "--as", name} }
	noLocks := []string{"--toolsets", t.TempDir()}

	// Register demo.yaml, then its derived toolset, whose base is read
	// from the lock the first registration wrote beside it.
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "demo-reviewed.yaml", "schemas/create-ticket.input.json")
	demo, reviewed := filepath.Join(dir, "demo.yaml"), filepath.Join(dir, "demo-reviewed.yaml")
	alice := "arn:aws:iam::000000000000:user/alice"
	register := func(file string) []string {
		return append(append([]string{"toolset", "register", file}, noLocks...), as("alice")...)
	}
	for _, c := range []toolsetCase{
		{name: "register", args: register(demo),
			stdout: "registered " + demoID + " (" + demo + ") by " + alice + "\nwrote " + filepath.Join(dir, "demo.lock.json") + "\n"},
		{name: "register again", args: register(demo),
			stdout: "already registered " + demoID + " (" + demo + ")\nwrote " + filepath.Join(dir, "demo.lock.json") + "\n"},
		{name: "register a derived toolset", args: register(reviewed),
			stdout: "registered " + reviewedID + " (" + reviewed + ") by " + alice + "\nwrote " + filepath.Join(dir, "demo-reviewed.lock.json") + "\n"},
	} {
		c.env = cliEnv
		t.Run(c.name, c.run)
	}
	for _, name := range []string{"demo.lock.json", "demo-reviewed.lock.json"} {
		if got, want := readFile(t, filepath.Join(dir, name)), readFile(t, filepath.Join(toolsetFiles, name)); got != want {
			t.Errorf("%s differs from testdata/toolsets':\n%s", name, cmp.Diff(want, got))
		}
	}

	// Show: no lock holds the id here, so the registered toolset is read
	// from the function (as bob) and printed once its digest is the id.
	t.Run("show a registered toolset", func(t *testing.T) {
		code, out, errs := cliEnv.run(append(append([]string{"toolset", "show", demoID}, noLocks...), as("bob")...)...)
		if code != ExitOK || errs != "" {
			t.Fatalf("exit %d: %s", code, errs)
		}
		shown, err := toolset.Parse([]byte(out))
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		lock, _ := toolset.Parse([]byte(readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))))
		a, _ := shown.Canonical()
		b, _ := lock.Canonical()
		if shown.ID != demoID || string(a) != string(b) {
			t.Fatalf("shown %s is not the lock's content:\n%s", shown.ID, out)
		}
	})
	// Declarations: of the registered toolset no lock holds, read as show
	// reads it, and of a Solution naming it; the files are declare's
	// renderings of the lock's toolset.
	ticket := filepath.Join(toolsetFiles, "solutions", "demo-ticket.yaml")
	for name, arg := range map[string]string{"declarations of a registered toolset": demoID, "declarations of a Solution on a registered toolset": ticket} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, errs := cliEnv.run(append(append([]string{"declarations", arg, "-o", out}, noLocks...), as("bob")...)...)
			if code != ExitOK || errs != "" || !strings.HasPrefix(stdout, "toolset "+demoID+" (demo)\n") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, errs)
			}
			wantDeclarations(t, out, lockToolset(t, "demo.lock.json"))
		})
	}
	t.Run("declarations of an id not registered", func(t *testing.T) {
		code, _, errs := cliEnv.run(append(append([]string{"declarations", unknownID, "-o", t.TempDir()}, noLocks...), as("bob")...)...)
		if code != ExitErrors || !strings.Contains(errs, "toolgate declarations: toolset "+unknownID+": not found") || !strings.Contains(errs, "PUBLISH_NOT_FOUND") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	// Diff: demo from a lock, demo-reviewed from the function; the same
	// lines as from two locks.
	onlyDemo := t.TempDir()
	copyFiles(t, onlyDemo, "demo.lock.json")
	for _, c := range []toolsetCase{
		{name: "diff a lock and a registered toolset", args: append([]string{"toolset", "diff", demoID, reviewedID, "--toolsets", onlyDemo}, as("bob")...),
			code: ExitErrors, stdout: readFile(t, diffGolden)},
		{name: "show an id not registered", args: append(append([]string{"toolset", "show", unknownID}, noLocks...), as("bob")...), code: ExitErrors,
			stderr: []string{"toolset " + unknownID + ": not found: no lock file (*.lock.json) in --toolsets", "the publish function says: PUBLISH_NOT_FOUND: toolset " + unknownID + " is not registered in stage test"}},
		{name: "diff with an id not registered", args: append([]string{"toolset", "diff", demoID, unknownID, "--toolsets", onlyDemo}, as("bob")...), code: ExitMisuse,
			stderr: []string{"PUBLISH_NOT_FOUND"}},
		{name: "show as a name that is not one", args: append(append([]string{"toolset", "show", reviewedID}, noLocks...), as("Not A Name")...), code: ExitMisuse,
			stderr: []string{`--as "Not A Name"`}},
	} {
		c.env = cliEnv
		t.Run(c.name, c.run)
	}
}

// The CLI believes the publish function's answer only as far as it
// checks: the body must be the RFC 8785 form of the toolset asked for,
// digesting to its id, and pass the registration check.
func TestRegisteredToolsetChecksTheAnswer(t *testing.T) {
	t.Parallel()
	lock, err := toolset.Parse([]byte(readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := lock.Canonical()
	answer := func(id, body string) []byte {
		out, _ := json.Marshal(publishapi.ShowResult{ToolsetID: id, Body: body})
		return out
	}
	if ts, err := registeredToolset(demoID, answer(demoID, string(body))); err != nil || ts.ID != demoID {
		t.Fatalf("the registered body: %v", err)
	}
	for name, c := range map[string]struct {
		out  []byte
		says string
	}{
		"another id":             {answer(reviewedID, string(body)), `answered with toolset "` + reviewedID + `"`},
		"changed content":        {answer(demoID, strings.Replace(string(body), `"timeout_seconds":30`, `"timeout_seconds":300`, 1)), "digests to ts_"},
		"not the canonical form": {answer(demoID, " "+string(body)), "[toolset-format]"},
		"not an answer":          {[]byte(`{"toolset_id":"` + demoID + `"}`), "unexpected answer"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := registeredToolset(demoID, c.out); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want it to say %q", err, c.says)
			}
		})
	}
}

// toolset lock writes, offline, the lock registration writes: for
// demo.yaml and the toolset derived from it, testdata/toolsets' locks
// byte for byte (TestToolsetThroughPublishFunction checks that
// registration writes those). What it refuses writes nothing.
func TestToolsetLockWritesTheRegisteredLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "demo-reviewed.yaml", "schemas/create-ticket.input.json", "crm.yaml", "refuse-at-least-once.yaml")
	in := func(name string) string { return filepath.Join(dir, name) }
	noLocks := []string{"--toolsets", t.TempDir()}
	lock := func(file string) []string { return append([]string{"toolset", "lock", in(file)}, noLocks...) }
	for _, c := range []toolsetCase{
		{name: "a derived toolset before its base is locked", args: lock("demo-reviewed.yaml"), code: ExitErrors,
			stderr: []string{in("demo-reviewed.yaml") + ":4:7: error: [base] base " + demoID + " does not exist", "no lock was written"}},
		{name: "a toolset file", args: lock("demo.yaml"), stdout: "wrote " + in("demo.lock.json") + " (" + demoID + ")\n"},
		{name: "a derived toolset, its base read from the lock beside it", args: lock("demo-reviewed.yaml"),
			stdout: "wrote " + in("demo-reviewed.lock.json") + " (" + reviewedID + ")\n"},
		{name: "a toolset file naming MCP servers", args: lock("crm.yaml"), code: ExitErrors,
			stderr: []string{in("crm.yaml") + ": toolset crm names MCP servers (crm)", "no lock is written offline: register it through the publish function"}},
		{name: "a toolset file with errors", args: lock("refuse-at-least-once.yaml"), code: ExitErrors,
			stderr: []string{in("refuse-at-least-once.yaml") + `:9:13: error: [policy] tool "post-invoice" policy at_least_once`, "no lock was written"}},
		{name: "a Solution", args: append([]string{"toolset", "lock", "../../testdata/solutions/cold-email.yaml"}, noLocks...), code: ExitMisuse,
			stderr: []string{"cold-email.yaml is not a toolset file"}},
		{name: "no file", args: []string{"toolset", "lock"}, code: ExitMisuse, stderr: []string{"accepts 1 arg(s), received 0"}},
	} {
		t.Run(c.name, c.run)
	}
	for _, name := range []string{"demo.lock.json", "demo-reviewed.lock.json"} {
		if got, want := readFile(t, in(name)), readFile(t, filepath.Join(toolsetFiles, name)); got != want {
			t.Errorf("%s differs from testdata/toolsets':\n%s", name, cmp.Diff(want, got))
		}
	}
	for _, name := range []string{"crm.lock.json", "at-least-once.lock.json"} {
		if _, err := os.Stat(in(name)); err == nil {
			t.Errorf("a refused file wrote %s", name)
		}
	}
}

// toolset lock reads a file that is not a Solution as a toolset file, so
// a syntax error, an empty file, a repeated or a missing toolset key is
// reported at its line with its rule, as for a .json file, and not as
// "not a toolset file".
func TestToolsetLockReportsWhatIsWrongWithAToolsetFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name, file, src, says string
	}{
		{"a syntax error", "syntax.yaml", "toolset: x\ntools: {a: [1,}\n",
			`syntax.yaml:2:12: error: [syntax] the "[" on line 2 opens a flow sequence that is never closed`},
		{"an empty file", "empty.yaml", "", "empty.yaml:1:1: error: [syntax] the file holds no document"},
		{"a repeated toolset key", "twice.yaml", "toolset: x\ntoolset: y\ntools: {send-email: {}}\n",
			`twice.yaml:2:1: error: [syntax] key "toolset" appears twice in this mapping (first on line 1)`},
		{"no toolset key", "nameless.yaml", "tools: {send-email: {}}\n", `nameless.yaml:1:1: error: [missing-field] the toolset file has no "toolset"`},
		{"a syntax error in JSON", "syntax.json", `{"toolset": "x", "tools": {"a": [1,]}}`, "syntax.json:1:35: error: [syntax]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, c.file)
			if err := os.WriteFile(f, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run("toolset", "lock", f, "--toolsets", t.TempDir())
			if code != ExitErrors || out != "" || !strings.Contains(errs, c.says) || !strings.Contains(errs, "no lock was written") || strings.Contains(errs, "not a toolset file") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s\nwant exit 1 saying %q", code, out, errs, c.says)
			}
		})
	}
}

// toolset lock names invisible and bidirectional characters in a
// description, as registration does, and still writes the lock.
func TestToolsetLockWarnsOfInvisibleCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "schemas/create-ticket.input.json")
	src := strings.Replace(readFile(t, filepath.Join(dir, "demo.yaml")), "description: Open a ticket", "description: \"Open a \\u202Eticket", 1)
	src = strings.Replace(src, "opens it once.", "opens it once.\"", 1)
	if err := os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("toolset", "lock", filepath.Join(dir, "demo.yaml"), "--toolsets", t.TempDir())
	if code != ExitOK || !strings.Contains(out, "wrote ") || !strings.Contains(errs, "warning:") || !strings.Contains(errs, "202E") || strings.Contains(errs, "\u202e") {
		t.Fatalf("exit %d\n%s%s\nwant the lock written and a warning naming U+202E, escaped", code, out, errs)
	}
}

// toolset lock's warning names a schema's property name holding a
// right-to-left override among the code points, and shows the property's
// pointers escaped: the name is part of every pointer below it.
func TestToolsetLockWarnsOfInvisiblePropertyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "schemas/create-ticket.input.json")
	schema := `{"type":"object","properties":{"k\u202eey":{"type":"string","description":"the key"}}}`
	if err := os.WriteFile(filepath.Join(dir, "schemas", "create-ticket.input.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("toolset", "lock", filepath.Join(dir, "demo.yaml"), "--toolsets", t.TempDir())
	want := `tool create-ticket has invisible or bidirectional characters (U+202E) in input_schema /properties/k\u{202E}ey (name)`
	if code != ExitOK || !strings.Contains(out, "wrote ") || !strings.Contains(errs, want) || strings.Contains(errs, "\u202e") {
		t.Fatalf("exit %d\n%s%s\nwant the lock written and a warning saying %q, nothing raw", code, out, errs, want)
	}
}

// toolset lock does not replace a lock of the same toolset name that
// holds another id, or a file that is not a lock: it fails naming the
// file and both ids, and leaves the file as it was. --replace replaces
// it; writing the lock of the same id again needs no flag.
func TestToolsetLockKeepsAnotherToolsetsLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "schemas/create-ticket.input.json")
	demo, lockFile := filepath.Join(dir, "demo.yaml"), filepath.Join(dir, "demo.lock.json")
	// Another toolset named demo: the same file with another description.
	src := readFile(t, demo)
	other := strings.Replace(src, "description: Open a ticket", "description: Open a new ticket", 1)
	if other == src {
		t.Fatal("demo.yaml has no description to change")
	}
	if err := os.WriteFile(demo, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run("toolset", "lock", demo, "--toolsets", t.TempDir()); code != ExitOK {
		t.Fatalf("lock the other demo: exit %d: %s", code, errs)
	}
	otherLock := readFile(t, lockFile)
	otherTS, err := toolset.Parse([]byte(otherLock))
	if err != nil || otherTS.ID == demoID {
		t.Fatalf("the other demo's lock: %v, id %s", err, otherTS.ID)
	}
	if err := os.WriteFile(demo, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	noLocks := []string{"--toolsets", t.TempDir()}
	lock := append([]string{"toolset", "lock", demo}, noLocks...)
	for _, c := range []toolsetCase{
		{name: "another id's lock", args: lock, code: ExitErrors,
			stderr: []string{demo + ": " + lockFile + " holds the lock of toolset " + otherTS.ID + " (demo), not of " + demoID + ": it was not replaced; pass --replace"}},
		{name: "with --replace", args: append(lock, "--replace"), stdout: "wrote " + lockFile + " (" + demoID + ")\n"},
		{name: "the same id again, without --replace", args: lock, stdout: "wrote " + lockFile + " (" + demoID + ")\n"},
	} {
		t.Run(c.name, c.run)
		if c.code != ExitOK && readFile(t, lockFile) != otherLock {
			t.Fatalf("%s: the refused lock changed the file", c.name)
		}
	}
	if got, want := readFile(t, lockFile), readFile(t, filepath.Join(toolsetFiles, "demo.lock.json")); got != want {
		t.Errorf("demo.lock.json differs from testdata/toolsets':\n%s", cmp.Diff(want, got))
	}
	// A file that is not a lock is not replaced either.
	if err := os.WriteFile(lockFile, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []toolsetCase{
		{name: "a file that is not a lock", args: lock, code: ExitErrors,
			stderr: []string{lockFile + " is there and is not a lock toolgate reads (no id: ", "it was not replaced with the lock of " + demoID + ": pass --replace"}},
		{name: "a file that is not a lock, with --replace", args: append(lock, "--replace"), stdout: "wrote " + lockFile + " (" + demoID + ")\n"},
	} {
		t.Run(c.name, c.run)
	}
}

// toolset register checks a toolset file's lock before it sends
// anything: a lock of another id beside the file refuses the
// registration (the URL named here answers nothing). Once a registration
// succeeded (a draft's id is known only then), writeLocks does not
// replace a lock of another id either, unless replace.
func TestToolsetRegisterKeepsAnotherToolsetsLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "schemas/create-ticket.input.json")
	demo, lockFile := filepath.Join(dir, "demo.yaml"), filepath.Join(dir, "demo.lock.json")
	reviewedLock := readFile(t, filepath.Join(toolsetFiles, "demo-reviewed.lock.json"))
	if err := os.WriteFile(lockFile, []byte(reviewedLock), 0o644); err != nil {
		t.Fatal(err)
	}
	nowhere := []string{"--url", "http://127.0.0.1:1", "--toolsets", t.TempDir()}
	c := toolsetCase{name: "register", args: append([]string{"toolset", "register", demo}, nowhere...), code: ExitErrors,
		stderr: []string{demo + ": " + lockFile + " holds the lock of toolset " + reviewedID + " (demo-reviewed), not of " + demoID, "pass --replace to replace it; nothing was registered"}}
	c.run(t)

	ts, err := toolset.Parse([]byte(readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))))
	if err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	if code := writeLocks(ExitOK, []*toolset.Toolset{ts}, []string{demo}, []string{lockFile}, false, &out, &errs); code != ExitErrors ||
		!strings.Contains(errs.String(), "toolset "+demoID+" is registered, but its lock was not written: "+lockFile+" holds the lock of toolset "+reviewedID) {
		t.Fatalf("writeLocks over another id's lock: exit %d\n%s%s", code, out.String(), errs.String())
	}
	if readFile(t, lockFile) != reviewedLock {
		t.Fatal("writeLocks replaced another id's lock")
	}
	out.Reset()
	if code := writeLocks(ExitOK, []*toolset.Toolset{ts}, []string{demo}, []string{lockFile}, true, &out, &errs); code != ExitOK || out.String() != "wrote "+lockFile+"\n" {
		t.Fatalf("writeLocks with replace: exit %d\n%s", code, out.String())
	}
	if got, want := readFile(t, lockFile), readFile(t, filepath.Join(toolsetFiles, "demo.lock.json")); got != want {
		t.Errorf("the replaced lock is not demo's:\n%s", cmp.Diff(want, got))
	}
}

// startPublishFunction starts the publish function under the RIE for
// stage "test" on the table at dynamoEndpoint, with callers' STS
// stand-in, an SSM stand-in naming create-ticket's function as
// FunctionCreateTicket, and a Lambda stand-in tagging it with a floor
// (review optional, at least once, idempotent) for tool "test"; with
// requireTag, the Lambda stand-in refuses a function without that tag,
// as the proxy's role does.
func startPublishFunction(t *testing.T, callers *localtest.Callers, dynamoEndpoint, table string, requireTag bool) *local.Process {
	t.Helper()
	params, err := local.StartSSM(map[string]string{toolset.ToolFunctionParam("test", "FunctionCreateTicket"): "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { params.Close() })
	router, err := local.StartLambdaRouter(map[string]string{"create-ticket": "http://127.0.0.1:9/never-invoked"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	tags := platformtool.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}.Tags()
	tags[platformtool.TagTool] = "test"
	router.SetTags("create-ticket", tags)
	if requireTag {
		router.RequireTag(platformtool.TagTool, "test")
	}
	return localtest.RIE(t, "publish", localtest.Bootstrap(t, "../../functions/publish"), 30*time.Second, callers.Env(map[string]string{
		publishapi.EnvTable: table, publishapi.EnvStage: "test", publish.EnvRecipientAllow: "@example.com",
		"AWS_ENDPOINT_URL_DYNAMODB": dynamoEndpoint, "AWS_ENDPOINT_URL_SSM": params.Endpoint(), "AWS_ENDPOINT_URL_LAMBDA": router.Endpoint(), "TOOLGATE_LANE": ""}))
}
