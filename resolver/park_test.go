package resolver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver/gate"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// compiledStates compiles src on the registered toolsets of
// testdata/toolsets (or lookup, when set) and returns its states by name,
// a for_each's ItemProcessor's included; inBody names those.
func compiledStates(t *testing.T, src string, lookup func(string) (*toolset.Toolset, error)) (res *Result, states map[string]map[string]any, inBody map[string]bool) {
	t.Helper()
	if lookup == nil {
		lookup = LockLookup(toolsetsDir)
	}
	res = Compile("s.yaml", []byte(src), Options{Toolsets: lookup})
	if !res.OK() {
		t.Fatalf("diagnostics:\n%s", diagText(res))
	}
	var d struct{ States map[string]any }
	if err := json.Unmarshal(res.Definition, &d); err != nil {
		t.Fatal(err)
	}
	states, inBody = map[string]map[string]any{}, map[string]bool{}
	walkStates(d.States, false, func(name string, st map[string]any, body bool) {
		states[name], inBody[name] = st, body
	})
	validateASL(t, res.Definition)
	return res, states, inBody
}

// jsonOf is v as compact JSON, for comparing a state's member with the
// contract's text.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const mcpHead = "solution: s\nversion: 1\ntoolset: " + mcpDemoID + "\n"

// A step whose call can park compiles the park states of docs/parking.md:
// Init sets $.parks.<id> to {park_id: null}; the Task sends park_id and
// catches CALL_PARKED first, into <id>-park, a waitForTaskToken Task on
// review-request whose payload is park.Request and whose result is
// park.Result at $.parks.<id>; <id>-parked sends approve and resume back
// to the Task itself (same seq, same key) and anything else to
// <id>-park-rejected; the three ends write TOOL_PERMISSION_DENIED and fail
// the step. A gated step's park says so.
func TestAParkableStepGetsTheParkStates(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, states, _ := compiledStates(t, string(src), nil)
	init := states[stateInit]["Parameters"].(map[string]any)
	if got := jsonOf(t, init["parks"]); got != `{"lookup":{"park_id":null},"ticket":{"park_id":null}}` {
		t.Errorf("Init's parks: %s", got)
	}
	for id, gated := range map[string]bool{"lookup": false, "ticket": true} {
		task := states[id]
		payload := task["Parameters"].(map[string]any)["Payload"].(map[string]any)
		if payload["park_id.$"] != "$.parks."+id+".park_id" {
			t.Errorf("%s: the Task's park_id.$ is %v", id, payload["park_id.$"])
		}
		catch := task["Catch"].([]any)
		if got := jsonOf(t, catch[0]); got != `{"ErrorEquals":["CALL_PARKED"],"Next":"`+id+`-park","ResultPath":"$.steps.`+id+`.error"}` {
			t.Errorf("%s: first Catcher %s", id, got)
		}
		p := states[id+"-park"]
		if p["Resource"] != lambdaInvokeToken || p["TimeoutSeconds"] != float64(park.DefaultTimeoutSeconds) || p["ResultPath"] != "$.parks."+id || p["Next"] != id+"-parked" {
			t.Errorf("%s-park: %s", id, jsonOf(t, p))
		}
		params := p["Parameters"].(map[string]any)
		if params["FunctionName"] != "${FunctionReviewRequest}" {
			t.Errorf("%s-park invokes %v", id, params["FunctionName"])
		}
		req := params["Payload"].(map[string]any)["park"].(map[string]any)
		if req["seq.$"] != payload["seq.$"] || req["idempotency_key.$"] != payload["idempotency_key.$"] ||
			req["gated"] != gated || req["step"] != id || req["tool"] != payload["tool"] || req["toolset_id"] != mcpDemoID ||
			req["timeout_seconds"] != float64(park.DefaultTimeoutSeconds) || req["run_id.$"] != "$.meta.run_id" || req["run_started_at.$"] != "$$.Execution.StartTime" {
			t.Errorf("%s-park's request %s, the Task's payload %s", id, jsonOf(t, req), jsonOf(t, payload))
		}
		if got := jsonOf(t, p["ResultSelector"]); got != `{"decision.$":"$.decision","park_id.$":"$.park_id","reason.$":"$.reason"}` {
			t.Errorf("%s-park's ResultSelector %s", id, got)
		}
		retry := p["Retry"].([]any)[0].(map[string]any)
		if !slices.Contains(retry["ErrorEquals"].([]any), any("REVIEW_UNAVAILABLE")) {
			t.Errorf("%s-park does not retry REVIEW_UNAVAILABLE: %v", id, retry)
		}
		want := `[{"ErrorEquals":["States.Timeout"],"Next":"` + id + `-park-timed-out","ResultPath":"$.steps.` + id + `.error"},` +
			`{"ErrorEquals":["PARK_LIMIT"],"Next":"` + id + `-park-limit","ResultPath":"$.steps.` + id + `.error"},` +
			`{"ErrorEquals":["States.ALL"],"Next":"` + id + `-failed","ResultPath":"$.steps.` + id + `.error"}]`
		if got := jsonOf(t, p["Catch"]); got != want {
			t.Errorf("%s-park's Catch\n%s\nwant\n%s", id, got, want)
		}
		parked := states[id+"-parked"]
		want = `[{"Next":"` + id + `","Or":[{"StringEquals":"approve","Variable":"$.parks.` + id + `.decision"},{"StringEquals":"resume","Variable":"$.parks.` + id + `.decision"}]}]`
		if got := jsonOf(t, parked["Choices"]); got != want || parked["Default"] != id+"-park-rejected" {
			t.Errorf("%s-parked: %s", id, jsonOf(t, parked))
		}
		for end, cause := range map[string]string{
			"-park-rejected":  `"Cause.$":"States.Format('parked call rejected: {}', $.parks.` + id + `.reason)"`,
			"-park-timed-out": `"Cause":"park timed out"`,
			"-park-limit":     `"Cause":"parked 5 times"`,
		} {
			st := states[id+end]
			if got := jsonOf(t, st["Parameters"]); got != `{`+cause+`,"Error":"TOOL_PERMISSION_DENIED"}` || st["ResultPath"] != "$.steps."+id+".error" || st["Next"] != id+"-failed" {
				t.Errorf("%s%s: %s", id, end, jsonOf(t, st))
			}
		}
	}
}

