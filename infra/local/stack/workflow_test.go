package stack_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// A workflow step starts a published Solution as a child run on the local
// stack (docs/solutions.md, "Workflow steps"): ticket-parent starts
// demo-ticket, which opens a ticket through the platform tools' proxy.

// parentsEnv registers the demo and parents toolsets (testdata/toolsets)
// on e's stack, and returns e, the toolsets directory their locks are in,
// and the directory of the Solutions on them.
func parentsEnv(t *testing.T, e *env) (_ *env, toolsets, solutions string) {
	t.Helper()
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	toolsets = toolsetsDir(t, root)
	b, err := os.ReadFile(filepath.Join(root, "testdata", "toolsets", "parents.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(toolsets, "parents.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	solutions = filepath.Join(root, "testdata", "toolsets", "solutions")
	e.ensureToolset(t, filepath.Join(toolsets, "demo.yaml"))
	e.ensureToolset(t, filepath.Join(toolsets, "parents.yaml"))
	return e, toolsets, solutions
}

// The parent is refused while its child is not published; its step,
// retried after the child closed, starts the child once and recovers its
// output; the child's rows name the parent; and a child started by hand,
// naming a parent that never recorded it, is refused at its first state.
func TestWorkflowStepStartsTheChildOnce(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	// A stack of its own: its first check needs a stage where demo-ticket
	// was never published, which other tests on the shared stack publish.
	e, toolsets, solutions := parentsEnv(t, startEnv(t, stack.StackOptions{}))

	t.Run("a parent whose child is not published is refused", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := e.cliRun([]string{"publish", filepath.Join(solutions, "ticket-parent.yaml"), "--toolsets", toolsets,
			"--endpoint", e.st.Endpoints["publish"], "--as", publisher}, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code == cli.ExitOK || !strings.Contains(out, "demo-ticket, which is not published in stage local") {
			t.Fatalf("publish ticket-parent before demo-ticket: exit %d\n%s", code, out)
		}
	})
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "ticket-parent.yaml"))

	t.Run("a retried start finds its child closed, starts no other, and takes its output", func(t *testing.T) {
		before := e.teamNow()
		name := fmt.Sprintf("wf-%d", time.Now().UnixNano())
		parent := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "ticket-parent"), name)
		// The first wait for the child loses its answer after the child
		// has closed: the Task's Retry starts it again under the same name.
		if err := local.WriteSFNFaults(e.st.SFNFaultsFile, local.SFNFaults{SyncAfterClose: map[string]int{parent: 1}}); err != nil {
			t.Fatal(err)
		}
		out, events := e.runParent(t, name, parent)
		var failed []string
		for _, ev := range events {
			if ev.Type == "TaskFailed" {
				failed = append(failed, ev.Error)
			}
		}
		states := entered(events)
		if !slices.Equal(failed, []string{"StepFunctions.AWSStepFunctionsException", "StepFunctions.ExecutionAlreadyExistsException"}) ||
			!slices.Contains(states, "open-claim") || !slices.Contains(states, "open-recover") || !slices.Contains(states, "open-output") {
			t.Fatalf("parent failures %v via %v: want the lost answer, the retried start finding the child, the claim finding it took its record, and the recovery", failed, states)
		}
		child := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID,
			deployment.StateMachineName(stack.Stage, "demo-ticket"), tool.ChildExecutionName(parent, "1"))
		children := e.executions(t, "demo-ticket")
		if len(children) != 1 || children[0] != child {
			t.Fatalf("demo-ticket's executions %v, want exactly the child %s", children, child)
		}
		var result struct {
			Ticket       string `json:"ticket"`
			ChildCreated bool   `json:"child_created"`
		}
		if err := json.Unmarshal([]byte(out.Output), &result); err != nil || result.Ticket == "" || !result.ChildCreated {
			t.Fatalf("the parent's output %s, want the child's ticket", out.Output)
		}
		tickets := e.ticketsSince(before)
		if len(tickets) != 1 || tickets[0].Key != e.externalKey(t, "lambda-tool", child, "1") || tickets[0].ID != result.Ticket {
			t.Fatalf("tickets %+v, want one under the external key of the child's %s/1", tickets, child)
		}
		rows := e.callRows(t, child)
		if len(rows) != 1 || rows[0].ParentRunID != parent {
			t.Fatalf("the child's create-ticket rows %+v, want one naming parent %s", rows, parent)
		}
	})

	t.Run("a child name taken before the parent starts it is given up for the next", func(t *testing.T) {
		before := e.teamNow()
		name := fmt.Sprintf("wf-%d", time.Now().UnixNano())
		parent := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "ticket-parent"), name)
		// Someone who learned the parent's run id starts the child's state
		// machine first, under the name the parent's step would use, with a
		// forged input: its execution fails its start check, and holds the
		// name.
		arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "demo-ticket"))
		forged := fmt.Sprintf(`{"input": {"title": "forged"}, "meta": {"parent_run_id": %q, "parent_seq": 1}}`, parent)
		held, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(arn),
			Name: aws.String(tool.ChildExecutionName(parent, "1")), Input: aws.String(forged)})
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := e.follow(t, aws.ToString(held.ExecutionArn)); out.Status != "FAILED" {
			t.Fatalf("the execution holding the name: %s, want FAILED", out.Status)
		}
		out, events := e.runParent(t, name, parent)
		states := entered(events)
		if !slices.Contains(states, "open-claim") || slices.Contains(states, "open-recover") {
			t.Fatalf("parent states %v: want the name claimed and given up, never the holder recovered", states)
		}
		child := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID,
			deployment.StateMachineName(stack.Stage, "demo-ticket"), tool.ChildAttemptName(parent, "1", 1))
		if !slices.Contains(e.executions(t, "demo-ticket"), child) {
			t.Fatalf("no child %s", child)
		}
		var result struct {
			Ticket string `json:"ticket"`
		}
		if err := json.Unmarshal([]byte(out.Output), &result); err != nil || result.Ticket == "" {
			t.Fatalf("the parent's output %s, want the child's ticket", out.Output)
		}
		tickets := e.ticketsSince(before)
		if len(tickets) != 1 || tickets[0].Key != e.externalKey(t, "lambda-tool", child, "1") || tickets[0].ID != result.Ticket {
			t.Fatalf("tickets %+v, want one under the second name's key %s/1", tickets, child)
		}
	})

	t.Run("a child started by hand is refused at its first state", func(t *testing.T) {
		before := e.teamNow()
		// A person with states:StartExecution forges a child's input: no
		// parent recorded this execution, so StarterChild refuses it
		// before any step runs.
		arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "demo-ticket"))
		forged := fmt.Sprintf(`{"input": {"title": "forged"}, "meta": {"parent_run_id": "arn:aws:states:%s:%s:execution:x:y", "parent_seq": 1}}`, local.Region, stack.AccountID)
		started, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(forged)})
		if err != nil {
			t.Fatal(err)
		}
		out, events := e.follow(t, aws.ToString(started.ExecutionArn))
		if out.Status != "FAILED" || out.Error != "REVIEW_UNAUTHENTICATED" || slices.Contains(entered(events), "ticket-seq") {
			t.Fatalf("forged child %s %s %s via %v, want FAILED REVIEW_UNAUTHENTICATED before any step", out.Status, out.Error, out.Cause, entered(events))
		}
		e.untouched(t, before)
	})
}

