// Command demo is `make run`: the whole governed flow on the local stack.
// It starts dynalite, the SES v2 emulator, every function under the Lambda
// RIE (the tools and review-request once per lane), the local Step
// Functions endpoint, the STS stand-in and the demo data server (on a free
// port); publishes testdata/solutions/demo-digest.yaml, a copy naming that
// port, through the publish function (which registers its toolset and
// records the publisher); subscribes a webhook receiver of its own on
// 127.0.0.1 (on the stack's webhook allow-list) to run.succeeded,
// review.requested and tool.schema_changed through toolgate webhooks subscribe as the stack's
// webhook admin, keeping only its secret's key in memory (subscribeHooks,
// on the receiver of infra/local/hookreceiver);
// starts a run as demo-author with a start proof; shows the pending review
// and prints the toolgate review console command a reviewer runs for it;
// shows the author refused as its reviewer (four eyes), and the reviewer's
// name signed with another account's keys refused too; approves it as
// demo-reviewer, whose caller proof the STS stand-in checks; follows the run to its end; prints the run's ledger rows,
// its estimated cost and the e-mail the SES emulator captured; prints the
// run's review.requested and run.succeeded as the receiver got them, each
// signature verified (showHooks); shows
// send-email refusing a hand-written toolset without its review; registers
// testdata/toolsets/demo.yaml through the publish function, publishes
// testdata/toolsets/solutions/demo-ticket.yaml on it, runs it (the platform
// tools' proxy invokes the example team function create-ticket) and prints
// the run's ledger row and the ticket; writes the demo toolset's
// declarations and prints the head of its tools.d.ts (declarationsDemo);
// runs ticket-parent, whose workflow
// step starts demo-ticket as a child run; registers the mcp-demo toolset
// (stack.MCPDemoToolset) against the local MCP server, publishes
// testdata/toolsets/solutions/customer-ticket.yaml on the id registered,
// runs it with its review approved, and prints each ledger row next to the
// _meta idempotency key the MCP server received for that call; publishes
// testdata/demo/demo-each.yaml, whose for_each sends one reviewed e-mail
// per recipient of the input, approves both reviews, and prints the list
// the loop collected and each iteration's send-email row with its key;
// publishes testdata/demo/demo-http.yaml (a copy naming the recording HTTP
// service's port), runs it with its review approved, and prints the http
// row next to the request the service received (httpTool); sets a
// toolset credential and runs a call presenting it (credentialsDemo);
// changes crm.lookup_customer's description on the local MCP server, runs
// a Solution calling it, which parks, lists the park, prints the
// tool.schema_changed its subscriber got, approves it as the run's starter
// and prints the ledger's one call under one key (parkedCall), then
// disables the subscription; runs testdata/demo/demo-reviews.yaml, whose
// review shows values, asks a question and notifies ops@example.com,
// prints the notice the SES emulator captured, answers it, approves the
// e-mail's own review with an edited subject, and prints the e-mail sent
// and the ledger row's reviewed and edited digests (richerReviews); prints the
// first run's trace as an indented tree from the spans every function
// exported to the stack's OTLP receiver (showTrace); and stops everything it started. Exit status 0 means the e-mail was sent
// exactly once, both of the first run's webhooks arrived signed with the
// subscription's secret, each ticket was opened once with its row on the ledger,
// every MCP call's row has the key the server received, and the loop sent
// one approved e-mail per recipient, each under a key of its own, and the
// parked call was sent once, after its approval, under the key it parked
// with, and the reviews demo's e-mail was sent once with the edited
// subject and the answer, after one notice.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/insider"
	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/localkeys"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/mcptool"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// The demo's two people, each with local keys the STS stand-in knows: the
// author starts the run, and a reviewer other than the author decides.
const (
	insiderName = "demo-insider"
	publisher   = "demo-publisher"
	author      = "demo-author"
	// outsideAccount is an AWS account that is not the local stack's.
	outsideAccount = "999999999999"
	reviewer       = "demo-reviewer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n== "+format+"\n", args...) }

// toolgate runs one CLI command in-process and returns its stdout; a
// non-zero exit is an error.
func toolgate(args ...string) (string, error) {
	var out, errb bytes.Buffer
	showCommand(args)
	code := cli.Run(args, &out, &errb)
	fmt.Print(out.String())
	if errb.Len() > 0 {
		fmt.Print(errb.String())
	}
	if code != cli.ExitOK {
		return out.String() + errb.String(), fmt.Errorf("toolgate %s: exit %d", args[0], code)
	}
	return out.String(), nil
}