// A step whose on_error names CALL_PARKED keeps routing it as written:
// no park state, no park_id member (the dispatcher then announces the
// park), no $.parks; a step of the same Solution without such an entry
// still parks.
func TestAnOnErrorNamingCallParkedKeepsItsRoute(t *testing.T) {
	src := mcpHead + "steps:\n" +
		"  - id: a\n    tool: crm.lookup_customer\n    with: {customer_id: C-1}\n    on_error:\n      - {errors: [CALL_PARKED], next: parked}\n    next: b\n" +
		"  - id: b\n    tool: crm.lookup_customer\n    with: {customer_id: C-2}\n" +
		"  - id: parked\n    fail: {error: PARKED}\n"
	_, states, _ := compiledStates(t, src, nil)
	for name := range states {
		if strings.HasPrefix(name, "a-park") {
			t.Errorf("step a has state %s", name)
		}
	}
	a := states["a"]
	if _, ok := a["Parameters"].(map[string]any)["Payload"].(map[string]any)["park_id.$"]; ok {
		t.Error("step a's Task sends park_id")
	}
	if got := jsonOf(t, a["Catch"].([]any)[0]); got != `{"ErrorEquals":["CALL_PARKED"],"Next":"parked","ResultPath":"$.steps.a.error"}` {
		t.Errorf("step a's first Catcher %s", got)
	}
	if got := jsonOf(t, states[stateInit]["Parameters"].(map[string]any)["parks"]); got != `{"b":{"park_id":null}}` {
		t.Errorf("Init's parks %s", got)
	}
	if states["b-park"] == nil {
		t.Error("step b has no park Task")
	}
}

