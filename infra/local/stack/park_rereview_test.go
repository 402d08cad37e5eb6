package stack_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	reviewdynamo "github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// rereviewTicket opens a ticket once a person approved it, within
// rereviewTimeout seconds: a review timeout a test can outlast (the
// resolver allows 1 s and up), and long enough to approve through the
// CLI.
const rereviewTicket = `solution: rereview-ticket
version: 1
toolset: TOOLSET
input:
  type: object
  required: [title]
  properties:
    title: {type: string, minLength: 1, maxLength: 200}
steps:
  - id: approve
    review: {of: ticket, timeout_seconds: 20}
    on_approve: ticket
    on_reject: end
  - id: ticket
    tool: crm.create_ticket
    with: {title: "${input.title}", priority: high}
`

// A gated MCP tool parked past its approval's expiry is re-reviewed and
// sent once (docs/parking.md, "A re-review"): the approved call parks on
// a changed definition, the park is approved by a reviewer after the
// review's deadline, the call sent again answers APPROVAL_EXPIRED, the
// re-review (a new review of the same step and input) is approved, and
// the call is sent once under its first seq and key with the new
// approval. The waits are polls with deadlines (pending, awaitParked,
// follow) and the clock passing the review's deadline.
func TestAGatedCallParkedPastItsApprovalIsReReviewedAndSentOnce(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	e := startEnv(t, stack.StackOptions{Env: map[string]string{"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0"}})
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	demo := e.registerToolset(t, write("mcp-demo.yaml", string(stack.MCPDemoToolset(srv.URL()))))
	e.publishOn(t, dir, write("rereview-ticket.yaml", string(stack.OnToolset([]byte(rereviewTicket), demo))))
	// The server defines create_ticket otherwise than its pin: the
	// approved call parks.
	if err := srv.SetDescription(mcpserver.CreateTicket, "Opens a support ticket, now with a new description."); err != nil {
		t.Fatal(err)
	}
	calls, tickets := len(srv.Calls()), len(srv.Tickets())
	started := time.Now()
	run := e.start(t, "rereview-ticket", map[string]string{"title": "re-reviewed: printer on fire"})
	first := e.pending(t, run, nil)
	if code, out := e.decideAs(t, ticketReviewer, "approve", first); code != cli.ExitOK {
		t.Fatalf("approve %s: exit %d\n%s", first, code, out)
	}
	p, _ := e.awaitParked(t, run, "ticket")
	if !p.Gated || p.Cause != park.SchemaChanged || p.IdempotencyKey != run+"/1" {
		t.Fatalf("park %+v, want a gated %s under %s/1", p, park.SchemaChanged, run)
	}
	reviews := reviewdynamo.NewStore(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table)
	old, err := reviews.Get(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	// The clock must pass the review's deadline: poll it, with a deadline
	// of the review's timeout and a margin.
	for deadline := old.ExpiresAt.Add(30 * time.Second); !time.Now().After(old.ExpiresAt.Add(time.Second)); {
		if time.Now().After(deadline) {
			t.Fatalf("review %s's deadline %s did not pass", first, old.ExpiresAt)
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline on the clock, not an order of goroutines
	}
	// A reviewer approves the park (four eyes: a gated step's park is its
	// reviewers'); the call sent again finds its approval expired.
	if out, code := e.toolgate(t, "parked", "approve", p.ID, "--endpoint", e.decisionEndpoint(), "--as", ticketReviewer); code != cli.ExitOK {
		t.Fatalf("parked approve %s: exit %d\n%s", p.ID, code, out)
	}
	second := e.pending(t, run, map[string]bool{first: true})
	renewed, err := reviews.Get(t.Context(), second)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Step != old.Step || renewed.Of != "ticket" || renewed.InputDigest != old.InputDigest || renewed.Tool != old.Tool || !slices.Equal(renewed.Reviewers, old.Reviewers) || renewed.TimeoutSeconds != old.TimeoutSeconds {
		t.Fatalf("the re-review %+v, want review %+v's request again", renewed, old)
	}
	if sent := srv.Calls()[calls:]; len(sent) != 0 {
		t.Fatalf("the server received %+v before the re-review was decided", sent)
	}
	if code, out := e.decideAs(t, ticketReviewer, "approve", second); code != cli.ExitOK {
		t.Fatalf("approve the re-review %s: exit %d\n%s", second, code, out)
	}
	out, events := e.follow(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("run %s %s %s via %v", out.Status, out.Error, out.Cause, entered(events))
	}
	if failed := taskFailures(events); !slices.Contains(failed, string(tool.ApprovalExpired)) || !slices.Contains(entered(events), "ticket-rereview") {
		t.Fatalf("Task failures %v via %v, want %s into ticket-rereview", failed, entered(events), tool.ApprovalExpired)
	}
	sent := srv.Calls()[calls:]
	if len(sent) != 1 || sent[0].Tool != mcpserver.CreateTicket {
		t.Fatalf("the server received %+v, want one create_ticket", sent)
	}
	rows := e.toolRows(t, run, "crm.create_ticket")
	var statuses []string
	for _, r := range rows {
		statuses = append(statuses, string(r.Status)+" "+r.ErrorCode)
		if r.IdempotencyKey != run+"/1" {
			t.Errorf("row %+v is not under the call's key %s/1", r, run)
		}
	}
	last := rows[len(rows)-1]
	if len(rows) != 3 || rows[0].Status != ledger.StatusParked || rows[1].Status != ledger.StatusRefused || rows[1].ErrorCode != string(tool.ApprovalExpired) ||
		last.Status != ledger.StatusSucceeded || last.ReviewID != second || last.ParkID != p.ID || last.Approver != local.LocalPrincipal(ticketReviewer) {
		t.Fatalf("rows %v (%+v), want PARKED, REFUSED %s, then SUCCEEDED under review %s and park %s", statuses, rows, tool.ApprovalExpired, second, p.ID)
	}
	if got := srv.Tickets()[tickets:]; len(got) != 1 || got[0].IdempotencyKey != metaKey(sent[0]) || !strings.HasPrefix(got[0].Title, "re-reviewed") {
		t.Fatalf("tickets %+v, want one", got)
	}
	t.Logf("the run took %s from its start", time.Since(started).Round(time.Second))
}
