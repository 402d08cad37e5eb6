package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// approvedWithEdits stores an approval of the call payload describes
// whose reviewer replaced text by edited (docs/reviews.md, "Approve with
// edits"), as review-decision records one.
// approvedDigest, when not "", replaces the approved digest recorded.
func approvedWithEdits(t *testing.T, rs *dynamo.Store, payload json.RawMessage, edited, approvedDigest string) *review.Review {
	t.Helper()
	p := paramsFor(t, payload)
	p.ID, p.Step, p.TimeoutSeconds, p.Editable = review.NewID(), "approve", 3600, []string{"text"}
	r, err := review.New(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if created, _, err := rs.Create(ctx, r); err != nil || !created {
		t.Fatal(created, err)
	}
	edits, _ := json.Marshal(map[string]string{"text": edited})
	canonical, _, digest, err := review.CheckEdits(r, review.Approve, edits)
	if err != nil {
		t.Fatal(err)
	}
	if approvedDigest != "" {
		digest = approvedDigest
	}
	applied, cur, err := rs.DecideWith(ctx, r, review.Approve, reviewtest.Approver, true, "edited",
		dynamo.Approval{Edits: canonical, ApprovedDigest: digest}, time.Minute)
	if err != nil || !applied {
		t.Fatal(applied, err)
	}
	return cur
}

// recordingTool is the gated test tool, recording the input it was run with.
func recordingTool(calls *atomic.Int64, seen *atomic.Value) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		seen.Store(string(c.Input))
		return json.RawMessage(`{"message_id":"m"}`), nil
	}
}

func TestAnEditedApprovalRunsTheToolWithTheEditedInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	var seen atomic.Value
	d := e.dispatcher(t, "test-gated", recordingTool(&calls, &seen))
	payload := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"what the reviewer saw"}`)
	r := approvedWithEdits(t, e.reviews(), payload, "what the reviewer wrote", "")
	payload = reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r))
	if _, err := d.Handle(ctx, payload); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || seen.Load() != `{"text":"what the reviewer wrote"}` {
		t.Fatalf("the tool ran %d times with %v", calls.Load(), seen.Load())
	}
	_, sent, _ := tool.InputDigest(json.RawMessage(`{"text":"what the reviewer saw"}`))
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].InputDigest != sent ||
		rows[0].EditedDigest != r.ApprovedDigest || rows[0].Editor != reviewtest.Approver || rows[0].ReviewID != r.ID {
		t.Fatalf("rows %+v", rows)
	}
	// The same call again (a retry of the key) replays: the tool does not run again.
	out, err := d.Handle(ctx, payload)
	if err != nil || string(out) != `{"message_id":"m"}` || calls.Load() != 1 {
		t.Fatalf("retry: %s %v, the tool ran %d times", out, err, calls.Load())
	}
}

func TestAnApprovalWhoseEditsDoNotGiveTheApprovedInputAuthorisesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	var seen atomic.Value
	d := e.dispatcher(t, "test-gated", recordingTool(&calls, &seen))
	payload := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"shown"}`)
	// The edits with another approved digest: what the item says was
	// approved is not what the edits give.
	r := approvedWithEdits(t, e.reviews(), payload, "edited", "sha256:"+strings.Repeat("0", 64))
	_, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r)))
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), "edits do not give the input it approved") || calls.Load() != 0 {
		t.Fatalf("%v; the tool ran %d times", err, calls.Load())
	}
}

func TestAShowReviewsApprovalIsRefusedForAToolCall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	payload := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x"}`)
	p := paramsFor(t, payload)
	p.Kind, p.Of, p.Tool = tool.ReviewShow, "", ""
	r := reviewtest.Decided(t, e.reviews(), p, review.Approve)
	_, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r)))
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), "shows values and approves no tool call") || calls.Load() != 0 {
		t.Fatalf("%v; the tool ran %d times", err, calls.Load())
	}
}

