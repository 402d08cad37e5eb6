package receiver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/webhook-receiver/receiver"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// vectorFile is one file of testdata/webhooks/inbound (read as
// shared/inbound's vectors_test.go reads it).
type vectorFile struct {
	Scheme  string `json:"scheme"`
	Vectors []struct {
		Name    string              `json:"name"`
		Secrets []string            `json:"secrets"`
		Headers map[string][]string `json:"headers"`
		Body    string              `json:"body"`
		NowUnix int64               `json:"now_unix"`
		Want    *struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"want"`
		Error string `json:"error"`
	} `json:"vectors"`
}

// Every published vector goes through the handler at its own time: one
// that verifies is recorded and queued under its event id when its body
// is JSON (202), and refused 415 when it is not (GitHub's documented
// example signs "Hello, World!"); one that does not verify is refused 401
// (415 for Stripe's signed body that is no JSON object). A refusal stores
// and queues nothing.
func TestEveryVectorThroughTheHandler(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/webhooks/inbound/*.json")
	if err != nil || len(files) != len(inbound.Schemes) {
		t.Fatalf("vector files %v, %v: want one per scheme", files, err)
	}
	r := newRig(t)
	accepted := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vf vectorFile
		if err := json.Unmarshal(b, &vf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range vf.Vectors {
			t.Run(vf.Scheme+"/"+v.Name, func(t *testing.T) {
				name := fresh("vector")
				r.addSource(t, name, inbound.Scheme(vf.Scheme), 0, v.Secrets...)
				r.clock.Set(time.Unix(v.NowUnix, 0).UTC())
				a := r.send(t, request{path: "/in/" + name, headers: http.Header(v.Headers), body: []byte(v.Body)})
				isJSON := json.Valid([]byte(v.Body))
				switch {
				case v.Want != nil && isJSON:
					if a.status != http.StatusAccepted || a.body != `{"status":"accepted"}` {
						t.Fatalf("answer %+v, want 202 accepted", a)
					}
					accepted++
					ev, err := r.st.Event(t.Context(), store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: v.Want.ID})
					if err != nil {
						t.Fatal(err)
					}
					sum := sha256.Sum256([]byte(v.Body))
					if ev.Status != store.StatusQueued || ev.EventType != v.Want.Type || ev.BodySHA256 != "sha256:"+hex.EncodeToString(sum[:]) || !bytes.Equal(ev.Body, []byte(v.Body)) {
						t.Errorf("event item %+v", ev)
					}
					if m := r.messages(t); len(m) != 1 || m[0] != (inboundapi.Message{Source: name, EventID: v.Want.ID}) {
						t.Errorf("messages %+v, want the one event", m)
					}
					return
				case v.Want != nil || v.Error == "body_not_json":
					if a.status != http.StatusUnsupportedMediaType {
						t.Fatalf("answer %+v, want 415", a)
					}
				default:
					if a.status != http.StatusUnauthorized || a.body != `{"status":"unauthorized"}` {
						t.Fatalf("answer %+v, want 401", a)
					}
				}
				r.nothingKept(t, name)
			})
		}
	}
	if accepted == 0 {
		t.Fatal("no vector was accepted")
	}
}

// A request refused for its signature, time, size, source, headers,
// body, method or path answers its status, and stores and queues
// nothing.
func TestRefusalsStoreAndQueueNothing(t *testing.T) {
	r := newRig(t)
	secret := whsec('a')
	name, small := fresh("refuse"), fresh("small")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	r.addSource(t, small, inbound.StandardWebhooks, 100, secret)
	body := []byte(`{"type":"invoice.paid","n":1}`)
	now := r.clock.Now()
	ok := standard(t, name, secret, "msg_1", now, body)

	badSig := standard(t, name, whsec('b'), "msg_1", now, body)
	otherBody := ok
	otherBody.body = []byte(`{"type":"invoice.paid","n":2}`)
	missing := ok
	missing.headers = ok.headers.Clone()
	missing.headers.Del("webhook-signature")
	big := bytes.Repeat([]byte(" "), 150)
	copy(big, `{"a":1}`)
	huge := append([]byte(`{"a":"`), bytes.Repeat([]byte("x"), receiver.HardMaxBodyBytes)...)
	huge = append(huge, `"}`...)
	get := ok
	get.method = http.MethodGet
	notJSON := standard(t, name, secret, "msg_2", now, []byte("plain text"))

	for _, c := range []struct {
		name   string
		q      request
		status int
	}{
		{"bad signature", badSig, http.StatusUnauthorized},
		{"signature over a different body", otherBody, http.StatusUnauthorized},
		{"timestamp six minutes old", standard(t, name, secret, "msg_1", now.Add(-6*time.Minute), body), http.StatusUnauthorized},
		{"timestamp six minutes ahead", standard(t, name, secret, "msg_1", now.Add(6*time.Minute), body), http.StatusUnauthorized},
		{"missing signature header", missing, http.StatusUnauthorized},
		{"no headers", request{path: "/in/" + name, body: body}, http.StatusUnauthorized},
		{"unknown source", standard(t, fresh("nobody"), secret, "msg_1", now, body), http.StatusUnauthorized},
		{"over the source's max_body_bytes", standard(t, small, secret, "msg_1", now, big), http.StatusRequestEntityTooLarge},
		{"over the hard cap", standard(t, name, secret, "msg_1", now, huge), http.StatusRequestEntityTooLarge},
		{"over the hard cap, unknown source", standard(t, fresh("nobody"), secret, "msg_1", now, huge), http.StatusRequestEntityTooLarge},
		{"not JSON", notJSON, http.StatusUnsupportedMediaType},
		{"GET", get, http.StatusMethodNotAllowed},
		{"another path", request{path: "/hooks/" + name, headers: ok.headers, body: body}, http.StatusNotFound},
		{"a name the rule refuses", request{path: "/in/Billing_1", headers: ok.headers, body: body}, http.StatusNotFound},
		{"a deeper path", request{path: "/in/" + name + "/x", headers: ok.headers, body: body}, http.StatusNotFound},
		{"an escaped path", request{path: "/in/%62illing", headers: ok.headers, body: body}, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := r.send(t, c.q)
			if a.status != c.status {
				t.Fatalf("answer %+v, want %d", a, c.status)
			}
			if !strings.HasPrefix(a.body, `{"status":"`) || len(a.body) > 40 {
				t.Errorf("answer body %q, want a small status", a.body)
			}
			r.nothingKept(t, "")
		})
	}
	// Not vacuous: the same source accepts the request signed as it
	// should be.
	if a := r.send(t, ok); a.status != http.StatusAccepted {
		t.Fatalf("the well-signed request: %+v", a)
	}
}

// The hard cap is checked before any look-up: a body over it is refused
// even when the store cannot be read.
func TestABodyOverTheHardCapIsRefusedBeforeAnyLookup(t *testing.T) {
	r := newRig(t)
	failing := receiver.New(receiver.Config{Store: nil, Queue: r.fault, QueueURL: r.queue.URL, Now: r.clock.Now})
	q := request{path: "/in/billing", body: bytes.Repeat([]byte("x"), receiver.HardMaxBodyBytes+1)}
	r.h = failing // a nil Store panics on any look-up
	if a := r.send(t, q); a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("answer %+v, want 413", a)
	}
}

