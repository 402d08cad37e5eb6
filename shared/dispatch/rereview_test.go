package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// A gated call whose approval's time ended is refused before its claim.
// Sent again under a decided park (park_id names the park) it is refused
// APPROVAL_EXPIRED, which the state machine catches into a re-review;
// without a park id, or with park_id null, TOOL_PERMISSION_DENIED as
// before. Either way the row is REFUSED (attempt 0), the key unclaimed
// and the tool not run.
func TestAnExpiredApprovalOfACallSentAgainUnderAParkIsApprovalExpired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls), withParks(e))
	// expired is the call's approval, bound to the call's key when it was
	// first sent (before its check parked it) and expired since.
	expired := func(t *testing.T, p json.RawMessage) json.RawMessage {
		params := paramsFor(t, p)
		params.TimeoutSeconds = 60
		past := rs.WithClock(func() time.Time { return time.Now().Add(-2 * time.Minute) })
		r := reviewtest.Decided(t, past, params, review.Approve)
		if ok, _, err := past.Bind(ctx, r, keyOf(t, p)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		return reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
	}
	gone := func(t *testing.T, p json.RawMessage) json.RawMessage {
		return reviewtest.WithApproval(t, p, json.RawMessage(`{"review_id":"`+review.NewID()+`","decision":"approve"}`))
	}
	// approvedPark writes the call's approved park and returns its id.
	approvedPark := func(t *testing.T, p json.RawMessage) string {
		runID := runIDOf(t, p)
		id := park.ID(table.Row.Key(runID), "CALL#"+runID)
		putPark(t, e, id, park.StatusApproved, runID, keyOf(t, p), "test-gated")
		return id
	}
	for _, c := range []struct {
		name     string
		approval func(*testing.T, json.RawMessage) json.RawMessage
		parkID   string // "" no member, "null", or "park": the approved park's id
		code     tool.Code
		says     string
	}{
		{"expired, sent again under a park", expired, "park", tool.ApprovalExpired, "expired at"},
		{"review gone, sent again under a park", gone, "park", tool.ApprovalExpired, "does not exist"},
		{"expired, no park_id", expired, "", tool.PermissionDenied, "expired at"},
		{"expired, park_id null", expired, "null", tool.PermissionDenied, "expired at"},
		{"review gone, no park_id", gone, "", tool.PermissionDenied, "does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.approval(t, envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x"}`))
			switch c.parkID {
			case "null":
				p = withParkID(p, "null")
			case "park":
				p = withParkID(p, `"`+approvedPark(t, p)+`"`)
			}
			before := calls.Load()
			_, err := d.Handle(ctx, p)
			if codeOf(t, err) != string(c.code) || !strings.Contains(messageOf(err), c.says) {
				t.Fatalf("got %v, want %s saying %q", err, c.code, c.says)
			}
			if calls.Load() != before {
				t.Fatal("the tool ran")
			}
			if rec, err := e.store.Record(ctx, keyOf(t, p)); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("record %+v %v: a refused call claimed the key", rec, err)
			}
			rows := ledgertest.RunRows(t, e.store, runIDOf(t, p))
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(c.code) || rows[0].Retryable || rows[0].Attempt != 0 {
				t.Fatalf("rows %+v, want one REFUSED row of %s", rows, c.code)
			}
		})
	}
}

// The re-review's approval replaces the expired one: the call sent again
// under the same park, seq and key with it binds the new review to the
// key the expired one was bound to (a binding is the review's), and runs
// once; a retry of the same call reuses the binding.
func TestAReReviewsApprovalSendsTheCallOnceUnderTheSameKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls), withParks(e))
	p := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x"}`)
	runID, key := runIDOf(t, p), keyOf(t, p)
	params := paramsFor(t, p)
	params.TimeoutSeconds = 60
	past := rs.WithClock(func() time.Time { return time.Now().Add(-2 * time.Minute) })
	old := reviewtest.Decided(t, past, params, review.Approve)
	if ok, _, err := past.Bind(ctx, old, key); err != nil || !ok {
		t.Fatal(ok, err)
	}
	id := park.ID(table.Row.Key(runID), "CALL#x")
	putPark(t, e, id, park.StatusApproved, runID, key, "test-gated")
	p = withParkID(p, `"`+id+`"`)
	if _, err := d.Handle(ctx, reviewtest.WithApproval(t, p, reviewtest.Approval(t, old))); codeOf(t, err) != string(tool.ApprovalExpired) {
		t.Fatalf("the expired approval: %v", err)
	}
	renewed := reviewtest.Decided(t, rs, params, review.Approve)
	again := reviewtest.WithApproval(t, p, reviewtest.Approval(t, renewed))
	for range 2 {
		if _, err := d.Handle(ctx, again); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once", calls.Load())
	}
	rec := mustRecord(t, e.store, key)
	if rec.State != ledger.StateCompleted {
		t.Fatalf("record %+v", rec)
	}
	for _, r := range []*review.Review{old, renewed} {
		if bound, err := rs.BoundKey(ctx, r.ID); err != nil || bound != key {
			t.Fatalf("review %s is bound to %q (%v), want the call's key", r.ID, bound, err)
		}
	}
	var sent *ledger.Row
	for _, r := range ledgertest.RunRows(t, e.store, runID) {
		if r.Status == ledger.StatusSucceeded {
			sent = &r
		}
	}
	if sent == nil || sent.ReviewID != renewed.ID || sent.ParkID != id {
		t.Fatalf("the sent call's row %+v names review %s under park %s", sent, renewed.ID, id)
	}
}
