package stack_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// crmDecisions is a toolset of the local MCP server's lookup_customer and
// a gated create_ticket (review_required: a park of its call is decided
// by the reviewers of its review; docs/parking.md, "Deciding").
const crmDecisions = `toolset: crm-decisions
tools:
  crm:
    mcp: URL
    admit: [create_ticket, lookup_customer]
    policy:
      create_ticket: {policy: at_least_once, idempotent: true, review_required: true}
      lookup_customer: {policy: at_least_once, idempotent: true}
`

// parkLookup looks a customer up, without on_error: a parked call that is
// not sent again fails the run with TOOL_PERMISSION_DENIED.
var parkLookup = string(stack.LookupSolution("park-lookup", "TOOLSET"))

// parkLookupCaught looks a customer up, and routes TOOL_PERMISSION_DENIED
// to the pass step denied, which the tests read the step's error from.
// POLICY is its policy block.
const parkLookupCaught = `solution: NAME
version: 1
toolset: TOOLSET
POLICY
input:
  type: object
  required: [customer_id]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
    on_error:
      - errors: [TOOL_PERMISSION_DENIED]
        next: denied
  - id: denied
    pass: {error: "${steps.lookup.error.Error}", cause: "${steps.lookup.error.Cause}"}
`

// parkTicket opens a ticket once a person other than the starter approved
// it: its call's park is gated.
const parkTicket = `solution: park-ticket
version: 1
toolset: TOOLSET
input:
  type: object
  required: [title]
  properties:
    title: {type: string, minLength: 1, maxLength: 200}
steps:
  - id: approve
    review: {of: ticket, timeout_seconds: 600}
    on_approve: ticket
    on_reject: end
  - id: ticket
    tool: crm.create_ticket
    with: {title: "${input.title}", priority: normal}
`

// parkTimeoutSeconds is the park timeout of the Solution whose parks time
// out (policy.park_timeout_seconds): a few seconds, so that the test sees
// the park Task's States.Timeout.
const parkTimeoutSeconds = 5

// parkDecider is the local user the test's review-decision takes for its
// one park decider (park.EnvDeciders). A Solution with a step that can
// park has the Starter state, so the run's starter decides its ungated
// parks too (docs/parking.md, "Deciding").
const parkDecider = "park-decider"

