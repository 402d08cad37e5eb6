package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
)

// The store's conditional writes on dynalite: each refuses what its
// condition refuses, and a repeat of the same write is a no-op.

// clocked is the store at at+d.
func clocked(s *dynamo.Store, d time.Duration) *dynamo.Store {
	return s.WithClock(func() time.Time { return at.Add(d) })
}

// created stores fixture review n (a task token unless direct) at at.
func created(t *testing.T, s *dynamo.Store, n int, direct bool) *review.Review {
	t.Helper()
	r, err := review.New(params(n, direct))
	if err != nil {
		t.Fatal(err)
	}
	if ok, existing, err := clocked(s, 0).Create(context.Background(), r); err != nil || !ok {
		t.Fatalf("Create(%s) = %v, %+v, %v; want created", r.ID, ok, existing, err)
	}
	return r
}

// decided records verdict v by alice on r at at+d (a minute's lease),
// failing t unless it applied.
func decided(t *testing.T, s *dynamo.Store, r *review.Review, d time.Duration, v review.Verdict) *review.Review {
	t.Helper()
	applied, cur, err := clocked(s, d).Decide(context.Background(), r, v, alice, true, "because", time.Minute)
	if err != nil || !applied {
		t.Fatalf("Decide(%s) = %v, %+v, %v; want applied", r.ID, applied, cur, err)
	}
	return cur
}

// A second Create of a review id stores nothing and returns the review
// stored first, for the caller to compare (a retried review Task asks the
// same; anything else under that id is another request).
func TestCreateTwiceReturnsTheExisting(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	first := created(t, l.store, nPending, false)
	for _, c := range []struct {
		name string
		mod  func(*review.Params)
		same bool
	}{
		{"the same request", func(*review.Params) {}, true},
		{"other inputs under the same id", func(p *review.Params) { p.Input = json.RawMessage(`{"to":["attacker@example.com"]}`) }, false},
		{"another requester under the same id", func(p *review.Params) { p.Requester = alice }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := params(nPending, false)
			c.mod(&p)
			again, err := review.New(p)
			if err != nil {
				t.Fatal(err)
			}
			ok, existing, err := clocked(l.store, time.Minute).Create(ctx, again)
			if err != nil || ok || existing == nil {
				t.Fatalf("Create again = %v, %+v, %v; want not created, the existing review", ok, existing, err)
			}
			if !existing.SameRequest(first) || !existing.CreatedAt.Equal(at) || existing.Status != review.Pending {
				t.Fatalf("existing %+v, want the first request, created at %s", existing, at)
			}
			if existing.SameRequest(again) != c.same {
				t.Fatalf("SameRequest(existing, again) = %v, want %v", !c.same, c.same)
			}
		})
	}
	if got := mustGet(t, l.store, first.ID); got.InputDigest != first.InputDigest || !got.CreatedAt.Equal(at) {
		t.Fatalf("stored %+v, want the first request unchanged", got)
	}
}

