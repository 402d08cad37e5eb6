package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/shared/webhookapi"
)

// webhookSecret stands for a whsec_ secret the function answers.
const webhookSecret = "whsec_Y2FuYXJ5LXNlY3JldC1vZi13ZWJob29rcy0wMDA="

// webhooksFake stands in for the webhooks function's Function URL: a
// fake, since the test checks only what the CLI sends and prints (the
// function is tested in functions/webhooks/admin). It records each
// request and answers with fixed results.
type webhooksFake struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []webhooksRecorded
}

type webhooksRecorded struct {
	method, path, query string
	body                webhookapi.SubscribeRequest
	proof               bool
}

func newWebhooksFake(t *testing.T) *webhooksFake {
	f := &webhooksFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b webhookapi.SubscribeRequest
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Errorf("body %q: %v", raw, err)
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, webhooksRecorded{r.Method, r.URL.Path, r.URL.RawQuery, b, r.Header.Get(webhookapi.ProofHeader) != ""})
		f.mu.Unlock()
		sub := webhookapi.Subscription{ID: "sub_a", URL: "https://hooks.example.org/in", Events: []string{"run.*"}, Status: "active",
			CreatedAt: "2026-12-02T10:00:00Z", CreatedBy: "arn:aws:iam::000000000000:user/admin", Version: 1, Secrets: 1}
		var res any
		switch {
		case r.URL.Path == "/subscriptions" && r.Method == http.MethodPost:
			sub.URL, sub.Events, sub.Solution = b.URL, b.Events, b.Solution
			res = webhookapi.SubscribeResult{Subscription: sub, Secret: webhookSecret}
		case r.URL.Path == "/subscriptions":
			res = webhookapi.ListResult{Subscriptions: []webhookapi.Subscription{sub}}
		case strings.HasSuffix(r.URL.Path, "/rotate-secret"):
			res = webhookapi.RotateResult{Subscription: "sub_a", Secret: webhookSecret, PreviousRetiresAt: "2026-12-03T10:00:00Z"}
		case strings.HasSuffix(r.URL.Path, "/disable"):
			res = webhookapi.DisableResult{Subscription: "sub_a", Disabled: true}
		case r.URL.Path == "/deliveries":
			res = webhookapi.DeliveriesResult{Event: "evt_a", Type: "run.started", Deliveries: []webhookapi.Delivery{{Subscription: "sub_a", Attempt: 2, At: "2026-12-02T10:05:00Z", StatusCode: 503, LatencyMS: 40, Outcome: "retry"}}}
		case r.URL.Path == "/dlq":
			res = webhookapi.DLQResult{Messages: []webhookapi.DLQMessage{{Event: "evt_a", Subscription: "sub_a", ReceiveCount: 8}}}
		default:
			res = webhookapi.RedriveResult{Moved: 1}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// subscribe and rotate-secret print the whsec_ secret exactly once, on
// standard output, never on standard error.
func TestWebhooksSecretIsPrintedOnceToStandardOutput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		path string
	}{
		{[]string{"webhooks", "subscribe", "--url", "https://hooks.example.org/in", "--events", "run.*, review.requested", "--solution", "digest"}, "/subscriptions"},
		{[]string{"webhooks", "rotate-secret", "--subscription", "sub_a"}, "/subscriptions/sub_a/rotate-secret"},
	} {
		t.Run(c.args[1], func(t *testing.T) {
			t.Parallel()
			f := newWebhooksFake(t)
			code, stdout, stderr := runWithStdin(nil, append(c.args, "--function-url", f.srv.URL)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if n := strings.Count(stdout, webhookSecret); n != 1 || strings.Contains(stderr, webhookSecret) {
				t.Fatalf("the secret is %d times on stdout %q, stderr %q", n, stdout, stderr)
			}
			if len(f.reqs) != 1 || f.reqs[0].method != http.MethodPost || f.reqs[0].path != c.path || !f.reqs[0].proof {
				t.Fatalf("requests %+v", f.reqs)
			}
			if c.args[1] == "subscribe" {
				if b := f.reqs[0].body; strings.Join(b.Events, ",") != "run.*,review.requested" || b.Solution != "digest" || b.URL != "https://hooks.example.org/in" {
					t.Fatalf("body %+v", b)
				}
			}
		})
	}
}

// subscribe --json prints one JSON object, the function's answer: the
// subscription (its id, URL, events and Solution) and the secret, once,
// on standard output; nothing else is printed.
func TestWebhooksSubscribeJSONPrintsTheSubscriptionAndSecretAsOneObject(t *testing.T) {
	t.Parallel()
	f := newWebhooksFake(t)
	code, stdout, stderr := runWithStdin(nil, "webhooks", "subscribe", "--url", "https://hooks.example.org/in", "--events", "run.succeeded,review.requested",
		"--solution", "digest", "--json", "--function-url", f.srv.URL)
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var res webhookapi.SubscribeResult
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout %q is not one SubscribeResult: %v", stdout, err)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value: %q", stdout)
	}
	s := res.Subscription
	if s.ID != "sub_a" || s.URL != "https://hooks.example.org/in" || strings.Join(s.Events, ",") != "run.succeeded,review.requested" ||
		s.Solution != "digest" || s.Status != "active" || res.Secret != webhookSecret {
		t.Errorf("printed %+v", res)
	}
	if n := strings.Count(stdout, webhookSecret); n != 1 {
		t.Errorf("the secret is %d times on stdout", n)
	}
}