// A parent call that ran with a reviewer's edits recorded the input as it
// was sent (reviewed) and the result of the edited one: a fork's call of
// the same sent input, approved without edits, must not take that result
// as its own (the e-mail the fork's reviewer approved was never sent),
// so it runs.
func TestAForkDoesNotReuseAParentCallThatRanWithEdits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	var seen atomic.Value
	d := e.dispatcher(t, "test-gated", recordingTool(&calls, &seen))
	parent := forkCall{tool: "test-gated", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"shown"}`}
	payload := parent.envelope(t)
	r := approvedWithEdits(t, e.reviews(), payload, "what the parent's reviewer wrote", "")
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r))); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || seen.Load() != `{"text":"what the parent's reviewer wrote"}` {
		t.Fatalf("parent: the tool ran %d times with %v", calls.Load(), seen.Load())
	}
	f := parent.fork(newRunID("fork"))
	fp := f.envelope(t)
	fr := reviewtest.Decided(t, e.reviews(), paramsFor(t, fp), review.Approve)
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, fp, reviewtest.Approval(t, fr))); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || seen.Load() != `{"text":"shown"}` {
		t.Fatalf("fork: the tool ran %d times, last with %v; want it run with the input its reviewer approved", calls.Load(), seen.Load())
	}
	if rows := ledgertest.RunRows(t, e.store, f.run); len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].ReusedFrom != "" {
		t.Fatalf("fork rows %+v, want one SUCCEEDED, reused from nothing", rows)
	}
}

// A call that ran with a reviewer's edits, sent again after its review's
// time has ended, replays the recorded result (of the edited input): it
// neither runs the input as sent, unedited, nor is refused.
func TestARetryAfterAnEditedApprovalEndedReplaysTheEditedCall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	var seen atomic.Value
	run := recordingTool(&calls, &seen)
	d := e.dispatcher(t, "test-gated", run)
	payload := envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"shown"}`)
	// Reviewed and approved 150 s ago for 90 s; the call ran 120 s ago.
	rs := e.reviews().WithClock(func() time.Time { return time.Now().Add(-150 * time.Second) })
	p := paramsFor(t, payload)
	p.ID, p.Step, p.TimeoutSeconds, p.Editable = review.NewID(), "approve", 90, []string{"text"}
	r, err := review.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if created, _, err := rs.Create(ctx, r); err != nil || !created {
		t.Fatal(created, err)
	}
	edits, merged, digest, err := review.CheckEdits(r, review.Approve, json.RawMessage(`{"text":"edited"}`))
	if err != nil || string(merged) != `{"text":"edited"}` {
		t.Fatal(merged, err)
	}
	applied, r, err := rs.DecideWith(ctx, r, review.Approve, reviewtest.Approver, true, "edited", dynamo.Approval{Edits: edits, ApprovedDigest: digest}, time.Minute)
	if err != nil || !applied {
		t.Fatal(applied, err)
	}
	payload = reviewtest.WithApproval(t, payload, reviewtest.Approval(t, r))
	deps := e.deps(t, run, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	deps.Ledger = e.store.WithMAC(mustSealKey(t, testMAC)).WithClock(func() time.Time { return time.Now().Add(-120 * time.Second) })
	earlier, err := New(Config{Mode: OneTool("test-gated"), MemoryMB: 128, LedgerSince: testSince, CompactSince: time.Now(), ExternalKeySecret: testSecret, Lane: d.cfg.Lane}, deps)
	if err != nil {
		t.Fatal(err)
	}
	first, err := earlier.Handle(ctx, payload)
	if err != nil || calls.Load() != 1 || seen.Load() != `{"text":"edited"}` {
		t.Fatalf("the call while its approval lasted: %s %v; the tool ran %d times with %v", first, err, calls.Load(), seen.Load())
	}
	again, err := d.Handle(ctx, payload)
	if err != nil || string(again) != string(first) || calls.Load() != 1 {
		t.Fatalf("the call again after its approval ended: %s %v; the tool ran %d times, last with %v", again, err, calls.Load(), seen.Load())
	}
}

// The dispatcher takes nothing of an approval but its review id: an
// envelope whose approval drops the edited members and the digests still
// runs the review item's edits, and one that claims edits and another
// approved digest for an approval without edits runs the input as sent.
func TestTheEnvelopesApprovalDecidesNoEdit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	var seen atomic.Value
	d := e.dispatcher(t, "test-gated", recordingTool(&calls, &seen))
	rewrite := func(approval json.RawMessage, set map[string]any, drop ...string) json.RawMessage {
		var m map[string]any
		if err := json.Unmarshal(approval, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range drop {
			delete(m, k)
		}
		for k, v := range set {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	payload := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"shown"}`)
	r := approvedWithEdits(t, e.reviews(), payload, "edited", "")
	stripped := rewrite(reviewtest.Approval(t, r), nil, "edited", "reviewed_digest", "input_digest")
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, stripped)); err != nil || seen.Load() != `{"text":"edited"}` {
		t.Fatalf("an approval stripped of its edits: %v, the tool ran with %v", err, seen.Load())
	}
	payload = envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"shown"}`)
	plain := reviewtest.Decided(t, e.reviews(), paramsFor(t, payload), review.Approve)
	_, forged, _ := tool.InputDigest(json.RawMessage(`{"text":"forged"}`))
	claimed := rewrite(reviewtest.Approval(t, plain), map[string]any{"edited": []string{"text"}, "input_digest": forged, "reviewed_digest": plain.InputDigest})
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, claimed)); err != nil || seen.Load() != `{"text":"shown"}` || calls.Load() != 2 {
		t.Fatalf("an approval claiming edits: %v, the tool ran %d times, last with %v", err, calls.Load(), seen.Load())
	}
}

// A call's key runs one input. An attempt that ran under an approval with
// edits sent the edited input; a later attempt of the same key under
// another approval without them (a re-review of the parked call, which
// carries no editable members) would send the input as shown under the
// same idempotency key, where a server that honours keys may answer with
// the edited call's result, and a fork would reuse the edited call's
// result for a call approved without edits. It is refused, and the tool
// does not run again.
func TestAKeyThatRanWithEditsIsNotRunAgainWithoutThem(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, tool.Errorf(tool.UpstreamUnavailable, "the server is down")
		}
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"shown"}`)
	edited := approvedWithEdits(t, e.reviews(), payload, "edited", "")
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, reviewtest.Approval(t, edited))); err == nil || calls.Load() != 1 {
		t.Fatalf("first attempt: %v, the tool ran %d times", err, calls.Load())
	}
	p := paramsFor(t, payload)
	plain := reviewtest.Decided(t, e.reviews(), p, review.Approve)
	_, err := d.Handle(ctx, reviewtest.WithApproval(t, payload, reviewtest.Approval(t, plain)))
	if err == nil || calls.Load() != 1 {
		t.Fatalf("the key ran again without the edits: %v, the tool ran %d times", err, calls.Load())
	}
}
