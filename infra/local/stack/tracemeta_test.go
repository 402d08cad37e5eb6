package stack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/functionconfig"
)

const traceMeta = `solution: e2e-trace-meta
version: 1
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/trace-meta.json"}
    next: again
  - id: again
    tool: structured-data-fetch
    with: {url: "http://DATA/trace-meta.json"}
`

// A run succeeds whether its execution input carries meta.traceparent or
// not (docs/solutions.md, "The execution input"): every path its states
// read exists from Init on, and each tool Task sends the run's
// traceparent as its envelope's trace member, null when the run has none.
// A meta.traceparent that is not a string is ignored as an absent one.
// On the local stack.
func TestRunsWithAndWithoutMetaTraceparent(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/trace-meta.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"title":"fetched"}`)
	})
	e := sharedEnv(t)
	e.route(t, "/trace-meta.json", mux)
	e.publish(t, "e2e-trace-meta", traceMeta)
	machine := fmt.Sprintf("arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-%s_e2e-trace-meta", stack.Stage)
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	for name, c := range map[string]struct {
		meta string // "": toolgate run starts it
		want any    // the tool Tasks' trace.traceparent
	}{
		"toolgate run, no TRACEPARENT, export off": {"", nil},
		"a traceparent":              {`{"traceparent":"` + carried + `"}`, carried},
		"a traceparent not a string": {`{"traceparent":{"a":1}}`, nil},
		"meta without it":            {`{}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			var run string
			if c.meta == "" {
				// The stack's CLI exports to its receiver, and would open a
				// root span: this run is started with export off.
				off := *e
				off.cli = maps.Clone(e.cli)
				off.cli[functionconfig.EnvTracing] = functionconfig.TracingOff
				delete(off.cli, "TRACEPARENT")
				run = off.start(t, "e2e-trace-meta", map[string]any{})
			} else {
				out, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String(fresh("trace-meta")),
					Input: aws.String(`{"input":{},"meta":` + c.meta + `}`)})
				if err != nil {
					t.Fatal(err)
				}
				run = aws.ToString(out.ExecutionArn)
			}
			if out := e.finish(t, run); out.Status != "SUCCEEDED" {
				t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
			}
			sent := e.toolTraces(t, run)
			if len(sent) != 2 {
				t.Fatalf("%d tool Tasks scheduled, want 2", len(sent))
			}
			for _, tp := range sent {
				if tp != c.want {
					t.Fatalf("a tool Task sent trace.traceparent %v, want %v", tp, c.want)
				}
			}
		})
	}
}

// toolTraces is the trace.traceparent of every tool Task the run
// scheduled, from its TaskScheduled events' parameters.
func (e *env) toolTraces(t *testing.T, run string) []any {
	t.Helper()
	var out []any
	pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if ev.Type != sfntypes.HistoryEventTypeTaskScheduled || ev.TaskScheduledEventDetails == nil {
				continue
			}
			var p struct {
				Payload struct {
					Tool  string
					Trace *struct {
						Traceparent any `json:"traceparent"`
					} `json:"trace"`
				}
			}
			if err := json.Unmarshal([]byte(aws.ToString(ev.TaskScheduledEventDetails.Parameters)), &p); err != nil {
				t.Fatal(err)
			}
			if p.Payload.Tool == "" {
				continue
			}
			if p.Payload.Trace == nil {
				t.Fatalf("a tool Task without a trace member: %s", aws.ToString(ev.TaskScheduledEventDetails.Parameters))
			}
			out = append(out, p.Payload.Trace.Traceparent)
		}
	}
	return out
}