// One event sent five times is one item and one message: the first is
// accepted, the others answered as duplicates.
func TestAnEventSentFiveTimesIsOneItemAndOneMessage(t *testing.T) {
	r := newRig(t)
	secret := whsec('c')
	name := fresh("dup")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	q := standard(t, name, secret, "msg_dup", r.clock.Now(), []byte(`{"n":1}`))
	for i := range 5 {
		a := r.send(t, q)
		want := answer{http.StatusOK, `{"status":"duplicate"}`}
		if i == 0 {
			want = answer{http.StatusAccepted, `{"status":"accepted"}`}
		}
		if a != want {
			t.Fatalf("send %d: %+v, want %+v", i+1, a, want)
		}
	}
	if ev := r.events(t, ""); len(ev) != 1 {
		t.Fatalf("%d event items, want 1", len(ev))
	}
	if m := r.messages(t); len(m) != 1 {
		t.Fatalf("%d messages, want 1: %+v", len(m), m)
	}
}

// Five copies of one event sent at once are one item and one message:
// each is accepted or a duplicate, and only the request whose put made
// the item sends it.
func TestAnEventSentFiveTimesAtOnceIsOneItemAndOneMessage(t *testing.T) {
	r := newRig(t)
	secret := whsec('d')
	name := fresh("dupc")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	q := standard(t, name, secret, "msg_dupc", r.clock.Now(), []byte(`{"n":1}`))
	// Warm the source cache so that the five race at Receive, not at
	// the source's read.
	if a := r.send(t, standard(t, name, secret, "msg_warm", r.clock.Now(), []byte(`{}`))); a.status != http.StatusAccepted {
		t.Fatalf("warm-up: %+v", a)
	}
	r.messages(t)
	start := make(chan struct{})
	var wg sync.WaitGroup
	answers := make([]answer, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = r.send(t, q)
		}()
	}
	close(start)
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusAccepted && a.status != http.StatusOK {
			t.Errorf("send %d: %+v", i+1, a)
		}
	}
	if ev := r.events(t, ""); len(ev) != 2 { // the warm-up's and this one
		t.Fatalf("%d event items, want 2", len(ev))
	}
	if m := r.messages(t); len(m) != 1 || m[0].EventID != "msg_dupc" {
		t.Fatalf("messages %+v, want one of msg_dupc", m)
	}
}

