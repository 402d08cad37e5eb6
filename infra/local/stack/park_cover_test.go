package stack_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
)

// coverLoop looks up each customer of its input in turn: a for_each of
// crm.lookup_customer, one iteration at a time.
const coverLoop = `solution: mcp-cover-loop
version: 1
toolset: TOOLSET
input:
  type: object
  required: [customers]
  properties:
    customers:
      type: array
      maxItems: 3
      items:
        type: object
        required: [id]
        properties:
          id: {type: string, pattern: "^C-[0-9]+$"}
steps:
  - id: each
    for_each:
      items: "${input.customers}"
      as: customer
      max_items: 3
      max_concurrency: 1
      steps:
        - id: lookup
          tool: crm.lookup_customer
          with: {customer_id: "${customer.id}"}
`

// coverSteps looks up one customer twice, in two steps one after the
// other.
const coverSteps = `solution: mcp-cover-steps
version: 1
toolset: TOOLSET
input:
  type: object
  required: [customer_id]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
steps:
  - id: first
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
    next: second
  - id: second
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
`

// An approved definition change covers the later calls of the same tool
// in the same run (docs/parking.md, "Approvals that cover later calls"):
// once lookup_customer's description changed on the server, a loop of
// three lookups, and two lookup steps in turn, each park once. The first
// call parks, the run's starter approves the park (an ungated step's), and every other call
// of the tool in the run goes on under that approval: the run succeeds,
// the run has that one park, the server receives each call once, and
// every call's row records the covering park and both digests.
func TestAnApprovedDefinitionChangeCoversTheRunsLaterCalls(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	e := startEnv(t, stack.StackOptions{Env: map[string]string{
		// mcp-call lists the server's tools before every call: each call
		// meets the changed definition itself.
		"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0"}})
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	ts := e.registerToolset(t, write("crm-cover.yaml", strings.NewReplacer("NAME", "crm-cover", "URL", srv.URL()).Replace(lookupOnly)))
	for name, src := range map[string]string{"mcp-cover-loop": coverLoop, "mcp-cover-steps": coverSteps} {
		e.publishOn(t, dir, write(name+".yaml", string(stack.OnToolset([]byte(src), ts))))
	}
	if err := srv.SetDescription(mcpserver.LookupCustomer, "Looks up a customer by id, and now says so in other words."); err != nil {
		t.Fatal(err)
	}

	// parksOnce runs solution on input, whose step's call parks first;
	// approves that park as the park decider (the step is ungated), and
	// checks that the run succeeds
	// with calls calls of the tool, each sent once, under that one park.
	parksOnce := func(t *testing.T, solution string, input any, step string, calls int) {
		t.Helper()
		sent := len(srv.Calls())
		run := e.start(t, solution, input)
		p, _ := e.awaitParked(t, run, step)
		if p.Cause != park.SchemaChanged || p.Tool != "crm.lookup_customer" || p.PinnedDigest == "" || p.CurrentDigest == "" || p.PinnedDigest == p.CurrentDigest {
			t.Fatalf("park %+v, want a %s of crm.lookup_customer between two digests", p, park.SchemaChanged)
		}
		if out, code := e.toolgate(t, "parked", "approve", p.ID, "--endpoint", e.decisionEndpoint(), "--as", starter); code != cli.ExitOK {
			t.Fatalf("parked approve %s: exit %d\n%s", p.ID, code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED", out.Status, out.Error, out.Cause)
		}
		for _, status := range []park.Status{park.StatusApproved, park.StatusParked} {
			of, err := e.parks().ListByStatus(t.Context(), status, func(q *park.Park) bool { return q.RunID == run })
			if err != nil {
				t.Fatal(err)
			}
			if want := map[park.Status]int{park.StatusApproved: 1}[status]; len(of) != want || (want == 1 && of[0].ID != p.ID) {
				t.Fatalf("%d %s parks of the run, want %d (%s)", len(of), status, want, p.ID)
			}
		}
		parked, ran := 0, 0
		for _, r := range e.toolRows(t, run, "crm.lookup_customer") {
			switch {
			case r.Status == ledger.StatusParked:
				parked++
			case r.Status != ledger.StatusSucceeded || r.ParkID != p.ID || r.PinnedDigest != p.PinnedDigest || r.CurrentDigest != p.CurrentDigest:
				t.Errorf("row %+v, want SUCCEEDED under park %s, from %s to %s", r, p.ID, p.PinnedDigest, p.CurrentDigest)
			default:
				ran++
			}
		}
		if parked != 1 || ran != calls {
			t.Fatalf("%d PARKED and %d SUCCEEDED rows, want 1 and %d", parked, ran, calls)
		}
		keys := map[string]bool{}
		for _, c := range srv.Calls()[sent:] {
			if c.Tool != mcpserver.LookupCustomer || keys[metaKey(c)] {
				t.Fatalf("the server received %s under key %q, a call again or another tool's", c.Tool, metaKey(c))
			}
			keys[metaKey(c)] = true
		}
		if len(keys) != calls {
			t.Fatalf("the server received %d calls, want %d", len(keys), calls)
		}
	}

	t.Run("a for_each of three lookups parks once", func(t *testing.T) {
		parksOnce(t, "mcp-cover-loop", map[string]any{"customers": []map[string]string{{"id": "C-1"}, {"id": "C-2"}, {"id": "C-3"}}}, "lookup", 3)
	})
	t.Run("two steps calling the tool in turn park once", func(t *testing.T) {
		parksOnce(t, "mcp-cover-steps", map[string]string{"customer_id": "C-2"}, "first", 2)
	})
}