// Decide applies only to a PENDING review before its deadline (or, for
// items written before deadline existed, before expires_at); otherwise it
// reports applied false with the review as it is.
func TestDecideOnlyWhilePendingBeforeTheDeadline(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()

	t.Run("pending", func(t *testing.T) {
		r := created(t, l.store, 11, false)
		cur := decided(t, l.store, r, 5*time.Minute, review.Approve)
		if cur.Status != review.Approved || cur.Approver != alice || !cur.DecidedAt.Equal(at.Add(5*time.Minute)) ||
			cur.Delivery != review.Delivering || !cur.DeliveryLeaseUntil.Equal(at.Add(6*time.Minute)) || !hexToken.MatchString(cur.DecisionToken) {
			t.Fatalf("decided %+v", cur)
		}
		mustList(t, l.store, review.Approved, r.ID)
		if list, err := l.store.List(ctx, review.Pending, func(x *review.Review) bool { return x.ID == r.ID }); err != nil || len(list) != 0 {
			t.Fatalf("List(PENDING) = %v, %v; want the decided review gone from it", list, err)
		}
	})
	t.Run("without a task token", func(t *testing.T) {
		cur := decided(t, l.store, created(t, l.store, 12, true), time.Minute, review.Reject)
		if cur.Status != review.Rejected || cur.Delivery != review.NoTask {
			t.Fatalf("decided %+v, want REJECTED, NO_TASK", cur)
		}
	})
	t.Run("already decided", func(t *testing.T) {
		r := created(t, l.store, 13, false)
		first := decided(t, l.store, r, time.Minute, review.Approve)
		applied, cur, err := clocked(l.store, 2*time.Minute).Decide(ctx, r, review.Reject, "arn:aws:iam::000000000000:user/bob", true, "no", time.Minute)
		if err != nil || applied {
			t.Fatalf("Decide again = %v, %v; want refused", applied, err)
		}
		if cur.Status != review.Approved || cur.Approver != alice || cur.DecisionToken != first.DecisionToken {
			t.Fatalf("after a refused Decide: %+v, want the first decision", cur)
		}
	})
	t.Run("at its deadline", func(t *testing.T) {
		r := created(t, l.store, 14, false)
		applied, cur, err := clocked(l.store, time.Hour).Decide(ctx, r, review.Approve, alice, true, "late", time.Minute)
		if err != nil || applied || cur.Status != review.Pending {
			t.Fatalf("Decide at the deadline = %v, %+v, %v; want refused, still pending", applied, cur, err)
		}
	})
	t.Run("written before deadline, expired", func(t *testing.T) {
		r := created(t, l.store, 15, false)
		l.put(t, withoutDeadline(l.raw(t, "REVIEW#"+r.ID, "REVIEW")))
		applied, cur, err := clocked(l.store, time.Hour+time.Second).Decide(ctx, r, review.Approve, alice, true, "late", time.Minute)
		if err != nil || applied || cur.Status != review.Pending {
			t.Fatalf("Decide after expires_at = %v, %+v, %v; want refused", applied, cur, err)
		}
	})
	t.Run("written before deadline, unexpired", func(t *testing.T) {
		r := created(t, l.store, 16, false)
		l.put(t, withoutDeadline(l.raw(t, "REVIEW#"+r.ID, "REVIEW")))
		decided(t, l.store, r, time.Minute, review.Approve)
	})
	t.Run("missing", func(t *testing.T) {
		r, err := review.New(params(17, false))
		if err != nil {
			t.Fatal(err)
		}
		if applied, cur, err := l.store.Decide(ctx, r, review.Approve, alice, true, "", time.Minute); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("Decide of no review = %v, %+v, %v; want ErrNotFound", applied, cur, err)
		}
	})
	t.Run("two at once", func(t *testing.T) {
		r := created(t, l.store, 18, false)
		var wg sync.WaitGroup
		results := make([]struct {
			applied bool
			cur     *review.Review
			err     error
		}, 2)
		for i, v := range []review.Verdict{review.Approve, review.Reject} {
			wg.Go(func() {
				results[i].applied, results[i].cur, results[i].err = clocked(l.store, time.Minute).Decide(ctx, r, v, alice, true, "", time.Minute)
			})
		}
		wg.Wait()
		if results[0].err != nil || results[1].err != nil || results[0].applied == results[1].applied {
			t.Fatalf("two Decides: %+v; want exactly one applied", results)
		}
		if a, b := results[0].cur, results[1].cur; a.Status != b.Status || a.DecisionToken != b.DecisionToken {
			t.Fatalf("two Decides read %+v and %+v; want the one decision", a, b)
		}
	})
}

// withoutDeadline is a review item as written before the deadline
// attribute: expires_at was the deadline.
func withoutDeadline(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	delete(it, dynamo.AttrDeadline)
	return it
}

