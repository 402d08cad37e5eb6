package stack_test

import (
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
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/mcptool"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/testkit"
	"github.com/toolgate/toolgate/shared/tool"
)

// Forks on the local stack (docs/fork.md): a fork runs a corrected
// Solution on its parent's input, and each of its calls that matches a
// completed call of the parent takes that call's recorded result (a
// REUSED row naming the parent's key) instead of running the tool again.
// What the tools received (the SES emulator's e-mails, the MCP server's
// tools/call, the team function's tickets) says whether an effect was
// repeated; the ledger rows say which call was reused from where.

// forkCLI runs `toolgate fork PARENT --solution FILE` as the local name as,
// with more flags after (--input, --name, --toolsets, --rerun-reads), on
// e's stack, and returns everything it printed and its exit code. Every
// test forks through it, so that the command's flags are spelled once.
func (e *env) forkCLI(t *testing.T, as, parent, solution string, more ...string) (string, int) {
	t.Helper()
	args := append([]string{"fork", parent, "--solution", solution,
		"--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", as}, more...)
	var out testkit.Buffer
	code := e.cliRun(args, &out, &out)
	t.Logf("toolgate fork %s as %s: exit %d\n%s", parent, as, code, out.String())
	return out.String(), code
}

// reconcileCLI runs `toolgate ledger reconcile KEY` as the local name as
// with the outcome's flags (--applied [--result FILE] | --not-applied
// --reason TEXT), and returns everything it printed and its exit code.
func (e *env) reconcileCLI(t *testing.T, as, key string, outcome ...string) (string, int) {
	t.Helper()
	args := append([]string{"ledger", "reconcile", key, "--endpoint", e.decisionEndpoint(), "--as", as}, outcome...)
	var out testkit.Buffer
	code := e.cliRun(args, &out, &out)
	t.Logf("toolgate ledger reconcile %s as %s: exit %d\n%s", key, as, code, out.String())
	return out.String(), code
}

// forked forks parent as the run's starter under a fresh execution name
// and returns the fork's execution ARN (its Solution's state machine and
// that name), failing t unless the command exits 0.
func (e *env) forked(t *testing.T, parent, solution, file string, more ...string) string {
	t.Helper()
	name := fresh("fork")
	out, code := e.forkCLI(t, starter, parent, file, append([]string{"--name", name}, more...)...)
	fork := executionARN(solution, name)
	if code != cli.ExitOK || !strings.Contains(out, fork) {
		t.Fatalf("toolgate fork %s: exit %d, want 0 naming %s\n%s", parent, code, fork, out)
	}
	return fork
}

// notStarted fails t if execution arn exists.
func (e *env) notStarted(t *testing.T, arn string) {
	t.Helper()
	_, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *sfntypes.ExecutionDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("execution %s exists (%v), want none started", arn, err)
	}
}

// status is execution arn's status now.
func (e *env) status(t *testing.T, arn string) sfntypes.ExecutionStatus {
	t.Helper()
	d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	return d.Status
}

// oneRow is the one ledger row of run's call of toolName, failing t when
// the run has none or more than one.
func (e *env) oneRow(t *testing.T, run, toolName string) ledger.Row {
	t.Helper()
	rows := e.toolRows(t, run, toolName)
	if len(rows) != 1 {
		t.Fatalf("%s's rows of %s: %+v, want one", run, toolName, rows)
	}
	return rows[0]
}

// wantReused fails t unless r is the row of a call that took the
// recorded result of the parent's call under key from: REUSED, under the
// fork's own key, naming from.
func wantReused(t *testing.T, r ledger.Row, fork, from string) {
	t.Helper()
	if r.Status != ledger.StatusReused || r.ReusedFrom != from || !strings.HasPrefix(r.IdempotencyKey, fork+"/") {
		t.Fatalf("row %+v, want REUSED under a key of %s, reused from %s", r, fork, from)
	}
}

