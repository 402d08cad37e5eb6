package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/examples/create-ticket/ticketservice"
	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
)

// ticketReviewer decides the gated ticket runs, which starter starts.
const ticketReviewer = "ticket-reviewer"

// toolsetsDir copies the demo toolset files (testdata/toolsets: demo.yaml,
// demo-reviewed.yaml, the schema they name) into a directory of the test's,
// so that `toolgate toolset register` writes its locks there and not into
// the source tree.
func toolsetsDir(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"demo.yaml", "demo-reviewed.yaml", filepath.Join("schemas", "create-ticket.input.json")} {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "toolsets", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lockID is the id a lock file pins.
func lockID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &lock); err != nil || lock.ID == "" {
		t.Fatalf("%s pins no id: %v", path, err)
	}
	return lock.ID
}

// registerToolset registers a toolset file through the publish function,
// as `make run` does (toolgate toolset register --function-endpoint --as),
// and returns the id of the lock it wrote beside the file.
func (e *env) registerToolset(t *testing.T, file string) string {
	t.Helper()
	out, code := e.toolgate(t, "toolset", "register", file, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher)
	if code != cli.ExitOK || !strings.Contains(out, "registered ts_") || !strings.Contains(out, "by "+local.LocalPrincipal(publisher)) {
		t.Fatalf("register %s: exit %d\n%s", file, code, out)
	}
	return lockID(t, strings.TrimSuffix(file, ".yaml")+".lock.json")
}

// ensureToolset registers a toolset file through the publish function
// as registerToolset does, or finds it registered already (on the shared
// stack, by another test), and returns the id of the lock it wrote beside
// the file, which must be the id registered.
func (e *env) ensureToolset(t *testing.T, file string) string {
	t.Helper()
	out, code := e.toolgate(t, "toolset", "register", file, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher)
	id := lockID(t, strings.TrimSuffix(file, ".yaml")+".lock.json")
	if code != cli.ExitOK || !(strings.Contains(out, "registered "+id+" ") && strings.Contains(out, "by "+local.LocalPrincipal(publisher)) ||
		strings.Contains(out, "already registered "+id+" ")) {
		t.Fatalf("register %s: exit %d\n%s", file, code, out)
	}
	return id
}

// publishOn publishes a Solution file naming a registered toolset, whose
// lock is in toolsets, through the publish function.
func (e *env) publishOn(t *testing.T, toolsets, file string) {
	t.Helper()
	if out, code := e.toolgate(t, "publish", file, "--toolsets", toolsets, "--endpoint", e.st.Endpoints["publish"], "--as", publisher); code != cli.ExitOK {
		t.Fatalf("publish %s: exit %d\n%s", file, code, out)
	}
}

// follow waits for the run to end and returns how it ended and every
// event of its history.
func (e *env) follow(t *testing.T, run string) (*runner.Outcome, []runner.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var events []runner.Event
	out, err := runner.Follow(ctx, e.sf, run, 200*time.Millisecond, func(ev runner.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s via %v", run, out.Status, entered(events))
	return out, events
}

// entered is the states the run entered, in order.
func entered(events []runner.Event) []string {
	var states []string
	for _, ev := range events {
		if strings.HasSuffix(ev.Type, "StateEntered") {
			states = append(states, ev.State)
		}
	}
	return states
}

// callRows are the run's ledger rows of create-ticket.
func (e *env) callRows(t *testing.T, run string) []ledger.Row {
	t.Helper()
	var rows []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == stack.TeamFunction {
			rows = append(rows, r)
		}
	}
	return rows
}

// teamSeen is where the stack's record of the team function's requests
// and the ticket service's stood at one moment: what a run did is what
// was added after it.
type teamSeen struct {
	sent, requests, tickets int
}

func (e *env) teamNow() teamSeen {
	return teamSeen{sent: len(e.st.Lambda.Sent(stack.TeamFunction)), requests: e.st.Tickets.Requests(), tickets: len(e.st.Tickets.Tickets())}
}

// sentSince is what the proxy sent the team function since s, each
// payload decoded as the documented request.
func (e *env) sentSince(t *testing.T, s teamSeen) []platformtool.Request {
	t.Helper()
	var out []platformtool.Request
	for _, b := range e.st.Lambda.Sent(stack.TeamFunction)[s.sent:] {
		var req platformtool.Request
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("the proxy sent the team function a request that is not JSON: %v", err)
		}
		out = append(out, req)
	}
	return out
}

