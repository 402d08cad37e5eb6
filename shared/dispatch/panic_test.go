package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// An at_most_once tool that acts and then returns a typed nil *tool.Error
// (`var terr *tool.Error; return out, terr`) has classified nothing: its
// effect may have happened, so its record is UNKNOWN and the key never
// runs it again.
func TestTypedNilToolErrorAfterTheEffectIsMaybeApplied(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		var terr *tool.Error
		return json.RawMessage(`{"message_id":"m1"}`), terr
	})
	p := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"hi"}`)
	if _, err := d.Handle(context.Background(), p); codeOf(t, err) != string(tool.Internal) {
		t.Fatalf("first call: %v, want TOOL_INTERNAL", err)
	}
	rec, err := e.store.Record(context.Background(), keyOf(t, p))
	if err != nil || rec.State != ledger.StateUnknown {
		t.Fatalf("record %+v %v, want UNKNOWN", rec, err)
	}
	if _, err := d.Handle(context.Background(), p); codeOf(t, err) != string(tool.RetryRequiresIdempotency) || sends.Load() != 1 {
		t.Errorf("retry: %v after %d sends, want TOOL_RETRY_REQUIRES_IDEMPOTENCY and one send", err, sends.Load())
	}
}

// finishPanics panics on the second UpdateItem (a first attempt's finish),
// after DynamoDB has applied it.
type finishPanics struct {
	*countingDB
	n atomic.Int64
}

func (f *finishPanics) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := f.countingDB.UpdateItem(ctx, in, o...)
	if f.n.Add(1) == 2 {
		panic("the ledger client failed after the finish")
	}
	return out, err
}

// A panic while the outcome is recorded does not escape Handle: the
// caller gets TOOL_INTERNAL, a contract code, and Lambda keeps the process.
func TestPanicWhileRecordingAnswersWithAContractCode(t *testing.T) {
	e := newEnv(t)
	store := ledger.New(&finishPanics{countingDB: e.db}, e.store.Table())
	var calls atomic.Int64
	d, err := New(Config{Mode: OneTool("test-echo"), MemoryMB: 128, Lane: lane.SFN, ExternalKeySecret: testSecret},
		Deps{Ledger: store.WithMAC(mustSealKey(t, testMAC)), Run: echo(&calls), Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var herr error
	escaped := func() (v any) {
		defer func() { v = recover() }()
		_, herr = d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`))
		return nil
	}()
	if escaped != nil {
		t.Fatalf("the panic escaped Handle: %v", escaped)
	}
	if codeOf(t, herr) != string(tool.Internal) {
		t.Errorf("Handle: %v, want TOOL_INTERNAL", herr)
	}
}