// wantRan fails t unless r is the row of a call of run that ran its tool
// and succeeded, reusing nothing.
func wantRan(t *testing.T, r ledger.Row, run string) {
	t.Helper()
	if r.Status != ledger.StatusSucceeded || r.ReusedFrom != "" || r.IdempotencyKey != run+"/"+string(r.Seq) {
		t.Fatalf("row %+v, want SUCCEEDED under %s/%s, reusing nothing", r, run, r.Seq)
	}
}

// noneReused fails t if any row of run is REUSED or names a parent call.
func (e *env) noneReused(t *testing.T, run string) {
	t.Helper()
	for _, r := range e.rows(t, run) {
		if r.Status == ledger.StatusReused || r.ReusedFrom != "" {
			t.Fatalf("%s's row %+v reused a call", run, r)
		}
	}
}

// recipients are the recipients of mails, sorted.
func recipients(mails []mail) []string {
	var to []string
	for _, m := range mails {
		to = append(to, m.Destination.To...)
	}
	slices.Sort(to)
	return to
}

// forkDigest is reviewedDigest as fork-digest, its review open 600 s.
var forkDigest = digestAs("fork-digest", "600")

// The shared stack's forks: what the parent did is not done again, what
// it did not do runs, and a fork is asked for by someone who may, never
// by a forged execution input.
func TestForkRepeatsNoEffectOfItsParent(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "fork-digest", forkDigest)
	write := writerIn(t, e.dir)
	digestFile := write("fork-digest-fixed.yaml", strings.ReplaceAll(forkDigest, "DATA", strings.TrimPrefix(e.st.DataURL, "http://")))

	// sent is run's completed fork-digest parent: a@example.com mailed.
	var sent string
	t.Run("a changed input runs the call it changes under the fork's own key, and reuses the rest", func(t *testing.T) {
		e.clearMails(t)
		sent = e.start(t, "fork-digest", map[string]string{"recipient": "a@example.com"})
		e.decide(t, "approve", e.pending(t, sent, nil))
		if out := e.finish(t, sent); out.Status != "SUCCEEDED" {
			t.Fatalf("parent %s: %s %s", out.Status, out.Error, out.Cause)
		}
		input := write("fork-b.json", `{"recipient": "b@example.com"}`)
		name := fresh("fork-input")
		fork := executionARN("fork-digest", name)
		out, code := e.forkCLI(t, starter, sent, digestFile, "--input", input, "--name", name)
		if code != cli.ExitOK || !strings.Contains(out, fork) || !strings.Contains(out, "input") {
			t.Fatalf("toolgate fork --input: exit %d, want 0 naming %s and saying the input changed\n%s", code, fork, out)
		}
		e.decide(t, "approve", e.pending(t, fork, nil))
		if got := e.finish(t, fork); got.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", got.Status, got.Error, got.Cause)
		}
		wantReused(t, e.oneRow(t, fork, "structured-data-fetch"), fork, e.oneRow(t, sent, "structured-data-fetch").IdempotencyKey)
		send := e.oneRow(t, fork, "send-email")
		wantRan(t, send, fork)
		if send.IdempotencyKey == e.oneRow(t, sent, "send-email").IdempotencyKey {
			t.Fatalf("the fork's send under its parent's key %s", send.IdempotencyKey)
		}
		if got := recipients(e.mails(t)); fmt.Sprint(got) != "[a@example.com b@example.com]" {
			t.Fatalf("mails to %v, want the parent's to a@ and the fork's to b@", got)
		}

		t.Run("a fork of that fork reuses through the chain", func(t *testing.T) {
			e.clearMails(t)
			again := e.forked(t, fork, "fork-digest", digestFile)
			e.decide(t, "approve", e.pending(t, again, nil))
			if got := e.finish(t, again); got.Status != "SUCCEEDED" {
				t.Fatalf("fork of the fork %s: %s %s", got.Status, got.Error, got.Cause)
			}
			// Its parent is the fork: the fetch it reused itself, and the
			// send it ran.
			wantReused(t, e.oneRow(t, again, "structured-data-fetch"), again, e.oneRow(t, fork, "structured-data-fetch").IdempotencyKey)
			wantReused(t, e.oneRow(t, again, "send-email"), again, send.IdempotencyKey)
			if m := e.mails(t); len(m) != 0 {
				t.Fatalf("mails %+v, want none", m)
			}
		})
	})

	t.Run("a forged forked_from in the execution input reuses nothing", func(t *testing.T) {
		if sent == "" {
			t.Skip("no parent")
		}
		// Someone allowed to start runs names a parent in the input and in
		// meta, and records the start of exactly that input: the Starter
		// answers the start record's facts, which name no parent, and
		// every call runs.
		e.clearMails(t)
		name := fresh("forged")
		run := executionARN("fork-digest", name)
		body, _ := json.Marshal(map[string]any{
			"input": map[string]any{"recipient": "a@example.com", "forked_from": sent},
			"meta":  map[string]any{"forked_from": sent, "rerun_reads": false},
		})
		_, digest, err := tool.InputDigest(body)
		if err != nil {
			t.Fatal(err)
		}
		recordStart(t, e, run, digest, e.signAs(t, starter, review.StartBinding(run, digest)))
		if _, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(stateMachineARN("fork-digest")),
			Name: aws.String(name), Input: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
		e.decide(t, "approve", e.pending(t, run, nil))
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		wantRan(t, e.oneRow(t, run, "structured-data-fetch"), run)
		wantRan(t, e.oneRow(t, run, "send-email"), run)
		e.noneReused(t, run)
		if got := recipients(e.mails(t)); fmt.Sprint(got) != "[a@example.com]" {
			t.Fatalf("mails to %v, want the run's own one", got)
		}
	})

	t.Run("a fork by someone who is neither the starter nor a fork operator is refused, and nothing is stopped or started", func(t *testing.T) {
		run := e.start(t, "fork-digest", map[string]string{"recipient": "a@example.com"})
		review := e.pending(t, run, nil) // the fetch is done; the run waits for its review
		name := fresh("fork-refused")
		out, code := e.forkCLI(t, "mallory", run, digestFile, "--name", name)
		if code == cli.ExitOK || !strings.Contains(out, "REVIEW_FORBIDDEN") {
			t.Fatalf("a fork by mallory: exit %d, want REVIEW_FORBIDDEN\n%s", code, out)
		}
		if s := e.status(t, run); s != sfntypes.ExecutionStatusRunning {
			t.Fatalf("the parent is %s, want RUNNING", s)
		}
		e.notStarted(t, executionARN("fork-digest", name))
		e.decide(t, "reject", review)
		if got := e.finish(t, run); got.Status != "SUCCEEDED" {
			t.Fatalf("the parent after its rejection: %s %s %s", got.Status, got.Error, got.Cause)
		}
	})

	t.Run("a for_each whose second iteration failed: its fork runs that iteration and the ones after, never the first again", func(t *testing.T) {
		each := strings.Replace(mailEach, "solution: e2e-each\n", "solution: fork-each\n", 1)
		e.publish(t, "fork-each", each)
		e.clearMails(t)
		parent := e.start(t, "fork-each", map[string]any{"people": eachPeople})
		e.decide(t, "approve", e.pendingTo(t, parent, "a@example.com"))
		e.decide(t, "reject", e.pendingTo(t, parent, "b@example.com"))
		if out := e.finish(t, parent); out.Status != "FAILED" || out.Error != "NotApproved" {
			t.Fatalf("parent %s %s %s, want FAILED NotApproved", out.Status, out.Error, out.Cause)
		}
		first := e.oneRow(t, parent, "send-email")
		if got := recipients(e.mails(t)); fmt.Sprint(got) != "[a@example.com]" {
			t.Fatalf("the parent mailed %v, want a@ only", got)
		}
		fork := e.forked(t, parent, "fork-each", write("fork-each.yaml", each))
		// Reviews are never reused: each iteration's is decided again.
		for _, p := range eachPeople {
			e.decide(t, "approve", e.pendingTo(t, fork, p["email"]))
		}
		out := e.finish(t, fork)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", out.Status, out.Error, out.Cause)
		}
		sends := e.toolRows(t, fork, "send-email")
		if len(sends) != 3 {
			t.Fatalf("the fork's send rows %+v, want three", sends)
		}
		wantReused(t, sends[0], fork, first.IdempotencyKey)
		wantRan(t, sends[1], fork)
		wantRan(t, sends[2], fork)
		// One e-mail per recipient, the parent's and the fork's together;
		// the fork's output collects the parent's message id for a@.
		mails := e.mails(t)
		if got := recipients(mails); fmt.Sprint(got) != "[a@example.com b@example.com c@example.com]" {
			t.Fatalf("mails to %v, want one per recipient", got)
		}
		var output struct {
			Sent []struct {
				To        string `json:"to"`
				MessageID string `json:"message_id"`
			}
		}
		if err := json.Unmarshal([]byte(out.Output), &output); err != nil || len(output.Sent) != 3 {
			t.Fatalf("output %s: %v", out.Output, err)
		}
		i := slices.IndexFunc(mails, func(m mail) bool { return slices.Contains(m.Destination.To, "a@example.com") })
		if output.Sent[0].MessageID != mails[i].MessageID {
			t.Fatalf("the fork collected message id %q for a@, the parent's e-mail is %q", output.Sent[0].MessageID, mails[i].MessageID)
		}
	})

	t.Run("a child run's effects are not repeated when its parent is forked", func(t *testing.T) {
		_, toolsets, solutions := parentsEnv(t, e)
		e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
		e.publishOn(t, toolsets, filepath.Join(solutions, "ticket-parent.yaml"))
		name := fresh("fork-wf")
		parent := executionARN("ticket-parent", name)
		pout, _ := e.runParent(t, name, parent)
		parentChild := executionARN("demo-ticket", tool.ChildExecutionName(parent, "1"))
		ticket := e.oneRow(t, parentChild, stack.TeamFunction)

		before := e.teamNow()
		fork := e.forked(t, parent, "ticket-parent", filepath.Join(solutions, "ticket-parent.yaml"), "--toolsets", toolsets)
		out, _ := e.follow(t, fork)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", out.Status, out.Error, out.Cause)
		}
		e.untouched(t, before)
		var want, got struct {
			Ticket string `json:"ticket"`
		}
		if json.Unmarshal([]byte(pout.Output), &want) != nil || json.Unmarshal([]byte(out.Output), &got) != nil || got.Ticket == "" || got.Ticket != want.Ticket {
			t.Fatalf("the fork's output %s, want the parent's ticket %s", out.Output, pout.Output)
		}
		forkChild := executionARN("demo-ticket", tool.ChildExecutionName(fork, "1"))
		r := e.oneRow(t, forkChild, stack.TeamFunction)
		wantReused(t, r, forkChild, ticket.IdempotencyKey)
		if r.ParentRunID != fork {
			t.Fatalf("the fork's child row %+v, want parent %s", r, fork)
		}
	})
}