// A send that fails answers 503 and leaves the event RECEIVED; the relay
// queues it once it is RelayAfter old, and not before.
func TestTheRelayQueuesAnEventLeftReceived(t *testing.T) {
	r := newRig(t)
	secret := whsec('e')
	name := fresh("relay")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	q := standard(t, name, secret, "msg_relay", r.clock.Now(), []byte(`{"n":1}`))
	r.fault.failing.Store(true)
	if a := r.send(t, q); a != (answer{http.StatusServiceUnavailable, `{"status":"unavailable"}`}) {
		t.Fatalf("answer %+v, want 503", a)
	}
	r.fault.failing.Store(false)
	key := store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: "msg_relay"}
	if ev, err := r.st.Event(t.Context(), key); err != nil || ev.Status != store.StatusReceived {
		t.Fatalf("event %+v, %v: want RECEIVED", ev, err)
	}
	if n, err := r.h.Relay(t.Context()); err != nil || n != 0 {
		t.Fatalf("relay before RelayAfter: %d, %v; want 0", n, err)
	}
	if m := r.messages(t); len(m) != 0 {
		t.Fatalf("messages %+v before RelayAfter", m)
	}
	r.clock.Add(2*time.Minute + time.Second)
	if n, err := r.h.Relay(t.Context()); err != nil || n != 1 {
		t.Fatalf("relay: %d, %v; want 1", n, err)
	}
	if m := r.messages(t); len(m) != 1 || m[0] != (inboundapi.Message{Source: name, EventID: "msg_relay"}) {
		t.Fatalf("messages %+v, want the event", m)
	}
	if ev, err := r.st.Event(t.Context(), key); err != nil || ev.Status != store.StatusQueued {
		t.Fatalf("event %+v, %v: want QUEUED", ev, err)
	}
	if n, err := r.h.Relay(t.Context()); err != nil || n != 0 {
		t.Fatalf("second relay: %d, %v; want 0", n, err)
	}
	// The relay runs on a scheduled event.
	if _, err := r.h.Handle(t.Context(), []byte(`{"detail-type":"Scheduled Event","source":"aws.events","detail":{}}`)); err != nil {
		t.Fatalf("Handle of a scheduled event: %v", err)
	}
}

