package dispatch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// keyTool records the external key of every call it gets, and fails the
// first fail calls with a retryable error (nothing applied).
type keyTool struct {
	mu   sync.Mutex
	keys []string
	fail int
}

func (k *keyTool) run(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = append(k.keys, c.ExternalKey)
	if len(k.keys) <= k.fail {
		return nil, tool.Errorf(tool.UpstreamUnavailable, "try again")
	}
	return json.RawMessage(`{"text":"ok"}`), nil
}

func (k *keyTool) sent() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// assertOpaque fails when key tells anything of the run: the account, the
// execution ARN or its names.
func assertOpaque(t *testing.T, key, runID string) {
	t.Helper()
	for _, leak := range []string{runID, "arn:", "000000000000", "us-east-1", "execution", "toolgate-test", "run-"} {
		if strings.Contains(key, leak) {
			t.Fatalf("the external key %q holds %q", key, leak)
		}
	}
	if _, _, err := externalkey.Parse(key); err != nil {
		t.Fatalf("the external key %q: %v", key, err)
	}
}

// A tool gets the call's external key, not the ledger's: opaque, the same
// on the retry after a failed attempt, still the stored one when the
// retry runs under another secret (a rotation, or an upgrade), and
// nothing is sent on the replay of the completed call.
func TestToolGetsTheStoredExternalKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	k := &keyTool{fail: 1}
	d := e.dispatcher(t, "test-echo", k.run)
	payload := envelopeFor("test-echo", e.ts.ID, "", 2, `{"text":"hi"}`)
	run := runIDOf(t, payload)
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatalf("first attempt: %v", err)
	}
	rotated := e.dispatcher(t, "test-echo", k.run, func(c *Config) { c.ExternalKeySecret = bytes.Repeat([]byte("r"), 40) })
	if _, err := rotated.Handle(ctx, payload); err != nil {
		t.Fatalf("the retry under a new secret: %v", err)
	}
	if _, err := rotated.Handle(ctx, payload); err != nil {
		t.Fatalf("the replay: %v", err)
	}
	want, _ := externalkey.New(testSecret, run, "2")
	sent := k.sent()
	if len(sent) != 2 || sent[0] != want || sent[1] != want {
		t.Fatalf("keys sent %q, want twice %q (the first claim's, under the first secret)", sent, want)
	}
	assertOpaque(t, sent[0], run)
	rec, err := e.store.Record(ctx, keyOf(t, payload))
	if err != nil || rec.ExternalKey != want || rec.Attempts != 2 {
		t.Fatalf("record %+v %v", rec, err)
	}
	for _, r := range ledgertest.RunRows(t, e.store, run) {
		if r.ExternalKey != want || r.IdempotencyKey != run+"/2" {
			t.Errorf("row %d %s: keys %q and %q", r.Attempt, r.Status, r.IdempotencyKey, r.ExternalKey)
		}
	}
}

