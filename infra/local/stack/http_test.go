package stack_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/httptool"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// The local stack runs the http function under the RIE on both lanes,
// where publishing (its parameter) and Step Functions (the functions
// file) find its sfn lane, each lane running the dispatcher with its own
// ledger secrets; and the recording HTTP service listens on 127.0.0.1,
// recording what reaches it.
func TestLocalStackRunsTheHTTPFunction(t *testing.T) {
	e := sharedEnv(t)
	st := e.st

	var params, functions map[string]string
	readJSON(t, st.ParamsFile, &params)
	readJSON(t, filepath.Join(st.Dir, "functions.json"), &functions)
	if got, want := params["/toolgate/"+stack.Stage+"/function/http/arn"], stack.FunctionARN("http")+":sfn"; got != want {
		t.Errorf("http's parameter %q, want its sfn alias %q", got, want)
	}
	if functions["http"] != st.SFNEndpoints["http"]+local.InvokePath {
		t.Errorf("Step Functions invokes http at %q, not its sfn lane %q", functions["http"], st.SFNEndpoints["http"])
	}
	if _, err := st.LedgerSecrets(t.Context(), "http"); err != nil {
		t.Errorf("http's ledger secrets: %v", err)
	}
	for _, c := range []struct{ name, endpoint string }{
		{"direct lane", st.Endpoints["http"]},
		{"sfn lane", st.SFNEndpoints["http"]},
	} {
		if c.endpoint == "" {
			t.Errorf("%s: no endpoint", c.name)
			continue
		}
		if got := invokeErrorType(t, c.endpoint, `{}`); got != string(tool.InputInvalid) {
			t.Errorf("%s, no envelope: errorType %q, want %s (the dispatcher's answer)", c.name, got, tool.InputInvalid)
		}
	}

	u, err := url.Parse(st.HTTP.URL())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the recording service listens at %s (%v), want 127.0.0.1", st.HTTP.URL(), err)
	}
	before := len(st.HTTP.Requests())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.HTTP.URL()+"/stack-test/ping", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got, err := st.HTTP.Wait(ctx, before+1)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[before]; resp.StatusCode != http.StatusOK || r.Method != http.MethodGet || r.Path != "/stack-test/ping" || r.Applied {
		t.Errorf("answered %d, recorded %+v", resp.StatusCode, r)
	}
}

// httpWebhook posts a text to a chat-style webhook of the recording
// service after a review: the entry declares no idempotency key, so the
// call runs at most once, and its step bounds the tool's work to 3 s.
const httpWebhook = `solution: http-e2e-webhook
version: 1
input:
  type: object
  required: [path, text]
  properties:
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
    text: {type: string, minLength: 1, maxLength: 200}
policy:
  http_hosts:
    - host: "127.0.0.1:18081"
      methods: [POST]
steps:
  - id: approve
    review: {of: post, timeout_seconds: 600}
    on_approve: post
  - id: post
    tool: http
    with:
      method: POST
      url: "http://127.0.0.1:18081/hooks/${input.path}"
      body: {text: "${input.text}"}
    timeout_seconds: 3
    keep: [status]
`

// httpKeyed submits a job after a review to a host whose entry declares
// that it honours Idempotency-Key: the call is retried under its key.
const httpKeyed = `solution: http-e2e-keyed
version: 1
input:
  type: object
  required: [path, text]
  properties:
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
    text: {type: string, minLength: 1, maxLength: 200}
policy:
  http_hosts:
    - host: "127.0.0.1:18081"
      methods: [POST]
      idempotency: {header: Idempotency-Key}
steps:
  - id: approve
    review: {of: post, timeout_seconds: 600}
    on_approve: post
  - id: post
    tool: http
    with:
      method: POST
      url: "http://127.0.0.1:18081/jobs/${input.path}"
      body: {job: "${input.text}"}
    retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 1}
    keep: [status, data]
`