// ticketsSince is the tickets the ticket service stored since s.
func (e *env) ticketsSince(s teamSeen) []ticketservice.Ticket {
	return e.st.Tickets.Tickets()[s.tickets:]
}

// untouched fails the test if anything reached the team function or the
// ticket service since s.
func (e *env) untouched(t *testing.T, s teamSeen) {
	t.Helper()
	now := e.teamNow()
	if now != s {
		t.Fatalf("the team function was invoked %d times, the ticket service received %d requests and stored %d tickets; want none",
			now.sent-s.sent, now.requests-s.requests, now.tickets-s.tickets)
	}
}

// decideAs decides a review as a local name and returns the CLI's exit
// code and everything it printed.
func (e *env) decideAs(t *testing.T, as, verb, id string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := e.cliRun([]string{"review", verb, id, "--reason", "platform " + verb, "--endpoint", e.decisionEndpoint(), "--as", as}, &out, &errb)
	return code, out.String() + errb.String()
}

// Solutions on registered toolsets call the example platform tool,
// create-ticket, through toolgate's proxy (lambda-tool) on the local stack:
// ungated and gated, retried under one idempotency key, and refused by the
// pinned input schema before the team function runs.
func TestSolutionsCallThePlatformToolThroughTheProxy(t *testing.T) {
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	e := sharedEnv(t)
	toolsets := toolsetsDir(t, root)
	solutions := filepath.Join(root, "testdata", "toolsets", "solutions")

	// The base first: the publish function refuses a derived toolset whose
	// base is not registered. Another test on the shared stack, or an
	// earlier run of this one (-count), may have registered either.
	demo := e.ensureToolset(t, filepath.Join(toolsets, "demo.yaml"))
	reviewed := e.ensureToolset(t, filepath.Join(toolsets, "demo-reviewed.yaml"))
	// The Solutions pin the committed locks' ids.
	for id, lock := range map[string]string{demo: "demo.lock.json", reviewed: "demo-reviewed.lock.json"} {
		if want := lockID(t, filepath.Join(root, "testdata", "toolsets", lock)); id != want {
			t.Fatalf("registered %s, but testdata/toolsets/%s pins %s", id, lock, want)
		}
	}
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "reviewed-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "loose-ticket.yaml"))

	t.Run("ungated: the run opens one ticket under its idempotency key", func(t *testing.T) {
		before := e.teamNow()
		run := e.start(t, "demo-ticket", map[string]string{"title": "ungated: printer on fire"})
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		rows := e.callRows(t, run)
		if len(rows) != 1 {
			t.Fatalf("create-ticket rows %+v, want one", rows)
		}
		r := rows[0]
		if r.Status != ledger.StatusSucceeded || r.ToolsetID != demo || r.Seq != "1" || r.IdempotencyKey != run+"/1" || r.Attempt != 1 || r.ReviewID != "" {
			t.Fatalf("create-ticket row %+v, want SUCCEEDED under toolset %s, key %s/1, attempt 1, no review", r, demo, run)
		}
		tickets := e.ticketsSince(before)
		if len(tickets) != 1 || tickets[0].Key != r.ExternalKey || r.ExternalKey != e.externalKey(t, "lambda-tool", run, "1") || tickets[0].Title != "ungated: printer on fire" || tickets[0].Priority != "normal" {
			t.Fatalf("tickets %+v, want one under the external key %s", tickets, r.ExternalKey)
		}
		if sent := e.sentSince(t, before); len(sent) != 1 || sent[0].IdempotencyKey != r.ExternalKey || sent[0].RunID != strings.TrimSuffix(r.ExternalKey, "/1") || strings.Contains(sent[0].RunID, "execution") || sent[0].Step != "ticket" {
			t.Fatalf("the team function was sent %+v", sent)
		}
	})

	t.Run("gated: approved by another person, one ticket, the approval on its row", func(t *testing.T) {
		before := e.teamNow()
		run := e.start(t, "reviewed-ticket", map[string]string{"title": "gated: approved"})
		id := e.pending(t, run, nil)
		// The run waits for its review: nothing has reached the team function.
		e.untouched(t, before)
		if code, out := e.decideAs(t, starter, "approve", id); code == cli.ExitOK || !strings.Contains(out, "REVIEW_SELF_APPROVAL") {
			t.Fatalf("the run's starter approved its own review: exit %d\n%s", code, out)
		}
		if code, out := e.decideAs(t, ticketReviewer, "approve", id); code != cli.ExitOK {
			t.Fatalf("approve %s: exit %d\n%s", id, code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		rows := e.callRows(t, run)
		if len(rows) != 1 {
			t.Fatalf("create-ticket rows %+v, want one", rows)
		}
		r := rows[0]
		if r.Status != ledger.StatusSucceeded || r.ToolsetID != reviewed || r.IdempotencyKey != run+"/1" || r.ReviewID != id || r.Approver != local.LocalPrincipal(ticketReviewer) {
			t.Fatalf("create-ticket row %+v, want SUCCEEDED under toolset %s, key %s/1, approved in %s by %s", r, reviewed, run, id, local.LocalPrincipal(ticketReviewer))
		}
		if tickets := e.ticketsSince(before); len(tickets) != 1 || tickets[0].Key != r.ExternalKey || r.ExternalKey != e.externalKey(t, "lambda-tool", run, "1") || tickets[0].Priority != "high" {
			t.Fatalf("tickets %+v, want one under the external key %s", tickets, r.ExternalKey)
		}
	})

	t.Run("gated: rejected, no ticket, the run ends through on_reject", func(t *testing.T) {
		before := e.teamNow()
		run := e.start(t, "reviewed-ticket", map[string]string{"title": "gated: rejected"})
		if code, out := e.decideAs(t, ticketReviewer, "reject", e.pending(t, run, nil)); code != cli.ExitOK {
			t.Fatalf("reject: exit %d\n%s", code, out)
		}
		out, events := e.follow(t, run)
		// reviewed-ticket's on_reject is end: the Rejected Succeed state.
		states := entered(events)
		if out.Status != "SUCCEEDED" || len(states) == 0 || states[len(states)-1] != "Rejected" || slices.Contains(states, "ticket") {
			t.Fatalf("run %s via %v, want SUCCEEDED through Rejected, never entering ticket", out.Status, states)
		}
		if rows := e.callRows(t, run); len(rows) != 0 {
			t.Fatalf("a rejected review reached create-ticket: %+v", rows)
		}
		e.untouched(t, before)
	})

	t.Run("a retry under one key reaches the team function with that key and opens one ticket", func(t *testing.T) {
		before := e.teamNow()
		// The first POST stores its ticket and answers 503, as if its answer
		// were lost: create-ticket answers TOOL_UPSTREAM_UNAVAILABLE, maybe
		// applied, which the Task's Retry (demo's pinned retry) retries.
		e.st.Tickets.LoseNextAnswer()
		run := e.start(t, "demo-ticket", map[string]string{"title": "retried: disk full"})
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		var scheduled int
		var failed []string
		for _, ev := range events {
			switch ev.Type {
			case "TaskScheduled":
				scheduled++
			case "TaskFailed":
				failed = append(failed, ev.Error)
			}
		}
		if scheduled != 2 || !slices.Equal(failed, []string{string(tool.UpstreamUnavailable)}) {
			t.Fatalf("the history has %d Tasks scheduled and Task failures %v; want the ticket Task retried once after %s", scheduled, failed, tool.UpstreamUnavailable)
		}
		rows := e.callRows(t, run)
		if len(rows) != 2 || rows[0].Attempt != 1 || rows[1].Attempt != 2 || rows[0].IdempotencyKey != run+"/1" || rows[1].IdempotencyKey != rows[0].IdempotencyKey ||
			rows[0].Status != ledger.StatusUnknown || rows[0].ErrorCode != string(tool.UpstreamUnavailable) || rows[1].Status != ledger.StatusSucceeded {
			t.Fatalf("create-ticket rows %+v, want attempt 1 UNKNOWN %s and attempt 2 SUCCEEDED under key %s/1", rows, tool.UpstreamUnavailable, run)
		}
		sent := e.sentSince(t, before)
		if len(sent) != 2 || sent[0].IdempotencyKey != e.externalKey(t, "lambda-tool", run, "1") || sent[1].IdempotencyKey != sent[0].IdempotencyKey || sent[0].Attempt != 1 || sent[1].Attempt != 2 {
			t.Fatalf("the team function was sent %+v, want attempts 1 and 2 under key %s/1", sent, run)
		}
		if tickets := e.ticketsSince(before); len(tickets) != 1 || tickets[0].Key != e.externalKey(t, "lambda-tool", run, "1") {
			t.Fatalf("tickets %+v, want one under the external key of %s/1", tickets, run)
		}
		if !strings.Contains(out.Output, `"created":false`) {
			t.Fatalf("the run's output %s: want the retry to find the first attempt's ticket (created false)", out.Output)
		}
	})

	t.Run("an input the pinned schema refuses never reaches the team function", func(t *testing.T) {
		before := e.teamNow()
		// loose-ticket takes titles up to 1000 characters; create-ticket's
		// pinned input schema at most 200.
		run := e.start(t, "loose-ticket", map[string]string{"title": strings.Repeat("x", 201)})
		if out, _ := e.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.InputInvalid) {
			t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, tool.InputInvalid)
		}
		rows := e.callRows(t, run)
		// Refused before the call's claim: no attempt was made.
		if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(tool.InputInvalid) || rows[0].Attempt != 0 ||
			rows[0].ToolsetID != demo || rows[0].IdempotencyKey != run+"/1" {
			t.Fatalf("create-ticket rows %+v, want one REFUSED %s, attempt 0, under toolset %s, key %s/1", rows, tool.InputInvalid, demo, run)
		}
		e.untouched(t, before)
	})
}