// A step whose call cannot park (a catalog tool; a platform tool; an
// http step of a toolset whose host entries declare no auth) gets no park
// state, no park_id member, and the state data no $.parks.
func TestANonParkableStepGetsNoParkStates(t *testing.T) {
	open, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "open-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fetch, err := os.ReadFile(filepath.Join(solutionsDir, "loop-per-item.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	noAuth, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}})
	for name, c := range map[string]struct {
		src    string
		lookup func(string) (*toolset.Toolset, error)
	}{
		"catalog tools":     {string(fetch), nil},
		"platform tool":     {string(open), nil},
		"http without auth": {"solution: s\nversion: 1\ntoolset: " + noAuth.ID + "\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/items\"}\n", lookup},
	} {
		t.Run(name, func(t *testing.T) {
			res, states, _ := compiledStates(t, c.src, c.lookup)
			for n := range states {
				if strings.Contains(n, "-park") {
					t.Errorf("state %s", n)
				}
			}
			if strings.Contains(string(res.Definition), "park") {
				t.Errorf("the definition mentions parks:\n%s", res.Definition)
			}
		})
	}
}

// An http step of a toolset one of whose host entries declares auth
// parks (its credential may expire), ungated.
func TestAnHTTPStepOfAToolsetWithAuthParks(t *testing.T) {
	ts, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "X-Api-Key"}})
	src := "solution: s\nversion: 1\ntoolset: " + ts.ID + "\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/items\"}\n"
	_, states, _ := compiledStates(t, src, lookup)
	p := states["read-park"]
	if p == nil {
		t.Fatal("no read-park")
	}
	if req := p["Parameters"].(map[string]any)["Payload"].(map[string]any)["park"].(map[string]any); req["tool"] != "http" || req["gated"] != false {
		t.Errorf("read-park's request %s", jsonOf(t, req))
	}
}

// The three ends of a park go where the step's on_error sends
// TOOL_PERMISSION_DENIED: an entry naming it (or States.TaskFailed), else
// the catch-all target; a park Task's other failures go to the
// catch-all.
func TestAParkEndsWhereOnErrorSendsPermissionDenied(t *testing.T) {
	for name, c := range map[string]struct{ onError, denied, other string }{
		"entry naming it":   {"      - {errors: [TOOL_PERMISSION_DENIED], next: denied}\n      - next: other\n", "denied", "other"},
		"task failed":       {"      - {errors: [States.TaskFailed], next: denied}\n      - next: other\n", "denied", "other"},
		"catch-all only":    {"      - next: other\n", "other", "other"},
		"another code only": {"      - {errors: [TOOL_TIMEOUT], next: denied}\n", "a-failed", "a-failed"},
	} {
		t.Run(name, func(t *testing.T) {
			src := mcpHead + "steps:\n  - id: a\n    tool: crm.lookup_customer\n    with: {customer_id: C-1}\n    on_error:\n" + c.onError +
				"  - {id: denied, fail: {error: DENIED}}\n  - {id: other, fail: {error: OTHER}}\n"
			_, states, _ := compiledStates(t, src, nil)
			for _, end := range []string{"-park-rejected", "-park-timed-out", "-park-limit"} {
				if got := states["a"+end]["Next"]; got != c.denied {
					t.Errorf("a%s goes to %v, want %s", end, got, c.denied)
				}
			}
			catch := states["a-park"]["Catch"].([]any)
			if got := catch[len(catch)-1].(map[string]any)["Next"]; got != c.other {
				t.Errorf("a-park's other failures go to %v, want %s", got, c.other)
			}
		})
	}
}

