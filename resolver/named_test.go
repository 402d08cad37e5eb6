package resolver

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// mcpDemoID is the id of testdata/toolsets/mcp-demo.lock.json, the
// registered form of a toolset whose tools the MCP server crm defines.
const mcpDemoID = "ts_e1e573600c23257d461a3f2d29e2aa3d"

// A Solution on a toolset of MCP tools compiles: each tool's Task invokes
// MCPFunction with the tool's "<server>.<tool>" name and no function
// member, waits the pinned timeout plus the catalog's margin, and retries
// as pinned (never on CALL_PARKED); the gated tool's review names it.
func TestSolutionOnMCPToolset(t *testing.T) {
	f := filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml")
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	res := compileOnDemo(t, "customer-ticket.yaml", string(src))
	if !res.OK() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	lock, err := LockLookup(toolsetsDir)(mcpDemoID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Toolset.ID != mcpDemoID || res.Manifest.ToolsetID != mcpDemoID {
		t.Fatalf("pinned %s, want the registered %s", res.Toolset.ID, mcpDemoID)
	}
	var def struct {
		States map[string]struct {
			TimeoutSeconds int
			Retry          []struct {
				ErrorEquals []string
				MaxAttempts int
			}
			Parameters struct {
				FunctionName string
				Payload      map[string]any
			}
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	for step, want := range map[string]struct {
		tool    string
		retries int
	}{"lookup": {"crm.lookup_customer", 2}, "ticket": {"crm.create_ticket", 0}} {
		task := def.States[step]
		pinned := lock.Tools[want.tool]
		if task.Parameters.FunctionName != "${FunctionMcpCall}" || task.Parameters.Payload["tool"] != want.tool {
			t.Errorf("%s Task: %+v", step, task.Parameters)
		}
		if _, ok := task.Parameters.Payload["function"]; ok {
			t.Errorf("%s: an MCP tool's Task names a function", step)
		}
		if task.TimeoutSeconds != pinned.TimeoutSeconds+catalog.TaskTimeoutMargin {
			t.Errorf("%s: Task timeout %d, want the pinned %d s + %d", step, task.TimeoutSeconds, pinned.TimeoutSeconds, catalog.TaskTimeoutMargin)
		}
		retries := 0
		for _, r := range task.Retry {
			retries += r.MaxAttempts
			if slices.Contains(r.ErrorEquals, "CALL_PARKED") {
				t.Errorf("%s: a Retry matches CALL_PARKED: %v", step, r.ErrorEquals)
			}
		}
		if retries != want.retries {
			t.Errorf("%s: %d retries, want %d", step, retries, want.retries)
		}
	}
	if def.States["approve"].Parameters.Payload["tool"] != "crm.create_ticket" {
		t.Errorf("review Task: %+v", def.States["approve"].Parameters.Payload)
	}
	if res.Manifest.Placeholders["FunctionMcpCall"] != MCPFunction || len(res.Manifest.ToolFunctions) != 0 {
		t.Fatalf("manifest %+v %+v", res.Manifest.Placeholders, res.Manifest.ToolFunctions)
	}
	validateASL(t, res.Definition)
}

// What a Solution on a toolset of MCP tools is refused for, as on any
// registered toolset; and policy.review_before naming an MCP tool derives
// a toolset that gates it.
func TestSolutionOnMCPToolsetRules(t *testing.T) {
	head := "solution: s\nversion: 1\ntoolset: " + mcpDemoID + "\n"
	for _, tc := range []struct{ name, src, want string }{
		{"tool not in the toolset", head + "steps: [{id: a, tool: crm.delete_customer, with: {}}]\n", `uses tool "crm.delete_customer", which is not in toolset ` + mcpDemoID},
		{"the server's own tool name", head + "steps: [{id: a, tool: lookup_customer, with: {customer_id: C-1}}]\n", `uses tool "lookup_customer", which is not in toolset`},
		{"literal against the pinned schema", head + "steps: [{id: a, tool: crm.lookup_customer, with: {customer_id: X-1}}]\n", `[tool-input] step "a" (crm.lookup_customer)`},
		{"gate A from the toolset", head + "steps: [{id: a, tool: crm.create_ticket, with: {title: t, priority: high}}]\n", "[review-before-tool]"},
		{"review_before names no tool of the toolset", head + "policy: {review_before: [crm.nope]}\nsteps: [{id: a, succeed: {}}]\n", `policy.review_before names "crm.nope"`},
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
	src := head + "policy: {review_before: [crm.send_sms]}\nsteps:\n" +
		"  - {id: ok, review: {of: sms}, on_approve: sms}\n  - {id: sms, tool: crm.send_sms, with: {to: \"+15550100\", text: hi}}\n"
	res := compileOnDemo(t, "s.yaml", src)
	if !res.OK() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	base, err := LockLookup(toolsetsDir)(mcpDemoID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Toolset.Base != mcpDemoID || !res.Toolset.Tools["crm.send_sms"].ReviewRequired || res.Toolset.Tools["crm.send_sms"].MCP == nil {
		t.Fatalf("pinned %+v", res.Toolset)
	}
	if err := res.Toolset.Verify(catalog.Default()); err != nil {
		t.Fatalf("the derived toolset fails the registration check: %v", err)
	}
	if err := res.Toolset.CheckDerived(base); err != nil {
		t.Fatalf("the derived toolset is not its base's: %v", err)
	}
}
