package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver/declare"
	"github.com/toolgate/toolgate/shared/observed"
)

// mcpDemoLockID is testdata/toolsets/mcp-demo.lock.json's id: its
// crm.send_sms declares no output schema ({}).
const mcpDemoLockID = "ts_e1e573600c23257d461a3f2d29e2aa3d"

// canaryResults are crm.send_sms results holding distinctive values and
// data-like keys (an e-mail address, an order id), none of which may
// appear anywhere a learned shape goes.
var canaryResults = []string{
	`{"message_id":"CANARY-VALUE-31337","segments":7741,"queued":true,"routes":{"alice@example.com":{"ok":true},"ORD-99812":{"ok":false}}}`,
	`{"message_id":"canary-second-value","segments":0.5,"queued":false,"note":"CANARY-NOTE-4242"}`,
}

var canaryStrings = []string{"CANARY", "canary-second", "31337", "7741", "0.5", "alice@example.com", "ORD-99812", "4242"}

// writeShapesFile writes the shapes file the dispatcher's learning of
// canaryResults would give (Observe, Merge; File.Marshal), in dir.
func writeShapesFile(t *testing.T, dir string) string {
	t.Helper()
	var s *observed.Shape
	for _, r := range canaryResults {
		o, err := observed.Observe(json.RawMessage(r))
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			s = o
		} else {
			s.Merge(o)
		}
	}
	f := &observed.File{Toolset: mcpDemoLockID, Tools: map[string]observed.ToolShapes{"crm.send_sms": {LearnedFrom: 2, Shape: s}}}
	data, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mcp-demo.shapes.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// check --shapes warns of a binding into a path never observed, naming
// how many results the shape was learned from; declarations --shapes
// declares the learned type @observed. No value or data-like key of
// the results learned from appears in the shapes file, the diagnostics
// or tools.d.ts (the canary).
func TestShapesFlagFeedsBindingChecksAndDeclarationsWithoutAValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shapes := writeShapesFile(t, dir)
	sol := filepath.Join(dir, "sms.yaml")
	src := "solution: sms\nversion: 1\ntoolset: " + mcpDemoLockID + "\nsteps:\n" +
		"  - id: sms\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: hi}\n    next: p\n" +
		"  - id: p\n    pass: {a: \"${steps.sms.output.mesage_id}\", b: \"${steps.sms.output.routes.x.ok}\"}\n"
	if err := os.WriteFile(sol, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run("check", "--toolsets", toolsetFiles, "--shapes", shapes, sol)
	if code != ExitOK || !strings.Contains(out, "warning: [binding-shape] step \"p\" binds ${steps.sms.output.mesage_id}, a path never observed in the results of tool crm.send_sms (observed from 2 results)") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if strings.Count(out, "[binding-shape]") != 1 {
		t.Errorf("a member of a map learned from data-like keys was warned of:\n%s", out)
	}
	decl := filepath.Join(dir, "decl")
	if code, _, errs := run("declarations", filepath.Join(toolsetFiles, "mcp-demo.lock.json"), "--shapes", shapes, "-o", decl); code != ExitOK {
		t.Fatalf("declarations: exit %d: %s", code, errs)
	}
	tsd := readFile(t, filepath.Join(decl, declare.TypeScriptFile))
	if !strings.Contains(tsd, "@observed learned from 2 results") || !strings.Contains(tsd, `"message_id": string;`) {
		t.Errorf("tools.d.ts declares no learned type:\n%s", tsd)
	}
	for what, text := range map[string]string{"the shapes file": readFile(t, shapes), "check's output": out + errs, "tools.d.ts": tsd} {
		for _, c := range canaryStrings {
			if strings.Contains(text, c) {
				t.Errorf("%s holds %q:\n%s", what, c, text)
			}
		}
	}
}

// A shapes file that does not read is misuse (exit 2), named, its
// content never quoted.
func TestShapesFlagRefusesABadFileNamingIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.shapes.json")
	if err := os.WriteFile(bad, []byte(`{"toolset":"`+mcpDemoLockID+`","tools":{},"secret":"CANARY-IN-FILE"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sol := filepath.Join(toolsetFiles, "solutions", "customer-ticket.yaml")
	for _, args := range [][]string{
		{"check", "--toolsets", toolsetFiles, "--shapes", bad, sol},
		{"compile", "--toolsets", toolsetFiles, "--shapes", bad, "-o", dir, sol},
		{"declarations", "--toolsets", toolsetFiles, "--shapes", bad, "-o", dir, sol},
		{"check", "--toolsets", toolsetFiles, "--shapes", filepath.Join(dir, "missing.json"), sol},
	} {
		code, _, errs := run(args...)
		if code != ExitMisuse || !strings.Contains(errs, "--shapes") || !strings.Contains(errs, filepath.Base(args[4])) || strings.Contains(errs, "CANARY") {
			t.Errorf("%s: exit %d, stderr %s", args[0], code, errs)
		}
	}
}