// A call claimed before external keys keeps sending the readable key its
// first attempt was sent with, on its retry after the upgrade. Seals and
// external keys come with the same upgrade, so the previous code's item
// has neither, and its run started before the stage's since time (a run
// started after it has only sealed records, and an unsealed one is
// refused: TestAnUnsealedRecordReplaysOnlyForARunStartedBeforeSince). The
// retry seals the record with the function's key and leaves its key
// readable.
func TestCallClaimedBeforeExternalKeysKeepsItsKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	since := time.Now().Truncate(time.Millisecond)
	runStart := since.Add(-time.Hour)
	payload := envelopeFor("test-echo", e.ts.ID, "", 2, `{"text":"hi"}`)
	run, key := runIDOf(t, payload), keyOf(t, payload)
	// The previous code's claim and FAILED finish, before the upgrade:
	// an unsealed store writing the previous layout, without the two
	// attributes that code did not write.
	rec := &ledger.Record{Key: key, Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, InputDigest: digestOf(t, `{"text":"hi"}`),
		LeaseUntil: time.Now().Add(time.Minute), StartedAt: runStart.Add(time.Minute), ExternalKey: "unused"}
	if ok, _, err := e.store.WithLayout(ledger.LayoutNamed).Claim(ctx, rec); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	row := &ledger.Row{RunID: run, Seq: "2", Attempt: 1, Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, IdempotencyKey: key,
		Status: ledger.StatusFailed, ErrorCode: string(tool.UpstreamUnavailable), Retryable: true, StartedAt: rec.StartedAt, EndedAt: rec.StartedAt,
		Layout: ledger.LayoutNamed}
	if ok, err := e.store.Finish(ctx, key, rec.Token, ledger.StateFailed, nil, row); !ok || err != nil {
		t.Fatalf("finish: %v %v", ok, err)
	}
	toPreviousLayout(t, e, run, "2")
	k := &keyTool{}
	d := e.dispatcher(t, "test-echo", k.run, func(c *Config) { c.LedgerSince = since })
	if _, err := d.Handle(ctx, withRunStart(payload, runStart)); err != nil {
		t.Fatalf("the retry after the upgrade: %v", err)
	}
	if sent := k.sent(); len(sent) != 1 || sent[0] != key {
		t.Fatalf("keys sent %q, want the readable %q", sent, key)
	}
	after, err := e.store.WithMAC(mustSealKey(t, testMAC)).Record(ctx, key)
	if err != nil || after.State != ledger.StateCompleted || after.Seal != seal.Valid || after.ExternalKey != key {
		t.Fatalf("record after the retry %+v %v, want COMPLETED, sealed by the function, its key the readable one", after, err)
	}
}

// toPreviousLayout removes from the call item of run and seq what the
// code before seals and external keys did not write: external_key,
// external_key_token and mac (a test writes the item with today's store
// and makes it the previous code's).
func toPreviousLayout(t testing.TB, e *env, run string, seq tool.Seq) {
	t.Helper()
	_, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(e.store.Table()),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "RUN#" + run}, "sk": &types.AttributeValueMemberS{Value: "CALL#" + seq.SortKey()}},
		UpdateExpression: aws.String("REMOVE external_key, external_key_token, mac")})
	if err != nil {
		t.Fatal(err)
	}
}

