package stack_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// parks is the park store on the stack's table, as review-request and
// review-decision read it.
func (e *env) parks() *parkdynamo.Store {
	return parkdynamo.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table, time.Now)
}

// awaitParked waits until run waits in step's park state (docs/parking.md,
// "The compiled states"): the execution RUNNING, having entered
// `<step>-park` after the step's Task failed with CALL_PARKED,
// and review-request's park route has recorded the park of the run's one
// PARKED row (park.ID of the row's key), listed as PARKED. It returns the
// park and the run's events until the park.
func (e *env) awaitParked(t *testing.T, run, step string) (*park.Park, []runner.Event) {
	t.Helper()
	p, out, events := e.settleParked(t, run, step)
	if p == nil {
		t.Fatalf("run %s ended %s %s %s via %v, want it waiting in %s-park", run, out.Status, out.Error, out.Cause, entered(events), step)
	}
	return p, events
}

// settleParked follows run until its step's Task failed with CALL_PARKED
// and either the run waits in `<step>-park` with its park recorded, as
// awaitParked checks (p), or the run ended (out, with all its events): a
// park route refusing the park fails the park Task, and so the run. A poll
// with a deadline: the park appears when the execution, on the local
// endpoint, reaches it.
func (e *env) settleParked(t *testing.T, run, step string) (p *park.Park, out *runner.Outcome, events []runner.Event) {
	t.Helper()
	out, events, parked := e.followToPark(t, run, step)
	if !parked {
		return nil, out, events
	}
	if parkedCause(events) == "" {
		t.Fatalf("Task failures %v, want %s before %s-park", taskFailures(events), tool.CallParked, step)
	}
	store := e.parks()
	deadline := time.Now().Add(45 * time.Second)
	for {
		d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != "RUNNING" {
			out, events := e.follow(t, run)
			return nil, out, events
		}
		// The run's PARKED row, and its park once recorded (a credential
		// refused after the claim has one too, of its attempt).
		if key, ok := e.parkedRowKeyIf(t, run); ok {
			rowPK, rowSK, _ := strings.Cut(key, "\n")
			id := park.ID(rowPK, rowSK)
			p, err := store.Get(t.Context(), id)
			if err == nil {
				listed, err := store.ListByStatus(t.Context(), park.StatusParked, func(q *park.Park) bool { return q.ID == id })
				if err != nil {
					t.Fatal(err)
				}
				if p.Status != park.StatusParked || p.RunID != run || p.Step != step || p.RowSK != rowSK || p.TaskToken == "" || len(listed) != 1 {
					t.Fatalf("park %+v (listed PARKED: %d), want PARKED for %s, step %s, row %s, with a task token", p, len(listed), run, step, rowSK)
				}
				if d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)}); err != nil || d.Status != "RUNNING" {
					t.Fatalf("run %s: %v (%v), want RUNNING in %s-park", run, d, err, step)
				}
				return p, nil, events
			}
			if !errors.Is(err, parkdynamo.ErrNotFound) {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s waits in %s-park, and no park is recorded for it", run, step)
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: review-request records the park when the park Task invokes it
	}
}

// followToPark follows run until it enters step's park state (parked) or
// ends (out), and returns its events so far.
func (e *env) followToPark(t *testing.T, run, step string) (out *runner.Outcome, events []runner.Event, parked bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	out, err := runner.Follow(ctx, e.sf, run, 200*time.Millisecond, func(ev runner.Event) {
		events = append(events, ev)
		if strings.HasSuffix(ev.Type, "StateEntered") && ev.State == step+"-park" {
			parked = true
			cancel() // the run entered its park: stop following
		}
	})
	if !parked && err != nil {
		t.Fatalf("run %s neither ended nor reached %s-park via %v: %v", run, step, entered(events), err)
	}
	return out, events, parked
}

// parkedCause is the cause of the step's Task's CALL_PARKED failure in
// events: what the run's error was before parks.
func parkedCause(events []runner.Event) string {
	for _, ev := range slices.Backward(events) {
		if ev.Type == "TaskFailed" && ev.Error == string(tool.CallParked) {
			return ev.Cause
		}
	}
	return ""
}