// A delivery's lease is taken, released and finished only by a request
// holding the lease as it reads it: a stale copy is refused.
func TestDeliveryLease(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()

	t.Run("claim, then a stale claim", func(t *testing.T) {
		r := decided(t, l.store, created(t, l.store, 21, false), time.Minute, review.Approve)
		stale := *r
		if ok, err := clocked(l.store, 3*time.Minute).ClaimDelivery(ctx, r, time.Minute); err != nil || !ok {
			t.Fatalf("ClaimDelivery = %v, %v; want claimed", ok, err)
		}
		if !r.DeliveryLeaseUntil.Equal(at.Add(4 * time.Minute)) {
			t.Fatalf("lease until %s, want %s", r.DeliveryLeaseUntil, at.Add(4*time.Minute))
		}
		if ok, err := clocked(l.store, 3*time.Minute).ClaimDelivery(ctx, &stale, time.Minute); err != nil || ok {
			t.Fatalf("ClaimDelivery with the old lease = %v, %v; want refused", ok, err)
		}
		if got := mustGet(t, l.store, r.ID); !got.DeliveryLeaseUntil.Equal(at.Add(4 * time.Minute)) {
			t.Fatalf("stored lease %s, want the first claim's", got.DeliveryLeaseUntil)
		}
	})
	t.Run("finish with a stale lease", func(t *testing.T) {
		r := decided(t, l.store, created(t, l.store, 22, false), time.Minute, review.Approve)
		stale := *r
		if ok, err := clocked(l.store, 3*time.Minute).ClaimDelivery(ctx, r, time.Minute); err != nil || !ok {
			t.Fatalf("ClaimDelivery = %v, %v", ok, err)
		}
		err := l.store.FinishDelivery(ctx, &stale, review.Delivered, "")
		if err == nil || !strings.Contains(err.Error(), "another request took the delivery over") {
			t.Fatalf("FinishDelivery with the old lease = %v, want refused", err)
		}
		if err := clocked(l.store, 4*time.Minute).FinishDelivery(ctx, r, review.Delivered, ""); err != nil {
			t.Fatalf("FinishDelivery with the lease = %v", err)
		}
		if got := mustGet(t, l.store, r.ID); got.Delivery != review.Delivered || r.Delivery != review.Delivered {
			t.Fatalf("delivery %s (stored %s), want DELIVERED", r.Delivery, got.Delivery)
		}
		// Delivered, the lease holds no longer: finishing again is refused.
		if err := l.store.FinishDelivery(ctx, r, review.TaskEnded, "TaskTimedOut"); err == nil {
			t.Fatal("FinishDelivery of a delivered decision succeeded")
		}
	})
	t.Run("release, then claim at once", func(t *testing.T) {
		r := decided(t, l.store, created(t, l.store, 23, false), time.Minute, review.Approve)
		if err := l.store.FinishDelivery(ctx, r, review.Delivering, ""); err != nil {
			t.Fatalf("release: %v", err)
		}
		got := mustGet(t, l.store, r.ID)
		if got.Delivery != review.Delivering || got.DeliveryLeaseUntil.UnixMilli() != 0 {
			t.Fatalf("after the release: %s, lease %d ms; want DELIVERING, 0", got.Delivery, got.DeliveryLeaseUntil.UnixMilli())
		}
		if ok, err := clocked(l.store, 90*time.Second).ClaimDelivery(ctx, got, time.Minute); err != nil || !ok {
			t.Fatalf("ClaimDelivery of the released lease = %v, %v", ok, err)
		}
	})
	t.Run("task ended", func(t *testing.T) {
		r := decided(t, l.store, created(t, l.store, 24, false), time.Minute, review.Reject)
		if err := l.store.FinishDelivery(ctx, r, review.TaskEnded, "TaskDoesNotExist"); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, l.store, r.ID); got.Delivery != review.TaskEnded || got.DeliveryError != "TaskDoesNotExist" {
			t.Fatalf("stored %s %q, want TASK_ENDED TaskDoesNotExist", got.Delivery, got.DeliveryError)
		}
	})
	t.Run("no task", func(t *testing.T) {
		r := decided(t, l.store, created(t, l.store, 25, true), time.Minute, review.Approve)
		if ok, err := l.store.ClaimDelivery(ctx, r, time.Minute); err != nil || ok {
			t.Fatalf("ClaimDelivery of a NO_TASK decision = %v, %v; want refused", ok, err)
		}
	})
}

// An approval binds one call: a second call's Bind is refused with the
// first call's key, and the first call's again (a retry) counts as bound.
func TestBindTwice(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	r := decided(t, l.store, created(t, l.store, 31, false), time.Minute, review.Approve)
	if got, err := l.store.BoundKey(ctx, r.ID); err != nil || got != "" {
		t.Fatalf("BoundKey before a binding = %q, %v; want \"\"", got, err)
	}
	first, second := runARN(31)+"/3", runARN(31)+"/4"
	ok, cur, err := clocked(l.store, 2*time.Minute).Bind(ctx, r, first)
	if err != nil || !ok || cur.BoundKey != first || !cur.BoundAt.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("Bind = %v, %+v, %v; want bound to %s", ok, cur, err, first)
	}
	fresh := mustGetApproval(t, l.store, r.ID)
	ok, cur, err = clocked(l.store, 3*time.Minute).Bind(ctx, fresh, second)
	if err != nil || ok || cur.BoundKey != first || !cur.BoundAt.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("Bind to another call = %v, %+v, %v; want refused, bound to %s", ok, cur, err, first)
	}
	if fresh.BoundKey != "" {
		t.Fatalf("a refused Bind changed the review it was given: %q", fresh.BoundKey)
	}
	if ok, _, err := clocked(l.store, 4*time.Minute).Bind(ctx, fresh, first); err != nil || !ok {
		t.Fatalf("Bind to the same call again = %v, %v; want bound", ok, err)
	}
	if got, err := l.store.BoundKey(ctx, r.ID); err != nil || got != first {
		t.Fatalf("BoundKey = %q, %v; want %s", got, err, first)
	}
	if it := l.raw(t, "BIND#"+r.ID, "BIND"); tabledef.GetS(it, "bound_at") != review.FormatTime(at.Add(2*time.Minute)) {
		t.Fatalf("bound_at %q, want the first Bind's", tabledef.GetS(it, "bound_at"))
	}
}