// Without --json, subscribe prints the subscription on one line and the
// secret on the next, as it always has.
func TestWebhooksSubscribePrintsTextByDefault(t *testing.T) {
	t.Parallel()
	f := newWebhooksFake(t)
	code, stdout, stderr := runWithStdin(nil, "webhooks", "subscribe", "--url", "https://hooks.example.org/in", "--events", "run.*", "--function-url", f.srv.URL)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "sub_a active https://hooks.example.org/in events run.*, created 2026-12-02T10:00:00Z by arn:aws:iam::000000000000:user/admin, 1 secret(s)\n" +
		"secret (shown once; store it where the receiver reads it): " + webhookSecret + "\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
}

// Command lines missing what they need, or naming the function wrongly,
// are refused before anything is sent.
func TestWebhooksRefusesBadCommandLines(t *testing.T) {
	t.Parallel()
	f := newWebhooksFake(t)
	fn := []string{"--function-url", f.srv.URL}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"subscribe without --url", append([]string{"webhooks", "subscribe", "--events", "run.*"}, fn...), "--url URL"},
		{"subscribe without --events", append([]string{"webhooks", "subscribe", "--url", "https://h.example.org"}, fn...), "--events LIST"},
		{"subscribe with empty events", append([]string{"webhooks", "subscribe", "--url", "https://h.example.org", "--events", " , "}, fn...), "--events LIST"},
		{"subscribe to a non-URL", append([]string{"webhooks", "subscribe", "--url", "hooks.example.org", "--events", "run.*"}, fn...), "not an http(s) URL"},
		{"no function", []string{"webhooks", "list"}, "name the webhooks function"},
		{"an endpoint without --as", []string{"webhooks", "list", "--function-endpoint", "http://127.0.0.1:9"}, "needs --as"},
		{"--as without an endpoint", append([]string{"webhooks", "list", "--as", "alice"}, fn...), "--as is for the local stack"},
		{"rotate without a subscription", append([]string{"webhooks", "rotate-secret"}, fn...), "--subscription ID"},
		{"disable of a non-id", append([]string{"webhooks", "disable", "--subscription", "a"}, fn...), "--subscription ID"},
		{"deliveries without an event", append([]string{"webhooks", "deliveries"}, fn...), "--event ID"},
		{"an argument", append([]string{"webhooks", "dlq", "redrive", "now"}, fn...), "unexpected argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runWithStdin(nil, c.args...)
			if code != ExitMisuse || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q: want %d saying %q", code, stderr, ExitMisuse, c.want)
			}
		})
	}
	if len(f.reqs) != 0 {
		t.Fatalf("refused command lines sent %d requests", len(f.reqs))
	}
}

// list, disable, deliveries, dlq list and dlq redrive reach their routes
// with a proof and print the answer.
func TestWebhooksCommandsCallTheirRoutes(t *testing.T) {
	t.Parallel()
	f := newWebhooksFake(t)
	for _, c := range []struct {
		args                []string
		method, path, query string
		want                string
	}{
		{[]string{"webhooks", "list"}, http.MethodGet, "/subscriptions", "", "sub_a active https://hooks.example.org/in events run.*"},
		{[]string{"webhooks", "disable", "--subscription", "sub_a"}, http.MethodPost, "/subscriptions/sub_a/disable", "", "disabled sub_a"},
		{[]string{"webhooks", "deliveries", "--event", "evt_a"}, http.MethodGet, "/deliveries", "event=evt_a", "sub_a attempt 2 at 2026-12-02T10:05:00Z: status 503, 40 ms, retry"},
		{[]string{"webhooks", "dlq", "list"}, http.MethodGet, "/dlq", "", "event evt_a to sub_a: 8 attempt(s)"},
		{[]string{"webhooks", "dlq", "redrive"}, http.MethodPost, "/dlq/redrive", "", "moved 1"},
	} {
		f.reqs = nil
		code, stdout, stderr := runWithStdin(nil, append(c.args, "--function-url", f.srv.URL)...)
		if code != ExitOK || !strings.Contains(stdout, c.want) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
		if len(f.reqs) != 1 || f.reqs[0].method != c.method || f.reqs[0].path != c.path || f.reqs[0].query != c.query || !f.reqs[0].proof {
			t.Fatalf("%v: requests %+v", c.args, f.reqs)
		}
	}
}
