package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

const (
	testRun    = "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_demo-digest:demo-1"
	testReview = "rv_0123456789abcdef0123456789abcdef"
)

// signed is one delivery of an event of type typ about data, signed with
// key at ts, as webhook-delivery sends it and the receiver records it, 2 s
// later.
func signed(t *testing.T, key []byte, typ webhook.Type, source string, data any, ts time.Time) hookreceiver.Request {
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
	return hookreceiver.Request{Path: hookPath, ID: e.ID, Timestamp: strconv.FormatInt(ts.Unix(), 10), Signature: sig, Body: body, At: ts.Add(2 * time.Second)}
}

func requested(t *testing.T, key []byte, review string, ts time.Time) hookreceiver.Request {
	return signed(t, key, webhook.ReviewRequested, review, webhook.ReviewRequestedData{ReviewID: review, Solution: "demo-digest", Version: 1,
		Run: "demo-1", Step: "approve", Tool: "send-email", ExpiresAt: "2026-12-03T00:00:00Z", DecideCommand: "toolgate review approve " + review}, ts)
}

func succeeded(t *testing.T, key []byte, run string, ts time.Time) hookreceiver.Request {
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

	h, err := hookreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, d := range []hookreceiver.Request{rq, other, ok, ok} {
		req, _ := http.NewRequest(http.MethodPost, h.URL(hookPath), bytes.NewReader(d.Body))
		req.Header.Set(webhook.HeaderID, d.ID)
		req.Header.Set(webhook.HeaderTimestamp, d.Timestamp)
		req.Header.Set(webhook.HeaderSignature, d.Signature)
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
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got, err := h.Wait(ctx, hookPath, func(got []hookreceiver.Request) bool {
		lines, err = hookLines(key, got, testRun, testReview)
		return err == nil
	})
	if err != nil || len(got) != 4 {
		t.Fatalf("the receiver kept %d deliveries (%v); want the 4 POSTed", len(got), err)
	}
	want := []string{
		"review.requested  webhook-id " + rq.ID + "  review " + testReview + "  signature verified",
		"run.succeeded     webhook-id " + ok.ID + "  execution demo-1  signature verified",
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
	changed.Body = bytes.Replace(ok.Body, []byte(`05Z`), []byte(`06Z`), 1)
	late := rq
	late.At = ts.Add(webhook.Tolerance + time.Second)

	for _, c := range []struct {
		name     string
		got      []hookreceiver.Request
		want     error
		contains string
	}{
		{name: "a body changed by one byte", got: []hookreceiver.Request{rq, changed}, want: webhook.ErrNoMatchingSig, contains: "run.succeeded for execution demo-1"},
		{name: "signed with another secret", got: []hookreceiver.Request{requested(t, otherKey, testReview, ts), ok}, want: webhook.ErrNoMatchingSig, contains: "review.requested for review " + testReview},
		{name: "arrived past the tolerance", got: []hookreceiver.Request{late, ok}, want: webhook.ErrTooOld, contains: "review.requested"},
		{name: "no headers", got: []hookreceiver.Request{rq, {Path: hookPath, Body: ok.Body, At: ts}}, want: webhook.ErrMissingHeader, contains: "run.succeeded"},
		{name: "review.requested missing", got: []hookreceiver.Request{ok, requested(t, key, "rv_another", ts)}, want: errEventMissing,
			contains: "review.requested of the first run (review " + testReview},
		{name: "run.succeeded missing", got: []hookreceiver.Request{rq, succeeded(t, key, testRun+"-other", ts)}, want: errEventMissing,
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

// What the demo prints of its subscription, read from toolgate webhooks
// subscribe --json, names it and says where its secret's key is kept,
// never the secret.
func TestShownSubscriptionNeverShowsTheSecret(t *testing.T) {
	whsec, _ := testKey(t)
	out, err := json.Marshal(webhookapi.SubscribeResult{Subscription: webhookapi.Subscription{ID: "sub_abc", URL: "http://127.0.0.1:4000" + hookPath,
		Events: strings.Split(hookEvents, ","), Status: "active", CreatedAt: "2026-12-02T23:00:00Z", CreatedBy: "arn:aws:iam::000000000000:user/ops", Secrets: 1}, Secret: whsec})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := hookreceiver.ReadSubscription(out)
	if err != nil {
		t.Fatal(err)
	}
	shown := shownSubscription(sub)
	if strings.Contains(shown, whsec[len(webhook.SecretPrefix):]) {
		t.Fatalf("shown:\n%s", strings.ReplaceAll(shown, whsec, "<the secret>"))
	}
	for _, want := range []string{"sub_abc active http://127.0.0.1:4000/hooks/demo events run.succeeded,review.requested", "whsec_… (kept in the demo's memory, never printed)"} {
		if !strings.Contains(shown, want) {
			t.Errorf("shown:\n%s\nwithout %q", shown, want)
		}
	}
}
