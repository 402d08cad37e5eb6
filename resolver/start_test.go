package resolver

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// eachState calls f with every state of def, those of Map
// ItemProcessors included, by name (walkStates).
func eachState(t *testing.T, def []byte, f func(name string, st map[string]any)) {
	t.Helper()
	var d struct{ States map[string]any }
	if err := json.Unmarshal(def, &d); err != nil {
		t.Fatal(err)
	}
	walkStates(d.States, false, func(name string, st map[string]any, _ bool) { f(name, st) })
}

// Every tool Task of every example Solution sends the run's start
// ($.meta.start) as its envelope's start, and every Init state writes
// $.meta.start with null starter and end user, so that the path exists on
// every run, with or without a Starter (a missing JSONPath would fail the
// execution with States.Runtime).
func TestEveryToolTaskSendsTheStartAndInitWritesIt(t *testing.T) {
	tasks, inits := 0, 0
	for _, res := range compiledExamples(t) {
		eachState(t, res.Definition, func(name string, st map[string]any) {
			if strings.HasPrefix(name, "Init") {
				inits++
				meta := st["Parameters"].(map[string]any)["meta"].(map[string]any)
				if want := map[string]any{"starter": nil, "end_user": nil}; !reflect.DeepEqual(meta["start"], want) {
					t.Errorf("%s: state %s writes meta.start %v, want %v", res.File, name, meta["start"], want)
				}
			}
			params, _ := st["Parameters"].(map[string]any)
			payload, _ := params["Payload"].(map[string]any)
			if _, isTool := payload[tool.MemberIdempotencyKey+".$"]; !isTool {
				return
			}
			tasks++
			if got := payload[tool.MemberStart+".$"]; got != "$.meta.start" {
				t.Errorf("%s: tool Task %s sends start %v, want $.meta.start", res.File, name, got)
			}
		})
	}
	if tasks == 0 || inits == 0 {
		t.Fatalf("checked %d tool Tasks and %d Init states: the examples hold none", tasks, inits)
	}
}

// lookupSolution is a Solution on the mcp-demo toolset with one ungated
// MCP tool call: without auth it needs no Starter.
const lookupSolution = `solution: lookup
version: 1
toolset: ts_e1e573600c23257d461a3f2d29e2aa3d
input: {type: object, properties: {customer_id: {type: string}}}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
`

// A Solution whose toolset declares auth anywhere starts with the Starter
// (its credentials' run and end-user scopes come from the start record),
// even with no review or workflow step; the same Solution on the toolset
// without auth has none, and its Task still sends $.meta.start. The step
// routes CALL_PARKED itself, so that it does not park: a step that parks
// gets the Starter too (TestAParkableStepGivesTheSolutionAStarter).
func TestAToolsetDeclaringAuthGivesTheSolutionAStarter(t *testing.T) {
	withAuth := func(auth bool) func(string) (*toolset.Toolset, error) {
		return func(id string) (*toolset.Toolset, error) {
			ts, err := LockLookup("../testdata/toolsets")(id)
			if err != nil || !auth {
				return ts, err
			}
			tools := map[string]toolset.Tool{}
			for name, tl := range ts.Tools {
				if tl.MCP != nil && name == "crm.create_ticket" { // a tool the Solution does not call
					m := *tl.MCP
					m.Auth = &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}
					tl.MCP = &m
				}
				tools[name] = tl
			}
			cp := *ts
			cp.Tools = tools
			return &cp, nil
		}
	}
	routed := lookupSolution + "    on_error:\n      - {errors: [CALL_PARKED], next: parked}\n  - {id: parked, fail: {error: PARKED}}\n"
	for _, auth := range []bool{false, true} {
		res := Compile("lookup.yaml", []byte(routed), Options{Toolsets: withAuth(auth)})
		if !res.OK() {
			t.Fatalf("auth %v: %v", auth, res.Diagnostics)
		}
		starter, initNext := false, ""
		eachState(t, res.Definition, func(name string, st map[string]any) {
			switch name {
			case StarterState:
				starter = true
				sel := st["ResultSelector"].(map[string]any)
				if sel["starter.$"] != "$.Payload.starter" || sel["end_user.$"] != "$.Payload.end_user" {
					t.Errorf("the Starter keeps %v, want starter and end_user", sel)
				}
			case stateInit:
				initNext, _ = st["Next"].(string)
			case "lookup":
				payload := st["Parameters"].(map[string]any)["Payload"].(map[string]any)
				if payload["start.$"] != "$.meta.start" {
					t.Errorf("auth %v: the tool Task sends start %v", auth, payload["start.$"])
				}
			}
		})
		if starter != auth || (initNext == StarterState) != auth {
			t.Errorf("toolset declares auth %v: Starter state %v, Init goes to %q", auth, starter, initNext)
		}
	}
}

