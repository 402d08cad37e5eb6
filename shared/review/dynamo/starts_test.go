package dynamo_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

const (
	inboundSession = "arn:aws:sts::000000000000:assumed-role/toolgate-dev-inbound-start/src-billing"
	startDigestA   = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	startDigestB   = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func billingOrigin() *review.StartOrigin {
	return &review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: alice, Event: "evt_1", Holders: []string{alice}}
}

// The start lane's record: a new name is recorded with its origin; the
// same start again (same starter, digest, end user, fork and origin)
// renews the deadline and changes nothing else; anything else under the
// name is ErrStartConflict and writes nothing. On dynalite.
func TestRecordOrRefreshRunStartRenewsOnlyTheSameStart(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *dynamo.Store { return l.store.WithClock(func() time.Time { return t0.Add(d) }) }
	arn := runARN(501)
	first := review.RunStartEntry{Starter: inboundSession, InputDigest: startDigestA, Origin: billingOrigin()}

	if refreshed, err := at(0).RecordOrRefreshRunStart(ctx, arn, first); err != nil || refreshed {
		t.Fatalf("first record: refreshed %v, %v; want a new record", refreshed, err)
	}
	rec, err := l.store.RunStart(ctx, arn)
	if err != nil || rec.Starter != inboundSession || rec.Origin == nil || !reflect.DeepEqual(*rec.Origin, *billingOrigin()) || !rec.Deadline.Equal(t0.Add(review.StartDeadline)) {
		t.Fatalf("RunStart = %+v (origin %+v), %v", rec, rec.Origin, err)
	}
	var raw struct {
		Origin    map[string]any `dynamodbav:"origin"`
		ExpiresAt int64          `dynamodbav:"expires_at"`
	}
	if err := attributevalue.UnmarshalMap(l.raw(t, "START#"+arn, "START"), &raw); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"kind": "source", "name": "billing", "added_by": alice, "event": "evt_1", "holders": []any{alice}}; !reflect.DeepEqual(raw.Origin, want) {
		t.Fatalf("origin attribute %v, want %v", raw.Origin, want)
	}

	// Two minutes on, past the first deadline: the same start is renewed.
	if refreshed, err := at(2*time.Minute).RecordOrRefreshRunStart(ctx, arn, first); err != nil || !refreshed {
		t.Fatalf("the same start again: refreshed %v, %v; want a refresh", refreshed, err)
	}
	renewed, err := l.store.RunStart(ctx, arn)
	if err != nil || !renewed.Deadline.Equal(t0.Add(2*time.Minute+review.StartDeadline)) {
		t.Fatalf("deadline after the refresh = %s (%v), want %s", renewed.Deadline, err, t0.Add(2*time.Minute+review.StartDeadline))
	}
	renewed.Deadline = rec.Deadline
	if renewed.Starter != rec.Starter || renewed.InputDigest != rec.InputDigest || !reflect.DeepEqual(*renewed.Origin, *rec.Origin) || renewed.EndUserScope != rec.EndUserScope {
		t.Fatalf("the refresh changed more than the deadline: %+v, was %+v", renewed, rec)
	}

	other := func(edit func(*review.RunStartEntry)) review.RunStartEntry {
		e := first
		e.Origin = billingOrigin()
		edit(&e)
		return e
	}
	for name, e := range map[string]review.RunStartEntry{
		"another starter":      other(func(e *review.RunStartEntry) { e.Starter = alice }),
		"another input digest": other(func(e *review.RunStartEntry) { e.InputDigest = startDigestB }),
		"another origin event": other(func(e *review.RunStartEntry) { e.Origin.Event = "evt_2" }),
		"another origin adder": other(func(e *review.RunStartEntry) { e.Origin.AddedBy = requester }),
		"no origin":            other(func(e *review.RunStartEntry) { e.Origin = nil }),
		"a fork":               other(func(e *review.RunStartEntry) { e.Fork = review.ForkOrigin{From: runARN(500)} }),
		"an end user": other(func(e *review.RunStartEntry) {
			e.EndUser = review.EndUserRecord{ID: "customer-1", Scope: "end_user:00"}
		}),
		"an end user skipped (why)": other(func(e *review.RunStartEntry) { e.EndUser = review.EndUserRecord{Skipped: "no mapping"} }),
	} {
		if refreshed, err := at(3*time.Minute).RecordOrRefreshRunStart(ctx, arn, e); !errors.Is(err, review.ErrStartConflict) || refreshed {
			t.Errorf("%s: refreshed %v, %v; want ErrStartConflict", name, refreshed, err)
		}
	}
	if got, err := l.store.RunStart(ctx, arn); err != nil || !got.Deadline.Equal(t0.Add(2*time.Minute+review.StartDeadline)) || got.Starter != inboundSession {
		t.Fatalf("a refused start changed the record: %+v, %v", got, err)
	}
}

