package stack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/deployment"
)

// tracedToolset has a tool of every kind a run reaches: the catalog's
// fetch and send-email, the local MCP server's lookup_customer and the
// platform tool create-ticket behind the proxy.
const tracedToolset = `toolset: traced
tools:
  send-email: {}
  structured-data-fetch:
    hosts: ["DATA"]
  crm:
    mcp: MCPURL
    admit: [lookup_customer]
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true, retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 2}}
  create-ticket:
    function: ${FunctionCreateTicket}
    description: Open a ticket in the local ticket service.
    input_schema: schemas/create-ticket.input.json
    output_schema:
      type: object
      required: [ticket_id]
      properties:
        ticket_id: {type: string}
        created: {type: boolean}
    idempotent: true
    policy: at_least_once
    review_required: false
    timeout_seconds: 30
    retry: {max_attempts: 3, interval_seconds: 2, backoff_rate: 2.0}
`

// tracedRun fetches (its first answer a 503, so the call takes two
// attempts), looks a customer up over MCP, opens a ticket through the
// proxy, and sends a reviewed e-mail. Its input, the fetched data and
// the e-mail body hold canaries.
const tracedRun = `solution: traced-run
version: 1
toolset: TOOLSET
input:
  type: object
  required: [title]
  properties: {title: {type: string, minLength: 1, maxLength: 200}}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/trace-canary.json"}
    retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 1}
    next: lookup
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "C-1"}
    output_limit_bytes: 16384
    next: ticket
  - id: ticket
    tool: create-ticket
    with: {title: "${input.title}", priority: normal}
    next: approve
  - id: approve
    review: {of: mail, timeout_seconds: 600}
    on_approve: mail
    on_reject: end
  - id: mail
    tool: send-email
    with: {to: ["traced@example.com"], subject: "traced", text: "CANARY-MAIL-5e1d ${steps.fetch.output.data.note} ${input.title}"}
`

// The canaries: a Solution's input, a tool's output (the fetched data,
// and the MCP server's answer) and an e-mail body.
var traceCanaries = []string{"CANARY-IN-83c2", "CANARY-OUT-0f9a", "CANARY-MAIL-5e1d", "Ada Lovelace"}

// runTraceID is the trace id a run continues: the one in its execution
// input's meta.traceparent, which toolgate run wrote (its root span's,
// the stack's CLI exporting to the receiver).
func (e *env) runTraceID(t *testing.T, run string) string {
	t.Helper()
	d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)})
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Input)), &in); err != nil || len(in.Meta.Traceparent) != 55 {
		t.Fatalf("%s's input has no traceparent: %s", run, aws.ToString(d.Input))
	}
	return in.Meta.Traceparent[3:35]
}

