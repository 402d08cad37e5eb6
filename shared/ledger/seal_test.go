package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
)

func keyOf(t *testing.T, b byte) seal.Key {
	t.Helper()
	k, err := seal.NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rowOf(c *Record, st Status, code string) *Row {
	now := time.Now()
	return &Row{Attempt: max(c.Attempts, 1), Status: st, ErrorCode: code, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID,
		InputDigest: c.InputDigest, IdempotencyKey: c.Key, ExternalKey: c.ExternalKey, StartedAt: now, EndedAt: now,
		FirstStartedAt: c.FirstStartedAt}
}

// putNamed puts c's call item in the previous layout (LayoutNamed), as
// the code before the compact layout, seals and external keys wrote it: its
// one attempt started at c.StartedAt, with result for a COMPLETED one.
func putNamed(t *testing.T, db *dynamodb.Client, s *Store, c *Record, state State, result json.RawMessage) {
	t.Helper()
	run, seq, err := splitKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	it := callItem{RunID: run, Seq: seq, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID, InputDigest: c.InputDigest, IdempotencyKey: c.Key,
		State: state, Attempts: 1, LeaseUntil: c.LeaseUntil.UnixMilli(), Token: c.Token, UpdatedAt: c.StartedAt.UnixMilli(),
		AttemptLog: map[string]attemptEntry{c.Token: {N: 1, StartedAt: c.StartedAt}}, Invocations: 1, LastSeenAt: c.StartedAt.UnixMilli(),
		ExpiresAt: c.StartedAt.Add(time.Hour).Unix()}
	if len(result) > 0 {
		r := string(result)
		it.Result = &r
	}
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(item, callKey(run, seq))
	delete(item, "mac")
	if len(result) == 0 {
		delete(item, "result")
	}
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// Every state a sealed store writes on a call item carries its seal, in
// the same request: the record reads Valid with the writer's key, Forged
// with another function's, and Forged once another writer changes a
// sealed field (the result here) without the key.
func TestEveryStateWrittenIsSealedByItsWriter(t *testing.T) {
	plain, db := newStore(t)
	a, b := plain.WithMAC(keyOf(t, 1)), plain.WithMAC(keyOf(t, 2))
	ctx := context.Background()
	lease := time.Now().Add(time.Minute)
	check := func(what, key string, want seal.Status, s *Store) {
		t.Helper()
		r, err := s.Record(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Seal != want {
			t.Fatalf("%s: seal %s, want %s", what, r.Seal, want)
		}
	}
	// claim, then finish COMPLETED
	c := claimOf("run-seal/1", lease)
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("claimed", c.Key, seal.Valid, a)
	check("claimed, read by another function", c.Key, seal.Forged, b)
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"message_id":"m-1"}`), rowOf(c, StatusSucceeded, "")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("completed", c.Key, seal.Valid, a)
	check("completed, read by another function", c.Key, seal.Forged, b)
	check("completed, read by a store without a key", c.Key, seal.Forged, plain)
	// another writer changes the result
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a.Table()), Key: callKey("run-seal", "1"),
		UpdateExpression:          aws.String("SET r = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: `{"message_id":"made-up"}`}}}); err != nil {
		t.Fatal(err)
	}
	check("result changed by another writer", c.Key, seal.Forged, a)

	// claim, finish FAILED, reclaim, MarkUnknown
	c2 := claimOf("run-seal/2", lease)
	if ok, _, err := a.Claim(ctx, c2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Finish(ctx, c2.Key, c2.Token, StateFailed, nil, rowOf(c2, StatusFailed, "TOOL_TIMEOUT")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("failed", c2.Key, seal.Valid, a)
	old, _ := a.Record(ctx, c2.Key)
	if ok, err := a.Reclaim(ctx, old, lease); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("re-claimed", c2.Key, seal.Valid, a)
	if ok, err := a.MarkUnknown(ctx, old, "TOOL_RETRY_REQUIRES_IDEMPOTENCY"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("unknown", c2.Key, seal.Valid, a)

	// release
	c3 := claimOf("run-seal/3", lease)
	if ok, _, err := a.Claim(ctx, c3); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Release(ctx, c3.Key, c3.Token, "TOOL_UPSTREAM_UNAVAILABLE", rowOf(c3, StatusRefused, "TOOL_UPSTREAM_UNAVAILABLE")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("released", c3.Key, seal.Valid, a)

	// a store without a key writes no seal: Absent, which the dispatcher
	// never accepts on a compact record
	c4 := claimOf("run-seal/4", lease)
	if ok, _, err := plain.Claim(ctx, c4); !ok || err != nil {
		t.Fatal(ok, err)
	}
	check("written without a key", c4.Key, seal.Absent, a)

	// a claim of an existing item keeps its seal (if_not_exists) and
	// answers with it checked
	if ok, existing, err := b.Claim(ctx, claimOf("run-seal/2", lease)); ok || err != nil || existing.Seal != seal.Forged {
		t.Fatalf("another function's claim of a sealed record: claimed %v, %v, existing %+v", ok, err, existing)
	}
	check("after another function's claim", c2.Key, seal.Valid, a)
}

// A finish whose answer was lost, sent again, fails its condition and
// reads the record back; when another writer changed it meanwhile, the
// finish says so (ErrForged).
func TestAFinishReadBackRefusesAForgedRecord(t *testing.T) {
	plain, db := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	c := claimOf("run-seal-finish/1", time.Now().Add(time.Minute))
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	row := rowOf(c, StatusFailed, "TOOL_TIMEOUT")
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateFailed, nil, row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// the same finish again (its answer lost): ours, valid
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateFailed, nil, row); !ok || err != nil {
		t.Fatalf("finish sent again: %v %v", ok, err)
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a.Table()), Key: callKey("run-seal-finish", "1"),
		UpdateExpression: aws.String("REMOVE c.m")}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Finish(ctx, c.Key, c.Token, StateFailed, nil, row); err == nil || !errors.Is(err, ErrForged) {
		t.Fatalf("finish sent again after another writer removed the seal: %v, want ErrForged", err)
	}
}

// A claim of an item in the previous layout (LayoutNamed), here one
// written before seals and external keys, writes nothing on it but the
// invocation's count: the record reads Absent, for the upgrade rule to
// decide, keeps the readable key its first attempt sent, and no compact
// attribute appears; a completed call, and one in flight across the
// upgrade (IN_PROGRESS, its lease passed). Its re-claim and finish, in
// its layout, seal that readable key.
func TestAClaimOfAPreviousLayoutRecordLeavesItAsItWas(t *testing.T) {
	plain, db := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	c := claimOf("run-seal-legacy/1", time.Now().Add(time.Minute))
	c.Token, c.StartedAt = NewToken(), time.Now()
	putNamed(t, db, plain, c, StateCompleted, json.RawMessage(`{"n":1}`))
	inFlight := claimOf("run-seal-legacy/2", time.Now().Add(-time.Second)) // its lease passed
	inFlight.Token, inFlight.StartedAt = NewToken(), time.Now()
	putNamed(t, db, plain, inFlight, StateInProgress, nil)
	for _, k := range []struct {
		key   string
		state State
	}{{c.Key, StateCompleted}, {inFlight.Key, StateInProgress}} {
		for i := range 2 {
			ok, existing, err := a.Claim(ctx, claimOf(k.key, time.Now().Add(time.Minute)))
			if ok || err != nil || existing.Seal != seal.Absent || existing.State != k.state || existing.ExternalKey != k.key || existing.Layout != LayoutNamed {
				t.Fatalf("claim %d of a previous-layout record: claimed %v, %v, existing %+v, want it read Absent, %s, its key readable", i+1, ok, err, existing, k.state)
			}
		}
		run, seq, _ := splitKey(k.key)
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(a.Table()), Key: callKey(run, seq), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, attr := range []string{attrCall, attrInvocations, "mac", "external_key"} {
			if _, ok := out.Item[attr]; ok {
				t.Errorf("%s: the claims wrote %s on a previous-layout item", k.key, attr)
			}
		}
		if n := out.Item["invocations"].(*types.AttributeValueMemberN).Value; n != "3" {
			t.Errorf("%s: invocations %s after two claims, want 3", k.key, n)
		}
	}
	old, err := a.Record(ctx, inFlight.Key)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	row := rowOf(old, StatusSucceeded, "")
	row.Layout = old.Layout
	if row.ExternalKey != inFlight.Key {
		t.Fatalf("the re-claimed call's key %q, want the readable one", row.ExternalKey)
	}
	if ok, err := a.Finish(ctx, old.Key, old.Token, StateCompleted, json.RawMessage(`{"n":2}`), row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r, err := a.Record(ctx, inFlight.Key); err != nil || r.Seal != seal.Valid || r.ExternalKey != inFlight.Key || r.Layout != LayoutNamed || r.State != StateCompleted {
		t.Fatalf("after its re-claim and finish: %+v %v, want it sealed with its readable key, in its layout", r, err)
	}
}

// The seal covers the key a call sends to third parties: another writer
// that changes a compact record's external key (a key of its choosing sent
// by the function) makes it Forged. In the previous layout, so does one
// that changes external_key or external_key_token (the readable key sent
// instead), or that puts back the record's own claim seal, read while the
// call was in flight, beside a changed key (a claim seal alone reads
// Absent, for the upgrade rule, only over the stored key).
func TestTheSealCoversTheExternalKey(t *testing.T) {
	plain, db := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	set := func(key, expr string, values map[string]types.AttributeValue) {
		t.Helper()
		run, seq, _ := splitKey(key)
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(a.Table()), Key: callKey(run, seq),
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: values}); err != nil {
			t.Fatal(err)
		}
	}
	str := func(v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: v}}
	}
	c := claimOf("run-seal-ext/1", time.Now().Add(time.Minute))
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), rowOf(c, StatusSucceeded, "")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r, err := a.Record(ctx, c.Key); err != nil || r.Seal != seal.Valid || r.ExternalKey != c.ExternalKey {
		t.Fatalf("before: %+v %v", r, err)
	}
	set(c.Key, "SET c.k = :v", str("BBBBBBBBBBBBBBBBBBBBBB"))
	if r, err := a.Record(ctx, c.Key); err != nil || r.Seal != seal.Forged || r.ExternalKey != "BBBBBBBBBBBBBBBBBBBBBB/1" {
		t.Fatalf("compact external key changed: %+v %v, want Forged", r, err)
	}

	chosen := "BBBBBBBBBBBBBBBBBBBBBB/1"
	for i, forge := range []struct {
		what, expr string
		values     func(c *Record) map[string]types.AttributeValue
	}{
		{"external_key changed", "SET external_key = :v", func(*Record) map[string]types.AttributeValue { return str(chosen) }},
		{"external_key_token changed", "SET external_key_token = :v", func(*Record) map[string]types.AttributeValue { return str(NewToken()) }},
		{"external_key changed beside the record's own claim seal", "SET external_key = :v, mac = :m", func(c *Record) map[string]types.AttributeValue {
			v := str(chosen)
			v[":m"] = &types.AttributeValueMemberS{Value: keyOf(t, 1).Sum(seal.Call, sealFields(&Record{Key: c.Key, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID, InputDigest: c.InputDigest,
				ExternalKey: c.ExternalKey, Attempts: 1, Token: c.Token}, StateInProgress, "", nil)...)}
			return v
		}},
	} {
		// A previous-layout call claimed with an external key and
		// completed, sealed, as the code before the compact layout did.
		c := claimOf(fmt.Sprintf("run-seal-ext-named/%d", i+1), time.Now().Add(time.Minute))
		c.Token, c.StartedAt, c.Attempts, c.FirstStartedAt = NewToken(), time.Now().UTC(), 1, time.Time{}
		putNamed(t, db, plain, c, StateCompleted, json.RawMessage(`{"n":1}`))
		c.FirstStartedAt = c.StartedAt
		mac := keyOf(t, 1).Sum(seal.Call, sealFields(c, StateCompleted, "", json.RawMessage(`{"n":1}`))...)
		v := str(c.ExternalKey)
		v[":t"], v[":m"] = &types.AttributeValueMemberS{Value: c.Token}, &types.AttributeValueMemberS{Value: mac}
		set(c.Key, "SET external_key = :v, external_key_token = :t, mac = :m", v)
		if r, err := a.Record(ctx, c.Key); err != nil || r.Seal != seal.Valid || r.ExternalKey != c.ExternalKey {
			t.Fatalf("%s: before: %+v %v", forge.what, r, err)
		}
		set(c.Key, forge.expr, forge.values(c))
		r, err := a.Record(ctx, c.Key)
		if err != nil || r.Seal != seal.Forged {
			t.Fatalf("%s: seal %v (key %q) %v, want Forged", forge.what, r.Seal, r.ExternalKey, err)
		}
	}
}

// A sealing store writes no state without the call's external key: a
// seal over none would be refused on every read.
func TestASealingStoreNeedsTheExternalKey(t *testing.T) {
	plain, _ := newStore(t)
	a := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	c := claimOf("run-seal-nokey/1", time.Now().Add(time.Minute))
	if ok, _, err := a.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	row := rowOf(c, StatusSucceeded, "")
	row.ExternalKey = ""
	if _, err := a.Finish(ctx, c.Key, c.Token, StateCompleted, json.RawMessage(`{"n":1}`), row); err == nil || !strings.Contains(err.Error(), "no external key") {
		t.Fatalf("a finish without the external key: %v", err)
	}
	if r, err := a.Record(ctx, c.Key); err != nil || r.State != StateInProgress || r.Seal != seal.Valid {
		t.Fatalf("after the refused finish: %+v %v, want the claim as it was", r, err)
	}
}