// Only the claim that creates a run's first call item writes the run's
// key pointer: that call costs one request more (3 writes), any other
// call (seq 2) and a retry of the first one the usual count, and the
// pointer names the run.
func TestKeyPointerOnlyWithARunsFirstCall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	k := &keyTool{}
	d := e.dispatcher(t, "test-echo", k.run)
	first := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
	run := runIDOf(t, first)
	d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 5, `{"text":"warm"}`)) // the toolset, once per container
	e.db.reset()
	if _, err := d.Handle(ctx, first); err != nil {
		t.Fatal(err)
	}
	if w, p := e.db.writes(), e.db.puts.Load(); w != 3 || p != 1 {
		t.Fatalf("the run's first call: %d writes (%d puts), want 3: the claim, the pointer, the finish", w, p)
	}
	if got, err := e.store.KeyPointer(ctx, externalkey.RunID(testSecret, run)); err != nil || got != run {
		t.Fatalf("pointer %q %v, want %s", got, err, run)
	}
	sent := k.sent()
	if opaque, _, _ := externalkey.Parse(sent[len(sent)-1]); opaque != externalkey.RunID(testSecret, run) {
		t.Fatalf("the key sent %q and the pointer disagree", sent[len(sent)-1])
	}
	e.db.reset()
	if _, err := d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, run, 2, `{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if w, p := e.db.writes(), e.db.puts.Load(); w != 2 || p != 0 {
		t.Fatalf("the run's second call: %d writes (%d puts), want 2", w, p)
	}
	// A first call that failed and is retried: no second pointer write.
	k.fail = 1 << 30
	failing := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
	d.Handle(ctx, failing)
	e.db.reset()
	d.Handle(ctx, failing)
	if p := e.db.puts.Load(); p != 0 {
		t.Fatalf("the retry of a first call put %d items", p)
	}
}

// The secret is required and at least 32 bytes: New refuses a dispatcher
// without one (Validate cannot, since the function's main loads the secret from SSM
// after the environment is read), and its error holds no byte of it; a
// seq too long for a 64-character external key is refused before any
// claim.
func TestExternalKeySecretAndBound(t *testing.T) {
	e := newEnv(t)
	for name, secret := range map[string][]byte{"none": nil, "31 bytes": bytes.Repeat([]byte("s"), 31)} {
		c := Config{Mode: OneTool("x"), ExternalKeySecret: secret}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Validate = %v, want the secret left to New", name, err)
		}
		if _, err := New(c, e.deps(t, (&keyTool{}).run, nil)); err == nil || !strings.Contains(err.Error(), "external key secret") || (secret != nil && strings.Contains(err.Error(), string(secret))) {
			t.Errorf("%s: New = %v, want the external key secret refused", name, err)
		}
	}
	if _, err := New(Config{Mode: OneTool("x"), ExternalKeySecret: bytes.Repeat([]byte("s"), 32)}, e.deps(t, (&keyTool{}).run, nil)); err != nil {
		t.Errorf("32 bytes: New = %v", err)
	}
	k := &keyTool{}
	d := e.dispatcher(t, "test-echo", k.run)
	withSeq := func(seq string) json.RawMessage {
		p := strings.Replace(string(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)), `"seq":"1"`, `"seq":"`+seq+`"`, 1)
		return json.RawMessage(strings.Replace(p, `/1","attempt"`, `/`+seq+`","attempt"`, 1))
	}
	const big = "1000000000000000000" // 19 digits
	fits := big + "." + big + ".1"    // 41 characters: a 64-character key
	if _, err := d.Handle(context.Background(), withSeq(fits)); err != nil {
		t.Fatalf("a %d-character seq: %v", len(fits), err)
	}
	over := big + "." + big + ".12" // 42 characters
	if _, err := d.Handle(context.Background(), withSeq(over)); codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(messageOf(err), "over the 41") {
		t.Fatalf("a %d-character seq: %v", len(over), err)
	}
	if sent := k.sent(); len(sent) != 1 || len(sent[0]) != externalkey.MaxLength {
		t.Fatalf("keys sent %q, want one of %d characters", sent, externalkey.MaxLength)
	}
}

// The external key secret never leaves the dispatcher: no log line, no
// item of the table, no answer or error holds it (raw, hex or base64),
// through a first call (its pointer written), a failed attempt and its
// retry, a replay and a refusal. (Execution histories hold what Tasks
// answer, which this checks; the stack tests run Step Functions.)
func TestExternalKeySecretCanary(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	canary := []byte("CANARY-external-key-secret-0123456789")
	var logs bytes.Buffer
	k := &keyTool{fail: 1}
	d, err := New(Config{Mode: OneTool("test-echo"), MemoryMB: 128, Lane: lane.SFN, LedgerSince: testSince, ExternalKeySecret: canary},
		e.deps(t, k.run, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	first := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
	for _, p := range []json.RawMessage{first, first, first, envelopeFor("test-echo", e.ts.ID, runIDOf(t, first), 2, `{"text":7}`)} {
		out, err := d.Handle(ctx, p)
		answers = append(answers, string(out), fmt.Sprint(err))
	}
	if len(k.sent()) != 2 {
		t.Fatalf("the tool ran %d times, want 2", len(k.sent()))
	}
	items, err := dynamoClient(e.dynamo.Endpoint()).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.store.Table())})
	if err != nil {
		t.Fatal(err)
	}
	dump, _ := json.Marshal(items.Items)
	forms := []string{string(canary), hex.EncodeToString(canary), base64.StdEncoding.EncodeToString(canary), base64.RawURLEncoding.EncodeToString(canary)}
	for where, text := range map[string]string{"logs": logs.String(), "items": string(dump), "answers": strings.Join(answers, "\n")} {
		if text == "" && where != "answers" {
			t.Fatalf("no %s to look at", where)
		}
		for _, f := range forms {
			if strings.Contains(text, f) || strings.Contains(text, "CANARY") {
				t.Fatalf("the %s hold the secret (%q)", where, f)
			}
		}
	}
	if !strings.Contains(string(dump), "KEY#"+externalkey.RunID(canary, runIDOf(t, first))) {
		t.Fatal("no key pointer among the items: the scan did not see what the call wrote")
	}
}