// A step that can park gives its Solution the Starter, with no review,
// workflow step or auth: an ungated step's park is decided, and any park
// cancelled, by the run's starter, whom only a verified start names
// (docs/parking.md, "Deciding").
func TestAParkableStepGivesTheSolutionAStarter(t *testing.T) {
	res := Compile("lookup.yaml", []byte(lookupSolution), Options{Toolsets: LockLookup("../testdata/toolsets")})
	if !res.OK() {
		t.Fatalf("%v", res.Diagnostics)
	}
	starter, parkState, initNext := false, false, ""
	eachState(t, res.Definition, func(name string, st map[string]any) {
		switch name {
		case StarterState:
			starter = true
		case "lookup-park":
			parkState = true
		case stateInit:
			initNext, _ = st["Next"].(string)
		}
	})
	if !parkState || !starter || initNext != StarterState {
		t.Errorf("park state %v, Starter state %v, Init goes to %q; want the park, and the run starting with the Starter", parkState, starter, initNext)
	}
}

// A run learns its fork's parent (forked_from, rerun_reads) from its
// Starter's answer only, never from the execution input: no Init state
// copies a start from the input's meta, and every state that writes
// $.meta.start is a start Task whose ResultSelector takes each member from
// review-request's answer ($.Payload), so a forged meta.start.forked_from
// in the execution input never reaches a tool (docs/fork.md, "Matching").
func TestOnlyTheStarterAnswerWritesTheRunsStart(t *testing.T) {
	want := map[string]any{"starter.$": "$.Payload.starter", "end_user.$": "$.Payload.end_user",
		"forked_from.$": "$.Payload.forked_from", "rerun_reads.$": "$.Payload.rerun_reads"}
	starters := 0
	for _, res := range compiledExamples(t) {
		eachState(t, res.Definition, func(name string, st map[string]any) {
			if strings.HasPrefix(name, "Init") {
				params := st["Parameters"].(map[string]any)
				meta := params["meta"].(map[string]any)
				if _, copied := meta["start.$"]; copied || params["meta.$"] != nil {
					t.Errorf("%s: state %s copies the run's start from the execution input", res.File, name)
				}
			}
			if st["ResultPath"] != "$.meta.start" {
				return
			}
			starters++
			if name != StarterState && name != stateStarterChild {
				t.Errorf("%s: state %s writes $.meta.start, and is no start Task", res.File, name)
			}
			if !reflect.DeepEqual(st["ResultSelector"], want) {
				t.Errorf("%s: state %s selects the start %v, want %v", res.File, name, st["ResultSelector"], want)
			}
		})
	}
	if starters == 0 {
		t.Fatal("no example Solution has a start Task")
	}
}

// compiledExamples compiles every example Solution that compiles (those
// without a .err file beside them) against the repository's locks; one
// that does not is the test's failure.
func compiledExamples(t *testing.T) []*Result {
	t.Helper()
	var out []*Result
	for _, f := range exampleSolutions() {
		if _, err := os.Stat(strings.TrimSuffix(f, ".yaml") + ".err"); err == nil {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(f, src, Options{Toolsets: LockLookup("../testdata/toolsets")})
		if !res.OK() {
			t.Fatalf("%s: %v", f, res.Diagnostics)
		}
		out = append(out, res)
	}
	return out
}