// Only a run start record is renewed: a child's record and a record a
// Starter wrote from a start proof (no deadline) hold the name for good,
// even for their own starter and digest.
func TestRecordOrRefreshRunStartRenewsNoOtherKindOfRecord(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	child := childARN(502)
	if err := l.store.RecordChildStart(ctx, child, review.ChildRecord{Starter: requester, ParentRunID: runARN(503), InputDigest: childDigest,
		StateMachineARN: childSM}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.RecordOrRefreshRunStart(ctx, child, review.RunStartEntry{Starter: requester, InputDigest: childDigest}); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("over a child's record: %v, want ErrStartConflict", err)
	}
	if rec, err := l.store.ChildStart(ctx, child); err != nil || rec.ParentRunID != runARN(503) {
		t.Fatalf("the child's record changed: %+v, %v", rec, err)
	}
	proven := runARN(504)
	if err := l.store.RecordStart(ctx, proven, requester); err != nil {
		t.Fatal(err)
	}
	if _, err := l.store.RecordOrRefreshRunStart(ctx, proven, review.RunStartEntry{Starter: requester}); !errors.Is(err, review.ErrStartConflict) {
		t.Fatalf("over a Starter's record: %v, want ErrStartConflict", err)
	}
	if _, err := l.store.RunStart(ctx, proven); !errors.Is(err, review.ErrNotFound) {
		t.Fatalf("the Starter's record became a run start: %v", err)
	}
}

// A child run of an inbound run inherits its starter, the inbound
// session, and its origin is its root run's: RootOrigin walks up the
// parents' start records to the run start record and returns its origin
// with the holders; a run started by a person has none. On dynalite.
func TestRootOriginIsTheRootRunsOrigin(t *testing.T) {
	l := newLedgerTable(t)
	ctx := context.Background()
	root, child, grandchild := runARN(601), runARN(602), runARN(603)
	if _, err := l.store.RecordOrRefreshRunStart(ctx, root, review.RunStartEntry{Starter: inboundSession, InputDigest: startDigestA, Origin: billingOrigin()}); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{child, root}, {grandchild, child}} {
		if err := l.store.RecordChildStart(ctx, c[0], review.ChildRecord{Starter: inboundSession, ParentRunID: c[1], InputDigest: startDigestB}); err != nil {
			t.Fatal(err)
		}
	}
	for _, arn := range []string{root, child, grandchild} {
		if o, err := l.store.RootOrigin(ctx, arn); err != nil || o == nil || !reflect.DeepEqual(*o, *billingOrigin()) {
			t.Errorf("RootOrigin(%s) = %+v, %v; want the root's origin", arn, o, err)
		}
	}
	// The child's own record holds no origin: StarterAndOrigin says so.
	if starter, o, err := l.store.StarterAndOrigin(ctx, child); err != nil || starter != inboundSession || o != nil {
		t.Errorf("StarterAndOrigin(child) = %s, %+v, %v", starter, o, err)
	}
	person := runARN(604)
	if err := l.store.RecordRunStart(ctx, person, alice, startDigestA, review.EndUserRecord{}); err != nil {
		t.Fatal(err)
	}
	if o, err := l.store.RootOrigin(ctx, person); err != nil || o != nil {
		t.Errorf("RootOrigin of a person's run = %+v, %v; want none", o, err)
	}
	if _, err := l.store.RootOrigin(ctx, runARN(605)); !errors.Is(err, review.ErrNotFound) {
		t.Errorf("RootOrigin of an unrecorded run: %v, want ErrNotFound", err)
	}
}
