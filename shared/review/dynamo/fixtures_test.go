package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// The fixtures in testdata/ledger-items (review.json, binding.json,
// start.json) are items as the store writes them: TestStoreWritesTheFixtures
// writes each one again, at the same instants, and compares; with -update
// it rewrites the files instead. TestFixturesReadBack puts each fixture as
// it is into an empty table and reads it through the store's public reads.
// Together they hold the stored layout still while the store's code
// changes: a change that writes other items, or reads these otherwise,
// fails one of them.
var update = flag.Bool("update", false, "rewrite testdata/ledger-items/{review,binding,start}.json from what the store writes")

// fixtureDir is testdata/ledger-items at the repository's root.
const fixtureDir = "../../../testdata/ledger-items"

// at is the instant the fixtures start at (UTC, whole milliseconds, as
// the store keeps review times); each write happens at a fixed offset.
var at = time.Date(2025, 6, 2, 9, 30, 0, 123_000_000, time.UTC)

// The principals and values the fixtures name.
const (
	requester   = "arn:aws:iam::000000000000:user/requester"
	alice       = "arn:aws:iam::000000000000:user/alice"
	toolsetID   = "ts_f7826302d51ea15dba1ab8b9cf962a58"
	taskToken   = "fixture-task-token-"
	childSM     = "arn:aws:states:us-east-1:000000000000:stateMachine:child-solution:3"
	childDigest = "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	childStart  = "2025-06-02T09:31:00.456Z" // the child's $$.Execution.StartTime
)

// reviewID is the id of fixture review n: "rv_" and n in 32 hex digits.
func reviewID(n int) string { return fmt.Sprintf("rv_%032x", n) }

// runARN is the execution ARN of fixture n.
func runARN(n int) string {
	return fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:fixture-solution:run-%d", n)
}

// childARN is the execution ARN of fixture n's child run.
func childARN(n int) string {
	return fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:child-solution:run-%d", n)
}

// params asks for fixture review n; with a task token unless direct.
func params(n int, direct bool) review.Params {
	p := review.Params{ID: reviewID(n), RunID: runARN(n), Step: "approve", Of: "send", Tool: "send-email", ToolsetID: toolsetID,
		Input:     json.RawMessage(`{"to":["team@example.com"],"subject":"Launch","text":"We ship on Monday."}`),
		Reviewers: []string{alice, "arn:aws:iam::000000000000:role/reviewers/*"}, TimeoutSeconds: 3600, Requester: requester}
	if !direct {
		p.TaskToken = taskToken + fmt.Sprint(n)
	}
	return p
}

// The fixture reviews, by number.
const (
	nPending        = 1  // pending, with a task token
	nApproved       = 2  // approved, its decision delivered after a released lease; bound (binding.json)
	nRejected       = 3  // rejected after its Task had ended
	nNoTask         = 4  // approved on the direct lane (no task token), unauthenticated, no reason
	nBoundOnReview  = 5  // approved and bound on the review item, as before binding items
	nBeforeDeadline = 6  // pending, written before the deadline attribute
	nStart          = 7  // a person's start
	nChildRecorded  = 8  // a child start a parent recorded
	nChildTaken     = 9  // a child start its child took
	nInbound        = 10 // an inbound start (its origin), renewed once
)

// inboundStarter is the inbound-start role's session the inbound fixture
// records, and inboundOrigin its origin.
const inboundStarter = "arn:aws:sts::000000000000:assumed-role/toolgate-dev-inbound-start/src-billing"

var inboundOrigin = review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: alice, Event: "evt_1",
	Holders: []string{alice, "arn:aws:iam::000000000000:user/carol"}}

func inboundEntry() review.RunStartEntry {
	o := inboundOrigin
	return review.RunStartEntry{Starter: inboundStarter, InputDigest: childDigest, Origin: &o}
}

// boundKey is the idempotency key fixture review n's approval is bound to.
func boundKey(n int) string { return runARN(n) + "/3" }

func childRecord(n int) review.ChildRecord {
	return review.ChildRecord{Starter: requester, ParentRunID: runARN(n), InputDigest: childDigest, StateMachineARN: childSM}
}