// stopParked ends the wait of run, parked as p, as the stack's park
// operator (stack.CredentialAdmin) cancels it through review-decision
// (toolgate parked cancel; docs/parking.md): the run is stopped (ABORTED)
// and the park is CANCELLED by the operator,
// while the call's PARKED rows stay one, the park's, and nothing of the
// call succeeded.
func (e *env) stopParked(t *testing.T, run string, p *park.Park) {
	t.Helper()
	if out, code := e.toolgate(t, "parked", "cancel", p.ID, "--reason", "the test ends the wait", "--endpoint", e.decisionEndpoint(), "--as", stack.CredentialAdmin); code != cli.ExitOK {
		t.Fatalf("parked cancel %s: exit %d\n%s", p.ID, code, out)
	}
	if out, _ := e.follow(t, run); out.Status != "ABORTED" {
		t.Fatalf("run %s %s %s, want ABORTED", out.Status, out.Error, out.Cause)
	}
	got, err := e.parks().Get(t.Context(), p.ID)
	if err != nil || got.Status != park.StatusCancelled || got.DecidedBy != local.LocalPrincipal(stack.CredentialAdmin) {
		t.Fatalf("park %+v (%v), want CANCELLED by %s", got, err, local.LocalPrincipal(stack.CredentialAdmin))
	}
	rows := e.toolRows(t, run, p.Tool)
	parked := slices.DeleteFunc(slices.Clone(rows), func(r ledger.Row) bool { return r.Status != ledger.StatusParked })
	if len(parked) != 1 || parked[0].IdempotencyKey != p.IdempotencyKey ||
		slices.ContainsFunc(rows, func(r ledger.Row) bool { return r.Status == ledger.StatusSucceeded }) {
		t.Fatalf("rows %+v, want the one PARKED row under %s, and no success", rows, p.IdempotencyKey)
	}
}

// refusedRows fails t unless the rows of run's calls of toolName are
// those of a call whose server refused its credential (docs/parking.md,
// "A credential refused after the claim"): refused before the claim (a
// listing), one PARKED row, attempt 0; after it (tools/call, an http
// request), the attempt's row FAILED CALL_PARKED at attempt 1, not
// applied, and the PARKED row of that attempt naming the credential's
// target and scope. It reports whether the refusal came after the claim.
func (e *env) refusedRows(t *testing.T, run, toolName string) (afterClaim bool) {
	t.Helper()
	rows := e.toolRows(t, run, toolName)
	parked := func(r ledger.Row, attempt int) bool {
		return r.Status == ledger.StatusParked && r.ErrorCode == string(tool.CallParked) && r.Attempt == attempt &&
			r.ParkCause == string(park.CredentialsExpired) && r.ParkTarget != "" && r.ParkScope != ""
	}
	switch {
	case len(rows) == 1 && parked(rows[0], 0):
		return false
	case len(rows) == 2 && rows[0].Status == ledger.StatusFailed && rows[0].ErrorCode == string(tool.CallParked) && rows[0].Attempt == 1 && parked(rows[1], 1):
		return true
	}
	t.Fatalf("rows %+v, want one PARKED at attempt 0 (refused before the claim), or FAILED %s at attempt 1 and its PARKED row (after it)", rows, tool.CallParked)
	return false
}

// endRefusedCall ends the run of a call whose server refused its
// credential with 401 invalid_token (RFC 6750 §3.1), so that the step's
// Task failed with CALL_PARKED: before the claim (a listing) or after it
// (tools/call, an http request), the call has a PARKED row (refusedRows)
// and the run waits in its park (docs/parking.md), which stopParked ends.
// It returns the Task's cause, the run's outcome (ABORTED) and its
// events.
func (e *env) endRefusedCall(t *testing.T, run, step, toolName string) (string, *runner.Outcome, []runner.Event) {
	t.Helper()
	p, events := e.awaitParked(t, run, step)
	cause := parkedCause(events)
	if p.Cause != park.CredentialsExpired || p.Target == "" || p.Scope == "" {
		t.Fatalf("park %+v, want %s naming its target and scope", p, park.CredentialsExpired)
	}
	e.refusedRows(t, run, toolName)
	e.stopParked(t, run, p)
	out, events := e.follow(t, run)
	return cause, out, events
}

// writerIn is what a test writes its files with: a function writing
// content to the file name in dir (mode 0644) and returning its path,
// failing t when it cannot.
func writerIn(t *testing.T, dir string) func(name, content string) string {
	return func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
}