// httpRead is a GET with headers from the run's input, which the compiler
// cannot check: a read, so no review. Its entry pins POST too, so that a
// POST through its envelope is refused for want of an approval, not of a
// method.
const httpRead = `solution: http-e2e-read
version: 1
input:
  type: object
  required: [path, headers]
  properties:
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
    headers: {type: object}
policy:
  http_hosts:
    - host: "127.0.0.1:18081"
      methods: [GET, POST]
      headers: [X-Team]
steps:
  - id: read
    tool: http
    with:
      method: GET
      url: "http://127.0.0.1:18081/e2e/${input.path}"
      headers: "${input.headers}"
    keep: [status, data]
`

// httpBound takes its method and body from the run's input, which the
// compiler cannot check: a method from a binding could be any, so Gate A
// wants a review.
const httpBound = `solution: http-e2e-bound
version: 1
input:
  type: object
  required: [method, path, body]
  properties:
    method: {type: string}
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
    body: {}
policy:
  http_hosts:
    - host: "127.0.0.1:18081"
      methods: [GET, POST]
steps:
  - id: approve
    review: {of: call, timeout_seconds: 600}
    on_approve: call
  - id: call
    tool: http
    with:
      method: "${input.method}"
      url: "http://127.0.0.1:18081/e2e/${input.path}"
      body: "${input.body}"
    keep: [status]
`