// fixtureItems are the items of each fixture file, by name.
type fixtureItems map[string]map[string]map[string]types.AttributeValue

// writeFixtures writes every fixture into l through the store (and, for
// the two legacy reviews, the request older code made), each at its
// instant, and returns the items as DynamoDB holds them.
func writeFixtures(t *testing.T, l *ledgerTable) fixtureItems {
	t.Helper()
	ctx := context.Background()
	when := func(d time.Duration) *dynamo.Store { return l.store.WithClock(func() time.Time { return at.Add(d) }) }
	create := func(n int, direct bool) *review.Review {
		t.Helper()
		r, err := review.New(params(n, direct))
		if err != nil {
			t.Fatal(err)
		}
		if created, _, err := when(0).Create(ctx, r); err != nil || !created {
			t.Fatalf("create review %d: created %v, %v", n, created, err)
		}
		return r
	}
	decide := func(r *review.Review, d time.Duration, v review.Verdict, approver string, authenticated bool, reason string) *review.Review {
		t.Helper()
		applied, cur, err := when(d).Decide(ctx, r, v, approver, authenticated, reason, time.Minute)
		if err != nil || !applied {
			t.Fatalf("decide review %s: applied %v, %v", r.ID, applied, err)
		}
		return cur
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	update := func(id, expr string, vals map[string]types.AttributeValue) {
		t.Helper()
		_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tableName),
			Key: map[string]types.AttributeValue{"pk": tabledef.S("REVIEW#" + id), "sk": tabledef.S("REVIEW")}, UpdateExpression: aws.String(expr),
			ExpressionAttributeValues: vals})
		must("update review "+id, err)
	}

	create(nPending, false)

	// Approved; its self-approval refused first; its delivery's lease
	// released (a transient failure), claimed again and delivered.
	r := create(nApproved, false)
	must("note self-approval", when(time.Minute).NoteSelfApproval(ctx, r.ID))
	r = decide(r, 5*time.Minute, review.Approve, alice, true, "Looks right.")
	must("release delivery", when(5*time.Minute).FinishDelivery(ctx, r, review.Delivering, ""))
	r.DeliveryLeaseUntil = time.UnixMilli(0)
	if ok, err := when(6*time.Minute).ClaimDelivery(ctx, r, time.Minute); err != nil || !ok {
		t.Fatalf("claim delivery: %v %v", ok, err)
	}
	must("finish delivery", when(6*time.Minute+time.Second).FinishDelivery(ctx, r, review.Delivered, ""))
	if ok, _, err := when(7*time.Minute).Bind(ctx, r, boundKey(nApproved)); err != nil || !ok {
		t.Fatalf("bind: %v %v", ok, err)
	}

	r = decide(create(nRejected, false), 10*time.Minute, review.Reject, alice, true, "Wrong list.")
	must("finish delivery", when(10*time.Minute).FinishDelivery(ctx, r, review.TaskEnded, "TaskTimedOut"))

	decide(create(nNoTask, true), 2*time.Minute, review.Approve, alice, false, "")

	// Before binding items, Bind wrote the binding on the review item:
	// SET bound_key = :key, bound_at = :at.
	decide(create(nBoundOnReview, false), 3*time.Minute, review.Approve, alice, true, "ok")
	update(reviewID(nBoundOnReview), "SET bound_key = :key, bound_at = :at", map[string]types.AttributeValue{
		":key": tabledef.S(boundKey(nBoundOnReview)), ":at": tabledef.S(review.FormatTime(at.Add(4 * time.Minute)))})

	// Before the deadline attribute, expires_at was the review's deadline.
	create(nBeforeDeadline, false)
	update(reviewID(nBeforeDeadline), "REMOVE deadline", nil)

	must("record start", when(0).RecordStart(ctx, runARN(nStart), requester))
	must("record child start", when(0).RecordChildStart(ctx, childARN(nChildRecorded), childRecord(nChildRecorded)))
	must("record child start", when(0).RecordChildStart(ctx, childARN(nChildTaken), childRecord(nChildTaken)))
	must("take child start", when(time.Minute).TakeChildStart(ctx, childARN(nChildTaken), childStart))
	for _, d := range []time.Duration{0, 2 * time.Minute} { // recorded, then renewed
		if _, err := when(d).RecordOrRefreshRunStart(ctx, runARN(nInbound), inboundEntry()); err != nil {
			t.Fatalf("record inbound start: %v", err)
		}
	}

	review := func(n int) map[string]types.AttributeValue { return l.raw(t, "REVIEW#"+reviewID(n), "REVIEW") }
	start := func(arn string) map[string]types.AttributeValue { return l.raw(t, "START#"+arn, "START") }
	return fixtureItems{
		"review": {
			"pending": review(nPending), "approved": review(nApproved), "rejected-task-ended": review(nRejected),
			"approved-no-task": review(nNoTask), "legacy-bound-on-review": review(nBoundOnReview),
			"legacy-pending-before-deadline": review(nBeforeDeadline),
		},
		"binding": {"bound": l.raw(t, "BIND#"+reviewID(nApproved), "BIND")},
		"start": {
			"person": start(runARN(nStart)), "child-recorded": start(childARN(nChildRecorded)),
			"child-taken": start(childARN(nChildTaken)), "inbound-renewed": start(runARN(nInbound)),
		},
	}
}

