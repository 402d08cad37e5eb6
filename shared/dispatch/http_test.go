package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/httptool"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// recorder is a local HTTP service on 127.0.0.1 that records what it
// receives and answers with the statuses it is given, in order (200 once
// they run out).
type recorder struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []*http.Request
	statuses []int
}

func newRecorder(t *testing.T, statuses ...int) *recorder {
	r := &recorder{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, req)
		r.mu.Unlock()
		code := 200
		if n < len(r.statuses) {
			code = r.statuses[n]
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"n": %d}`, n+1)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// httpEnv is a dispatcher of the real http tool (httptool, its Contract
// set as the http function sets it) on dynalite, whose toolset pins hook
// and once (GET and POST, no idempotency) and keyed (POST,
// Idempotency-Key).
func httpEnv(t *testing.T, hook, once, keyed *recorder) (*env, *toolset.Toolset, *Dispatcher) {
	t.Helper()
	e := newEnv(t)
	ts := testToolset(t, 100)
	builtin, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.Tools["http"] = builtin.Tools["http"]
	ts.HTTPHosts = []toolset.HTTPHost{
		{Host: hook.host(), Methods: []string{"GET", "POST"}},
		{Host: once.host(), Methods: []string{"GET", "POST"}},
		{Host: keyed.host(), Methods: []string{"POST"}, Idempotency: &toolset.HTTPIdempotency{Header: "Idempotency-Key", Format: "raw"}},
	}
	slices.SortFunc(ts.HTTPHosts, func(a, b toolset.HTTPHost) int { return strings.Compare(a.Host, b.Host) })
	ts = registerAs(t, e, ts)
	cfg, err := httptool.ParseConfig([]string{hook.host(), once.host(), keyed.host()}, []string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	d := e.dispatcher(t, "http", cfg.Tool(), func(c *Config) { c.Contract = httptool.Contract })
	return e, ts, d
}

// The dispatcher decides review and policy from the method the call
// sends: a POST through an envelope without an approval (as a step
// compiled for a GET has none) is refused with nothing sent; a GET needs
// none; a POST to a host that declares an idempotency key is at least
// once, sent again under the same key after an answer that may have been
// applied, and a POST to any other host at most once.
func TestHTTPContractByMethod(t *testing.T) {
	ctx := context.Background()
	hook, once, keyed := newRecorder(t), newRecorder(t, 500), newRecorder(t, 502)
	e, ts, d := httpEnv(t, hook, once, keyed)
	call := func(input string) json.RawMessage { return envelopeFor("http", ts.ID, "", 1, input) }
	approved := func(payload json.RawMessage) json.RawMessage {
		r := reviewtest.Decided(t, e.reviews(), paramsFor(t, payload), review.Approve)
		return reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r))
	}

	t.Run("a POST without an approval is refused, nothing sent", func(t *testing.T) {
		payload := call(fmt.Sprintf(`{"method":"POST","url":"%s/hook","body":{"text":"deploy done"}}`, hook.srv.URL))
		_, err := d.Handle(ctx, payload)
		if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), "approval") {
			t.Fatalf("answer %v", err)
		}
		if n := len(hook.requests()); n != 0 {
			t.Fatalf("the host received %d requests", n)
		}
		rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
		if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].Attempt != 0 {
			t.Fatalf("rows %+v", rows)
		}
	})

	t.Run("a GET needs no approval", func(t *testing.T) {
		payload := call(fmt.Sprintf(`{"method":"GET","url":"%s/status"}`, hook.srv.URL))
		out, err := d.Handle(ctx, payload)
		if err != nil || !strings.Contains(string(out), `"status":200`) {
			t.Fatalf("answer %s %v", out, err)
		}
		if got := hook.requests(); len(got) != 1 || got[0].Method != "GET" {
			t.Fatalf("the host received %d requests", len(got))
		}
	})

	t.Run("a POST to a host with an idempotency key is at least once", func(t *testing.T) {
		payload := approved(call(fmt.Sprintf(`{"method":"POST","url":"%s/jobs","body":{"job":"x"}}`, keyed.srv.URL)))
		runID := runIDOf(t, payload)
		_, err := d.Handle(ctx, payload)
		if codeOf(t, err) != string(tool.UpstreamUnavailable) {
			t.Fatalf("first answer %v", err)
		}
		if rec := mustRecord(t, e.store, runID+"/1"); rec.State != ledger.StateUnknown {
			t.Fatalf("record after a 502: %+v", rec)
		}
		out, err := d.Handle(ctx, payload) // the compiled Retry
		if err != nil || !strings.Contains(string(out), `"data":{"n":2}`) {
			t.Fatalf("retry answer %s %v", out, err)
		}
		got := keyed.requests()
		if len(got) != 2 {
			t.Fatalf("the host received %d requests", len(got))
		}
		k1, k2 := got[0].Header.Get("Idempotency-Key"), got[1].Header.Get("Idempotency-Key")
		if k1 == "" || k1 != k2 || strings.Contains(k1, runID) {
			t.Fatalf("keys %q and %q", k1, k2)
		}
		if rec := mustRecord(t, e.store, runID+"/1"); rec.State != ledger.StateCompleted || rec.Attempts != 2 {
			t.Fatalf("record %+v", rec)
		}
	})

	t.Run("a POST to a host without one is at most once", func(t *testing.T) {
		payload := approved(call(fmt.Sprintf(`{"method":"POST","url":"%s/hook","body":{"text":"hi"}}`, once.srv.URL)))
		runID := runIDOf(t, payload)
		_, err := d.Handle(ctx, payload)
		if codeOf(t, err) != string(tool.UpstreamUnavailable) {
			t.Fatalf("first answer %v", err)
		}
		_, err = d.Handle(ctx, payload) // the compiled Retry
		if codeOf(t, err) != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("retry answer %v", err)
		}
		if n := len(once.requests()); n != 1 {
			t.Fatalf("the host received %d requests", n)
		}
		if got := once.requests()[0].Header.Get("Idempotency-Key"); got != "" {
			t.Fatalf("a host without an idempotency entry got a key %q", got)
		}
		if rec := mustRecord(t, e.store, runID+"/1"); rec.State != ledger.StateUnknown {
			t.Fatalf("record %+v", rec)
		}
	})
}