// A sender's retry of an event left RECEIVED is accepted: within
// RelayAfter nothing more is sent (the relay will), after it the retry
// queues the event itself.
func TestASendersRetryOfAReceivedEventQueuesIt(t *testing.T) {
	r := newRig(t)
	secret := whsec('f')
	name := fresh("retry")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	body := []byte(`{"n":1}`)
	r.fault.failing.Store(true)
	if a := r.send(t, standard(t, name, secret, "msg_retry", r.clock.Now(), body)); a.status != http.StatusServiceUnavailable {
		t.Fatalf("answer %+v, want 503", a)
	}
	r.fault.failing.Store(false)
	if a := r.send(t, standard(t, name, secret, "msg_retry", r.clock.Now(), body)); a.status != http.StatusAccepted {
		t.Fatalf("retry at once: %+v, want 202", a)
	}
	if m := r.messages(t); len(m) != 0 {
		t.Fatalf("retry at once sent %+v", m)
	}
	r.clock.Add(3 * time.Minute)
	if a := r.send(t, standard(t, name, secret, "msg_retry", r.clock.Now(), body)); a.status != http.StatusAccepted {
		t.Fatalf("retry after RelayAfter: %+v, want 202", a)
	}
	if m := r.messages(t); len(m) != 1 {
		t.Fatalf("messages %+v, want one", m)
	}
	if a := r.send(t, standard(t, name, secret, "msg_retry", r.clock.Now(), body)); a.status != http.StatusOK {
		t.Fatalf("a fourth send: %+v, want 200 duplicate", a)
	}
}

// A GitHub source: the event id is X-GitHub-Delivery and the event type
// X-GitHub-Event; the body is kept exactly as sent.
func TestAGitHubEventIsRecordedUnderItsDeliveryID(t *testing.T) {
	r := newRig(t)
	name := fresh("gh")
	secret := "It's a Secret to Everybody"
	r.addSource(t, name, inbound.GitHub, 0, secret)
	body := []byte(`{"action":"opened","number":1}` + "\n")
	q := github(name, secret, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "pull_request", body)
	if a := r.send(t, q); a.status != http.StatusAccepted {
		t.Fatalf("answer %+v", a)
	}
	ev, err := r.st.Event(t.Context(), store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"})
	if err != nil || ev.EventType != "pull_request" || !bytes.Equal(ev.Body, body) || ev.Status != store.StatusQueued {
		t.Fatalf("event %+v, %v", ev, err)
	}
	if m := r.messages(t); len(m) != 1 || m[0].EventID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" {
		t.Fatalf("messages %+v", m)
	}
	// Stripe too, its id from the signed body.
	sname, ssecret := fresh("stripe"), "whsec_test_secret"
	r.addSource(t, sname, inbound.Stripe, 0, ssecret)
	if a := r.send(t, stripe(sname, ssecret, r.clock.Now(), []byte(`{"id":"evt_1","type":"invoice.paid"}`))); a.status != http.StatusAccepted {
		t.Fatalf("stripe: %+v", a)
	}
	if m := r.messages(t); len(m) != 1 || m[0] != (inboundapi.Message{Source: sname, EventID: "evt_1"}) {
		t.Fatalf("stripe messages %+v", m)
	}
}

// A body Lambda hands over base64-encoded is verified and kept as the
// exact bytes sent.
func TestABase64EncodedBodyIsVerifiedAsItsDecodedBytes(t *testing.T) {
	r := newRig(t)
	secret := whsec('g')
	name := fresh("b64")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	body := []byte("{\"text\":\"caf\u00e9\",\n\"n\":[1,2]}")
	q := standard(t, name, secret, "msg_b64", r.clock.Now(), body)
	q.b64 = true
	if a := r.send(t, q); a.status != http.StatusAccepted {
		t.Fatalf("answer %+v", a)
	}
	ev, err := r.st.Event(t.Context(), store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: "msg_b64"})
	if err != nil || !bytes.Equal(ev.Body, body) {
		t.Fatalf("event %+v, %v: want the decoded body", ev, err)
	}
}