var hexToken = regexp.MustCompile(`^[0-9a-f]{32}$`)

// The store writes the fixtures' items, attribute for attribute, at the
// same instants; only the random decision_token differs, and must still
// be 32 hex digits.
func TestStoreWritesTheFixtures(t *testing.T) {
	written := writeFixtures(t, newLedgerTable(t))
	for file, items := range written {
		path := filepath.Join(fixtureDir, file+".json")
		if *update {
			b, err := encodeFixtures(items)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want := readFixtures(t, file)
		for name, it := range items {
			old, ok := want[name]
			if !ok {
				t.Errorf("%s: item %s is not in the fixture (go test -update writes it)", path, name)
				continue
			}
			if tok, ok := it["decision_token"].(*types.AttributeValueMemberS); ok && hexToken.MatchString(tok.Value) {
				if _, had := old["decision_token"]; had {
					it["decision_token"] = old["decision_token"]
				}
			}
		}
		got, err := encodeFixtures(items)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(b), string(got)); d != "" {
			t.Errorf("%s: the store writes other items (-fixture +written):\n%s", path, d)
		}
	}
}

// readFixtures reads testdata/ledger-items/<file>.json.
func readFixtures(t *testing.T, file string) map[string]map[string]types.AttributeValue {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, file+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixtureFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s.json: %v", file, err)
	}
	out := map[string]map[string]types.AttributeValue{}
	for name, raw := range f {
		if out[name], err = decodeItem(raw); err != nil {
			t.Fatalf("%s.json, item %s: %v", file, name, err)
		}
	}
	return out
}

// asked is fixture review n as review.New makes it, stored at at: what a
// whole read of any fixture review holds before its decision.
func asked(t *testing.T, n int, direct bool) *review.Review {
	t.Helper()
	r, err := review.New(params(n, direct))
	if err != nil {
		t.Fatal(err)
	}
	r.CreatedAt, r.ExpiresAt = at, at.Add(time.Hour).Truncate(time.Second)
	r.DeliveryLeaseUntil = time.UnixMilli(0) // absent: 0 ms
	return r
}

// approvalView is what GetApproval reads of r: ApprovalAttributes only.
func approvalView(r *review.Review) *review.Review {
	return &review.Review{ID: r.ID, RunID: r.RunID, Step: r.Step, Of: r.Of, Tool: r.Tool, ToolsetID: r.ToolsetID,
		InputDigest: r.InputDigest, Status: r.Status, ExpiresAt: r.ExpiresAt, Approver: r.Approver, Authenticated: r.Authenticated,
		DecidedAt: r.DecidedAt, Delivery: r.Delivery, DeliveryError: r.DeliveryError, BoundKey: r.BoundKey,
		DeliveryLeaseUntil: time.UnixMilli(0), Kind: r.Kind}
}