// The owners' floor on the local stack: create-ticket tagged to require a
// review (StackOptions.TeamFunctionTags). Registering demo, which pins it
// with review_required false, is refused; and a run on demo registered
// before the owners required the review fails TOOL_PERMISSION_DENIED at
// the proxy's check, with a REFUSED row and nothing sent to create-ticket
// or the ticket service.
func TestThePlatformToolFloorOnTheLocalStack(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	reviewed := platformtool.Floor{AtLeastOnce: true, Idempotent: true}.Tags()
	reviewed[platformtool.TagTool] = stack.Stage
	e := startEnv(t, stack.StackOptions{TeamFunctionTags: reviewed})
	toolsets := toolsetsDir(t, root)
	demoFile := filepath.Join(toolsets, "demo.yaml")

	t.Run("registration refuses a pin looser than the floor", func(t *testing.T) {
		listed := e.st.Lambda.TagsListed(stack.TeamFunction)
		var out, errb bytes.Buffer
		code := e.cliRun([]string{"toolset", "register", demoFile, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher}, &out, &errb)
		t.Logf("toolgate toolset register: exit %d\n%s%s", code, out.String(), errb.String())
		if code != cli.ExitErrors {
			t.Fatalf("exit %d, want %d", code, cli.ExitErrors)
		}
		for _, says := range []string{publishapi.CodeRefused, "[" + publish.RuleFloor + "]", "tool create-ticket", "review_required false", "tag toolgate:review=required"} {
			if !strings.Contains(errb.String(), says) {
				t.Errorf("the refusal does not say %q", says)
			}
		}
		if _, err := os.Stat(filepath.Join(toolsets, "demo.lock.json")); !os.IsNotExist(err) {
			t.Errorf("a lock was written: %v", err)
		}
		if e.st.Lambda.TagsListed(stack.TeamFunction) == listed {
			t.Error("the publish function did not read create-ticket's tags")
		}
	})

	t.Run("a run on a toolset registered before the owners required the review is refused before the call", func(t *testing.T) {
		// The owners tighten the floor once demo is registered and a
		// Solution published on it.
		e.st.Lambda.SetTags(stack.TeamFunction, stack.TeamFunctionTags())
		demo := e.registerToolset(t, demoFile)
		e.publishOn(t, toolsets, filepath.Join(root, "testdata", "toolsets", "solutions", "demo-ticket.yaml"))
		e.st.Lambda.SetTags(stack.TeamFunction, reviewed)

		before := e.teamNow()
		listed := e.st.Lambda.TagsListed(stack.TeamFunction)
		run := e.start(t, "demo-ticket", map[string]string{"title": "over the floor"})
		out, _ := e.follow(t, run)
		t.Logf("the run's cause: %s", out.Cause)
		if out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || !strings.Contains(out.Cause, "toolgate:review=required") {
			t.Fatalf("run %s %s %s, want FAILED %s naming toolgate:review=required", out.Status, out.Error, out.Cause, tool.PermissionDenied)
		}
		rows := e.callRows(t, run)
		// Refused by the check before the claim: no attempt was made.
		if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(tool.PermissionDenied) || rows[0].Attempt != 0 ||
			rows[0].ToolsetID != demo || rows[0].IdempotencyKey != run+"/1" {
			t.Fatalf("create-ticket rows %+v, want one REFUSED %s, attempt 0, under toolset %s, key %s/1", rows, tool.PermissionDenied, demo, run)
		}
		e.untouched(t, before)
		if e.st.Lambda.TagsListed(stack.TeamFunction) == listed {
			t.Error("the proxy did not read create-ticket's tags")
		}
	})
}