// A parkable step in a for_each body parks inside its iteration: the
// iteration's ItemSelector sets $.parks.<id>, Init does not, the park
// states are in the ItemProcessor, and the park Task names the
// iteration's seq and key, as the Task does.
func TestAParkableStepInAForEachParksInItsIteration(t *testing.T) {
	src := mcpHead + "input: {type: object, properties: {ids: {type: array, items: {type: string}}}}\nsteps:\n" +
		"  - id: each\n    for_each:\n      items: \"${input.ids}\"\n      as: cid\n      max_items: 10\n      steps:\n" +
		"        - id: look\n          tool: crm.lookup_customer\n          with: {customer_id: \"${cid}\"}\n"
	_, states, inBody := compiledStates(t, src, nil)
	if _, ok := states[stateInit]["Parameters"].(map[string]any)["parks"]; ok {
		t.Error("Init sets parks of a body step")
	}
	sel := states["each"]["ItemSelector"].(map[string]any)
	if got := jsonOf(t, sel["parks"]); got != `{"look":{"park_id":null}}` {
		t.Errorf("the ItemSelector's parks %s", got)
	}
	for _, n := range []string{"look-park", "look-parked", "look-park-rejected", "look-park-timed-out", "look-park-limit"} {
		if !inBody[n] {
			t.Errorf("%s is not in the ItemProcessor", n)
		}
	}
	task := states["look"]["Parameters"].(map[string]any)["Payload"].(map[string]any)
	req := states["look-park"]["Parameters"].(map[string]any)["Payload"].(map[string]any)["park"].(map[string]any)
	if req["seq.$"] != task["seq.$"] || !strings.Contains(req["seq.$"].(string), "$.meta.loop_seq") || req["idempotency_key.$"] != task["idempotency_key.$"] {
		t.Errorf("the park's seq %v and key %v, the Task's %v and %v", req["seq.$"], req["idempotency_key.$"], task["seq.$"], task["idempotency_key.$"])
	}
}

// A derived run timeout adds one park timeout when a step can park: the
// default 7 days, or policy.park_timeout_seconds; a Solution without a
// parkable step adds none.
func TestParksAddOneParkTimeoutToTheDerivedRunTimeout(t *testing.T) {
	base := Compile("s.yaml", []byte(mcpHead+"steps:\n  - {id: a, tool: crm.lookup_customer, with: {customer_id: C-1}, on_error: [{errors: [CALL_PARKED], next: b}]}\n  - {id: b, succeed: {}}\n"), Options{Toolsets: LockLookup(toolsetsDir)})
	if !base.OK() || base.RunTimeout.ParkSeconds != 0 {
		t.Fatalf("without a parkable step: %+v %s", base.RunTimeout, diagText(base))
	}
	for name, c := range map[string]struct {
		policy string
		park   int
	}{
		"default": {"", park.DefaultTimeoutSeconds},
		"policy":  {"policy: {park_timeout_seconds: 3600}\n", 3600},
	} {
		t.Run(name, func(t *testing.T) {
			res := Compile("s.yaml", []byte(mcpHead+c.policy+"steps:\n  - {id: a, tool: crm.lookup_customer, with: {customer_id: C-1}}\n"), Options{Toolsets: LockLookup(toolsetsDir)})
			if !res.OK() {
				t.Fatal(diagText(res))
			}
			rt := res.RunTimeout
			if rt.ParkSeconds != c.park || rt.LongestSeconds != base.RunTimeout.LongestSeconds || rt.Seconds != rt.LongestSeconds+c.park+runTimeoutMargin(rt.LongestSeconds+c.park) {
				t.Errorf("run timeout %+v; without parks %+v", rt, base.RunTimeout)
			}
			if !strings.Contains(rt.String(), "a park of") {
				t.Errorf("summary %q does not name the park", rt.String())
			}
		})
	}
}