// runParent runs ticket-parent under execution name (its ARN parent)
// with a title, as the starter, and returns how it ended, which must be
// SUCCEEDED, and its history.
func (e *env) runParent(t *testing.T, name, parent string) (*runner.Outcome, []runner.Event) {
	t.Helper()
	input := filepath.Join(e.dir, name+".json")
	if err := os.WriteFile(input, []byte(`{"title": "from a parent"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := e.toolgate(t, "run", "ticket-parent", "--input", input, "--name", name, "--endpoint", e.st.SFN.Endpoint(),
		"--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter); code != cli.ExitOK {
		t.Fatalf("run ticket-parent: exit %d\n%s", code, out)
	}
	out, events := e.follow(t, parent)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("parent %s: %s %s", out.Status, out.Error, out.Cause)
	}
	return out, events
}

// timeoutOf is the TimeoutSeconds of the definition Solution name's state
// machine has in the local stack.
func (e *env) timeoutOf(t *testing.T, name string) int {
	t.Helper()
	arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, name))
	out, err := e.sf.DescribeStateMachine(t.Context(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var def struct{ TimeoutSeconds int }
	if err := json.Unmarshal([]byte(aws.ToString(out.Definition)), &def); err != nil || def.TimeoutSeconds <= 0 {
		t.Fatalf("%s's definition has no TimeoutSeconds (%v)", name, err)
	}
	return def.TimeoutSeconds
}

// A parent without policy.run_timeout_seconds is published with a run
// timeout derived from its child's published one (docs/solutions.md, "The
// run timeout"); a child recorded before run timeouts were is refused,
// naming it, until it is published again.
func TestWorkflowStepParentDerivesItsRunTimeoutFromTheChilds(t *testing.T) {
	e, toolsets, solutions := parentsEnv(t, sharedEnv(t))
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	src, err := os.ReadFile(filepath.Join(solutions, "ticket-parent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	derived := strings.Replace(strings.Replace(string(src), "solution: ticket-parent", "solution: derived-parent", 1), "  run_timeout_seconds: 86400\n", "  input_limit_bytes: 4096\n", 1)
	if derived == string(src) || strings.Contains(derived, "run_timeout_seconds:") {
		t.Fatal("ticket-parent.yaml no longer sets its run timeout as this test expects")
	}
	file := filepath.Join(e.dir, "derived-parent.yaml")
	if err := os.WriteFile(file, []byte(derived), 0o644); err != nil {
		t.Fatal(err)
	}
	e.publishOn(t, toolsets, file)
	child := e.timeoutOf(t, "demo-ticket")
	longest := resolver.ChildStartSeconds + child
	want := longest + max(resolver.RunTimeoutMarginMin, (longest*resolver.RunTimeoutMarginPercent+99)/100)
	if got := e.timeoutOf(t, "derived-parent"); got != want {
		t.Fatalf("derived-parent's TimeoutSeconds %d, want %d: demo-ticket's %d s, %d s to start it, and the margin", got, want, child, resolver.ChildStartSeconds)
	}

	// demo-ticket's record as a version published before run timeouts
	// were recorded left it.
	store := ledger.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table)
	rec, err := store.PublishedSolution(t.Context(), "demo-ticket")
	if err != nil {
		t.Fatal(err)
	}
	rec.RunTimeoutSeconds = 0
	if err := store.RecordPublished(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := e.cliRun([]string{"publish", file, "--toolsets", toolsets, "--endpoint", e.st.Endpoints["publish"], "--as", publisher}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if code == cli.ExitOK || !strings.Contains(out, "[run-timeout]") || !strings.Contains(out, "was published before run timeouts were recorded: publish demo-ticket again") {
		t.Fatalf("publish over a child recorded without its run timeout: exit %d\n%s", code, out)
	}
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, file)
}

// A workflow step starts its child only with an input the child's
// published version accepts (docs/solutions.md, "Workflow steps"):
// lenient-parent's schema lets a title through that demo-ticket's refuses,
// and review-request, checking the child's input against the child
// version's input record before it records the start, fails the step with
// REVIEW_INVALID_REQUEST, which the step's on_error catches. No child
// execution is started, nothing is recorded for it, the cause names the
// problem and not the value, and nothing reaches the team function. The
// same parent with a title the child accepts starts it.
func TestWorkflowStepStartsNoChildWhoseInputItRefuses(t *testing.T) {
	e, toolsets, solutions := parentsEnv(t, sharedEnv(t))
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "lenient-parent.yaml"))
	starts := dynamo.NewStore(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table)

	// run runs lenient-parent with title and returns the parent's ARN, how
	// it ended, its events, and its child's execution ARN.
	run := func(t *testing.T, title string) (string, *runner.Outcome, []runner.Event, string) {
		t.Helper()
		name := fmt.Sprintf("lenient-%d", time.Now().UnixNano())
		parent := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "lenient-parent"), name)
		input := filepath.Join(e.dir, name+".json")
		b, _ := json.Marshal(map[string]string{"title": title})
		os.WriteFile(input, b, 0o644)
		if out, code := e.toolgate(t, "run", "lenient-parent", "--input", input, "--name", name, "--endpoint", e.st.SFN.Endpoint(),
			"--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter); code != cli.ExitOK {
			t.Fatalf("run lenient-parent: exit %d\n%s", code, out)
		}
		out, events := e.follow(t, parent)
		child := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID,
			deployment.StateMachineName(stack.Stage, "demo-ticket"), tool.ChildExecutionName(parent, "1"))
		return parent, out, events, child
	}

	for _, c := range []struct {
		name, title string
		problem     string // in the Cause, Lambda's error object as JSON text
	}{
		{"an empty title", "", `input/title fails \"minLength\"`},
		{"a title over the child's maxLength", strings.Repeat("SECRET ", 40), `input/title fails \"maxLength\"`},
	} {
		t.Run(c.name+" fails the step with REVIEW_INVALID_REQUEST and starts nothing", func(t *testing.T) {
			before := e.teamNow()
			_, out, events, child := run(t, c.title)
			if out.Status != "SUCCEEDED" || !slices.Contains(entered(events), "refused") || slices.Contains(entered(events), "open") {
				t.Fatalf("parent %s %s %s via %v, want SUCCEEDED through on_error to refused, never entering open", out.Status, out.Error, out.Cause, entered(events))
			}
			var failed []runner.Event
			for _, ev := range events {
				if ev.Type == "TaskFailed" {
					failed = append(failed, ev)
				}
			}
			if len(failed) != 1 || failed[0].Error != "REVIEW_INVALID_REQUEST" || !strings.Contains(failed[0].Cause, c.problem) {
				t.Fatalf("task failures %+v, want the start record's one REVIEW_INVALID_REQUEST naming %s", failed, c.problem)
			}
			if strings.Contains(failed[0].Cause, "SECRET") {
				t.Fatalf("the cause quotes the child's input: %s", failed[0].Cause)
			}
			if children := e.executions(t, "demo-ticket"); slices.Contains(children, child) {
				t.Fatalf("demo-ticket's executions %v hold the refused child %s", children, child)
			}
			if _, err := starts.ChildStart(t.Context(), child); !errors.Is(err, review.ErrNotFound) {
				t.Fatalf("the refused child's start was recorded: %v", err)
			}
			e.untouched(t, before)
		})
	}

	t.Run("a title the child accepts starts it", func(t *testing.T) {
		// On the shared stack other tests ran demo-ticket before: the
		// executions this run added are the ones that count.
		earlier := e.executions(t, "demo-ticket")
		_, out, _, child := run(t, "from a lenient parent")
		if out.Status != "SUCCEEDED" {
			t.Fatalf("parent %s: %s %s", out.Status, out.Error, out.Cause)
		}
		var added []string
		for _, x := range e.executions(t, "demo-ticket") {
			if !slices.Contains(earlier, x) {
				added = append(added, x)
			}
		}
		if len(added) != 1 || added[0] != child {
			t.Fatalf("demo-ticket's new executions %v, want exactly the child %s", added, child)
		}
	})
}

// executions lists the execution ARNs of a Solution's state machine on the
// local stack.
func (e *env) executions(t *testing.T, solution string) []string {
	t.Helper()
	arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, solution))
	var out []string
	p := sfn.NewListExecutionsPaginator(e.sf, &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Executions {
			out = append(out, aws.ToString(x.ExecutionArn))
		}
	}
	return out
}