// The http tool end to end on the local stack: Solutions published
// through the publish function, run by the local Step Functions endpoint,
// calling the http function under the RIE, which sends to the recording
// HTTP service; each case asserts on what the service received, the
// ledger rows and how the run ended. The bodies carry canaries, which no
// log line of the http function, no ledger item and no failure in an
// execution's history may hold. The waits are polls with deadlines
// (pending, follow); nothing sleeps.
func TestHTTPToolOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	srv := e.st.HTTP
	for name, src := range map[string]string{"http-e2e-webhook": httpWebhook, "http-e2e-keyed": httpKeyed, "http-e2e-read": httpRead, "http-e2e-bound": httpBound} {
		e.publish(t, name, string(stack.OnHTTPService([]byte(src), srv.URL())))
	}
	// The canaries: request bodies hold reqCanary, which the execution's
	// input holds too (its author wrote it there), so only its failures
	// are searched; answers hold respCanary, which no step keeps, so the
	// whole history is.
	reqCanary, respCanary := fresh("req-canary-7c1e"), fresh("resp-canary-52ab")
	var runs []string
	// reviewed starts a run of solution, approves its review as a person
	// other than its starter, and follows it to its end.
	reviewed := func(t *testing.T, solution string, input any) (string, *runner.Outcome, []runner.Event) {
		t.Helper()
		run := e.start(t, solution, input)
		runs = append(runs, run)
		e.decide(t, "approve", e.pending(t, run, nil))
		out, events := e.follow(t, run)
		return run, out, events
	}
	// unreviewed starts a run of a solution without reviews and follows it
	// to its end.
	unreviewed := func(t *testing.T, solution string, input any) (string, *runner.Outcome, []runner.Event) {
		t.Helper()
		run := e.start(t, solution, input)
		runs = append(runs, run)
		out, events := e.follow(t, run)
		return run, out, events
	}
	// at is what the service received at path.
	at := func(path string) []httprecorder.Request {
		var out []httprecorder.Request
		for _, r := range srv.Requests() {
			if r.Path == path {
				out = append(out, r)
			}
		}
		return out
	}
	digestOf := func(body string) string {
		sum := sha256.Sum256([]byte(body))
		return hex.EncodeToString(sum[:])
	}

	t.Run("a reviewed POST to a chat webhook sends exactly one request", func(t *testing.T) {
		p := fresh("chat")
		srv.Script("/hooks/"+p, httprecorder.OK(map[string]string{"note": respCanary}))
		run, out, _ := reviewed(t, "http-e2e-webhook", map[string]string{"path": p, "text": reqCanary})
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		got := at("/hooks/" + p)
		if len(got) != 1 {
			t.Fatalf("the service received %d requests, want 1: %+v", len(got), got)
		}
		r := got[0]
		if r.Method != http.MethodPost || !r.Applied || r.Key != "" || r.Header.Get("Content-Type") != "application/json" ||
			r.BodySHA256 != digestOf(`{"text":"`+reqCanary+`"}`) {
			t.Errorf("received %+v: want one applied POST of the reviewed JSON body, without an idempotency key", r)
		}
		rows := e.toolRows(t, run, "http")
		if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].Attempt != 1 || rows[0].ReviewID == "" || rows[0].Approver != local.LocalPrincipal("tester") {
			t.Fatalf("rows %+v, want one SUCCEEDED attempt approved by %s", rows, local.LocalPrincipal("tester"))
		}
	})

	t.Run("a retried POST to a host declaring idempotency sends its key on each attempt and is applied once", func(t *testing.T) {
		p := fresh("job")
		applied := srv.Applications()
		// 503: not applied, the key stays free; 502 from a gateway whose
		// origin acted: applied; then the key's kept answer.
		srv.Script("/jobs/"+p, httprecorder.Status(http.StatusServiceUnavailable),
			httprecorder.Answer{Status: http.StatusBadGateway, Applied: true, Body: map[string]string{"detail": respCanary}})
		run, out, events := reviewed(t, "http-e2e-keyed", map[string]string{"path": p, "text": reqCanary})
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if failed := taskFailures(events); !slices.Equal(failed, []string{string(tool.UpstreamUnavailable), string(tool.UpstreamUnavailable)}) {
			t.Fatalf("Task failures %v, want two %s retried", failed, tool.UpstreamUnavailable)
		}
		key := e.externalKey(t, "http", run, "1")
		got := at("/jobs/" + p)
		if len(got) != 3 {
			t.Fatalf("the service received %d requests, want 3: %+v", len(got), got)
		}
		for i, r := range got {
			want := []struct {
				status            int
				applied, replayed bool
			}{{503, false, false}, {502, true, false}, {200, false, true}}[i]
			if r.Method != http.MethodPost || r.Key != key || r.Status != want.status || r.Applied != want.applied || r.Replayed != want.replayed {
				t.Errorf("request %d: %s key %q status %d applied %v replayed %v; want key %s, %+v", i+1, r.Method, r.Key, r.Status, r.Applied, r.Replayed, key, want)
			}
		}
		if n := srv.Applications() - applied; n != 1 {
			t.Errorf("the service applied %d writes, want 1", n)
		}
		if data := e.taskOutput(t, run, "post"); !strings.Contains(data, `"id":"`+got[1].Application+`"`) {
			t.Errorf("the post Task's result %s is not the kept answer of the application %s", data, got[1].Application)
		}
		rows := e.toolRows(t, run, "http")
		if len(rows) != 3 {
			t.Fatalf("rows %+v, want attempts 1..3", rows)
		}
		for i, r := range rows {
			// A 503 or 502 to a POST may have been applied: UNKNOWN, and
			// retried since the host honours the key.
			want, code := ledger.StatusUnknown, string(tool.UpstreamUnavailable)
			if i == 2 {
				want, code = ledger.StatusSucceeded, ""
			}
			if r.Attempt != i+1 || r.ExternalKey != key || r.IdempotencyKey != run+"/1" || r.Status != want || r.ErrorCode != code {
				t.Errorf("row %d: %+v, want attempt %d %s %s under %s", i, r, i+1, want, code, key)
			}
		}
	})

	t.Run("an at_most_once POST that times out after sending is UNKNOWN and never sent again", func(t *testing.T) {
		p := fresh("hang")
		srv.Script("/hooks/"+p, httprecorder.Hang())
		run, out, _ := reviewed(t, "http-e2e-webhook", map[string]string{"path": p, "text": reqCanary})
		if out.Status != "FAILED" || out.Error != string(tool.Timeout) {
			t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, tool.Timeout)
		}
		rows := e.toolRows(t, run, "http")
		if len(rows) != 1 || rows[0].Status != ledger.StatusUnknown || rows[0].ErrorCode != string(tool.Timeout) || rows[0].Attempt != 1 {
			t.Fatalf("rows %+v, want one UNKNOWN %s, attempt 1", rows, tool.Timeout)
		}
		// A second attempt, as a retry or a redrive would send it: the
		// Task's payload, on the sfn lane.
		if got := invokeErrorType(t, e.st.SFNEndpoints["http"], e.taskPayload(t, run, "http")); got != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("a second attempt under %s/1: errorType %q, want %s", run, got, tool.RetryRequiresIdempotency)
		}
		if got := at("/hooks/" + p); len(got) != 1 || !got[0].Applied || got[0].Status != 0 {
			t.Fatalf("the service received %+v, want the one POST it held unanswered", got)
		}
		rows = e.toolRows(t, run, "http")
		if len(rows) != 2 || rows[1].Status != ledger.StatusUnknown || rows[1].ErrorCode != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("rows %+v, want the second attempt UNKNOWN %s", rows, tool.RetryRequiresIdempotency)
		}
	})

	t.Run("refused at run time with nothing sent", func(t *testing.T) {
		for _, c := range []struct {
			name, solution string
			input          map[string]any
			code           tool.Code
			says           []string
			// status and attempt of the call's row: the dispatcher refuses
			// an unpinned method before it claims the call (its contract
			// depends on the method); the tool refuses the others before
			// it sends anything.
			status  ledger.Status
			attempt int
		}{
			{"a method not pinned for the host", "http-e2e-bound", map[string]any{"method": "PUT", "body": nil},
				tool.PermissionDenied, []string{"rule " + httptool.RuleMethod, "PUT is not pinned", "entry " + srv.Host()}, ledger.StatusRefused, 0},
			{"a body on GET", "http-e2e-bound", map[string]any{"method": "GET", "body": map[string]string{"text": reqCanary}},
				tool.InputInvalid, []string{"a GET request carries no body"}, ledger.StatusFailed, 1},
			{"a header not on the entry's list", "http-e2e-read", map[string]any{"headers": map[string]string{"X-Other": "1"}},
				tool.PermissionDenied, []string{"rule " + httptool.RuleHeader, "X-Other", "headers: X-Team"}, ledger.StatusFailed, 1},
			{"a method-override header", "http-e2e-read", map[string]any{"headers": map[string]string{"X-HTTP-Method-Override": "DELETE"}},
				tool.PermissionDenied, []string{"rule " + httptool.RuleHeader, "X-Http-Method-Override"}, ledger.StatusFailed, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := fresh("refused")
				c.input["path"] = p
				run := ""
				var out *runner.Outcome
				if c.solution == "http-e2e-bound" {
					run, out, _ = reviewed(t, c.solution, c.input)
				} else {
					run, out, _ = unreviewed(t, c.solution, c.input)
				}
				if out.Status != "FAILED" || out.Error != string(c.code) {
					t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, c.code)
				}
				for _, s := range c.says {
					if !strings.Contains(out.Cause, s) {
						t.Errorf("the cause %q does not say %q", out.Cause, s)
					}
				}
				if got := at("/e2e/" + p); len(got) != 0 {
					t.Fatalf("the service received %+v, want nothing", got)
				}
				rows := e.toolRows(t, run, "http")
				if len(rows) != 1 || rows[0].ErrorCode != string(c.code) || rows[0].Status != c.status || rows[0].Attempt != c.attempt {
					t.Fatalf("rows %+v, want one %s %s, attempt %d", rows, c.status, c.code, c.attempt)
				}
			})
		}
		// The controls: the same Solutions reach the service with a pinned
		// method, a body on POST, and a header the entry names.
		t.Run("the controls are sent", func(t *testing.T) {
			p := fresh("control")
			if _, out, _ := reviewed(t, "http-e2e-bound", map[string]any{"method": "POST", "path": p, "body": map[string]string{"text": "control"}}); out.Status != "SUCCEEDED" {
				t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
			}
			if got := at("/e2e/" + p); len(got) != 1 || got[0].Method != http.MethodPost || got[0].BodySHA256 != digestOf(`{"text":"control"}`) {
				t.Fatalf("the service received %+v, want the POST", got)
			}
			q := fresh("control")
			if _, out, _ := unreviewed(t, "http-e2e-read", map[string]any{"path": q, "headers": map[string]string{"X-Team": "blue"}}); out.Status != "SUCCEEDED" {
				t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
			}
			if got := at("/e2e/" + q); len(got) != 1 || got[0].Method != http.MethodGet || got[0].Header.Get("X-Team") != "blue" {
				t.Fatalf("the service received %+v, want the GET with X-Team", got)
			}
			// A POST through the envelope compiled for that GET: the
			// dispatcher decides from the method the call sends, which
			// needs an approval the envelope does not carry.
			var env map[string]any
			if err := json.Unmarshal([]byte(e.taskPayload(t, runs[len(runs)-1], "http")), &env); err != nil {
				t.Fatal(err)
			}
			r := fresh("post-through-get")
			run := "arn:aws:states:" + local.Region + ":" + stack.AccountID + ":execution:toolgate-local_http-e2e-read:" + r
			env["run_id"], env["idempotency_key"] = run, run+"/1"
			env["input"] = map[string]any{"method": "POST", "url": srv.URL() + "/e2e/" + r, "headers": map[string]string{}, "body": map[string]string{"text": reqCanary}}
			payload, _ := json.Marshal(env)
			if got := invokeErrorType(t, e.st.SFNEndpoints["http"], string(payload)); got != string(tool.PermissionDenied) {
				t.Fatalf("a POST through a GET's envelope: errorType %q, want %s", got, tool.PermissionDenied)
			}
			if got := at("/e2e/" + r); len(got) != 0 {
				t.Fatalf("the service received %+v, want nothing", got)
			}
		})
	})

	t.Run("a 307 to a POST is not followed: TOOL_PERMANENT_FAILURE, naming only the Location's host", func(t *testing.T) {
		p := fresh("moved")
		srv.Script("/hooks/"+p, httprecorder.Redirect(http.StatusTemporaryRedirect, srv.URL()+"/hooks/"+p+"-elsewhere?token=secret-token"))
		run, out, _ := reviewed(t, "http-e2e-webhook", map[string]string{"path": p, "text": reqCanary})
		host, _, _ := strings.Cut(srv.Host(), ":")
		if out.Status != "FAILED" || out.Error != string(tool.PermanentFailure) || !strings.Contains(out.Cause, "redirecting to "+host) ||
			strings.Contains(out.Cause, "elsewhere") || strings.Contains(out.Cause, "secret-token") {
			t.Fatalf("run %s %s %s, want FAILED %s naming the Location's host %s only", out.Status, out.Error, out.Cause, tool.PermanentFailure, host)
		}
		if got := at("/hooks/" + p); len(got) != 1 || got[0].Status != http.StatusTemporaryRedirect || got[0].Applied {
			t.Fatalf("the service received %+v, want the one POST answered 307", got)
		}
		if got := at("/hooks/" + p + "-elsewhere"); len(got) != 0 {
			t.Fatalf("the redirect's target received %+v, want nothing", got)
		}
		rows := e.toolRows(t, run, "http")
		if len(rows) != 1 || rows[0].Status != ledger.StatusFailed || rows[0].ErrorCode != string(tool.PermanentFailure) {
			t.Fatalf("rows %+v, want one FAILED %s (not applied)", rows, tool.PermanentFailure)
		}
	})

	t.Run("a 429 with a short Retry-After is sent again once and succeeds", func(t *testing.T) {
		for _, c := range []struct {
			name, solution, path string
			input                map[string]any
			keyed                bool
		}{
			{"GET", "http-e2e-read", "/e2e/", map[string]any{"headers": map[string]string{}}, false},
			{"a keyed POST", "http-e2e-keyed", "/jobs/", map[string]any{"text": reqCanary}, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := fresh("limited")
				c.input["path"] = p
				srv.Script(c.path+p, httprecorder.TooManyRequests(1))
				var run string
				var out *runner.Outcome
				var events []runner.Event
				if c.keyed {
					run, out, events = reviewed(t, c.solution, c.input)
				} else {
					run, out, events = unreviewed(t, c.solution, c.input)
				}
				if out.Status != "SUCCEEDED" {
					t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
				}
				if failed := taskFailures(events); len(failed) != 0 {
					t.Errorf("Task failures %v: the function waits out the Retry-After itself", failed)
				}
				got := at(c.path + p)
				if len(got) != 2 || got[0].Status != http.StatusTooManyRequests || got[1].Status != http.StatusOK {
					t.Fatalf("the service received %+v, want the request twice, answered 429 then 200", got)
				}
				key := ""
				if c.keyed {
					key = e.externalKey(t, "http", run, "1")
				}
				for i, r := range got {
					if r.Key != key || r.Applied != (c.keyed && i == 1) {
						t.Errorf("request %d: key %q applied %v, want key %q, applied only by a write answered 200", i+1, r.Key, r.Applied, key)
					}
				}
				rows := e.toolRows(t, run, "http")
				if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].Attempt != 1 {
					t.Fatalf("rows %+v, want one SUCCEEDED attempt", rows)
				}
			})
		}
	})

	t.Run("no request or response body reaches the http function's logs, the ledger or a failure in the history", func(t *testing.T) {
		if len(runs) == 0 {
			t.Skip("no run to look for bodies of: the cases above did not run")
		}
		var logs bytes.Buffer
		for _, p := range e.st.Processes() {
			if p.Name == "rie:http" || strings.HasPrefix(p.Name, "rie:http:") {
				logs.WriteString(p.Stdout())
				logs.WriteString(p.Stderr())
			}
		}
		// Not vacuous: the logs (a tail of each process's) reach back to
		// the first run's call, whose approval was bound.
		if !strings.Contains(logs.String(), "approval bound") || !strings.Contains(logs.String(), runs[0]+"/1") {
			t.Fatalf("the http function's logs do not reach back to the first run's call (%s/1):\n%.2000s", runs[0], logs.String())
		}
		var table bytes.Buffer
		scan := dynamodb.NewScanPaginator(local.DynamoDB(e.st.Dynamo.Endpoint()), &dynamodb.ScanInput{TableName: aws.String(stack.Table)})
		for scan.HasMorePages() {
			page, err := scan.NextPage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var items []map[string]any
			if err := attributevalue.UnmarshalListOfMaps(page.Items, &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				// A review item keeps the request its reviewers approve,
				// as the execution's history does (docs/reviews.md):
				// that is what they decide on.
				if pk, _ := it["pk"].(string); strings.HasPrefix(pk, "REVIEW#") {
					continue
				}
				b, _ := json.Marshal(it)
				table.Write(append(b, '\n'))
			}
		}
		if !strings.Contains(table.String(), runs[0]) {
			t.Fatal("the ledger table holds no item of these runs: not this stack's table")
		}
		var history, failures bytes.Buffer
		for _, run := range runs {
			pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
			for pages.HasMorePages() {
				page, err := pages.NextPage(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(page.Events)
				history.Write(b)
				for _, ev := range page.Events {
					for _, d := range []any{ev.TaskFailedEventDetails, ev.ExecutionFailedEventDetails, ev.LambdaFunctionFailedEventDetails} {
						b, _ := json.Marshal(d)
						failures.Write(b)
					}
				}
			}
		}
		if !strings.Contains(history.String(), reqCanary) {
			t.Fatal("the histories do not hold the request canary even in the runs' input: not these runs' histories")
		}
		for where, c := range map[string]struct {
			text     string
			canaries []string
		}{
			"the http function's logs":  {logs.String(), []string{reqCanary, respCanary}},
			"the ledger table's items":  {table.String(), []string{reqCanary, respCanary}},
			"the executions' histories": {history.String(), []string{respCanary}},
			"the executions' failures":  {failures.String(), []string{reqCanary, respCanary}},
		} {
			for _, canary := range c.canaries {
				if i := strings.Index(c.text, canary); i >= 0 {
					t.Errorf("%s hold %q: a body: %s", where, canary, c.text[max(0, i-600):min(len(c.text), i+200)])
				}
			}
		}
	})
}

// taskOutput is the result of the run's last Task that state entered
// (TaskSucceeded's output); "" when it has none.
func (e *env) taskOutput(t *testing.T, run, state string) string {
	t.Helper()
	var current, out string
	pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if d := ev.StateEnteredEventDetails; d != nil {
				current = aws.ToString(d.Name)
			}
			if d := ev.TaskSucceededEventDetails; d != nil && current == state {
				out = aws.ToString(d.Output)
			}
		}
	}
	return out
}