// policy.park_timeout_seconds is 1 .. park.MaxTimeoutSeconds, and must be
// below an explicit policy.run_timeout_seconds when a step can park;
// unset, a shorter explicit run timeout bounds the park Task's.
func TestParkTimeoutRules(t *testing.T) {
	step := "steps:\n  - {id: a, tool: crm.lookup_customer, with: {customer_id: C-1}}\n"
	for _, c := range []struct{ name, policy, want string }{
		{"zero", "policy: {park_timeout_seconds: 0}\n", "s.yaml:4:32: error: [invalid-value] policy.park_timeout_seconds 0 is outside 1..31536000"},
		{"not a number", "policy: {park_timeout_seconds: soon}\n", "s.yaml:4:32: error: [invalid-value] policy.park_timeout_seconds must be a whole number"},
		{"over a year", "policy: {park_timeout_seconds: 31536001}\n", "s.yaml:4:32: error: [quota] policy.park_timeout_seconds 31536001 is over 31536000"},
		{"not below the run timeout", "policy: {run_timeout_seconds: 86400, park_timeout_seconds: 86400}\n", "s.yaml:4:60: error: [run-timeout] policy.park_timeout_seconds 86400 is not below the run's timeout of 86400 s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("s.yaml", []byte(mcpHead+c.policy+step), Options{Toolsets: LockLookup(toolsetsDir)})
			if res.OK() || !strings.Contains(diagText(res), c.want) {
				t.Fatalf("diagnostics:\n%s\nwant %q", diagText(res), c.want)
			}
		})
	}
	for _, c := range []struct {
		name, policy string
		park         int
	}{
		{"below the run timeout", "policy: {run_timeout_seconds: 86400, park_timeout_seconds: 3600}\n", 3600},
		{"unset, a shorter run timeout", "policy: {run_timeout_seconds: 86400}\n", 86400},
		{"unset, a longer run timeout", "policy: {run_timeout_seconds: 31536000}\n", park.DefaultTimeoutSeconds},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, states, _ := compiledStates(t, mcpHead+c.policy+step, nil)
			if got := states["a-park"]["TimeoutSeconds"]; got != float64(c.park) {
				t.Errorf("a-park's TimeoutSeconds %v, want %d", got, c.park)
			}
		})
	}
	// Without a parkable step, a park timeout longer than the run's
	// bounds nothing and is not refused.
	res := Compile("s.yaml", []byte(mcpHead+"policy: {run_timeout_seconds: 60, park_timeout_seconds: 3600}\nsteps:\n  - {id: a, tool: crm.lookup_customer, with: {customer_id: C-1}, on_error: [{errors: [CALL_PARKED], next: b}]}\n  - {id: b, succeed: {}}\n"), Options{Toolsets: LockLookup(toolsetsDir)})
	if !res.OK() {
		t.Fatalf("no parkable step: %s", diagText(res))
	}
}

// Gate A sees a gated step's park as what it is: a decision by the
// step's reviewers (park.Request's gated) whose approval goes back into
// the Task. Modelled in the step graph as a review of the tool, reached
// by the Task's error edge and leading back by an Approve edge, it keeps
// every arrival at the Task approved; were the way back a plain edge, the
// call after a park would be unreviewed. The compiled Task still sends
// the review's approval ($.reviews.<id>), which no park state writes.
func TestGateASeesAParkApprovalBackIntoAGatedTaskAsGated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, res := checkOnly(t, string(src))
	g := c.graph()
	ticket := c.index["ticket"]
	if !g.Nodes[ticket].Gated {
		t.Fatal("ticket is not gated")
	}
	if v := gate.ReviewBeforeTool(g); len(v) != 0 {
		t.Fatalf("Gate A without parks: %v", v)
	}
	withPark := func(back gate.EdgeKind) *gate.Graph {
		h := &gate.Graph{Start: g.Start, Nodes: slices.Clone(g.Nodes)}
		p := len(h.Nodes)
		h.Nodes[ticket].Next = append(slices.Clone(h.Nodes[ticket].Next), gate.Edge{To: p, Kind: gate.Error})
		h.Nodes = append(h.Nodes, gate.Node{Name: "ticket-park", Kind: gate.Review, Of: ticket, Next: []gate.Edge{{To: ticket, Kind: back}}})
		return h
	}
	if v := gate.ReviewBeforeTool(withPark(gate.Approve)); len(v) != 0 {
		t.Errorf("Gate A with the park's approval back into ticket: %v", v)
	}
	if v := gate.ReviewBeforeTool(withPark(gate.Plain)); len(v) != 1 {
		t.Errorf("a plain edge back into ticket must be unreviewed; Gate A found %v", v)
	}
	var d struct{ States map[string]map[string]any }
	if err := json.Unmarshal(res.Definition, &d); err != nil {
		t.Fatal(err)
	}
	if d.States["ticket-parked"]["Choices"].([]any)[0].(map[string]any)["Next"] != "ticket" {
		t.Error("ticket-parked's approval does not go back to the Task")
	}
	if d.States["ticket"]["Parameters"].(map[string]any)["Payload"].(map[string]any)["approval.$"] != "$.reviews.ticket" {
		t.Error("the Task does not send the review's approval")
	}
	for name, st := range d.States {
		if strings.HasPrefix(name, "ticket-park") {
			if rp, _ := st["ResultPath"].(string); strings.HasPrefix(rp, "$.reviews") {
				t.Errorf("%s writes %s", name, rp)
			}
		}
	}
}

