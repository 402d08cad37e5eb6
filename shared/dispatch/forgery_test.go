package dispatch

// What a compromised tool function can do to another function's calls:
// its role may GetItem, PutItem and UpdateItem any call item
// (table.Accesses) and reads the stage's external key secret. Each test
// does only what such a role may do, with the table's own requests on
// dynalite, and checks that the victim function refuses the record
// instead of running or replaying a call (docs/ledger.md, "Records are
// sealed by the function that writes them").

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// callItemKey is the primary key of call seq of run.
func callItemKey(run string, seq tool.Seq) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "RUN#" + run},
		"sk": &types.AttributeValueMemberS{Value: "CALL#" + seq.SortKey()},
	}
}

// sender counts the sends of an at_most_once tool (test-send, like
// send-email); the first fail calls fail retryably, nothing applied.
func sender(calls *atomic.Int64, fail int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if n := calls.Add(1); n <= fail {
			return nil, tool.Errorf(tool.UpstreamUnavailable, "throttled")
		}
		return json.RawMessage(`{"message_id":"m-1"}`), nil
	}
}

// refusedAsForged checks that the call was refused TOOL_INTERNAL and that
// its last row is REFUSED with reason record-forged.
func refusedAsForged(t *testing.T, e *env, run string, err error) {
	t.Helper()
	if c := codeOf(t, err); c != string(tool.Internal) {
		t.Fatalf("answer %v, want %s", err, tool.Internal)
	}
	rows := ledgertest.RunRows(t, e.store, run)
	last := rows[len(rows)-1]
	if last.Status != ledger.StatusRefused || last.Reason != seal.ReasonRecordForged {
		t.Fatalf("last row %+v, want REFUSED, %s", last, seal.ReasonRecordForged)
	}
}

// A whole-item PutItem of a completed call's key alone (any tool role may
// send one) wipes its record; the next invocation of the key is refused
// as forged, never claimed afresh as attempt 1, so an at_most_once tool
// does not send again.
func TestAnItemWipedByAPutIsRefusedNotClaimedAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-send", sender(&calls, 0))
	payload := withRunStart(envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`), time.Now())
	run := runIDOf(t, payload)
	if _, err := d.Handle(ctx, payload); err != nil {
		t.Fatalf("first invocation: %v", err)
	}
	for _, item := range []map[string]types.AttributeValue{
		callItemKey(run, "1"),
		// A call attribute that holds no record.
		withCall(callItemKey(run, "1")),
	} {
		if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: item}); err != nil {
			t.Fatal(err)
		}
		_, err := d.Handle(ctx, payload)
		if n := calls.Load(); n != 1 {
			t.Fatalf("the at_most_once tool ran %d times for one key after a forger's PutItem (answer %v)", n, err)
		}
		refusedAsForged(t, e, run, err)
	}
}

func withCall(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	it["c"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	return it
}

// callOf is the call attribute (c) of a compact call item.
func callOf(t *testing.T, it map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	c, ok := it["c"].(*types.AttributeValueMemberM)
	if !ok {
		t.Fatalf("no compact call in %v", it)
	}
	return c.Value
}

// A seal covers the attempt and the claim token that wrote its state: a
// FAILED state sealed at attempt 1, written back with its seal over the
// item of attempt 2 that COMPLETED, is refused as forged, and the
// at_most_once tool does not send again.
func TestASealedStateSplicedOntoALaterAttemptIsRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-send", sender(&calls, 1))
	payload := withRunStart(envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`), time.Now())
	run := runIDOf(t, payload)
	key := callItemKey(run, "1")
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatalf("first attempt: %v", err)
	}
	failed, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.store.Table()), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Handle(ctx, payload); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("setup: %d calls", calls.Load())
	}
	c := callOf(t, failed.Item)
	_, err = e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.store.Table()), Key: key,
		UpdateExpression:          aws.String("SET c.st = :s, c.m = :m REMOVE r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": c["st"], ":m": c["m"]}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Handle(ctx, payload)
	if n := calls.Load(); n != 2 {
		t.Fatalf("the at_most_once tool succeeded twice for one key: %d runs after its sealed FAILED state was spliced back (answer %v)", n, err)
	}
	refusedAsForged(t, e, run, err)
}

// A seal covers the first attempt's start, which the check of reused
// execution names reads: an earlier execution's record whose attempt
// entry a forger moved to look as young as the new execution is refused
// as forged, its result never replayed.
func TestAMovedFirstStartIsRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	oldRun := e.oldRun(t, "test-send", sender(&calls, 0), ninetyOneDays)
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	run := runIDOf(t, payload)
	if _, err := oldRun.Handle(ctx, withRunStart(payload, time.Now().Add(-ninetyOneDays))); err != nil {
		t.Fatalf("the earlier execution's call: %v", err)
	}
	d := e.dispatcher(t, "test-send", sender(&calls, 0))
	item, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.store.Table()), Key: callItemKey(run, "1"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	callOf(t, item.Item)
	if _, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.store.Table()), Key: callItemKey(run, "1"),
		UpdateExpression:          aws.String("SET c.a[0].t = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixNano(), 10)}}}); err != nil {
		t.Fatal(err)
	}
	_, err = d.Handle(ctx, withRunStart(payload, time.Now()))
	if calls.Load() != 1 {
		t.Fatalf("the tool ran again: %d", calls.Load())
	}
	refusedAsForged(t, e, run, err)
}

// The seal covers the external key, and removing it, which would send the
// readable key, changes the key the record reads: a forger's key is never
// sent on the retry; the retry is refused as forged.
func TestAForgedExternalKeyIsNeverSent(t *testing.T) {
	for _, c := range []struct {
		name string
		set  string
		vals map[string]types.AttributeValue
	}{
		{"another run's key", "SET c.k = :k", map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: "AAAAAAAAAAAAAAAAAAAAAA"}}},
		{"the readable key", "REMOVE c.k", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			k := &keyTool{fail: 1}
			d := e.dispatcher(t, "test-echo", k.run)
			payload := withRunStart(envelopeFor("test-echo", e.ts.ID, "", 2, `{"text":"hi"}`), time.Now())
			run := runIDOf(t, payload)
			if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
				t.Fatalf("first attempt: %v", err)
			}
			if _, err := e.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.store.Table()), Key: callItemKey(run, "2"),
				UpdateExpression: aws.String(c.set), ExpressionAttributeValues: c.vals}); err != nil {
				t.Fatal(err)
			}
			_, err := d.Handle(ctx, payload)
			want, _ := externalkey.New(testSecret, run, "2")
			if sent := k.sent(); len(sent) != 1 || sent[0] != want {
				t.Fatalf("keys sent %q (answer %v), want once %q", sent, err, want)
			}
			refusedAsForged(t, e, run, err)
		})
	}
}
