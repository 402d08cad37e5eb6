package resolver

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

// compileOnDemo compiles a Solution naming a toolset of testdata/toolsets.
func compileOnDemo(t *testing.T, name, src string) *Result {
	t.Helper()
	return Compile(name, []byte(src), Options{Toolsets: LockLookup(toolsetsDir)})
}

// A Solution on the registered demo toolset compiles; its platform tool's
// Task invokes the proxy with the pinned function placeholder, which the
// manifest lists for publishing, and the run pins the registered toolset.
func TestSolutionOnRegisteredToolset(t *testing.T) {
	f := filepath.Join(toolsetsDir, "solutions", "open-ticket.yaml")
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	res := compileOnDemo(t, "open-ticket.yaml", string(src))
	if !res.OK() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	demo := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml")).Toolset
	if res.Toolset.ID != demo.ID || res.Manifest.ToolsetID != demo.ID {
		t.Fatalf("pinned %s, want the registered %s", res.Toolset.ID, demo.ID)
	}
	var def struct {
		States map[string]struct {
			TimeoutSeconds int
			Retry          []struct{ MaxAttempts int }
			Parameters     struct {
				FunctionName string
				Payload      map[string]any
			}
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	task := def.States["ticket"]
	if task.Parameters.FunctionName != "${FunctionLambdaTool}" || task.Parameters.Payload["function"] != "${FunctionCreateTicket}" {
		t.Fatalf("ticket Task: %+v", task.Parameters)
	}
	if task.TimeoutSeconds != 40 || len(task.Retry) != 1 || task.Retry[0].MaxAttempts != 2 {
		t.Fatalf("timeout %d, retry %+v: want the pinned 30 s + 10 and 3 attempts", task.TimeoutSeconds, task.Retry)
	}
	if _, ok := def.States["fetch"].Parameters.Payload["function"]; ok {
		t.Fatal("a built-in tool's Task names a function")
	}
	if res.Manifest.ToolFunctions["FunctionCreateTicket"] != "create-ticket" || res.Manifest.Placeholders["FunctionLambdaTool"] != ProxyFunction {
		t.Fatalf("manifest %+v %+v", res.Manifest.Placeholders, res.Manifest.ToolFunctions)
	}
	validateASL(t, res.Definition)
}

// What a Solution on a registered toolset is refused for.
func TestSolutionOnRegisteredToolsetRefusals(t *testing.T) {
	id := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml")).Toolset.ID
	head := "solution: s\nversion: 1\ntoolset: " + id + "\n"
	for _, tc := range []struct{ name, src, want string }{
		{"not found", "solution: s\nversion: 1\ntoolset: ts_00000000000000000000000000000000\nsteps: [{id: a, succeed: {}}]\n", "[toolset] toolset ts_00000000000000000000000000000000 is not found"},
		{"not an id", "solution: s\nversion: 1\ntoolset: demo\nsteps: [{id: a, succeed: {}}]\n", "is not a toolset id"},
		{"hosts with a toolset", head + "policy: {fetch_hosts: [api.example.com]}\nsteps: [{id: a, succeed: {}}]\n", "[fetch-host] policy.fetch_hosts cannot go with toolset"},
		{"tool not in the toolset", head + "steps: [{id: a, tool: close-ticket, with: {}}]\n", "which is not in toolset " + id},
		{"literal against the pinned schema", head + "steps: [{id: a, tool: create-ticket, with: {title: \"\", colour: red}}]\n", "[tool-input] step \"a\" (create-ticket)"},
		{"host not pinned", head + "steps: [{id: a, tool: structured-data-fetch, with: {url: \"https://evil.example.net/\"}}]\n", "is not on policy.fetch_hosts"},
		{"gate A from the toolset", head + "steps: [{id: a, tool: send-email, with: {to: [a@example.com], subject: s, text: t}}]\n", "[review-before-tool]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compileOnDemo(t, "s.yaml", tc.src)
			var all []string
			for _, d := range res.Diagnostics {
				all = append(all, d.String())
			}
			if res.OK() || !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Fatalf("want %q, got:\n%s", tc.want, strings.Join(all, "\n"))
			}
		})
	}
}

// policy.review_before on a named toolset pins a toolset derived from it
// (base: the named one) with the added review; one already required
// keeps the registered toolset.
func TestReviewBeforeDerivesToolset(t *testing.T) {
	id := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml")).Toolset.ID
	src := "solution: s\nversion: 1\ntoolset: " + id + "\npolicy: {review_before: [create-ticket]}\nsteps:\n" +
		"  - {id: ok, review: {of: t}, on_approve: t}\n  - {id: t, tool: create-ticket, with: {title: x}}\n"
	res := compileOnDemo(t, "s.yaml", src)
	if !res.OK() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	if res.Toolset.Base != id || res.Toolset.ID == id || !res.Toolset.Tools["create-ticket"].ReviewRequired {
		t.Fatalf("pinned %+v", res.Toolset)
	}
	if err := res.Toolset.Verify(catalog.Default()); err != nil {
		t.Fatalf("the derived toolset fails the registration check: %v", err)
	}
}

// The publish function's check of a derived toolset against its base
// (toolset.CheckDerived) accepts the derived lock and refuses a weaker or
// larger one.
func TestCheckDerived(t *testing.T) {
	base := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml")).Toolset
	d := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo-reviewed.yaml")).Toolset
	if err := d.CheckDerived(base); err != nil {
		t.Fatal(err)
	}
	weaker := *d
	weaker.Tools = maps.Clone(d.Tools)
	se := weaker.Tools["send-email"]
	se.ReviewRequired = false
	weaker.Tools["send-email"] = se
	if err := weaker.CheckDerived(base); err == nil {
		t.Fatal("a weaker derived toolset was accepted")
	}
	delete(weaker.Tools, "send-email")
	if err := weaker.CheckDerived(base); err == nil {
		t.Fatal("a derived toolset dropping a tool was accepted")
	}
}