// Bind reports the seal of the binding it wrote as a reader would find
// it: seal.Valid only from a store with a key, seal.Absent from one
// without (which writes no seal); a binding found is checked with the
// store's key.
func TestBindReportsTheSealItWrote(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	key, err := seal.NewKey(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.NewKey(bytes.Repeat([]byte{4}, 32))
	if err != nil {
		t.Fatal(err)
	}
	unsealed := decided(t, l.store, created(t, l.store, 32, false), time.Minute, review.Approve)
	ok, cur, err := clocked(l.store, 2*time.Minute).Bind(ctx, unsealed, runARN(32)+"/1")
	if err != nil || !ok || cur.BindingSeal != seal.Absent {
		t.Fatalf("Bind without a key = %v, %v, %v; want bound, seal absent", ok, cur.BindingSeal, err)
	}
	if it := l.raw(t, "BIND#"+unsealed.ID, "BIND"); it["mac"] != nil {
		t.Fatalf("a store without a key wrote a seal: %v", it["mac"])
	}
	sealed := decided(t, l.store, created(t, l.store, 33, false), time.Minute, review.Approve)
	ok, cur, err = clocked(l.store, 2*time.Minute).WithMAC(key).Bind(ctx, sealed, runARN(33)+"/1")
	if err != nil || !ok || cur.BindingSeal != seal.Valid {
		t.Fatalf("Bind with a key = %v, %v, %v; want bound, seal valid", ok, cur.BindingSeal, err)
	}
	for _, c := range []struct {
		s    *dynamo.Store
		want seal.Status
	}{{l.store.WithMAC(key), seal.Valid}, {l.store.WithMAC(other), seal.Forged}, {l.store, seal.Forged}} {
		if ok, cur, err := c.s.Bind(ctx, mustGetApproval(t, l.store, sealed.ID), runARN(33)+"/1"); err != nil || !ok || cur.BindingSeal != c.want {
			t.Fatalf("Bind again = %v, %v, %v; want bound, seal %s", ok, cur.BindingSeal, err, c.want)
		}
	}
}

// NoteSelfApproval counts on an existing review only.
func TestNoteSelfApproval(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	r := created(t, l.store, 41, false)
	for range 2 {
		if err := l.store.NoteSelfApproval(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, l.store, r.ID); got.SelfApprovalRefusals != 2 {
		t.Fatalf("self_approval_refusals %d, want 2", got.SelfApprovalRefusals)
	}
	if err := l.store.NoteSelfApproval(ctx, reviewID(42)); err == nil {
		t.Fatal("NoteSelfApproval of no review succeeded (and would have created an item)")
	}
}

// Reads of what is not there: ErrNotFound, never a zero value.
func TestReadsOfNothing(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	if _, err := l.store.Get(ctx, reviewID(51)); !errors.Is(err, review.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
	if _, err := l.store.GetApproval(ctx, reviewID(51)); !errors.Is(err, review.ErrNotFound) {
		t.Errorf("GetApproval = %v, want ErrNotFound", err)
	}
	if _, err := l.store.Starter(ctx, runARN(51)); !errors.Is(err, review.ErrNotFound) {
		t.Errorf("Starter = %v, want ErrNotFound", err)
	}
	if _, err := l.store.ChildStart(ctx, childARN(51)); !errors.Is(err, review.ErrNotFound) {
		t.Errorf("ChildStart = %v, want ErrNotFound", err)
	}
}

// List returns a status's reviews oldest first; keep selects, and only
// what it keeps counts.
func TestListOrderAndKeep(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	var ids []string
	for i, n := range []int{63, 61, 62} { // created in this order, a minute apart
		r, err := review.New(params(n, false))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := clocked(l.store, time.Duration(i)*time.Minute).Create(ctx, r); err != nil || !ok {
			t.Fatal(ok, err)
		}
		ids = append(ids, r.ID)
	}
	list, err := l.store.List(ctx, review.Pending, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list {
		got = append(got, r.ID)
	}
	if strings.Join(got, " ") != strings.Join(ids, " ") {
		t.Fatalf("List = %v, want oldest first %v", got, ids)
	}
	list, err = l.store.List(ctx, review.Pending, func(r *review.Review) bool { return r.ID != ids[0] })
	if err != nil || len(list) != 2 || list[0].ID != ids[1] {
		t.Fatalf("List keeping all but the oldest = %v, %v", list, err)
	}
	for _, r := range list {
		if r.Input != nil || r.TaskToken != "" || r.Reason != "" || r.Requester != "" {
			t.Fatalf("a listed review holds what the index does not project: %+v", r)
		}
	}
}

// RecordStart records one starter per execution: the same again is a
// no-op, another is ErrStartConflict.
func TestRecordStart(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	arn := runARN(71)
	if err := l.store.RecordStart(ctx, arn, requester); err != nil {
		t.Fatal(err)
	}
	if err := l.store.RecordStart(ctx, arn, requester); err != nil {
		t.Fatalf("the same starter again: %v, want a no-op", err)
	}
	if err := l.store.RecordStart(ctx, arn, alice); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("another starter: %v, want ErrStartConflict", err)
	}
	if got, err := l.store.Starter(ctx, arn); err != nil || got != requester {
		t.Fatalf("Starter = %q, %v; want %s", got, err, requester)
	}
	// A person's start is no child record: a parent cannot record one over
	// it, and no child takes it.
	if err := l.store.RecordChildStart(ctx, arn, review.ChildRecord{Starter: requester, ParentRunID: runARN(70), InputDigest: childDigest,
		StateMachineARN: childSM}); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("RecordChildStart over a person's start: %v, want ErrStartConflict", err)
	}
	if err := l.store.TakeChildStart(ctx, arn, childStart); !errors.Is(err, review.ErrChildTaken) {
		t.Fatalf("TakeChildStart of a person's start: %v, want ErrChildTaken", err)
	}
}

// RecordChildStart records once per child ARN: the same record again is a
// no-op until a child takes it; any other record is ErrStartConflict.
// TakeChildStart takes a record once, for one execution start time.
func TestChildStart(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	arn := childARN(81)
	rec := childRecord(81)
	if err := l.store.RecordChildStart(ctx, arn, rec); err != nil {
		t.Fatal(err)
	}
	if err := l.store.RecordChildStart(ctx, arn, rec); err != nil {
		t.Fatalf("the same record again: %v, want a no-op", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*review.ChildRecord)
	}{
		{"another starter", func(r *review.ChildRecord) { r.Starter = alice }},
		{"another parent", func(r *review.ChildRecord) { r.ParentRunID = runARN(80) }},
		{"another input", func(r *review.ChildRecord) { r.InputDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"another version", func(r *review.ChildRecord) { r.StateMachineARN = strings.TrimSuffix(childSM, "3") + "4" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := rec
			c.mod(&other)
			if err := l.store.RecordChildStart(ctx, arn, other); !errors.Is(err, review.ErrStartConflict) {
				t.Fatalf("RecordChildStart = %v, want ErrStartConflict", err)
			}
		})
	}
	if got, err := l.store.ChildStart(ctx, arn); err != nil || got != rec {
		t.Fatalf("ChildStart = %+v, %v; want %+v", got, err, rec)
	}

	if err := l.store.TakeChildStart(ctx, arn, childStart); err != nil {
		t.Fatalf("TakeChildStart: %v", err)
	}
	if err := l.store.TakeChildStart(ctx, arn, childStart); err != nil {
		t.Fatalf("TakeChildStart by the same execution again: %v, want a no-op", err)
	}
	if err := l.store.TakeChildStart(ctx, arn, "2025-09-01T00:00:00.000Z"); !errors.Is(err, review.ErrChildTaken) {
		t.Fatalf("TakeChildStart by another execution of that name: %v, want ErrChildTaken", err)
	}
	if err := l.store.RecordChildStart(ctx, arn, rec); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("the same record again once taken: %v, want ErrStartConflict", err)
	}
	want := rec
	want.StartedAt = childStart
	if got, err := l.store.ChildStart(ctx, arn); err != nil || got != want {
		t.Fatalf("ChildStart = %+v, %v; want %+v", got, err, want)
	}
	if err := l.store.TakeChildStart(ctx, childARN(82), childStart); !errors.Is(err, review.ErrChildTaken) {
		t.Fatalf("TakeChildStart of no record: %v, want ErrChildTaken", err)
	}
	if err := l.store.ReleaseChildStart(ctx, arn, rec.ParentRunID); !errors.Is(err, review.ErrChildTaken) {
		t.Fatalf("ReleaseChildStart of a taken record: %v, want ErrChildTaken", err)
	}
}

// ReleaseChildStart releases a parent's record no execution took, once
// and again (a retried Task); no execution takes a released record, nor
// is it recorded again. A record another parent wrote, or none, is
// ErrNotFound.
func TestReleaseChildStart(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	arn := childARN(83)
	rec := childRecord(83)
	if err := l.store.ReleaseChildStart(ctx, arn, rec.ParentRunID); !errors.Is(err, review.ErrNotFound) {
		t.Fatalf("ReleaseChildStart of no record: %v, want ErrNotFound", err)
	}
	if err := l.store.RecordChildStart(ctx, arn, rec); err != nil {
		t.Fatal(err)
	}
	if err := l.store.ReleaseChildStart(ctx, arn, runARN(80)); !errors.Is(err, review.ErrNotFound) {
		t.Fatalf("ReleaseChildStart by another parent: %v, want ErrNotFound", err)
	}
	for range 2 {
		if err := l.store.ReleaseChildStart(ctx, arn, rec.ParentRunID); err != nil {
			t.Fatalf("ReleaseChildStart: %v", err)
		}
	}
	if err := l.store.TakeChildStart(ctx, arn, childStart); !errors.Is(err, review.ErrChildTaken) {
		t.Fatalf("TakeChildStart of a released record: %v, want ErrChildTaken", err)
	}
	if err := l.store.RecordChildStart(ctx, arn, rec); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("the same record again once released: %v, want ErrStartConflict", err)
	}
}

// An item holding an attribute its field cannot hold (the SDK's
// attributevalue decoding: a string or a bool where a number, bool or
// string is read; a number read as a string is its digits) is an error to
// every read, never a zero value (an approval read as unauthenticated,
// say); an item of another kind that carries the index's keys is skipped
// by List, whatever its attributes' types.
func TestMistypedItems(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	r := decided(t, l.store, created(t, l.store, 91, false), time.Minute, review.Approve)
	it := l.raw(t, "REVIEW#"+r.ID, "REVIEW")
	it["authenticated"] = tabledef.S("true")
	l.put(t, it)
	if got, err := l.store.Get(ctx, r.ID); err == nil {
		t.Errorf("Get of a mistyped review = %+v, want an error", got)
	}
	if got, err := l.store.GetApproval(ctx, r.ID); err == nil {
		t.Errorf("GetApproval of a mistyped review = %+v, want an error", got)
	}
	if got, err := l.store.List(ctx, review.Approved, nil); err == nil {
		t.Errorf("List holding a mistyped review = %+v, want an error", got)
	}

	live := created(t, l.store, 92, false)
	l.put(t, map[string]types.AttributeValue{"pk": tabledef.S("RUN#forged"), "sk": tabledef.S("CALL#1"),
		"review_id": tabledef.N(1), "review_list_pk": tabledef.S("REVIEWS#PENDING"), "review_list_sk": tabledef.S("0000"),
		"status": tabledef.N(7)})
	list, err := l.store.List(ctx, review.Pending, nil)
	if err != nil || len(list) != 1 || list[0].ID != live.ID {
		t.Fatalf("List = %+v, %v; want only %s", list, err, live.ID)
	}

	l.put(t, map[string]types.AttributeValue{"pk": tabledef.S("BIND#" + live.ID), "sk": tabledef.S("BIND"), "bound_key": &types.AttributeValueMemberBOOL{Value: true}})
	if got, err := l.store.BoundKey(ctx, live.ID); err == nil {
		t.Errorf("BoundKey of a binding whose bound_key is a bool = %q, want an error", got)
	}
	l.put(t, map[string]types.AttributeValue{"pk": tabledef.S("START#" + runARN(92)), "sk": tabledef.S("START"), "starter": &types.AttributeValueMemberBOOL{Value: true}})
	if got, err := l.store.Starter(ctx, runARN(92)); err == nil {
		t.Errorf("Starter of a start whose starter is a bool = %q, want an error", got)
	}
}
