package dispatch

// What an insider can do to a fork's reuse of its parent's calls: a
// compromised tool function's role may PutItem any RUN# item, reuse
// claims included (table.Accesses, "Calls"). Each test does only what such
// a role may do, with the table's own requests on dynalite, and checks
// that the fork's call never sends an effect its parent already had
// (docs/fork.md, "The reuse claim").

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// forgeReuseClaim puts, as a tool role may, a reuse claim of parent call
// parentSeq in fork run forkRun's partition held by claimedBy, with seal
// mac ("" for none).
func forgeReuseClaim(t *testing.T, e *env, forkRun string, parentSeq tool.Seq, claimedBy, mac string) {
	t.Helper()
	item := map[string]types.AttributeValue{
		"pk":         &types.AttributeValueMemberS{Value: table.ReuseClaim.Key(forkRun)},
		"sk":         &types.AttributeValueMemberS{Value: table.ReuseSK(table.CallSK(parentSeq.SortKey()))},
		"claimed_by": &types.AttributeValueMemberS{Value: claimedBy},
	}
	if mac != "" {
		item["mac"] = &types.AttributeValueMemberS{Value: mac}
	}
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("toolgate-test"), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// reuseClaimMAC is the seal of the reuse claim of parentSeq in forkRun's
// partition, as the function read it.
func reuseClaimMAC(t *testing.T, e *env, forkRun string, parentSeq tool.Seq) string {
	t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("toolgate-test"), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: table.ReuseClaim.Key(forkRun)},
		"sk": &types.AttributeValueMemberS{Value: table.ReuseSK(table.CallSK(parentSeq.SortKey()))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := out.Item["mac"].(*types.AttributeValueMemberS)
	if !ok {
		t.Fatalf("the reuse claim of %s in %s has no seal", parentSeq, forkRun)
	}
	return m.Value
}

// A reuse claim another writer put in the fork's partition, naming a call
// the fork never made, does not make the fork's call send again what its
// parent sent: the call fails TOOL_INTERNAL, the tool not run, as for a
// record whose seal does not verify. Neither a claim without a seal nor
// one carrying the seal of a genuine claim of another fork does.
func TestAForgedReuseClaimNeverMakesAForkSendAgain(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", sender(&sends, 0))
	p := forkCall{tool: "test-send", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, d, p)
	genuine := p.fork(newRunID("fork"))
	handle(t, d, genuine)
	copied := reuseClaimMAC(t, e, genuine.run, "1")
	for name, mac := range map[string]string{"no seal": "", "another fork's seal": copied} {
		t.Run(name, func(t *testing.T) {
			f := p.fork(newRunID("fork"))
			forgeReuseClaim(t, e, f.run, "1", genuine.run+"/1", mac)
			before := sends.Load()
			_, err := d.Handle(context.Background(), f.envelope(t))
			if sends.Load() != before {
				t.Fatalf("the tool sent %d times more, want none (the parent sent it)", sends.Load()-before)
			}
			if codeOf(t, err) != string(tool.Internal) || !strings.Contains(err.Error(), p.run+"/1") {
				t.Fatalf("fork call: %v, want %s naming the parent call", err, tool.Internal)
			}
			if rec := mustRecord(t, e.store, f.run+"/1"); rec.State != ledger.StateFailed {
				t.Fatalf("fork record %s, want FAILED (nothing applied)", rec.State)
			}
		})
	}
}

// A call item another role put in the parent run's partition, ahead of
// the parent's real call (a copy of it under an earlier seq, its seal
// then another key's), neither gives the fork's call its result nor hides
// the real call: the fork's call passes it over and takes the parent's
// real result, the tool not run again.
func TestACallItemForgedIntoTheParentDoesNotHideItsRealCall(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", sender(&sends, 0))
	p := forkCall{tool: "test-send", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "2", input: `{"text":"a"}`}
	want := handle(t, d, p)
	ctx := context.Background()
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("toolgate-test"), Key: callItemKey(p.run, "2")})
	if err != nil {
		t.Fatal(err)
	}
	forged := out.Item
	forged["sk"] = callItemKey(p.run, "1")["sk"]
	forged["r"] = &types.AttributeValueMemberS{Value: `{"message_id":"forged"}`}
	if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("toolgate-test"), Item: forged}); err != nil {
		t.Fatal(err)
	}
	f := p.fork(newRunID("fork"))
	if got := handle(t, d, f); got != want || sends.Load() != 1 {
		t.Fatalf("fork call: %s, %d sends; want the parent's %s, sent once", got, sends.Load(), want)
	}
}

// Two identical calls of a fork sent at once, for one matching call of
// the parent: one takes the parent's result, the other runs; never both
// the one result, never both run. Repeated, so that each order of their
// requests has its chance.
func TestTwoIdenticalForkCallsRacingTakeOneParentCallOnce(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	for i := range 8 {
		p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
		want := handle(t, d, p)
		before := calls.Load()
		fork := newRunID("fork")
		results := make(chan string, 2)
		for _, seq := range []tool.Seq{"1", "2"} {
			c := p.fork(fork)
			c.seq = seq
			payload := c.envelope(t)
			go func() {
				out, err := d.Handle(context.Background(), payload)
				if err != nil {
					results <- "error: " + err.Error()
					return
				}
				results <- string(out)
			}()
		}
		a, b := <-results, <-results
		if calls.Load() != before+1 || (a == want) == (b == want) || strings.HasPrefix(a, "error") || strings.HasPrefix(b, "error") {
			t.Fatalf("round %d: %s and %s, the tool ran %d times; want one of them %s, the other a run of its own", i, a, b, calls.Load()-before, want)
		}
	}
}

// A direct-lane call (an operator's toolgate invoke) that names a start,
// forked from an execution, is refused before anything is read or
// written: only an execution's Starter answers a start, so a direct call
// never takes an execution's recorded results.
func TestDirectLaneCannotForkAnExecution(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	sfn := e.dispatcher(t, "test-echo", numbered(&calls))
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, sfn, p)
	direct := e.dispatcher(t, "test-echo", numbered(&calls), func(c *Config) { c.Lane = lane.Direct })
	f := p.fork("direct/arn:aws:iam::000000000000:user/ann/r1")
	e.db.reset()
	_, err := direct.Handle(context.Background(), f.envelope(t))
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), "start") {
		t.Fatalf("direct call forked from an execution: %v", err)
	}
	if e.db.writes() != 0 || e.db.gets.Load() != 0 || calls.Load() != 1 {
		t.Fatalf("%d writes, %d reads, the tool ran %d times; want nothing but the parent's run", e.db.writes(), e.db.gets.Load(), calls.Load())
	}
}

// A start whose forked_from is a direct-lane run id (no execution ARN) is
// refused when the envelope is decoded: an execution is never forked
// from an operator's direct calls.
func TestAForkOfADirectRunIsRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	f := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("fork"), seq: "1", input: `{"text":"a"}`,
		forkedFrom: "direct/arn:aws:iam::000000000000:user/ann/r1"}
	e.db.reset()
	_, err := d.Handle(context.Background(), f.envelope(t))
	if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "forked_from") {
		t.Fatalf("forked_from a direct run: %v", err)
	}
	if e.db.writes() != 0 || calls.Load() != 0 {
		t.Fatalf("%d writes, the tool ran %d times", e.db.writes(), calls.Load())
	}
}