// listView is what List reads of r through the index's projection; the
// index does not project deadline, so ExpiresAt is the item's TTL,
// expires_at.
func listView(r *review.Review, ttl time.Time) *review.Review {
	return &review.Review{ID: r.ID, RunID: r.RunID, Step: r.Step, Of: r.Of, Tool: r.Tool, ToolsetID: r.ToolsetID,
		Reviewers: r.Reviewers, InputDigest: r.InputDigest, Status: r.Status, CreatedAt: r.CreatedAt, ExpiresAt: ttl,
		Approver: r.Approver, Authenticated: r.Authenticated, DecidedAt: r.DecidedAt, BoundKey: r.BoundKey,
		DeliveryLeaseUntil: time.UnixMilli(0), Kind: r.Kind}
}

// kept is the TTL of a review decided at decided: the ledger's retention.
func kept(decided time.Time) time.Time {
	return decided.Add(tabledef.DefaultRetention).Truncate(time.Second)
}

// Each fixture, put as it is into an empty table, reads back through the
// store's public reads with the values it was written with.
func TestFixturesReadBack(t *testing.T) {
	l := newLedgerTable(t)
	items := map[string]map[string]map[string]types.AttributeValue{}
	for _, file := range []string{"review", "binding", "start"} {
		items[file] = readFixtures(t, file)
		for _, it := range items[file] {
			l.put(t, it)
		}
	}
	ctx := context.Background()
	s := l.store.WithClock(func() time.Time { return at.Add(20 * time.Minute) })
	check := func(t *testing.T, what string, got, want any) {
		t.Helper()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", what, d)
		}
	}
	token := func(name string) string {
		v, _ := items["review"][name]["decision_token"].(*types.AttributeValueMemberS)
		if v == nil || !hexToken.MatchString(v.Value) {
			t.Fatalf("review fixture %s: decision_token %v is not 32 hex digits", name, v)
		}
		return v.Value
	}

	t.Run("pending", func(t *testing.T) {
		want := asked(t, nPending, false)
		check(t, "Get", mustGet(t, s, want.ID), want)
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Pending, want.ID), listView(want, want.ExpiresAt))
	})
	t.Run("approved", func(t *testing.T) {
		want := asked(t, nApproved, false)
		want.Status, want.Approver, want.Authenticated, want.Reason = review.Approved, alice, true, "Looks right."
		want.DecidedAt, want.Delivery = at.Add(5*time.Minute), review.Delivered
		want.DeliveryLeaseUntil = at.Add(7 * time.Minute)
		want.SelfApprovalRefusals, want.DecisionToken = 1, token("approved")
		check(t, "Get", mustGet(t, s, want.ID), want)
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Approved, want.ID), listView(want, kept(want.DecidedAt)))
	})
	t.Run("rejected-task-ended", func(t *testing.T) {
		want := asked(t, nRejected, false)
		want.Status, want.Approver, want.Authenticated, want.Reason = review.Rejected, alice, true, "Wrong list."
		want.DecidedAt, want.Delivery, want.DeliveryError = at.Add(10*time.Minute), review.TaskEnded, "TaskTimedOut"
		want.DeliveryLeaseUntil, want.DecisionToken = at.Add(11*time.Minute), token("rejected-task-ended")
		check(t, "Get", mustGet(t, s, want.ID), want)
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Rejected, want.ID), listView(want, kept(want.DecidedAt)))
	})
	t.Run("approved-no-task", func(t *testing.T) {
		want := asked(t, nNoTask, true)
		want.Status, want.Approver, want.DecidedAt, want.Delivery = review.Approved, alice, at.Add(2*time.Minute), review.NoTask
		want.DecisionToken = token("approved-no-task")
		// Decide writes a lease of the zero time.Time when there is no
		// Task to deliver to: -62135596800000 ms, year 1.
		want.DeliveryLeaseUntil = time.Time{}
		check(t, "Get", mustGet(t, s, want.ID), want)
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Approved, want.ID), listView(want, kept(want.DecidedAt)))
	})
	t.Run("legacy-bound-on-review", func(t *testing.T) {
		want := asked(t, nBoundOnReview, false)
		want.Status, want.Approver, want.Authenticated, want.Reason = review.Approved, alice, true, "ok"
		want.DecidedAt, want.Delivery = at.Add(3*time.Minute), review.Delivering
		want.DeliveryLeaseUntil, want.DecisionToken = at.Add(4*time.Minute), token("legacy-bound-on-review")
		want.BoundKey, want.BoundAt = boundKey(nBoundOnReview), at.Add(4*time.Minute)
		check(t, "Get", mustGet(t, s, want.ID), want)
		// GetApproval reads bound_key (not bound_at): the approval stays
		// bound to that call.
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Approved, want.ID), listView(want, kept(want.DecidedAt)))
	})
	t.Run("legacy-pending-before-deadline", func(t *testing.T) {
		// Without deadline, expires_at is the review's deadline.
		want := asked(t, nBeforeDeadline, false)
		check(t, "Get", mustGet(t, s, want.ID), want)
		check(t, "GetApproval", mustGetApproval(t, s, want.ID), approvalView(want))
		check(t, "List", mustList(t, s, review.Pending, want.ID), listView(want, want.ExpiresAt))
	})
	t.Run("binding", func(t *testing.T) {
		id := reviewID(nApproved)
		got, err := s.BoundKey(ctx, id)
		if err != nil || got != boundKey(nApproved) {
			t.Fatalf("BoundKey(%s) = %q, %v; want %q", id, got, err, boundKey(nApproved))
		}
		// Bind reads the binding back when its condition fails: bound to
		// another call, it reports that call and when it was bound.
		r := mustGetApproval(t, s, id)
		ok, cur, err := s.Bind(ctx, r, runARN(nApproved)+"/4")
		if err != nil || ok || cur == nil || cur.BoundKey != boundKey(nApproved) || !cur.BoundAt.Equal(at.Add(7*time.Minute)) {
			t.Fatalf("Bind to another call = %v, %+v, %v; want refused, bound to %s at %s", ok, cur, err, boundKey(nApproved), at.Add(7*time.Minute))
		}
		if ok, _, err := s.Bind(ctx, r, boundKey(nApproved)); err != nil || !ok {
			t.Fatalf("Bind to the bound call = %v, %v; want bound", ok, err)
		}
	})
	t.Run("start-person", func(t *testing.T) {
		if got, err := s.Starter(ctx, runARN(nStart)); err != nil || got != requester {
			t.Fatalf("Starter = %q, %v; want %s", got, err, requester)
		}
		if rec, err := s.ChildStart(ctx, runARN(nStart)); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("ChildStart of a person's start = %+v, %v; want ErrNotFound", rec, err)
		}
	})
	t.Run("start-child-recorded", func(t *testing.T) {
		arn := childARN(nChildRecorded)
		if got, err := s.Starter(ctx, arn); err != nil || got != requester {
			t.Fatalf("Starter = %q, %v; want %s", got, err, requester)
		}
		rec, err := s.ChildStart(ctx, arn)
		if err != nil {
			t.Fatalf("ChildStart: %v", err)
		}
		check(t, "ChildStart", rec, childRecord(nChildRecorded))
	})
	t.Run("start-inbound-renewed", func(t *testing.T) {
		rec, err := s.RunStart(ctx, runARN(nInbound))
		if err != nil || rec.Starter != inboundStarter || rec.InputDigest != childDigest || rec.Origin == nil || !reflect.DeepEqual(*rec.Origin, inboundOrigin) ||
			!rec.Deadline.Equal(at.Add(2*time.Minute+review.StartDeadline).Truncate(time.Second)) {
			t.Fatalf("RunStart = %+v (origin %+v), %v; want the renewed inbound start", rec, rec.Origin, err)
		}
	})
	t.Run("start-child-taken", func(t *testing.T) {
		arn := childARN(nChildTaken)
		rec, err := s.ChildStart(ctx, arn)
		if err != nil {
			t.Fatalf("ChildStart: %v", err)
		}
		want := childRecord(nChildTaken)
		want.StartedAt = childStart
		check(t, "ChildStart", rec, want)
	})
}