// spansNamed are the spans of spans whose name is name.
func spansNamed(spans []otlpreceiver.Span, name string) []otlpreceiver.Span {
	var out []otlpreceiver.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one is the one span of spans named name, under parent's span id.
func one(t *testing.T, spans []otlpreceiver.Span, name string, parent otlpreceiver.Span) otlpreceiver.Span {
	t.Helper()
	got := spansNamed(spans, name)
	if len(got) != 1 || got[0].ParentSpanID != parent.SpanID {
		t.Fatalf("spans named %q: %+v, want one under %s (%s)\n%s", name, got, parent.Name, parent.SpanID, otlpreceiver.Tree(spans))
	}
	return got[0]
}

// children are the spans of spans under parent.
func children(spans []otlpreceiver.Span, parent otlpreceiver.Span) []otlpreceiver.Span {
	var out []otlpreceiver.Span
	for _, s := range spans {
		if s.ParentSpanID == parent.SpanID {
			out = append(out, s)
		}
	}
	return out
}

// One run's spans form one tree in one trace: toolgate run's root span,
// a step span per tool call with its attempts under it (two for the
// retried fetch), the MCP server's span under the lookup's attempt, the
// team function's span under the proxy's attempt, and the review's
// creation and decision; no span holds a canary of the input, a tool's
// output or the e-mail body.
func TestARunIsOneTraceOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	var fetched atomic.Int64
	e.route(t, "/trace-canary.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fetched.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"note":"CANARY-OUT-0f9a"}`)
	}))
	toolsets := toolsetsDir(t, root)
	file := filepath.Join(toolsets, "traced.yaml")
	if err := os.WriteFile(file, []byte(strings.NewReplacer("MCPURL", e.st.MCP.URL(), "DATA", strings.TrimPrefix(e.st.DataURL, "http://")).Replace(tracedToolset)), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.ensureToolset(t, file)
	solution := filepath.Join(e.dir, "traced-run.yaml")
	src := strings.NewReplacer("TOOLSET", id, "DATA", strings.TrimPrefix(e.st.DataURL, "http://")).Replace(tracedRun)
	if err := os.WriteFile(solution, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e.publishOn(t, toolsets, solution)

	run := e.start(t, "traced-run", map[string]string{"title": "CANARY-IN-83c2"})
	e.decide(t, "approve", e.pending(t, run, nil))
	if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	traceID := e.runTraceID(t, run)
	spans := e.st.Traces.Trace(traceID)
	tree := otlpreceiver.Tree(spans)
	t.Logf("the run's trace %s:\n%s", traceID, tree)

	rootSpan := spansNamed(spans, "toolgate.run traced-run")
	if len(rootSpan) != 1 || rootSpan[0].Service != "toolgate-cli" {
		t.Fatalf("root spans %+v, want toolgate run's one\n%s", rootSpan, tree)
	}
	for _, s := range spans {
		if s.SpanID != rootSpan[0].SpanID && s.ParentSpanID == "" {
			t.Fatalf("span %s (%s) is a second root: the run is not one tree\n%s", s.Name, s.Service, tree)
		}
	}
	for _, c := range []struct{ step, tool string }{{"fetch", "structured-data-fetch"}, {"lookup", "crm.lookup_customer"}, {"ticket", "create-ticket"}, {"mail", "send-email"}} {
		step := one(t, spans, "toolgate.step "+c.step, rootSpan[0])
		attempts := children(spans, step)
		want := 1
		if c.step == "fetch" {
			want = 2
		}
		if len(attempts) != want {
			t.Fatalf("step %s has %d attempt spans, want %d\n%s", c.step, len(attempts), want, tree)
		}
		for _, a := range attempts {
			if a.Name != "toolgate.attempt "+c.tool || a.Attributes["toolgate.step"] != c.step {
				t.Fatalf("under step %s: %+v", c.step, a)
			}
		}
		last := attempts[len(attempts)-1]
		switch c.step {
		case "fetch":
			if attempts[0].Status.String() != "Error" || last.Status.String() != "Ok" {
				t.Fatalf("fetch attempts %s then %s, want an error then ok\n%s", attempts[0].Outcome(), last.Outcome(), tree)
			}
		case "lookup":
			one(t, spans, "tools/call lookup_customer", last)
		case "ticket":
			one(t, spans, "create-ticket", last)
		}
	}
	for _, name := range []string{"toolgate.review.create", "toolgate.review.decide"} {
		if got := spansNamed(spans, name); len(got) != 1 {
			t.Fatalf("spans named %s: %d, want 1\n%s", name, len(got), tree)
		}
	}

	// The canaries, in no span the receiver holds, of any trace.
	everything := e.st.Traces.Spans()
	for _, s := range everything {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b) + fmt.Sprintf("%+v", s)
		for _, c := range append(traceCanaries, run) {
			if strings.Contains(text, c) {
				t.Fatalf("span %s (%s) holds %q: %s", s.Name, s.Service, c, text)
			}
		}
	}
}

// A child run's spans are in its parent's trace: the child's step span
// is under the parent's workflow step span.
func TestAChildRunJoinsItsParentsTrace(t *testing.T) {
	e, toolsets, solutions := parentsEnv(t, sharedEnv(t))
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "ticket-parent.yaml"))
	name := fmt.Sprintf("traced-parent-%d", time.Now().UnixNano())
	parent := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, "ticket-parent"), name)
	e.runParent(t, name, parent)
	traceID := e.runTraceID(t, parent)
	spans := e.st.Traces.Trace(traceID)
	tree := otlpreceiver.Tree(spans)
	t.Logf("the parent's trace %s:\n%s", traceID, tree)
	steps := spansNamed(spans, "toolgate.step ticket")
	if len(steps) != 1 || len(spansNamed(spans, "create-ticket")) != 1 {
		t.Fatalf("the child's step span is not in its parent's trace\n%s", tree)
	}
	roots := 0
	for _, s := range spans {
		if s.ParentSpanID == "" {
			roots++
		}
	}
	if roots != 1 {
		t.Fatalf("the parent's trace has %d roots, want toolgate run's one\n%s", roots, tree)
	}
}