// Deciding parked calls on the local stack (docs/parking.md, "Deciding" and
// "Sending a parked call again"): a person approves, rejects or lets a park
// time out through toolgate parked, and the run goes on as the compiled
// park states route it. Each subtest changes a tool's definition on the
// local MCP server and puts it back. The waits are polls with deadlines
// (awaitPark, follow).
func TestDecidingParkedCallsOnTheLocalStack(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	e := startEnv(t, stack.StackOptions{
		// mcp-call lists the server's tools before every call: each
		// subtest changes a definition, and the call sent again after
		// an approval must see the server's definition of that moment.
		Env: map[string]string{"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0",
			park.EnvDeciders: `["` + local.LocalPrincipal(parkDecider) + `"]`}})
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	crm := e.registerToolset(t, write("crm-decisions.yaml", strings.ReplaceAll(crmDecisions, "URL", srv.URL())))
	solution := func(name, src string) {
		t.Helper()
		e.publishOn(t, dir, write(name+".yaml", string(stack.OnToolset([]byte(src), crm))))
	}
	solution("park-lookup", parkLookup)
	solution("park-lookup-caught", strings.NewReplacer("NAME", "park-lookup-caught", "POLICY\n", "").Replace(parkLookupCaught))
	solution("park-lookup-timeout", strings.NewReplacer("NAME", "park-lookup-timeout",
		"POLICY", fmt.Sprintf("policy:\n  park_timeout_seconds: %d", parkTimeoutSeconds)).Replace(parkLookupCaught))
	solution("park-ticket", parkTicket)

	// The pinned definitions, which each subtest's cleanup puts back.
	var lock struct {
		Tools map[string]struct {
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
	}
	readJSON(t, filepath.Join(dir, "crm-decisions.lock.json"), &lock)
	restore := func(t *testing.T, name string) {
		t.Helper()
		pinned := lock.Tools["crm."+name]
		if pinned.Description == "" || len(pinned.InputSchema) == 0 {
			t.Fatalf("the lock pins no definition of crm.%s", name)
		}
		t.Cleanup(func() {
			if err := srv.SetDescription(name, pinned.Description); err != nil {
				t.Error(err)
			}
			if err := srv.SetInputSchema(name, pinned.InputSchema); err != nil {
				t.Error(err)
			}
		})
	}
	describe := func(t *testing.T, name, description string) {
		t.Helper()
		if err := srv.SetDescription(name, description); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("an approved definition change sends the call once, under its key, and its row records the park and both digests", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		describe(t, mcpserver.LookupCustomer, "Returns a customer's name and tier, and more soon.")
		calls := len(srv.Calls())
		run := e.start(t, "park-lookup", map[string]string{"customer_id": "C-1"})
		p := e.awaitPark(t, run, "lookup", 1)
		if code, out := e.parked(t, parkDecider, "approve", p.ID); code != cli.ExitOK || !strings.Contains(out, "approved by "+local.LocalPrincipal(parkDecider)) {
			t.Fatalf("the park decider's approval of %s: exit %d\n%s", p.ID, code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED", out.Status, out.Error, out.Cause)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 1 || sent[0].Tool != mcpserver.LookupCustomer || metaKey(sent[0]) != e.externalKey(t, "mcp-call", run, "1") {
			t.Fatalf("the server received %+v, want one lookup_customer under the external key of %s/1", sent, run)
		}
		rows := e.toolRows(t, run, "crm.lookup_customer")
		parked, done := rowsOf(rows, ledger.StatusParked), rowsOf(rows, ledger.StatusSucceeded)
		if len(rows) != 2 || len(parked) != 1 || len(done) != 1 {
			t.Fatalf("rows %+v, want one PARKED and one SUCCEEDED", rows)
		}
		if r := parked[0]; r.IdempotencyKey != run+"/1" || r.Attempt != 0 || r.ParkID != "" {
			t.Errorf("the PARKED row %+v, want attempt 0 under %s/1", r, run)
		}
		if r := done[0]; r.IdempotencyKey != run+"/1" || r.Attempt != 1 || r.ParkID != p.ID || r.PinnedDigest != p.PinnedDigest || r.CurrentDigest != p.CurrentDigest {
			t.Errorf("the SUCCEEDED row %+v, want attempt 1 under %s/1 with park %s, pinned %s, current %s", r, run, p.ID, p.PinnedDigest, p.CurrentDigest)
		}
		if got, err := e.parks().Get(t.Context(), p.ID); err != nil || got.Status != park.StatusApproved || got.DecidedBy != local.LocalPrincipal(parkDecider) {
			t.Errorf("park %+v (%v), want APPROVED by %s", got, err, local.LocalPrincipal(parkDecider))
		}
	})

	t.Run("an approval of a definition the call's input does not fit fails the step TOOL_INPUT_INVALID, and nothing is sent", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		if err := srv.SetInputSchema(mcpserver.LookupCustomer, json.RawMessage(`{"type": "object",
			"properties": {"customer_id": {"type": "string", "pattern": "^C-[0-9]+$"}, "region": {"type": "string"}},
			"required": ["customer_id", "region"], "additionalProperties": false}`)); err != nil {
			t.Fatal(err)
		}
		calls := len(srv.Calls())
		run := e.start(t, "park-lookup", map[string]string{"customer_id": "C-1"})
		p := e.awaitPark(t, run, "lookup", 1)
		if code, out := e.parked(t, parkDecider, "approve", p.ID); code != cli.ExitOK {
			t.Fatalf("the park decider's approval of %s: exit %d\n%s", p.ID, code, out)
		}
		out, _ := e.follow(t, run)
		if out.Status != "FAILED" || out.Error != string(tool.InputInvalid) || !strings.Contains(out.Cause, "approved input schema") || !strings.Contains(out.Cause, "required") {
			t.Fatalf("run %s %s %s, want FAILED %s naming the approved schema's required property", out.Status, out.Error, out.Cause, tool.InputInvalid)
		}
		if strings.Contains(out.Cause, "C-1") {
			t.Errorf("the cause quotes the input: %s", out.Cause)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 0 {
			t.Fatalf("the server received %+v, want no tools/call", sent)
		}
		for _, r := range e.toolRows(t, run, "crm.lookup_customer") {
			if r.Status == ledger.StatusSucceeded || r.IdempotencyKey != run+"/1" {
				t.Errorf("row %+v, want none SUCCEEDED, all under %s/1", r, run)
			}
		}
	})

	t.Run("a rejection takes the step's on_error with TOOL_PERMISSION_DENIED and its reason, or fails the run without one", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		describe(t, mcpserver.LookupCustomer, "Returns a customer's name, tier and address.")
		const reason = "the server's new description asks for more than we send"

		run := e.start(t, "park-lookup-caught", map[string]string{"customer_id": "C-2"})
		p := e.awaitPark(t, run, "lookup", 1)
		// The run's starter decides its ungated park: its start is
		// recorded (the Starter state of a Solution that can park).
		if code, out := e.parked(t, starter, "reject", p.ID, "--reason", reason); code != cli.ExitOK || !strings.Contains(out, "rejected by "+local.LocalPrincipal(starter)) {
			t.Fatalf("the starter's rejection of %s: exit %d\n%s", p.ID, code, out)
		}
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" || !slices.Contains(entered(events), "lookup-park-rejected") || !slices.Contains(entered(events), "denied") {
			t.Fatalf("run %s %s %s via %v, want SUCCEEDED through lookup-park-rejected and denied", out.Status, out.Error, out.Cause, entered(events))
		}
		if got := e.stepError(t, run, "denied", "lookup"); got.Error != string(tool.PermissionDenied) || got.Cause != "parked call rejected: "+reason {
			t.Errorf("$.steps.lookup.error %+v, want %s, parked call rejected: %s", got, tool.PermissionDenied, reason)
		}
		if got, err := e.parks().Get(t.Context(), p.ID); err != nil || got.Status != park.StatusRejected || got.Reason != reason {
			t.Errorf("park %+v (%v), want REJECTED with its reason", got, err)
		}

		run = e.start(t, "park-lookup", map[string]string{"customer_id": "C-2"})
		p = e.awaitPark(t, run, "lookup", 1)
		if code, out := e.parked(t, parkDecider, "reject", p.ID, "--reason", reason); code != cli.ExitOK {
			t.Fatalf("the park decider's rejection of %s: exit %d\n%s", p.ID, code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || out.Cause != "parked call rejected: "+reason {
			t.Fatalf("run %s %s %s, want FAILED %s, parked call rejected: %s", out.Status, out.Error, out.Cause, tool.PermissionDenied, reason)
		}
	})

	t.Run("a park whose Task timed out takes the rejected route and is recorded TIMED_OUT when met, and refuses a decision REVIEW_EXPIRED", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		describe(t, mcpserver.LookupCustomer, "Returns a customer's name and tier, soon slower.")
		// Two runs: one's park is met by a listing, the other's by a
		// decision.
		listed := e.start(t, "park-lookup-timeout", map[string]string{"customer_id": "C-3"})
		decided := e.start(t, "park-lookup-timeout", map[string]string{"customer_id": "C-3"})
		parks := []*park.Park{e.awaitPark(t, listed, "lookup", 1), e.awaitPark(t, decided, "lookup", 1)}
		for i, run := range []string{listed, decided} {
			p := parks[i]
			out, events := e.follow(t, run)
			if out.Status != "SUCCEEDED" || !slices.Contains(entered(events), "lookup-park-timed-out") {
				t.Fatalf("run %s %s %s via %v, want SUCCEEDED through lookup-park-timed-out", out.Status, out.Error, out.Cause, entered(events))
			}
			if got := e.stepError(t, run, "denied", "lookup"); got.Error != string(tool.PermissionDenied) || got.Cause != "park timed out" {
				t.Errorf("$.steps.lookup.error %+v, want %s, park timed out", got, tool.PermissionDenied)
			}
			if got := p.Deadline.Sub(p.CreatedAt); got < (parkTimeoutSeconds-1)*time.Second || got > parkTimeoutSeconds*time.Second {
				t.Errorf("park %s: deadline %s after its creation, want the park timeout, %d s", p.ID, got, parkTimeoutSeconds)
			}
		}
		// The park's deadline is whole seconds after its creation, which
		// follows the start of its Task: it may pass up to a second after
		// the Task timed out. A poll with a deadline on the wall clock,
		// which review-decision reads too.
		for limit := time.Now().Add(5 * time.Second); time.Now().Before(parks[1].Deadline.Add(10 * time.Millisecond)); {
			if time.Now().After(limit) {
				t.Fatalf("park %s's deadline %s is not past", parks[1].ID, parks[1].Deadline)
			}
			time.Sleep(50 * time.Millisecond) // a wait for the wall clock to pass the deadline
		}
		for _, p := range parks {
			if got, err := e.parks().Get(t.Context(), p.ID); err != nil || got.Status != park.StatusParked {
				t.Fatalf("park %+v (%v), want PARKED until review-decision meets it", got, err)
			}
		}

		// The listing of waiting parks leaves the first out, and records it.
		if ids := e.listedParks(t, parkDecider, ""); slices.Contains(ids, parks[0].ID) {
			t.Errorf("park list lists %s, past its deadline", parks[0].ID)
		}
		got, err := e.parks().Get(t.Context(), parks[0].ID)
		if err != nil || got.Status != park.StatusTimedOut || got.DecidedBy != "" || !got.DecidedAt.Equal(parks[0].Deadline) {
			t.Fatalf("park %+v (%v), want TIMED_OUT, decided by nobody at its deadline %s", got, err, parks[0].Deadline)
		}
		if ids := e.listedParks(t, parkDecider, "timed_out"); !slices.Contains(ids, parks[0].ID) {
			t.Errorf("park list --status timed_out lists %v, not %s", ids, parks[0].ID)
		}

		// A decision on the second is refused, and records it.
		code, out := e.parked(t, parkDecider, "approve", parks[1].ID)
		if code == cli.ExitOK || !strings.Contains(out, string(review.CodeExpired)) || !strings.Contains(out, "timed out") {
			t.Fatalf("an approval of %s past its deadline: exit %d\n%s", parks[1].ID, code, out)
		}
		if got, err := e.parks().Get(t.Context(), parks[1].ID); err != nil || got.Status != park.StatusTimedOut || got.DecidedBy != "" {
			t.Fatalf("park %+v (%v), want TIMED_OUT", got, err)
		}
		if code, out := e.parked(t, parkDecider, "approve", parks[1].ID); code == cli.ExitOK || !strings.Contains(out, string(review.CodeExpired)) {
			t.Fatalf("a second approval of %s: exit %d\n%s", parks[1].ID, code, out)
		}
	})

	t.Run("a decision by someone not allowed is REVIEW_FORBIDDEN, a second decision REVIEW_CONFLICT", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		describe(t, mcpserver.LookupCustomer, "Returns a customer's name and tier, decided once.")
		run := e.start(t, "park-lookup", map[string]string{"customer_id": "C-1"})
		p := e.awaitPark(t, run, "lookup", 1)
		// The park operator may cancel, not decide; a stranger neither.
		for _, as := range []string{stack.CredentialAdmin, "stranger"} {
			if code, out := e.parked(t, as, "approve", p.ID); code == cli.ExitOK || !strings.Contains(out, string(review.CodeForbidden)) {
				t.Fatalf("an approval by %s: exit %d\n%s", as, code, out)
			}
		}
		const reason = "not this week"
		if code, out := e.parked(t, parkDecider, "reject", p.ID, "--reason", reason); code != cli.ExitOK {
			t.Fatalf("the park decider's rejection: exit %d\n%s", code, out)
		}
		code, out := e.parked(t, parkDecider, "approve", p.ID)
		if code == cli.ExitOK || !strings.Contains(out, string(review.CodeConflict)) || !strings.Contains(out, "already rejected by "+local.LocalPrincipal(parkDecider)) {
			t.Fatalf("an approval after the rejection: exit %d\n%s", code, out)
		}
		if code, out := e.parked(t, stack.CredentialAdmin, "cancel", p.ID); code == cli.ExitOK || !strings.Contains(out, string(review.CodeConflict)) {
			t.Fatalf("a cancel after the rejection: exit %d\n%s", code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || out.Cause != "parked call rejected: "+reason {
			t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, tool.PermissionDenied)
		}
		if got, err := e.parks().Get(t.Context(), p.ID); err != nil || got.Status != park.StatusRejected || got.DecidedBy != local.LocalPrincipal(parkDecider) {
			t.Errorf("park %+v (%v), want REJECTED by the park decider", got, err)
		}
	})

	t.Run("a gated step's park is approved by its reviewers, never by the run's starter", func(t *testing.T) {
		restore(t, mcpserver.CreateTicket)
		describe(t, mcpserver.CreateTicket, "Creates a support ticket, now with a new form.")
		tickets := len(srv.Tickets())
		run := e.start(t, "park-ticket", map[string]string{"title": "parked: printer on fire"})
		id := e.pending(t, run, nil)
		if code, out := e.decideAs(t, ticketReviewer, "approve", id); code != cli.ExitOK {
			t.Fatalf("approve %s: exit %d\n%s", id, code, out)
		}
		p := e.awaitPark(t, run, "ticket", 1)
		if !p.Gated {
			t.Fatalf("park %+v, want gated", p)
		}
		code, out := e.parked(t, starter, "approve", p.ID)
		if code == cli.ExitOK || !strings.Contains(out, string(review.CodeSelfApproval)) || !strings.Contains(out, "four eyes") {
			t.Fatalf("the starter's approval of its gated park: exit %d\n%s", code, out)
		}
		if code, out := e.parked(t, ticketReviewer, "approve", p.ID); code != cli.ExitOK {
			t.Fatalf("the reviewer's approval: exit %d\n%s", code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED", out.Status, out.Error, out.Cause)
		}
		rows := rowsOf(e.toolRows(t, run, "crm.create_ticket"), ledger.StatusSucceeded)
		if len(rows) != 1 || rows[0].ParkID != p.ID || rows[0].ReviewID != id {
			t.Fatalf("SUCCEEDED rows %+v, want one under park %s and review %s", rows, p.ID, id)
		}
		if got := srv.Tickets()[tickets:]; len(got) != 1 || got[0].IdempotencyKey != rows[0].ExternalKey {
			t.Fatalf("tickets %+v, want one under %s", got, rows[0].ExternalKey)
		}
	})

	t.Run("a call whose definition changes again after each approval parks 5 times, and its sixth park is PARK_LIMIT", func(t *testing.T) {
		restore(t, mcpserver.LookupCustomer)
		start := time.Now()
		describe(t, mcpserver.LookupCustomer, "Returns a customer: version 1.")
		calls := len(srv.Calls())
		run := e.start(t, "park-lookup", map[string]string{"customer_id": "C-1"})
		for n := 1; n <= park.MaxParks; n++ {
			p := e.awaitPark(t, run, "lookup", n)
			// The server changes the tool again before the call is sent
			// again: the approved definition is no longer the server's.
			describe(t, mcpserver.LookupCustomer, fmt.Sprintf("Returns a customer: version %d.", n+1))
			if code, out := e.parked(t, parkDecider, "approve", p.ID); code != cli.ExitOK {
				t.Fatalf("approval %d (%s): exit %d\n%s", n, p.ID, code, out)
			}
		}
		out, events := e.follow(t, run)
		if out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || out.Cause != fmt.Sprintf("parked %d times", park.MaxParks) ||
			!slices.Contains(entered(events), "lookup-park-limit") {
			t.Fatalf("run %s %s %s via %v, want FAILED %s, parked %d times, through lookup-park-limit", out.Status, out.Error, out.Cause, entered(events), tool.PermissionDenied, park.MaxParks)
		}
		if got := e.parkedRowSKs(t, run); len(got) != park.MaxParks+1 {
			t.Fatalf("%d PARKED rows, want %d: the sixth park's row, refused", len(got), park.MaxParks+1)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 0 {
			t.Fatalf("the server received %+v, want no tools/call", sent)
		}
		t.Logf("5 parks and the refused sixth: %s", time.Since(start).Round(time.Second))
	})
}

// rowsOf are the rows of one status.
func rowsOf(rows []ledger.Row, st ledger.Status) []ledger.Row {
	var out []ledger.Row
	for _, r := range rows {
		if r.Status == st {
			out = append(out, r)
		}
	}
	return out
}

// parked runs `toolgate parked SUB ARGS` on the local stack as the local
// user as, and returns its exit code and what it printed on stdout and
// stderr (a refusal's code and message are on stderr).
func (e *env) parked(t *testing.T, as, sub string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	argv := append([]string{"parked", sub}, args...)
	code := e.cliRun(append(argv, "--endpoint", e.decisionEndpoint(), "--as", as), &out, &errb)
	return code, out.String() + errb.String()
}

// listedParks are the ids `toolgate parked list --json` lists to the local
// user as, of status (the CLI's default, parked, when "").
func (e *env) listedParks(t *testing.T, as, status string) []string {
	t.Helper()
	args := []string{"--json"}
	if status != "" {
		args = append(args, "--status", status)
	}
	code, out := e.parked(t, as, "list", args...)
	var res park.ListResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("parked list %v as %s: exit %d\n%s", args, as, code, out)
	}
	var ids []string
	for _, v := range res.Parks {
		ids = append(ids, v.ParkID)
	}
	return ids
}

// parkedRowSKs are the sort keys of run's PARKED rows, oldest first (a row
// item's sort key holds its start time after the call's seq).
func (e *env) parkedRowSKs(t *testing.T, run string) []string {
	t.Helper()
	out, err := local.DynamoDB(e.st.Dynamo.Endpoint()).Query(t.Context(), &dynamodb.QueryInput{
		TableName: aws.String(stack.Table), KeyConditionExpression: aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#status = :parked"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: table.Row.Key(run)}, ":parked": &types.AttributeValueMemberS{Value: string(ledger.StatusParked)},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("PARKED rows of %s: %v", run, err)
	}
	var sks []string
	for _, it := range out.Items {
		sk, _ := it[table.SK].(*types.AttributeValueMemberS)
		if sk == nil {
			t.Fatalf("a PARKED row of %s has no sort key", run)
		}
		sks = append(sks, sk.Value)
	}
	slices.Sort(sks)
	return sks
}

// awaitPark waits until run's step has parked its call the n-th time: the
// run has n PARKED rows, review-request recorded the park of the newest
// (park.ID of its key) PARKED with a task token, and the run is RUNNING,
// waiting in `<step>-park`. A poll with a deadline: the park appears when
// the execution, on the local endpoint, reaches it.
func (e *env) awaitPark(t *testing.T, run, step string, n int) *park.Park {
	t.Helper()
	store := e.parks()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != "RUNNING" {
			out, events := e.follow(t, run)
			t.Fatalf("run %s ended %s %s %s via %v, want it waiting in its park %d of %s", run, out.Status, out.Error, out.Cause, entered(events), n, step)
		}
		sks := e.parkedRowSKs(t, run)
		if len(sks) > n {
			t.Fatalf("run %s has %d PARKED rows, want %d", run, len(sks), n)
		}
		if len(sks) == n {
			id := park.ID(table.Row.Key(run), sks[n-1])
			p, err := store.Get(t.Context(), id)
			switch {
			case err == nil && p.Status == park.StatusParked && p.TaskToken != "":
				if p.RunID != run || p.Step != step || p.IdempotencyKey == "" {
					t.Fatalf("park %+v, want one of %s, step %s", p, run, step)
				}
				return p
			case err != nil && !errors.Is(err, parkdynamo.ErrNotFound):
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: no park %d of %s recorded (%d PARKED rows)", run, n, step, len(sks))
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: review-request records the park when the park Task invokes it
	}
}

// stepError is $.steps.<step>.error as run's state named state first
// received it: the error a parked call's step ended with, which its
// on_error route receives.
func (e *env) stepError(t *testing.T, run, state, step string) struct{ Error, Cause string } {
	t.Helper()
	var token *string
	for {
		h, err := e.sf.GetExecutionHistory(t.Context(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range h.Events {
			if d := ev.StateEnteredEventDetails; d != nil && aws.ToString(d.Name) == state {
				var in struct {
					Steps map[string]struct {
						Error struct{ Error, Cause string }
					}
				}
				if err := json.Unmarshal([]byte(aws.ToString(d.Input)), &in); err != nil {
					t.Fatalf("the input of %s: %v", state, err)
				}
				return in.Steps[step].Error
			}
		}
		if token = h.NextToken; token == nil {
			t.Fatalf("run %s never entered %s", run, state)
		}
	}
}