// forkRecorded fails t unless parent's fork item (docs/fork.md) names
// fork, forked by the starter, and says run.fork stopped the parent
// (parent_status RUNNING), and the parent's execution was stopped.
func (e *env) forkRecorded(t *testing.T, parent, fork string) {
	t.Helper()
	out, err := local.DynamoDB(e.st.Dynamo.Endpoint()).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table),
		Key:            map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Fork.Key(parent)}, table.SK: &types.AttributeValueMemberS{Value: table.ForkSK}},
		ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var item struct {
		ForkRunID    string `dynamodbav:"fork_run_id"`
		ForkedBy     string `dynamodbav:"forked_by"`
		ParentStatus string `dynamodbav:"parent_status"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &item); err != nil || item.ForkRunID != fork || item.ForkedBy != local.LocalPrincipal(starter) || item.ParentStatus != "RUNNING" {
		t.Fatalf("the fork item of %s: %+v (%v), want fork %s by %s of a RUNNING parent", parent, item, err, fork, local.LocalPrincipal(starter))
	}
	if s := e.status(t, parent); s != sfntypes.ExecutionStatusAborted {
		t.Fatalf("the parent is %s, want ABORTED", s)
	}
}

// signAs is a caller proof of the local name as for b, as the CLI signs
// one (docs/identity.md, "The caller proof").
func (e *env) signAs(t *testing.T, as string, b caller.Binding) string {
	t.Helper()
	creds, err := e.keys(t).Credentials(as)
	if err != nil {
		t.Fatal(err)
	}
	p, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region, b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stateMachineARN is Solution solution's state machine on the local stack.
func stateMachineARN(solution string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, solution))
}

// forkCRM is a toolset of the local MCP server's lookup_customer (its URL
// for URL) and send-email.
const forkCRM = `toolset: NAME
tools:
  crm:
    mcp: URL
    admit: [lookup_customer]
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
  send-email: {}
`

// forkPark mails the recipient once approved, then looks the customer up:
// a call that parks after an e-mail went out when the server changed the
// tool.
const forkPark = `solution: fork-park
version: 1
toolset: TOOLSET
input:
  type: object
  required: [customer_id, recipient]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
    recipient: {type: string}
steps:
  - id: approve
    review: {of: send, timeout_seconds: 600}
    on_approve: send
    on_reject: end
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: "About ${input.customer_id}", text: "a look-up follows"}
    next: lookup
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
`

// Forks past what stops a run: a call parked on a changed MCP tool, a
// send whose outcome is unknown (send-email killed after SES accepted it,
// the crashtest build, armed once per file), and the same call to another
// destination. A stack of its own: mcp-call lists the server's tools before
// every call (the shared stack keeps a listing 5 s, and a tool changed
// there would park other tests' calls), and send-email is the crashtest
// build with 2 s leases.
func TestForkRunsPastParksAndUnknownOutcomesOnceReconciled(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	bootstraps := crashingSendEmail(t)
	armed := filepath.Join(t.TempDir(), "crash-armed")
	e := startEnv(t, stack.StackOptions{DataHandler: newDataServer().handler, Bootstraps: bootstraps,
		Env: map[string]string{"TOOLGATE_TEST_CRASH_AFTER_SEND": "1", "TOOLGATE_TEST_CRASH_ARMED": armed, "TOOLGATE_LEASE_SECONDS": "2",
			mcptool.EnvSchemaTTLSeconds: "0"}})
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	on := func(name, src, toolset string) string {
		return write(name+".yaml", string(stack.OnToolset([]byte(src), toolset)))
	}
	crm := e.registerToolset(t, write("fork-crm.yaml", strings.NewReplacer("NAME", "fork-crm", "URL", srv.URL()).Replace(forkCRM)))

	t.Run("the same call to another MCP server URL runs", func(t *testing.T) {
		lookup := string(stack.LookupSolution("fork-dest", "TOOLSET"))
		e.publishOn(t, dir, on("fork-dest", lookup, crm))
		calls := len(srv.Calls())
		parent := e.start(t, "fork-dest", map[string]string{"customer_id": "C-2"})
		if out, _ := e.follow(t, parent); out.Status != "SUCCEEDED" {
			t.Fatalf("parent %s: %s %s", out.Status, out.Error, out.Cause)
		}
		// The same server by another name: another destination.
		alias := e.registerToolset(t, write("fork-crm-alias.yaml", strings.NewReplacer("NAME", "fork-crm-alias", "URL", e.st.MCPTestURL()).Replace(forkCRM)))
		fork := e.forked(t, parent, "fork-dest", on("fork-dest-alias", lookup, alias), "--toolsets", dir)
		if out, _ := e.follow(t, fork); out.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", out.Status, out.Error, out.Cause)
		}
		wantRan(t, e.oneRow(t, fork, "crm.lookup_customer"), fork)
		sent := srv.Calls()[calls:]
		if len(sent) != 2 || metaKey(sent[0]) != e.externalKey(t, "mcp-call", parent, "1") || metaKey(sent[1]) != e.externalKey(t, "mcp-call", fork, "1") {
			t.Fatalf("the server received %+v, want the parent's call and the fork's, each under its own key", sent)
		}
	})

	t.Run("a run parked after its e-mail: the fork sends no second e-mail and calls the tool as it is now", func(t *testing.T) {
		e.publishOn(t, dir, on("fork-park", forkPark, crm))
		before, err := srv.Definition(mcpserver.LookupCustomer)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.SetDescription(mcpserver.LookupCustomer, "Looks a customer up, and now says so differently."); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := srv.SetDescription(mcpserver.LookupCustomer, before.Description); err != nil {
				t.Fatal(err)
			}
		}()
		e.clearMails(t)
		calls := len(srv.Calls())
		parent := e.start(t, "fork-park", map[string]string{"customer_id": "C-3", "recipient": "a@example.com"})
		e.decide(t, "approve", e.pending(t, parent, nil))
		e.awaitParked(t, parent, "lookup")
		sent := e.oneRow(t, parent, "send-email")
		if m := e.mails(t); len(m) != 1 {
			t.Fatalf("%d mails before the fork, want 1", len(m))
		}
		// The corrected Solution: the same steps on a toolset pinning the
		// server's definition as it is now.
		now := e.registerToolset(t, write("fork-crm-now.yaml", strings.NewReplacer("NAME", "fork-crm-now", "URL", srv.URL()).Replace(forkCRM)))
		fork := e.forked(t, parent, "fork-park", on("fork-park-now", forkPark, now), "--toolsets", dir)
		if out, _ := e.follow(t, parent); out.Status != "ABORTED" {
			t.Fatalf("the parent %s %s %s, want ABORTED by the fork", out.Status, out.Error, out.Cause)
		}
		e.decide(t, "approve", e.pending(t, fork, nil))
		if out, _ := e.follow(t, fork); out.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", out.Status, out.Error, out.Cause)
		}
		wantReused(t, e.oneRow(t, fork, "send-email"), fork, sent.IdempotencyKey)
		wantRan(t, e.oneRow(t, fork, "crm.lookup_customer"), fork)
		if m := e.mails(t); len(m) != 1 {
			t.Fatalf("%d mails after the fork, want still 1", len(m))
		}
		if got := srv.Calls()[calls:]; len(got) != 1 || got[0].Tool != mcpserver.LookupCustomer || metaKey(got[0]) != e.externalKey(t, "mcp-call", fork, string(e.oneRow(t, fork, "crm.lookup_customer").Seq)) {
			t.Fatalf("the server received %+v, want the fork's one lookup_customer", got)
		}
		e.forkRecorded(t, parent, fork)
	})

	e.publish(t, "fork-crash", strings.Replace(forkDigest, "solution: fork-digest", "solution: fork-crash", 1))
	crashFile := write("fork-crash.yaml", strings.ReplaceAll(strings.Replace(forkDigest, "solution: fork-digest", "solution: fork-crash", 1),
		"DATA", strings.TrimPrefix(e.st.DataURL, "http://")))
	// crashed runs fork-crash with its send armed to crash after SES
	// accepted it: the run fails, its send's record stays IN_PROGRESS (its
	// lease then passes), and SES holds the one e-mail. It returns the run
	// and the send's key.
	crashed := func(t *testing.T) (string, string) {
		t.Helper()
		if err := os.WriteFile(armed, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		e.clearMails(t)
		run := e.start(t, "fork-crash", map[string]string{"recipient": "a@example.com"})
		e.decide(t, "approve", e.pending(t, run, nil))
		if out := e.finish(t, run); out.Status != "FAILED" {
			t.Fatalf("run %s, want FAILED", out.Status)
		}
		r := e.oneRow(t, run, "send-email")
		if r.Status != ledger.StatusInProgress || len(e.mails(t)) != 1 {
			t.Fatalf("after the crash: row %+v, %d mails; want IN_PROGRESS and one e-mail", r, len(e.mails(t)))
		}
		return run, r.IdempotencyKey
	}
	// refusedUntilReconciled forks run, whose send under key is unknown,
	// under name: the fork is refused naming key and the command that
	// reconciles it, and nothing starts.
	refusedUntilReconciled := func(t *testing.T, run, key, name string) {
		t.Helper()
		out, code := e.forkCLI(t, starter, run, crashFile, "--name", name)
		if code == cli.ExitOK || !strings.Contains(out, key) || !strings.Contains(out, "toolgate ledger reconcile") {
			t.Fatalf("a fork over an unknown send: exit %d, want a refusal naming %s and toolgate ledger reconcile\n%s", code, key, out)
		}
		e.notStarted(t, executionARN("fork-crash", name))
	}

	t.Run("an unknown send blocks the fork until reconciled as not applied: then the fork sends it again", func(t *testing.T) {
		run, key := crashed(t)
		name := fresh("fork-unknown")
		refusedUntilReconciled(t, run, key, name)
		// Its starter may not reconcile it; the platform's operator may.
		if out, code := e.reconcileCLI(t, starter, key, "--not-applied", "--reason", "the starter says so"); code == cli.ExitOK {
			t.Fatalf("the run's starter reconciled its call: %s", out)
		}
		if out, code := e.reconcileCLI(t, stack.CredentialAdmin, key, "--not-applied", "--reason", "SES shows no message for the key"); code != cli.ExitOK {
			t.Fatalf("reconcile --not-applied: exit %d\n%s", code, out)
		}
		out, code := e.forkCLI(t, starter, run, crashFile, "--name", name)
		fork := executionARN("fork-crash", name)
		if code != cli.ExitOK || !strings.Contains(out, fork) {
			t.Fatalf("the fork once reconciled: exit %d\n%s", code, out)
		}
		e.decide(t, "approve", e.pending(t, fork, nil))
		if got := e.finish(t, fork); got.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", got.Status, got.Error, got.Cause)
		}
		wantReused(t, e.oneRow(t, fork, "structured-data-fetch"), fork, e.oneRow(t, run, "structured-data-fetch").IdempotencyKey)
		wantRan(t, e.oneRow(t, fork, "send-email"), fork)
		if m := e.mails(t); len(m) != 2 {
			t.Fatalf("%d mails, want 2: the crashed send's and the fork's", len(m))
		}
	})

	t.Run("an unknown send reconciled as applied with its result: the fork reuses it and sends nothing", func(t *testing.T) {
		run, key := crashed(t)
		name := fresh("fork-applied")
		refusedUntilReconciled(t, run, key, name)
		result := write("reconciled.json", `{"message_id": "found-in-ses-by-hand"}`)
		if out, code := e.reconcileCLI(t, stack.CredentialAdmin, key, "--applied", "--result", result, "--reason", "SES shows the message"); code != cli.ExitOK {
			t.Fatalf("reconcile --applied: exit %d\n%s", code, out)
		}
		out, code := e.forkCLI(t, starter, run, crashFile, "--name", name)
		fork := executionARN("fork-crash", name)
		if code != cli.ExitOK || !strings.Contains(out, fork) {
			t.Fatalf("the fork once reconciled: exit %d\n%s", code, out)
		}
		e.decide(t, "approve", e.pending(t, fork, nil))
		if got := e.finish(t, fork); got.Status != "SUCCEEDED" {
			t.Fatalf("fork %s: %s %s", got.Status, got.Error, got.Cause)
		}
		wantReused(t, e.oneRow(t, fork, "send-email"), fork, key)
		if m := e.mails(t); len(m) != 1 {
			t.Fatalf("%d mails, want the crashed send's one", len(m))
		}
	})
}
