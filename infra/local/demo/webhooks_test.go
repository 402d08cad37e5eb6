package main

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/webhook"
)

const (
	testRun    = "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_demo-digest:demo-1"
	testReview = "rv_0123456789abcdef0123456789abcdef"
)

// signed is one delivery of an event of type typ about data, signed with
// key at ts, as webhook-delivery sends it.
func signed(t *testing.T, key []byte, typ webhook.Type, source string, data any, ts time.Time) delivery {
	t.Helper()
	e, err := webhook.NewEvent(typ, source, "demo-digest", data, ts)
	if err != nil {
		t.Fatal(err)
	}
	body, err := webhook.Body(e)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := webhook.Sign([][]byte{key}, e.ID, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	return delivery{id: e.ID, timestamp: strconv.FormatInt(ts.Unix(), 10), signature: sig, body: body, at: ts.Add(2 * time.Second)}
}

func requested(t *testing.T, key []byte, review string, ts time.Time) delivery {
	return signed(t, key, webhook.ReviewRequested, review, webhook.ReviewRequestedData{ReviewID: review, Solution: "demo-digest", Version: 1,
		Run: "demo-1", Step: "approve", Tool: "send-email", ExpiresAt: "2026-12-03T00:00:00Z", DecideCommand: "toolgate review approve " + review}, ts)
}

func succeeded(t *testing.T, key []byte, run string, ts time.Time) delivery {
	name := run[strings.LastIndex(run, ":")+1:]
	return signed(t, key, webhook.RunSucceeded, run+"\nSUCCEEDED", webhook.RunData{ExecutionARN: run, Name: name, Status: "SUCCEEDED",
		StateMachineARN: "arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-local_demo-digest",
		StartDate:       "2026-12-02T23:00:00Z", StopDate: "2026-12-02T23:00:05Z"}, ts)
}

func testKey(t *testing.T) (string, []byte) {
	t.Helper()
	whsec, key, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return whsec, key
}

// The receiver keeps what webhook-delivery POSTs, and hookLines prints the
// first run's two events once each (a redelivery and another run's event
// left out), with type, webhook-id, the review id or the execution's name
// and "signature verified", and nothing of the secret or the body beyond
// those ids.
func TestHookLinesPrintsEachAwaitedEventOnceWithItsSignatureVerified(t *testing.T) {
	whsec, key := testKey(t)
	ts := time.Now().Truncate(time.Second)
	rq, ok := requested(t, key, testReview, ts), succeeded(t, key, testRun, ts)
	other := succeeded(t, key, testRun+"-other", ts)

	h, err := startHookReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, d := range []delivery{rq, other, ok, ok} {
		req, _ := http.NewRequest(http.MethodPost, h.URL(), bytes.NewReader(d.body))
		req.Header.Set(webhook.HeaderID, d.id)
		req.Header.Set(webhook.HeaderTimestamp, d.timestamp)
		req.Header.Set(webhook.HeaderSignature, d.signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("the receiver answered %d; want 2xx, a delivered attempt", resp.StatusCode)
		}
	}
	var lines []string
	got, err := h.wait(t.Context(), time.Minute, func(got []delivery) bool {
		lines, err = hookLines(key, got, testRun, testReview)
		return err == nil
	})
	if err != nil || len(got) != 4 {
		t.Fatalf("the receiver kept %d deliveries (%v); want the 4 POSTed", len(got), err)
	}
	want := []string{
		"review.requested  webhook-id " + rq.id + "  review " + testReview + "  signature verified",
		"run.succeeded     webhook-id " + ok.id + "  execution demo-1  signature verified",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		for _, never := range []string{whsec, whsec[len(webhook.SecretPrefix):], "send-email", "toolgate review approve", "SUCCEEDED"} {
			if strings.Contains(l, never) {
				t.Errorf("line %q shows %q", l, never)
			}
		}
	}
}

// A delivery that does not verify fails the demo, naming the event, never
// the secret; an absent event is errEventMissing, which the wait goes on
// waiting for, and says what did arrive.
func TestHookLinesRefusesWhatDoesNotVerifyAndNamesWhatIsMissing(t *testing.T) {
	whsec, key := testKey(t)
	_, otherKey := testKey(t)
	ts := time.Now().Truncate(time.Second)
	rq, ok := requested(t, key, testReview, ts), succeeded(t, key, testRun, ts)
	changed := ok
	changed.body = bytes.Replace(ok.body, []byte(`05Z`), []byte(`06Z`), 1)
	late := rq
	late.at = ts.Add(webhook.Tolerance + time.Second)

	for _, c := range []struct {
		name     string
		got      []delivery
		want     error
		contains string
	}{
		{name: "a body changed by one byte", got: []delivery{rq, changed}, want: webhook.ErrNoMatchingSig, contains: "run.succeeded for execution demo-1"},
		{name: "signed with another secret", got: []delivery{requested(t, otherKey, testReview, ts), ok}, want: webhook.ErrNoMatchingSig, contains: "review.requested for review " + testReview},
		{name: "arrived past the tolerance", got: []delivery{late, ok}, want: webhook.ErrTooOld, contains: "review.requested"},
		{name: "no headers", got: []delivery{rq, {body: ok.body, at: ts}}, want: webhook.ErrMissingHeader, contains: "run.succeeded"},
		{name: "review.requested missing", got: []delivery{ok, requested(t, key, "rv_another", ts)}, want: errEventMissing,
			contains: "review.requested of the first run (review " + testReview},
		{name: "run.succeeded missing", got: []delivery{rq, succeeded(t, key, testRun+"-other", ts)}, want: errEventMissing,
			contains: "the receiver got 2 deliveries (review.requested 1, run.succeeded 1)"},
		{name: "nothing", want: errEventMissing, contains: "the receiver got 0 deliveries ()"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines, err := hookLines(key, c.got, testRun, testReview)
			if !errors.Is(err, c.want) || lines != nil {
				t.Fatalf("hookLines: %q, %v; want the error %v", lines, err, c.want)
			}
			if !strings.Contains(err.Error(), c.contains) {
				t.Errorf("error %q does not say %q", err, c.contains)
			}
			if strings.Contains(err.Error(), whsec[len(webhook.SecretPrefix):]) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// keepSecret takes the secret out of what toolgate webhooks subscribe
// prints and leaves a line saying where it is kept.
func TestKeepSecretNeverShowsTheSecret(t *testing.T) {
	whsec, _ := testKey(t)
	out := "sub_abc active http://127.0.0.1:4000/hooks/demo events run.succeeded,review.requested, created 2026-12-02T23:00:00Z by arn:aws:iam::000000000000:user/ops, 1 secret(s)\n" +
		"secret (shown once; store it where the receiver reads it): " + whsec + "\n"
	shown, secret, err := keepSecret(out)
	if err != nil || secret != whsec {
		t.Fatalf("keepSecret: secret ok %v, %v", secret == whsec, err)
	}
	if strings.Contains(shown, whsec[len(webhook.SecretPrefix):]) || !strings.HasPrefix(shown, "sub_abc active") ||
		!strings.Contains(shown, "whsec_… (kept in the demo's memory, never printed)") {
		t.Errorf("shown:\n%s", strings.ReplaceAll(shown, whsec, "<the secret>"))
	}
	for name, bad := range map[string]string{
		"no secret":   "sub_abc active\n",
		"two secrets": out + "secret: " + whsec + "\n",
	} {
		if _, _, err := keepSecret(bad); err == nil || strings.Contains(err.Error(), whsec) {
			t.Errorf("%s: keepSecret: %v; want an error without the secret", name, err)
		}
	}
}
