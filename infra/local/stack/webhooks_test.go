package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// hookRequest is one request a hookReceiver got.
type hookRequest struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time // when it arrived: the clock its signature is checked against
}

// hookReceiver is a webhook receiver on 127.0.0.1 that answers 200 to
// every POST and keeps what it got; tests wait on it (wait).
type hookReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []hookRequest
	arrived chan struct{} // closed and replaced on each arrival
}

func startHookReceiver() *hookReceiver {
	h := &hookReceiver{arrived: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h.mu.Lock()
		h.got = append(h.got, hookRequest{path: r.URL.Path, header: r.Header.Clone(), body: body, at: time.Now()})
		close(h.arrived)
		h.arrived = make(chan struct{})
		h.mu.Unlock()
	}))
	return h
}

// Host is the receiver's host and port, a webhook allow-list entry.
func (h *hookReceiver) Host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

func (h *hookReceiver) Close() { h.srv.Close() }

// wait returns the requests to path once done says they are all it
// waits for, and fails t when they have not arrived by the deadline.
func (h *hookReceiver) wait(t *testing.T, path string, timeout time.Duration, done func([]hookRequest) bool) []hookRequest {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		var got []hookRequest
		for _, r := range h.got {
			if r.path == path {
				got = append(got, r)
			}
		}
		arrived := h.arrived
		h.mu.Unlock()
		if done(got) {
			return got
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("%s got %d requests in %v, not yet the ones awaited", path, len(got), timeout)
		}
	}
}

// webhookRun is a one-step Solution that succeeds: a fetch from the data
// server. Its input carries a canary no event may carry.
const webhookRun = `solution: NAME
version: 1
input:
  type: object
  required: [canary]
  properties:
    canary: {type: string}
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/webhook-run.json"}
`

// subscribe runs toolgate webhooks subscribe as name on the stack's
// webhooks function, returning its exit code, stdout and stderr.
func (e *env) subscribe(name, url, events string) (int, string, string) {
	var out, errb bytes.Buffer
	code := e.cliRun([]string{"webhooks", "subscribe", "--url", url, "--events", events,
		"--function-endpoint", e.st.Endpoints["webhooks"], "--as", name}, &out, &errb)
	return code, out.String(), errb.String()
}

// A subscriber of run.* gets run.started and run.succeeded of a run, each
// signed with the secret subscribe printed once (Standard Webhooks, checked
// against the moment it arrived), with the webhook-id derived from the
// execution and its status, and no trace of the run's input; the Step
// Functions endpoint put the status changes on the events queue, and the
// stack's pollers ran webhook-delivery's fan-out and delivery under the
// RIE. A principal who is not a webhook admin may not subscribe. On the
// local stack.
func TestWebhookSubscriberGetsASignedRunStartedAndSucceededWithoutTheRunsInput(t *testing.T) {
	e := sharedEnv(t)
	path := "/" + fresh("hook")
	endpoint := "http://" + shared.hooks.Host() + path

	code, out, errOut := e.subscribe(starter, endpoint, "run.*")
	if code == cli.ExitOK || !strings.Contains(errOut, webhookapi.CodeRefused) {
		t.Fatalf("a subscribe as %s (no webhook admin): exit %d, %q %q; want %s", starter, code, out, errOut, webhookapi.CodeRefused)
	}

	code, out, errOut = e.subscribe(stack.WebhookAdmin, endpoint, "run.*")
	if code != cli.ExitOK {
		t.Fatalf("subscribe as %s: exit %d: %s %s", stack.WebhookAdmin, code, out, errOut)
	}
	sub, _, _ := strings.Cut(out, " ")
	_, secret, ok := strings.Cut(out, "): ")
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(sub, "sub_") || !ok || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("subscribe printed no subscription id and secret: %q", out)
	}
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' runs on the shared stack are no business of this
	// subscription's.
	t.Cleanup(func() {
		if out, code := e.toolgate(t, "webhooks", "disable", "--subscription", sub, "--function-endpoint", e.st.Endpoints["webhooks"], "--as", stack.WebhookAdmin); code != cli.ExitOK {
			t.Errorf("disable %s: %s", sub, out)
		}
	})

	name := fresh("e2e-webhooks")
	e.route(t, "/webhook-run.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"title":"fetched"}`)
	}))
	e.publish(t, name, strings.ReplaceAll(webhookRun, "NAME", name))
	canary := fresh("canary-7f3a9c2e")
	run := e.start(t, name, map[string]any{"canary": canary})
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
	}

	type delivered struct {
		req  hookRequest
		body struct {
			Type string          `json:"type"`
			Data webhook.RunData `json:"data"`
		}
	}
	want := map[webhook.Type]string{webhook.RunStarted: "RUNNING", webhook.RunSucceeded: "SUCCEEDED"}
	var of map[webhook.Type][]delivered
	shared.hooks.wait(t, path, 90*time.Second, func(got []hookRequest) bool {
		of = map[webhook.Type][]delivered{}
		for _, r := range got {
			var d delivered
			d.req = r
			if json.Unmarshal(r.body, &d.body) == nil && d.body.Data.ExecutionARN == run {
				of[webhook.Type(d.body.Type)] = append(of[webhook.Type(d.body.Type)], d)
			}
		}
		return len(of[webhook.RunStarted]) > 0 && len(of[webhook.RunSucceeded]) > 0
	})
	for typ, status := range want {
		for _, d := range of[typ] {
			h := d.req.header
			if err := webhook.Verify(key, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), d.req.body, d.req.at, webhook.Tolerance); err != nil {
				t.Errorf("%s: the signature does not verify with the subscription's secret: %v", typ, err)
			}
			if id := webhook.EventID(typ, run+"\n"+status); h.Get("webhook-id") != id {
				t.Errorf("%s: webhook-id %q, want %q (the execution and its status)", typ, h.Get("webhook-id"), id)
			}
			if d.body.Data.Status != status || d.body.Data.Name == "" || d.body.Data.StartDate == "" {
				t.Errorf("%s: data %+v: want status %s, the execution's name and start date", typ, d.body.Data, status)
			}
			if strings.Contains(string(d.req.body), canary) || strings.Contains(fmt.Sprint(h), canary) {
				t.Errorf("%s carries the run's input: %s", typ, d.req.body)
			}
		}
	}
	if others := len(of) - len(want); others > 0 {
		t.Errorf("events of other types for %s: %v", run, of)
	}
}