// The source and its opened secrets are kept SecretCache: a rotated
// secret verifies only once the cached source has expired (or a delivery
// the cached secrets verify finds the source changed); the secret it
// replaced outright stops verifying at once, since a delivery it verifies
// is taken only once a read of the source finds it still there.
func TestTheSecretCacheIsBoundedInTime(t *testing.T) {
	r := newRig(t)
	oldSecret, newSecret := whsec('h'), whsec('i')
	name := fresh("rotate")
	r.addSource(t, name, inbound.StandardWebhooks, 0, oldSecret)
	n := 0
	post := func(secret string) int {
		n++
		return r.send(t, standard(t, name, secret, "msg_rot_"+string(rune('a'+n)), r.clock.Now(), []byte(`{}`))).status
	}
	if s := post(oldSecret); s != http.StatusAccepted {
		t.Fatalf("the old secret: %d", s)
	}
	src, err := r.st.Source(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.st.UpdateSecrets(t.Context(), name, r.seal(t, name, newSecret), src.Version, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if s := post(newSecret); s != http.StatusUnauthorized {
		t.Fatalf("the new secret within the cache time: %d, want 401", s)
	}
	r.clock.Add(4 * time.Minute)
	if s := post(oldSecret); s != http.StatusUnauthorized {
		t.Fatalf("the old secret, replaced, within the cache time: %d, want 401", s)
	}
	r.clock.Add(time.Minute + time.Second)
	if s := post(newSecret); s != http.StatusAccepted {
		t.Fatalf("the new secret after the cache time: %d, want 202", s)
	}
	if s := post(oldSecret); s != http.StatusUnauthorized {
		t.Fatalf("the old secret after the cache time: %d, want 401", s)
	}
}

// A secret retiring verifies until its retires_at, the current one
// throughout.
func TestARetiringSecretVerifiesUntilItRetires(t *testing.T) {
	r := newRig(t)
	oldSecret, newSecret := whsec('j'), whsec('k')
	name := fresh("retire")
	r.addSource(t, name, inbound.StandardWebhooks, 0, oldSecret, newSecret) // old retires in an hour
	for i, c := range []struct {
		after  time.Duration
		secret string
		want   int
	}{
		{0, oldSecret, http.StatusAccepted},
		{0, newSecret, http.StatusAccepted},
		{59 * time.Minute, oldSecret, http.StatusAccepted},
		{time.Minute, oldSecret, http.StatusUnauthorized},
		{0, newSecret, http.StatusAccepted},
	} {
		r.clock.Add(c.after)
		if a := r.send(t, standard(t, name, c.secret, "msg_ret_"+string(rune('a'+i)), r.clock.Now(), []byte(`{}`))); a.status != c.want {
			t.Fatalf("case %d: %+v, want %d", i, a, c.want)
		}
	}
}

// An unknown source is remembered UnknownSourceCache: a source added
// meanwhile answers once that has passed.
func TestAnUnknownSourceIsRememberedBriefly(t *testing.T) {
	r := newRig(t)
	secret := whsec('l')
	name := fresh("late")
	q := func() request { return standard(t, name, secret, "msg_late", r.clock.Now(), []byte(`{}`)) }
	if a := r.send(t, q()); a.status != http.StatusUnauthorized {
		t.Fatalf("unknown: %+v", a)
	}
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	if a := r.send(t, q()); a.status != http.StatusUnauthorized {
		t.Fatalf("added, within the unknown cache time: %+v, want 401", a)
	}
	r.clock.Add(receiver.UnknownSourceCache)
	if a := r.send(t, q()); a.status != http.StatusAccepted {
		t.Fatalf("after the unknown cache time: %+v, want 202", a)
	}
}

// The logs hold the source and a reason for each refusal, and never the
// body, a header value, a signature or the secret.
func TestTheLogsHoldNoBodyHeaderSignatureOrSecret(t *testing.T) {
	r := newRig(t)
	secret := whsec('m')
	name := fresh("canary")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	body := []byte(`{"canary":"body-canary-7f3a9c"}`)
	ok := standard(t, name, secret, "msg_canary_5d1e", r.clock.Now(), body)
	bad := standard(t, name, whsec('n'), "msg_canary_5d1e", r.clock.Now(), body)
	stale := standard(t, name, secret, "msg_canary_5d1e", r.clock.Now().Add(-time.Hour), body)
	for _, q := range []request{bad, stale, ok, ok} {
		r.send(t, q)
	}
	r.fault.failing.Store(true)
	r.send(t, standard(t, name, secret, "msg_canary_2", r.clock.Now(), body))
	r.fault.failing.Store(false)
	logs := r.log.String()
	if !strings.Contains(logs, name) || !strings.Contains(logs, "bad_signature") || !strings.Contains(logs, "stale_timestamp") {
		t.Fatalf("the logs name neither the source nor the reasons:\n%s", logs)
	}
	for _, canary := range []string{"body-canary-7f3a9c", secret, strings.TrimPrefix(secret, "whsec_"), "msg_canary_5d1e",
		ok.headers.Get("webhook-signature"), bad.headers.Get("webhook-signature")} {
		if strings.Contains(logs, canary) {
			t.Errorf("the logs hold %q:\n%s", canary, logs)
		}
	}
}

// Handle serves a Function URL event and runs the relay on a scheduled
// event; anything else is an error of the invocation.
func TestHandleRoutesByInvocation(t *testing.T) {
	r := newRig(t)
	for _, p := range []string{`[]`, `{"Records":[]}`, `{"detail-type":"Other"}`} {
		if _, err := r.h.Handle(t.Context(), []byte(p)); err == nil {
			t.Errorf("Handle(%s): no error", p)
		}
	}
	out, err := r.h.Handle(t.Context(), []byte(`{"requestContext":"x"}`))
	if err != nil || !strings.Contains(string(out), `"statusCode":400`) {
		t.Errorf("an undecodable Function URL event: %s, %v", out, err)
	}
}

// A source whose secret KMS cannot open answers 503 and keeps nothing;
// the source is not cached as known, so the next request, with KMS
// back, is accepted.
func TestASecretKMSCannotOpenAnswers503AndKeepsNothing(t *testing.T) {
	r := newRig(t)
	secret := whsec('o')
	name := fresh("kms")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	var kmsDown atomic.Bool
	kmsDown.Store(true)
	r.h = receiver.New(receiver.Config{Store: r.st, Queue: r.fault, QueueURL: r.queue.URL, Now: r.clock.Now, Log: slog.New(slog.NewJSONHandler(r.log, nil)),
		Open: func(ctx context.Context, source string, s vault.Sealed) ([]byte, error) {
			if kmsDown.Load() {
				return nil, errors.New("kms: injected fault: KMSInternalException")
			}
			return store.OpenSecret(ctx, r.kms.Client(), source, s)
		}})
	q := standard(t, name, secret, "msg_kms", r.clock.Now(), []byte(`{}`))
	if a := r.send(t, q); a != (answer{http.StatusServiceUnavailable, `{"status":"unavailable"}`}) {
		t.Fatalf("answer %+v, want 503", a)
	}
	r.nothingKept(t, name)
	kmsDown.Store(false)
	if a := r.send(t, q); a.status != http.StatusAccepted {
		t.Fatalf("with KMS back: %+v, want 202", a)
	}
	if !strings.Contains(r.log.String(), "source_unavailable") {
		t.Errorf("no log line of the failure:\n%s", r.log.String())
	}
}

// A relay whose sends fail reports how many events it could not queue
// (an error of the scheduled invocation) and leaves them RECEIVED for
// the next run.
func TestARelayWhoseSendsFailLeavesTheEventsForTheNextRun(t *testing.T) {
	r := newRig(t)
	secret := whsec('p')
	name := fresh("relayfail")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	r.fault.failing.Store(true)
	for _, id := range []string{"msg_rf_1", "msg_rf_2"} {
		if a := r.send(t, standard(t, name, secret, id, r.clock.Now(), []byte(`{}`))); a.status != http.StatusServiceUnavailable {
			t.Fatalf("%s: %+v, want 503", id, a)
		}
	}
	r.clock.Add(3 * time.Minute)
	if _, err := r.h.Handle(t.Context(), []byte(`{"detail-type":"Scheduled Event"}`)); err == nil || !strings.Contains(err.Error(), "2 of 2") {
		t.Fatalf("relay with SQS down: %v, want 2 of 2 not queued", err)
	}
	r.fault.failing.Store(false)
	if n, err := r.h.Relay(t.Context()); err != nil || n != 2 {
		t.Fatalf("the next relay: %d, %v; want 2", n, err)
	}
	if m := r.messages(t); len(m) != 2 {
		t.Fatalf("messages %+v, want 2", m)
	}
}