// checkOnly compiles src on the registered toolsets and returns the
// checker that checked it, for the tests of its step graph.
func checkOnly(t *testing.T, src string) (*checker, *Result) {
	t.Helper()
	res := Compile("s.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir)})
	if !res.OK() {
		t.Fatalf("diagnostics:\n%s", diagText(res))
	}
	ds := &diags{file: "s.yaml"}
	v, ok := parseChecked([]byte(src), ds)
	if !ok {
		t.Fatal("parse")
	}
	opts := Options{Toolsets: LockLookup(toolsetsDir), Catalog: catalog.Default()}
	sol := (&decoder{ds: ds}).decodeSolution(v)
	named := namedToolset(ds, sol, opts)
	c := &checker{ds: ds, cat: toolsetCatalog(opts.Catalog, named), sol: sol, named: named}
	c.resolve()
	c.admit()
	c.reach(c.graph())
	return c, res
}

// The Solutions on registered toolsets whose steps park compile to the
// golden definitions beside them (testdata/toolsets/solutions/<stem>.asl.json,
// rewritten with -update), which asl-validator accepts: the park states as
// a reader checks them by eye.
func TestParkGolden(t *testing.T) {
	for _, stem := range []string{"customer-ticket"} {
		t.Run(stem, func(t *testing.T) {
			f := filepath.Join(toolsetsDir, "solutions", stem+".yaml")
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, _, _ := compiledStates(t, string(src), nil)
			compareGolden(t, map[string][]byte{strings.TrimSuffix(f, ".yaml") + ".asl.json": res.Definition}, strings.TrimSuffix(f, ".yaml"), []string{".asl.json"}, "")
		})
	}
}

// A parkable step on a loop of the Solution clears its park between its
// counter and its Task (<id>-unpark): a call of a new key never carries
// the park id a person decided for the last one. A step on no loop has
// no such state.
func TestAParkableStepOnALoopClearsItsParkForANewKey(t *testing.T) {
	src := mcpHead + "policy: {run_timeout_seconds: 2592000}\ninput: {type: object, properties: {again: {type: boolean}}}\nsteps:\n" +
		"  - id: a\n    tool: crm.lookup_customer\n    with: {customer_id: C-1}\n    next: again\n" +
		"  - id: again\n    choice:\n      - when: {value: \"${input.again}\", equals: true}\n        next: a\n    default: b\n" +
		"  - id: b\n    tool: crm.lookup_customer\n    with: {customer_id: C-2}\n"
	_, states, _ := compiledStates(t, src, nil)
	if states["a-seq"]["Next"] != "a-unpark" {
		t.Errorf("a-seq goes to %v", states["a-seq"]["Next"])
	}
	if u := states["a-unpark"]; u == nil || jsonOf(t, u["Parameters"]) != `{"park_id":null}` || u["ResultPath"] != "$.parks.a" || u["Next"] != "a" {
		t.Errorf("a-unpark: %s", jsonOf(t, states["a-unpark"]))
	}
	if states["b-unpark"] != nil || states["b-seq"]["Next"] != "b" {
		t.Errorf("step b, on no loop: b-seq goes to %v", states["b-seq"]["Next"])
	}
}

// The state-size bound counts a park: its slot ($.parks.<id>, the park
// Task's result) where the step ran, and Init's {"park_id": null}
// everywhere. The same Solution whose step keeps CALL_PARKED's route
// reaches exactly that much less.
func TestTheStateSizeBoundCountsAPark(t *testing.T) {
	src := func(onError string) string {
		return mcpHead + "steps:\n  - id: a\n    tool: crm.lookup_customer\n    with: {customer_id: C-1}\n    output_limit_bytes: 200000\n" + onError + "    next: b\n" +
			"  - id: b\n    pass: {copy: \"${steps.a.output}\"}\n  - id: stop\n    fail: {error: PARKED}\n"
	}
	reach := func(s string) int {
		t.Helper()
		res := Compile("s.yaml", []byte(s), Options{Toolsets: LockLookup(toolsetsDir)})
		for _, d := range res.Diagnostics {
			var n int
			if d.Rule == RuleStateSize && strings.Contains(d.Message, `step "b"`) {
				if _, err := fmt.Sscanf(d.Message[strings.Index(d.Message, "could reach "):], "could reach %d bytes", &n); err == nil {
					return n
				}
			}
		}
		t.Fatalf("no [state-size] at step b:\n%s", diagText(res))
		return 0
	}
	parked := reach(src(""))
	routed := reach(src("    on_error: [{errors: [CALL_PARKED], next: stop}]\n"))
	if want := parkResultBytes + parkInitBytes + len("a"); parked-routed != want {
		t.Fatalf("the parkable step's state reaches %d bytes, the routed one's %d: %d more, want %d", parked, routed, parked-routed, want)
	}
}

// A step that can park after its request was sent (an http step of a
// toolset whose host entry declares auth) makes at most
// maxAttemptsParkingAfterClaim attempts per park: a default above it is
// lowered (no Retry of the tool's errors in the Task), a written
// max_attempts above it is refused [retry] naming the product over the
// ledger's cap, and a step routing CALL_PARKED itself keeps its retries.
func TestAStepThatParksAfterItsRequestFitsItsAttemptsInTheLedgersCap(t *testing.T) {
	if want := tool.MaxAttempts / (park.MaxParks + 1); maxAttemptsParkingAfterClaim != want || want < 1 {
		t.Fatalf("maxAttemptsParkingAfterClaim %d, want %d (and at least 1)", maxAttemptsParkingAfterClaim, want)
	}
	withAuth, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "X-Api-Key"}})
	noAuth, noAuthLookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}})
	step := func(id, extra string) string {
		return "solution: s\nversion: 1\ntoolset: " + id + "\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/items\"}\n" + extra
	}
	retried := func(t *testing.T, src string, lookup func(string) (*toolset.Toolset, error)) float64 {
		t.Helper()
		_, states, _ := compiledStates(t, src, lookup)
		retries, _ := states["read"]["Retry"].([]any)
		for _, r := range retries {
			r := r.(map[string]any)
			if slices.Contains(r["ErrorEquals"].([]any), any(string(tool.UpstreamUnavailable))) {
				return r["MaxAttempts"].(float64) + 1
			}
		}
		return 1
	}
	if got := retried(t, step(noAuth.ID, ""), noAuthLookup); got <= float64(maxAttemptsParkingAfterClaim) {
		t.Fatalf("without auth the GET makes %v attempts, want the default above %d (else this test checks nothing)", got, maxAttemptsParkingAfterClaim)
	}
	if got := retried(t, step(withAuth.ID, ""), lookup); got != float64(maxAttemptsParkingAfterClaim) {
		t.Errorf("with auth the GET makes %v attempts by default, want %d", got, maxAttemptsParkingAfterClaim)
	}
	if got := retried(t, step(withAuth.ID, "    retry: {max_attempts: 3}\n    on_error:\n      - {errors: [CALL_PARKED], next: parked}\n  - {id: parked, fail: {error: PARKED}}\n"), lookup); got != 3 {
		t.Errorf("routing CALL_PARKED, the GET makes %v attempts, want the 3 written", got)
	}
	res := Compile("s.yaml", []byte(step(withAuth.ID, "    retry: {max_attempts: 2}\n")), Options{Toolsets: lookup})
	text := diagText(res)
	if res.OK() || !strings.Contains(text, "[retry]") || !strings.Contains(text, "(5 parks + 1) × 2 = 12 attempts, over the cap of 10") || !strings.Contains(text, "s.yaml:8:") {
		t.Errorf("max_attempts 2 with auth: %s", text)
	}
}