// showCommand prints a CLI command line as a shell would take it.
func showCommand(args []string) {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, " '\"$") {
			shown[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	fmt.Printf("$ bin/toolgate %s\n", strings.Join(shown, " "))
}

func run(ctx context.Context) error {
	root, err := local.Root()
	if err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	step("starting the local stack (127.0.0.1 only)")
	// The webhook receiver listens first: the stack's webhook allow-list
	// names its port.
	hooks, err := hookreceiver.Start()
	if err != nil {
		return err
	}
	defer hooks.Close()
	st, err := stack.StartStack(ctx, stack.StackOptions{WebhookAllow: []string{hooks.Host()},
		// mcp-call keeps an MCP server's tool listing 5 s by default; the
		// parked call (parkedCall) changes a tool and calls it at once.
		Env: map[string]string{mcptool.EnvSchemaTTLSeconds: "0"},
		Log: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() {
		step("stopping the local stack")
		if err := st.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: stop: %v\n", err)
		}
		os.RemoveAll(st.Dir)
	}()
	for k, v := range st.Environ() {
		os.Setenv(k, v)
	}
	decision := st.Endpoints["review-decision"]

	step("publishing the demo Solution through the publish function (it runs the resolver, registers the toolset, records the publisher)")
	digest, err := onDataServer(st, "testdata/solutions/demo-digest.yaml")
	if err != nil {
		return err
	}
	if _, err := toolgate("publish", digest, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}

	step("subscribing a local webhook receiver (%s, on the stack's webhook allow-list) to %s, as %s, the stack's webhook admin", hooks.URL(hookPath), hookEvents, stack.WebhookAdmin)
	sub, err := subscribeHooks(st, hooks)
	if err != nil {
		return err
	}

	step("starting a run")
	name := fmt.Sprintf("demo-%d", time.Now().Unix())
	fmt.Printf("  (as %s: toolgate run first has review-request record the start (a caller proof bound to the execution and its input; no proof in the input))\n", author)
	arn, err := startRun(st, "demo-digest", "testdata/demo/input.json", name)
	if err != nil {
		return err
	}
	sf := sfn.New(sfn.Options{BaseEndpoint: aws.String(st.SFN.Endpoint()), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	if err := showStartRecord(ctx, st, sf, arn); err != nil {
		return err
	}

	step("waiting for the pending review")
	id, err := pendingReview(ctx, decision, arn, nil)
	if err != nil {
		return err
	}
	if _, err := toolgate("review", "show", id, "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}
	// The same review in the browser (docs/reviews.md, "The review
	// console").
	step("the review console: the same pending review, for a reviewer's browser")
	if err := showConsole(ctx, decision, id); err != nil {
		return err
	}

	step("four eyes: the run's starter cannot approve its own review")
	if _, err := toolgate("review", "approve", id, "--endpoint", decision, "--as", author); err == nil {
		return fmt.Errorf("the starter approved their own review")
	}

	step("four eyes against another AWS account's keys: STS answers for any account, toolgate admits its own")
	fmt.Printf("  (as %s/%s: the reviewer's name, signed with keys of an account that is not the deployment's)\n", outsideAccount, reviewer)
	if out, err := toolgate("review", "approve", id, "--reason", "from outside", "--endpoint", decision, "--as", outsideAccount+"/"+reviewer); err == nil || !strings.Contains(out, "[caller-account]") {
		return fmt.Errorf("a reviewer of another account was not refused for its account: %v %s", err, out)
	}

	step("approving it as %s, proven by the STS stand-in", reviewer)
	if _, err := toolgate("review", "approve", id, "--reason", "the digest reads right", "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}

	step("following the run to its end")
	outcome, err := follow(ctx, sf, arn, 2*time.Minute, false)
	if err != nil {
		return err
	}

	step("the run's ledger rows")
	if _, err := toolgate("ledger", arn, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return err
	}
	if _, err := toolgate("ledger", arn, "--cost", "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table, "--sfn-endpoint", st.SFN.Endpoint()); err != nil {
		return err
	}

	step("the e-mail the SES emulator captured")
	n, err := printMail(st.SES.Endpoint())
	if err != nil {
		return err
	}
	if outcome.Status != "SUCCEEDED" || n != 1 {
		return fmt.Errorf("the run ended %s with %d e-mails sent; want SUCCEEDED and exactly one", outcome.Status, n)
	}
	if err := showHooks(ctx, hooks, sub, arn, id); err != nil {
		return err
	}

	step("an insider's hand-written toolset cannot switch the gate off")
	if err := handWrittenToolset(ctx, st); err != nil {
		return err
	}
	if n, err := countMail(st.SES.Endpoint()); err != nil || n != 1 {
		return fmt.Errorf("after the hand-written toolset the SES emulator holds %d e-mails (%v); want still one", n, err)
	}

	if err := platformTool(ctx, st, sf); err != nil {
		return err
	}
	if err := declarationsDemo(st.Dir); err != nil {
		return err
	}
	if err := childWorkflow(ctx, st, sf); err != nil {
		return err
	}
	if err := mcpTools(ctx, st, sf); err != nil {
		return err
	}
	if err := observedShapes(ctx, st, sf); err != nil {
		return err
	}
	if err := forEach(ctx, st, sf); err != nil {
		return err
	}
	if err := httpTool(ctx, st, sf); err != nil {
		return err
	}
	if err := credentialsDemo(ctx, st, sf); err != nil {
		return err
	}
	parked, parkedSolution, err := parkedCall(ctx, st, sf, hooks, sub)
	if err != nil {
		return err
	}
	if err := forkParked(ctx, st, sf, parked, parkedSolution); err != nil {
		return err
	}
	if err := disableHooks(st, sub); err != nil {
		return err
	}
	if err := richerReviews(ctx, st, sf); err != nil {
		return err
	}
	if err := inboundEvents(ctx, st, sf); err != nil {
		return err
	}
	if err := showTrace(ctx, st, sf, arn); err != nil {
		return err
	}
	fmt.Println("\nThe e-mail was sent once, after its review; each ticket was opened once; every call is on the ledger, each MCP call under the key its server received; the loop sent one reviewed e-mail per recipient, each under its own key; the reviewed POST was applied once, under its row's external key; the MCP server that needs a token got the toolset's credential, which nothing recorded; the parked call waited for its approval and was sent once, under the key it parked with, and its run's fork reused it without calling the server again; the review notice went to ops@example.com only, and the e-mail approved with an edit was sent once, as edited; the signed billing event started one run however often it was sent, as its source's session, and the schedule started runs of its own.")
	return nil
}

// showTrace prints the trace of the demo's first run as an indented tree
// (span name, duration, outcome), from the spans every function and
// toolgate run exported to the stack's OTLP receiver; the run's trace id
// is in its execution input's meta.traceparent, which toolgate run wrote
// (docs/tracing.md). A trace that is not one tree, or that lacks a step
// span, is an error.
func showTrace(ctx context.Context, st *stack.Stack, sf *sfn.Client, arn string) error {
	step("the first run's trace: W3C trace context on every call, spans exported as OTLP/HTTP JSON to the stack's receiver %s", st.Traces.URL())
	d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return err
	}
	var in struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Input)), &in); err != nil || len(in.Meta.Traceparent) != 55 {
		return fmt.Errorf("the run's input holds no traceparent: %s", aws.ToString(d.Input))
	}
	traceID := in.Meta.Traceparent[3:35]
	spans := st.Traces.Trace(traceID)
	fmt.Printf("  trace %s (meta.traceparent %s):\n", traceID, in.Meta.Traceparent)
	for line := range strings.Lines(otlpreceiver.Tree(spans)) {
		fmt.Print("    " + line)
	}
	roots, steps := 0, 0
	for _, s := range spans {
		if s.ParentSpanID == "" {
			roots++
		}
		if strings.HasPrefix(s.Name, "toolgate.step ") {
			steps++
		}
	}
	if roots != 1 || steps == 0 {
		return fmt.Errorf("the run's trace has %d roots and %d step spans; want one tree with its steps", roots, steps)
	}
	return nil
}

// onDataServer writes a copy of the Solution file into the stack's
// directory with its data server's address, stack.DemoDataAddr, replaced by
// the one the stack's data server listens on (chosen when it started), and
// returns the copy's path.
func onDataServer(st *stack.Stack, file string) (string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	addr := strings.TrimPrefix(st.DataURL, "http://")
	copied := filepath.Join(st.Dir, filepath.Base(file))
	fmt.Printf("  (%s names the data server %s; the stack's listens on %s, so it publishes %s, a copy naming that)\n", file, stack.DemoDataAddr, addr, copied)
	if err := os.WriteFile(copied, stack.OnDataServer(src, st.DataURL), 0o644); err != nil {
		return "", err
	}
	return copied, nil
}

// platformTool registers the demo toolset, publishes a Solution on it,
// runs it, and checks that the proxy opened exactly one ticket with the
// create-ticket row on the run's ledger.
func platformTool(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("registering testdata/toolsets/demo.yaml through the publish function (its platform tool create-ticket is pinned as ${FunctionCreateTicket}, within the floor create-ticket's tags allow)")
	if _, err := toolgate("toolset", "register", "testdata/toolsets/demo.yaml", "--function-endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}

	step("publishing a Solution on that toolset (the publish function resolves ${FunctionCreateTicket} from the SSM stand-in)")
	if _, err := toolgate("publish", "testdata/toolsets/solutions/demo-ticket.yaml", "--toolsets", "testdata/toolsets", "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}

	step("running it: the proxy (lambda-tool) checks the call and its pin against create-ticket's floor (its tags), then invokes create-ticket through the Lambda stand-in")
	input := filepath.Join(st.Dir, "ticket-input.json")
	if err := os.WriteFile(input, []byte(`{"title": "demo: the digest was sent"}`+"\n"), 0o644); err != nil {
		return err
	}
	arn, err := startRun(st, "demo-ticket", input, fmt.Sprintf("ticket-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, false)
	if err != nil {
		return err
	}

	step("the run's ledger rows")
	rows, err := toolgate("ledger", arn, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table)
	if err != nil {
		return err
	}

	step("the ticket the ticket service holds")
	tickets := st.Tickets.Tickets()
	for _, t := range tickets {
		fmt.Printf("  %s  %q  priority %s  (idempotency key %s)\n", t.ID, t.Title, t.Priority, t.Key)
	}
	if outcome.Status != "SUCCEEDED" || len(tickets) != 1 || !strings.Contains(rows, "create-ticket") {
		return fmt.Errorf("the ticket run ended %s with %d tickets opened; want SUCCEEDED, exactly one, and its create-ticket row on the ledger", outcome.Status, len(tickets))
	}
	return nil
}

// childWorkflow registers the parents toolset, publishes ticket-parent,
// whose workflow step starts the published demo-ticket as a child run, runs
// it, and checks that the child opened one ticket and its row names the
// parent.
func childWorkflow(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("a workflow step: ticket-parent starts the published demo-ticket as a child run (testdata/toolsets/parents.yaml lists it)")
	if _, err := toolgate("toolset", "register", "testdata/toolsets/parents.yaml", "--function-endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	if _, err := toolgate("publish", "testdata/toolsets/solutions/ticket-parent.yaml", "--toolsets", "testdata/toolsets", "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	input := filepath.Join(st.Dir, "parent-input.json")
	if err := os.WriteFile(input, []byte(`{"title": "demo: opened by a child run"}`+"\n"), 0o644); err != nil {
		return err
	}
	before := len(st.Tickets.Tickets())
	parent, err := startRun(st, "ticket-parent", input, fmt.Sprintf("parent-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, parent, time.Minute, false)
	if err != nil {
		return err
	}
	fmt.Printf("  the parent's output: %s\n", outcome.Output)
	tickets := st.Tickets.Tickets()[before:]
	if outcome.Status != "SUCCEEDED" || len(tickets) != 1 {
		return fmt.Errorf("the parent run ended %s with %d tickets opened; want SUCCEEDED and exactly one", outcome.Status, len(tickets))
	}
	// The ticket service knows the call by its external key only: the
	// operator finds the child run from it through the run's key pointer.
	key := tickets[0].Key
	fmt.Printf("  the ticket's idempotency key (the child's call's external key): %s\n", key)
	step("the child run, found from the ticket's key, and its ledger rows (each records parent_run_id, the parent)")
	if _, err := toolgate("ledger", "--key", key, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return err
	}
	rows, err := ledgerRowsByKey(st, key)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("no rows for the run of external key %s", key)
	}
	child := rows[0].RunID
	fmt.Printf("  the child run: %s\n", child)
	if len(rows) != 1 || rows[0].ParentRunID != parent {
		return fmt.Errorf("the child run %s's rows do not name its parent %s", child, parent)
	}
	fmt.Printf("  its row's parent_run_id: %s\n", rows[0].ParentRunID)
	return nil
}

// mcpTools registers the mcp-demo toolset against the local MCP server,
// publishes customer-ticket on the id registered, runs it with its review
// approved by someone other than its starter, and prints each of the run's
// ledger rows next to the _meta idempotency key the server received for
// that call; they must match, one call each, and one ticket be opened.
func mcpTools(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	dir := filepath.Join(st.Dir, "toolsets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, "mcp-demo.yaml")
	if err := os.WriteFile(file, stack.MCPDemoToolset(st.MCP.URL()), 0o644); err != nil {
		return err
	}
	step("registering the mcp-demo toolset, whose server crm is the local MCP server %s: the publish function lists its tools and pins them", st.MCP.URL())
	fmt.Printf("  (its port, and so the id, are chosen when the stack starts; testdata/toolsets/mcp-demo.lock.json pins the same tools at https://mcp.crm.example.com/mcp)\n")
	if _, err := toolgate("toolset", "register", file, "--function-endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	var lock struct{ ID string }
	if b, err := os.ReadFile(filepath.Join(dir, "mcp-demo.lock.json")); err != nil || json.Unmarshal(b, &lock) != nil || lock.ID == "" {
		return fmt.Errorf("the registration wrote no lock with an id: %v", err)
	}

	step("publishing testdata/toolsets/solutions/customer-ticket.yaml on %s", lock.ID)
	src, err := os.ReadFile("testdata/toolsets/solutions/customer-ticket.yaml")
	if err != nil {
		return err
	}
	solution := filepath.Join(dir, "customer-ticket.yaml")
	if err := os.WriteFile(solution, stack.OnToolset(src, lock.ID), 0o644); err != nil {
		return err
	}
	if _, err := toolgate("publish", solution, "--toolsets", dir, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}

	step("running it: mcp-call checks each tool against its pin, then sends tools/call with the idempotency key in _meta")
	input := filepath.Join(st.Dir, "customer-input.json")
	if err := os.WriteFile(input, []byte(`{"customer_id": "C-1", "title": "demo: an MCP ticket"}`+"\n"), 0o644); err != nil {
		return err
	}
	calls, tickets := len(st.MCP.Calls()), len(st.MCP.Tickets())
	arn, err := startRun(st, "customer-ticket", input, fmt.Sprintf("mcp-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	if err := approveReviews(ctx, st.Endpoints["review-decision"], arn, 1, "the ticket reads right"); err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, false)
	if err != nil {
		return err
	}

	step("the run's ledger rows, and the _meta key the MCP server received for each call")
	if _, err := toolgate("ledger", arn, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return err
	}
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return err
	}
	sent := st.MCP.Calls()[calls:]
	var bad []string
	if len(rows) != len(sent) {
		bad = append(bad, fmt.Sprintf("%d rows, %d calls received", len(rows), len(sent)))
	}
	received := "tools/call _meta " + mcpmeta.IdempotencyKey
	for i, r := range rows {
		fmt.Printf("  seq %s  %-19s  %-*s  %s\n", r.Seq, r.Tool, len(received), "ledger row idempotency_key", r.IdempotencyKey)
		fmt.Printf("         %-19s  %-*s  %s\n", "", len(received), "ledger row external_key", r.ExternalKey)
		if i >= len(sent) {
			continue
		}
		key, _ := sent[i].Meta[mcpmeta.IdempotencyKey].(string)
		match := "the row's external key"
		if "crm."+sent[i].Tool != r.Tool || key != r.ExternalKey || key == r.IdempotencyKey || r.Status != ledger.StatusSucceeded {
			match = "DIFFERENT"
			bad = append(bad, fmt.Sprintf("%s row %s under %s, server call %s under %q", r.Tool, r.Status, r.ExternalKey, sent[i].Tool, key))
		}
		fmt.Printf("         %-19s  %s  %s  (%s)\n", sent[i].Tool, received, key, match)
	}
	opened := st.MCP.Tickets()[tickets:]
	for _, t := range opened {
		fmt.Printf("  the MCP server's ticket %s  %q  priority %s  (idempotency key %s)\n", t.ID, t.Title, t.Priority, t.IdempotencyKey)
	}
	if outcome.Status != "SUCCEEDED" || len(bad) > 0 || len(opened) != 1 {
		return fmt.Errorf("the MCP run ended %s with %d tickets opened; rows and calls: %v; want SUCCEEDED, one ticket, each row's external key the one its call carried", outcome.Status, len(opened), bad)
	}
	return nil
}

// httpTool publishes testdata/demo/demo-http.yaml, a copy naming the
// recording HTTP service's port, runs it for testdata/demo/demo-http-input.json,
// approves its review, and checks that the service received exactly one
// POST, under the Idempotency-Key the http row's external key is, and
// applied it once, with the row SUCCEEDED on the run's ledger.
func httpTool(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("the http tool (testdata/demo/demo-http.yaml): a POST to the local chat webhook after its review; its host entry declares Idempotency-Key, so the service applies the call's key once")
	src, err := os.ReadFile("testdata/demo/demo-http.yaml")
	if err != nil {
		return err
	}
	solution := filepath.Join(st.Dir, "demo-http.yaml")
	fmt.Printf("  (it names the service %s; the stack's listens on %s, so it publishes %s, a copy naming that)\n", stack.DemoHTTPAddr, st.HTTP.Host(), solution)
	if err := os.WriteFile(solution, stack.OnHTTPService(src, st.HTTP.URL()), 0o644); err != nil {
		return err
	}
	if _, err := toolgate("publish", solution, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	before, applied := len(st.HTTP.Requests()), st.HTTP.Applications()
	arn, err := startRun(st, "demo-http", "testdata/demo/demo-http-input.json", fmt.Sprintf("http-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	if err := approveReviews(ctx, st.Endpoints["review-decision"], arn, 1, "the message reads right"); err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, false)
	if err != nil {
		return err
	}

	step("the run's ledger row, and the request the recording service received")
	if _, err := toolgate("ledger", arn, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return err
	}
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return err
	}
	var bad []string
	var row ledger.Row
	for _, r := range rows {
		if r.Tool != "http" {
			continue
		}
		if row.Tool != "" || r.Status != ledger.StatusSucceeded {
			bad = append(bad, fmt.Sprintf("row %s %s", r.Seq, r.Status))
		}
		row = r
		fmt.Printf("  ledger seq %s  %s  %s  external key %s\n", r.Seq, r.Tool, r.Status, r.ExternalKey)
	}
	received := st.HTTP.Requests()[before:]
	for _, q := range received {
		// Its length and digest: a body never reaches a log, a row or this output.
		fmt.Printf("  service     %s %s  %d bytes sha256:%.12s…  Idempotency-Key %s  answered %d  applied %v (the service's application %s)\n",
			q.Method, q.Path, q.BodyBytes, q.BodySHA256, q.Key, q.Status, q.Applied, q.Application)
	}
	switch {
	case len(received) != 1:
		bad = append(bad, fmt.Sprintf("the service received %d requests", len(received)))
	case received[0].Method != "POST" || received[0].Path != "/hooks/chat" || !received[0].Applied:
		bad = append(bad, fmt.Sprintf("the service received %s %s, applied %v", received[0].Method, received[0].Path, received[0].Applied))
	case row.ExternalKey == "" || received[0].Key != row.ExternalKey:
		bad = append(bad, fmt.Sprintf("Idempotency-Key %q, the row's external key %q", received[0].Key, row.ExternalKey))
	}
	if n := st.HTTP.Applications() - applied; outcome.Status != "SUCCEEDED" || row.Tool == "" || n != 1 || len(bad) > 0 {
		return fmt.Errorf("the http run ended %s with %d applications; %v; want SUCCEEDED, one SUCCEEDED http row, one POST applied under the row's external key", outcome.Status, n, bad)
	}
	return nil
}

// forEach publishes testdata/demo/demo-each.yaml, runs it for the two
// recipients of testdata/demo/demo-each-input.json, approves each
// iteration's review, and checks that the loop sent each e-mail once under
// a key of its own (seq <loop's value>.<index>.1) and collected both
// recipients with the decision approve.
func forEach(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("for_each (testdata/demo/demo-each.yaml): a wait, then a review and a send-email per recipient; collect binds ${reviews.approve.decision}; on_timeout and on_error by code route what is not approved")
	if _, err := toolgate("publish", "testdata/demo/demo-each.yaml", "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	var input struct{ Recipients []string }
	if b, err := os.ReadFile("testdata/demo/demo-each-input.json"); err != nil || json.Unmarshal(b, &input) != nil || len(input.Recipients) != 2 {
		return fmt.Errorf("testdata/demo/demo-each-input.json holds no list of two recipients (%v)", err)
	}
	arn, err := startRun(st, "demo-each", "testdata/demo/demo-each-input.json", fmt.Sprintf("each-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	if err := approveReviews(ctx, st.Endpoints["review-decision"], arn, len(input.Recipients), "the loop's e-mail reads right"); err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, true)
	if err != nil {
		return err
	}
	var output struct{ Sent []json.RawMessage }
	var bad []string
	if err := json.Unmarshal([]byte(outcome.Output), &output); err != nil || len(output.Sent) != len(input.Recipients) {
		bad = append(bad, fmt.Sprintf("output %s", outcome.Output))
	}
	for i, raw := range output.Sent {
		fmt.Printf("  output sent[%d]: %s\n", i, raw)
		var got struct{ To, Decision string }
		if json.Unmarshal(raw, &got) != nil || i >= len(input.Recipients) || got.To != input.Recipients[i] || got.Decision != "approve" {
			bad = append(bad, fmt.Sprintf("sent[%d] %s", i, raw))
		}
	}
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for _, r := range rows {
		if r.Tool != "send-email" {
			continue
		}
		fmt.Printf("  ledger seq %s  %s  %s  idempotency key %s\n", r.Seq, r.Tool, r.Status, r.IdempotencyKey)
		if r.Status != ledger.StatusSucceeded || keys[r.IdempotencyKey] {
			bad = append(bad, fmt.Sprintf("row %s %s under %s", r.Seq, r.Status, r.IdempotencyKey))
		}
		keys[r.IdempotencyKey] = true
	}
	if outcome.Status != "SUCCEEDED" || len(keys) != len(input.Recipients) || len(bad) > 0 {
		return fmt.Errorf("the loop's run ended %s with %d send-email keys; %v; want SUCCEEDED, one SUCCEEDED send-email row per recipient under distinct keys, and each recipient collected with decision approve", outcome.Status, len(keys), bad)
	}
	return nil
}

// handWrittenToolset writes, with a plain PutItem, a toolset whose
// send-email has no review_required (its id the correct digest), and calls
// send-email under it with no approval: the function re-runs the
// registration check on the load and refuses the call.
func handWrittenToolset(ctx context.Context, st *stack.Stack) error {
	ts, err := insider.Ungated()
	if err != nil {
		return err
	}
	fmt.Printf("  PutItem TOOLSET#%s (send-email pinned with review_required false)\n", ts.ID)
	if err := insider.PutTheirs(ctx, local.DynamoDB(st.Dynamo.Endpoint()), stack.Table, ts); err != nil {
		return err
	}
	// The insider calls the direct lane as an operator would, with a valid
	// caller proof and a run id in their own namespace: what refuses the
	// call is the toolset check, not the lane.
	keys, err := localkeys.Load(st.KeysFile)
	if err != nil {
		return err
	}
	creds, err := keys.Credentials(insiderName)
	if err != nil {
		return err
	}
	run := lane.DirectRunPrefix(local.LocalPrincipal(insiderName)) + fmt.Sprintf("insider-%d", time.Now().UnixNano())
	input := map[string]any{"to": []string{"team@example.com"}, "subject": "no review", "text": "sent around the gate?"}
	raw, _ := json.Marshal(input)
	_, digest, err := tool.InputDigest(raw)
	if err != nil {
		return err
	}
	proof, err := caller.Sign(ctx, credentials.StaticCredentialsProvider{Value: creds}, st.STS.Endpoint(), local.Region,
		caller.Binding{Action: caller.ActionInvoke, Target: run + "/1", InputDigest: digest}, time.Now())
	if err != nil {
		return err
	}
	envelope, _ := json.Marshal(map[string]any{"tool": "send-email", "toolset_id": ts.ID, "run_id": run, "seq": 1, "step": "send",
		"idempotency_key": run + "/1", "attempt": 1, "tolerate_duplicates": false, "input": input, "caller_proof": proof})
	fmt.Printf("  send-email (direct lane, as %s, with a valid caller proof) with that toolset and no approval:\n", insiderName)
	resp, err := http.Post(st.Endpoints["send-email"]+local.InvokePath, "application/json", bytes.NewReader(envelope))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct{ ErrorType, ErrorMessage string }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.ErrorType != string(tool.PermissionDenied) ||
		!strings.Contains(answer.ErrorMessage, "[toolset-review-required]") {
		return fmt.Errorf("send-email under a hand-written toolset answered %+v (%v); want TOOL_PERMISSION_DENIED [toolset-review-required]", answer, err)
	}
	fmt.Printf("  %s: %s\n", answer.ErrorType, answer.ErrorMessage)
	return nil
}

// startRun starts a run of the published solution as the author, with the
// input file and execution name given, and returns the execution's ARN.
// showStartRecord prints the run's start record, which review-request
// wrote before the execution started (docs/identity.md, "Four eyes"), and
// checks that the execution's input holds no caller proof.
func showStartRecord(ctx context.Context, st *stack.Stack, sf *sfn.Client, arn string) error {
	rec, err := dynamo.NewStore(local.DynamoDB(st.Dynamo.Endpoint()), stack.Table).RunStart(ctx, arn)
	if err != nil {
		return fmt.Errorf("the run's start record: %w", err)
	}
	fmt.Printf("  start record START#<execution ARN>: starter %s, input %s, to start by %s\n",
		rec.Starter, rec.InputDigest, rec.Deadline.UTC().Format(time.RFC3339))
	ex, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return err
	}
	if in := aws.ToString(ex.Input); strings.Contains(in, "X-Amz-Signature") || strings.Contains(in, "start_proof") {
		return fmt.Errorf("the execution's input holds a caller proof")
	}
	fmt.Println("  the execution's input (and so its history) holds no caller proof: {input, meta} only")
	return nil
}

func startRun(st *stack.Stack, solution, input, name string) (string, error) {
	out, err := toolgate("run", solution, "--input", input, "--name", name,
		"--endpoint", st.SFN.Endpoint(), "--stage", stack.Stage, "--params", st.ParamsFile, "--as", author)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "started")), nil
}

// ledgerRows reads a run's ledger rows (toolgate ledger --json), in call order.
// ledgerRowsByKey is ledgerRows of the run external key key names
// (toolgate ledger --key).
func ledgerRowsByKey(st *stack.Stack, key string) ([]ledger.Row, error) {
	var listed, errb bytes.Buffer
	if code := cli.Run([]string{"ledger", "--json", "--key", key, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table}, &listed, &errb); code != cli.ExitOK {
		return nil, fmt.Errorf("ledger --json --key %s: exit %d: %s", key, code, errb.String())
	}
	var rows []ledger.Row
	if err := json.Unmarshal(listed.Bytes(), &rows); err != nil {
		return nil, fmt.Errorf("ledger --json --key %s: %w", key, err)
	}
	return rows, nil
}

func ledgerRows(st *stack.Stack, runARN string) ([]ledger.Row, error) {
	var listed, errb bytes.Buffer
	if code := cli.Run([]string{"ledger", "--json", runARN, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table}, &listed, &errb); code != cli.ExitOK {
		return nil, fmt.Errorf("ledger --json %s: exit %d: %s", runARN, code, errb.String())
	}
	var rows []ledger.Row
	if err := json.Unmarshal(listed.Bytes(), &rows); err != nil {
		return nil, fmt.Errorf("ledger --json %s: %w", runARN, err)
	}
	return rows, nil
}

// approveReviews approves n reviews of the run as the reviewer, each as it
// appears.
func approveReviews(ctx context.Context, decision, runARN string, n int, reason string) error {
	decided := map[string]bool{}
	for range n {
		id, err := pendingReview(ctx, decision, runARN, decided)
		if err != nil {
			return err
		}
		if _, err := toolgate("review", "approve", id, "--reason", reason, "--endpoint", decision, "--as", reviewer); err != nil {
			return err
		}
		decided[id] = true
	}
	return nil
}

// pendingReview lists pending reviews until one for the run appears that
// is not in skip.
func pendingReview(ctx context.Context, decision, runARN string, skip map[string]bool) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var out, errb bytes.Buffer
		if cli.Run([]string{"review", "list", "--json", "--endpoint", decision, "--as", reviewer}, &out, &errb) == cli.ExitOK {
			var res review.ListResult
			if json.Unmarshal(out.Bytes(), &res) == nil {
				for _, v := range res.Reviews {
					if v.RunID == runARN && !skip[v.ReviewID] {
						what := fmt.Sprintf("%s of step %q", v.Tool, v.Of)
						if v.Of == "" && v.Tool == "" {
							// The index projects no kind: a review naming no tool step
							// and no tool shows values (docs/reviews.md, "Kinds of review").
							what = fmt.Sprintf("shows values (step %s)", v.Step)
						}
						fmt.Printf("$ bin/toolgate review list --endpoint %s --as %s\n  %s  %s  %s  (decide with: bin/toolgate review approve %s --endpoint %s --as NAME)\n", decision, reviewer, v.ReviewID, v.Status, what, v.ReviewID, decision)
						return v.ReviewID, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("no pending review for %s within a minute", runARN)
}

// countMail returns how many e-mails the SES emulator holds.
func countMail(endpoint string) (int, error) {
	m, err := local.SentMails(context.Background(), endpoint)
	return len(m), err
}

func printMail(endpoint string) (int, error) {
	mails, err := local.SentMails(context.Background(), endpoint)
	if err != nil {
		return 0, err
	}
	for _, m := range mails {
		fmt.Printf("  From:    %s\n  To:      %s\n  Subject: %s\n\n  %s\n", m.From, strings.Join(m.Destination.To, ", "), m.Subject, strings.TrimSpace(m.Body.Text))
	}
	return len(mails), nil
}

// follow prints each state an execution enters, and each error, until it
// ends or limit passes, then its status. With oneLine the states are
// printed together once the execution ends, on one line, each once in the
// order first entered, with how often it was entered when more than once
// (a for_each's body states, once per item).
func follow(ctx context.Context, sf *sfn.Client, arn string, limit time.Duration, oneLine bool) (*runner.Outcome, error) {
	fctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var states []string
	entered := map[string]int{}
	outcome, err := runner.Follow(fctx, sf, arn, 300*time.Millisecond, func(e runner.Event) {
		switch {
		case strings.HasSuffix(e.Type, "StateEntered") && oneLine:
			if entered[e.State]++; entered[e.State] == 1 {
				states = append(states, e.State)
			}
		case strings.HasSuffix(e.Type, "StateEntered"):
			fmt.Printf("  → %s\n", e.State)
		case e.Error != "":
			fmt.Printf("  ✗ %s %s\n", e.Type, e.Error)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(states) > 0 {
		for i, s := range states {
			if entered[s] > 1 {
				states[i] = fmt.Sprintf("%s ×%d", s, entered[s])
			}
		}
		fmt.Printf("  → %s\n", strings.Join(states, " → "))
	}
	fmt.Printf("  %s\n", outcome.Status)
	return outcome, nil
}
