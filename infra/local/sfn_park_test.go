package local_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// parkFunctions stands in for mcp-call and review-request behind the
// local Step Functions endpoint, for the compiled park states
// (docs/parking.md, "The compiled states"). It is a fake, not the
// functions under the RIE: what the test checks is how the endpoint runs
// the states, and the fake makes a call park on demand (mcp-call parks a
// call whose envelope's park_id is null) without an MCP server whose tool
// changed, and records the park Task's token without a table.
// review-request answers PARK_LIMIT for a run whose name holds "limit",
// and the Starter's start check (tool.RunStartCheck: a Solution with a
// step that can park starts with the Starter) of an execution of this
// test's with a fixed starter, as if toolgate run had recorded its start.
type parkFunctions struct {
	mu     sync.Mutex
	calls  map[string][]map[string]any // run id -> mcp-call envelopes
	parks  map[string]map[string]any   // run id -> the park Task's payload
	tokens map[string]string           // run id -> the park Task's token
}

func (f *parkFunctions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	answer := func(v any) { json.NewEncoder(w).Encode(v) }
	switch r.URL.Path {
	case "/mcp-call":
		run, _ := body["run_id"].(string)
		f.calls[run] = append(f.calls[run], body)
		if body["park_id"] == nil {
			answer(map[string]string{"errorType": "CALL_PARKED", "errorMessage": "the tool's definition changed on its server"})
			return
		}
		answer(map[string]any{"customer_id": "C-1"})
	case "/review-request":
		if body["check"] != nil {
			arn, _ := body["execution_arn"].(string)
			if body["check"] != tool.RunStartCheckName || !strings.HasPrefix(arn, "arn:aws:states:us-east-1:000000000000:execution:lookup:") {
				answer(map[string]string{"errorType": "REVIEW_UNAUTHENTICATED", "errorMessage": "no start recorded"})
				return
			}
			answer(map[string]any{"starter": "arn:aws:iam::000000000000:user/starter", "end_user": nil, "forked_from": nil, "rerun_reads": false})
			return
		}
		req, _ := body["park"].(map[string]any)
		run, _ := req["run_id"].(string)
		if strings.Contains(run, "limit") {
			answer(map[string]string{"errorType": park.ErrorLimit, "errorMessage": "the call parked 5 times"})
			return
		}
		f.parks[run], f.tokens[run] = req, body["task_token"].(string)
		answer(map[string]any{"park_id": "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", "status": "PARKED"})
	default:
		http.NotFound(w, r)
	}
}

// token waits for the park Task of run to ask review-request.
func (f *parkFunctions) token(t *testing.T, run string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f.mu.Lock()
		tok := f.tokens[run]
		f.mu.Unlock()
		if tok != "" {
			return tok
		}
	}
	t.Fatalf("the park Task of %s never asked", run)
	return ""
}

// The local Step Functions endpoint runs the park states the resolver
// compiles: a parked call waits in <id>-park for the token; approve and
// resume send the call again with the same seq and key and the decided
// park id; a rejection, the park's timeout and PARK_LIMIT end the step with
// TOOL_PERMISSION_DENIED and their Cause.
func TestSFNRunsTheCompiledParkStates(t *testing.T) {
	t.Parallel()
	src := `solution: lookup
version: 1
toolset: ts_e1e573600c23257d461a3f2d29e2aa3d
policy: {park_timeout_seconds: 2}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: C-1}
`
	res := resolver.Compile("lookup.yaml", []byte(src), resolver.Options{Toolsets: resolver.LockLookup(filepath.Join("..", "..", "testdata", "toolsets"))})
	if !res.OK() {
		t.Fatalf("compile: %v", res.Diagnostics)
	}
	def := strings.NewReplacer("${FunctionMcpCall}", "mcp-call", "${FunctionReviewRequest}", "review-request").Replace(string(res.Definition))

	f := &parkFunctions{calls: map[string][]map[string]any{}, parks: map[string]map[string]any{}, tokens: map[string]string{}}
	fn := httptest.NewServer(f)
	t.Cleanup(fn.Close)
	functions := filepath.Join(t.TempDir(), "functions.json")
	if err := local.WriteSFNFunctions(functions, map[string]string{"mcp-call": fn.URL + "/mcp-call", "review-request": fn.URL + "/review-request"}); err != nil {
		t.Fatal(err)
	}
	p, err := local.StartSFN(t.Context(), functions)
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)
	s := &sfnStack{sfn: p, client: newSFNClient(p)}
	machine := s.create(t, "lookup", def)
	input := map[string]any{"input": map[string]any{}, "meta": map[string]any{}}

	for _, c := range []struct {
		name     string
		decision *park.Result // nil: no decision is sent
		status   sfntypes.ExecutionStatus
		cause    string
	}{
		{"approved", &park.Result{ParkID: "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", Decision: park.Approve}, sfntypes.ExecutionStatusSucceeded, ""},
		{"resumed", &park.Result{ParkID: "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", Decision: park.Resume}, sfntypes.ExecutionStatusSucceeded, ""},
		{"rejected", &park.Result{ParkID: "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", Decision: park.Reject, Reason: aws.String("the new schema asks for more")}, sfntypes.ExecutionStatusFailed, "parked call rejected: the new schema asks for more"},
		{"timed-out", nil, sfntypes.ExecutionStatusFailed, "park timed out"},
		{"limit", nil, sfntypes.ExecutionStatusFailed, fmt.Sprintf("parked %d times", park.MaxParks)},
	} {
		t.Run(c.name, func(t *testing.T) {
			arn := s.start(t, machine, c.name, input)
			if c.decision != nil {
				out, _ := json.Marshal(c.decision)
				if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(f.token(t, arn)), Output: aws.String(string(out))}); err != nil {
					t.Fatalf("SendTaskSuccess: %v", err)
				}
			}
			d := s.wait(t, arn)
			wantStatus(t, d, c.status)
			if c.status == sfntypes.ExecutionStatusFailed {
				if aws.ToString(d.Error) != "TOOL_PERMISSION_DENIED" || aws.ToString(d.Cause) != c.cause {
					t.Fatalf("failed with %q, %q; want TOOL_PERMISSION_DENIED, %q", aws.ToString(d.Error), aws.ToString(d.Cause), c.cause)
				}
			}
			f.mu.Lock()
			calls, req := f.calls[arn], f.parks[arn]
			f.mu.Unlock()
			if c.name == "limit" {
				return
			}
			if req["idempotency_key"] != calls[0]["idempotency_key"] || req["seq"] != calls[0]["seq"] || req["step"] != "lookup" || req["timeout_seconds"] != float64(2) {
				t.Errorf("the park Task's request %v, the parked call %v", req, calls[0])
			}
			if c.status != sfntypes.ExecutionStatusSucceeded {
				if len(calls) != 1 {
					t.Errorf("%d calls, want the parked one only", len(calls))
				}
				return
			}
			if len(calls) != 2 || calls[1]["idempotency_key"] != calls[0]["idempotency_key"] || calls[1]["seq"] != calls[0]["seq"] || calls[1]["park_id"] != c.decision.ParkID {
				t.Errorf("calls %v: want the call sent again with its key and seq, and park_id %s", calls, c.decision.ParkID)
			}
		})
	}
}
