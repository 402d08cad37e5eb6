package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

func gatedTool(calls *atomic.Int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		n := calls.Add(1)
		var in struct{ Fail string }
		json.Unmarshal(c.Input, &in)
		if in.Fail != "" && n == 1 {
			return nil, tool.Errorf(tool.Code(in.Fail), "raised %s", in.Fail)
		}
		return json.RawMessage(`{"message_id":"m"}`), nil
	}
}

// messageOf returns the caller-visible message of Handle's error.
func messageOf(err error) string {
	var ive messages.InvokeResponse_Error
	if errors.As(err, &ive) {
		return ive.Message
	}
	return ""
}

// reviews is the review store of the gated tool's function: its bindings sealed
// with the test dispatchers' key.
func (e *env) reviews() *dynamo.Store {
	k, _ := seal.NewKey(testMAC)
	return dynamo.NewStore(e.db, e.store.Table()).WithMAC(k)
}

// params is a review of the gated call payload describes.
func paramsFor(t *testing.T, payload json.RawMessage) review.Params {
	var env struct {
		RunID     string          `json:"run_id"`
		Step      string          `json:"step"`
		Tool      string          `json:"tool"`
		ToolsetID string          `json:"toolset_id"`
		Input     json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		t.Fatal(err)
	}
	return review.Params{Requester: "arn:aws:iam::000000000000:user/requester", RunID: env.RunID, Of: env.Step, Tool: env.Tool, ToolsetID: env.ToolsetID, Input: env.Input}
}

// Every way an approval can fail to authorise a gated call is
// TOOL_PERMISSION_DENIED with a reason, and nothing runs: the approval is
// checked before the key is claimed, so the key has no record and the row
// is REFUSED with attempt 0.
func TestApprovalRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	call := func(input string) json.RawMessage { return envelopeFor("test-gated", e.ts.ID, "", 1, input) }

	cases := []struct {
		name string
		// payload returns the call, its approval set (or not).
		payload func(t *testing.T) json.RawMessage
		reason  string
	}{
		{"no approval", func(t *testing.T) json.RawMessage { return call(`{"text":"x"}`) }, "carries no approval"},
		{"rejected review's error as approval", func(t *testing.T) json.RawMessage {
			return reviewtest.WithApproval(t, call(`{"text":"x"}`), json.RawMessage(`{"Error":"REVIEW_REJECTED","Cause":"{}"}`))
		}, "names no review"},
		{"unknown review", func(t *testing.T) json.RawMessage {
			return reviewtest.WithApproval(t, call(`{"text":"x"}`), json.RawMessage(`{"review_id":"`+review.NewID()+`","decision":"approve"}`))
		}, "does not exist"},
		{"different inputs", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"what the reviewer saw"}`)
			r := reviewtest.Decided(t, rs, paramsFor(t, p), review.Approve)
			other := strings.Replace(string(p), "what the reviewer saw", "something else", 1)
			return reviewtest.WithApproval(t, json.RawMessage(other), reviewtest.Approval(t, r))
		}, "not those review"},
		{"another run", func(t *testing.T) json.RawMessage {
			r := reviewtest.Decided(t, rs, paramsFor(t, call(`{"text":"x"}`)), review.Approve)
			return reviewtest.WithApproval(t, call(`{"text":"x"}`), reviewtest.Approval(t, r))
		}, "another run"},
		{"another step", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			params.Of = "other_step"
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, reviewtest.Decided(t, rs, params, review.Approve)))
		}, `approved step "other_step"`},
		{"pending review", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			params.ID, params.Step, params.TimeoutSeconds = review.NewID(), "approve", 60
			r, err := review.New(params)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := rs.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			return reviewtest.WithApproval(t, p, json.RawMessage(`{"review_id":"`+r.ID+`","decision":"approve"}`))
		}, "is pending"},
		{"rejected review", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			r := reviewtest.Decided(t, rs, paramsFor(t, p), review.Reject)
			forged := strings.Replace(string(reviewtest.Approval(t, r)), `"reject"`, `"approve"`, 1)
			return reviewtest.WithApproval(t, p, json.RawMessage(forged))
		}, "is rejected"},
		{"expired", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			params.TimeoutSeconds = 60
			past := rs.WithClock(func() time.Time { return time.Now().Add(-2 * time.Minute) })
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, reviewtest.Decided(t, past, params, review.Approve)))
		}, "expired at"},
		{"already used by another call", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			r := reviewtest.Decided(t, rs, params, review.Approve)
			if ok, _, err := rs.Bind(ctx, r, params.RunID+"/99"); err != nil || !ok {
				t.Fatal(ok, err)
			}
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
		}, "already authorised another call"},
		{"Task ended before the decision reached it", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			params.TaskToken = "token-" + review.NewID()
			r := reviewtest.Decided(t, rs, params, review.Approve)
			if err := rs.FinishDelivery(ctx, r, review.TaskEnded, "TaskTimedOut"); err != nil {
				t.Fatal(err)
			}
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
		}, "Task had ended"},
		// A binding another function's role wrote (to this very call, or
		// to another), sealed with its own key or with none: it binds
		// nothing, and the call is refused binding-forged.
		{"binding sealed by another function", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			r := reviewtest.Decided(t, rs, params, review.Approve)
			other, _ := seal.NewKey(bytes.Repeat([]byte{9}, 32))
			if ok, _, err := e.reviews().WithMAC(other).Bind(ctx, r, keyOf(t, p)); err != nil || !ok {
				t.Fatal(ok, err)
			}
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
		}, "binding was not written by this function"},
		{"binding without a seal, no run start", func(t *testing.T) json.RawMessage {
			p := call(`{"text":"x"}`)
			params := paramsFor(t, p)
			r := reviewtest.Decided(t, rs, params, review.Approve)
			if ok, _, err := dynamo.NewStore(e.db, e.store.Table()).Bind(ctx, r, keyOf(t, p)); err != nil || !ok {
				t.Fatal(ok, err)
			}
			return reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
		}, "binding was not written by this function"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := c.payload(t)
			before := calls.Load()
			_, err := d.Handle(ctx, payload)
			if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), c.reason) {
				t.Fatalf("got %v, want TOOL_PERMISSION_DENIED mentioning %q", err, c.reason)
			}
			if calls.Load() != before {
				t.Fatal("the tool ran")
			}
			if rec, err := e.store.Record(ctx, keyOf(t, payload)); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("record %+v %v: a refused call claimed the key", rec, err)
			}
			rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(tool.PermissionDenied) || rows[0].Attempt != 0 {
				t.Fatalf("rows %+v, want one REFUSED row", rows)
			}
			if forged := strings.Contains(c.reason, "binding was not written"); forged != (rows[0].Reason == seal.ReasonBindingForged) {
				t.Fatalf("row's refusal reason %q", rows[0].Reason)
			}
		})
	}
}

// An approval authorises one call: its first use binds it (one write
// more than an ungated call), a replay of the completed key reads the
// approval, already bound to it, and writes only its row, and the same
// approval for another key is refused.
func TestApprovalAuthorisesOneCall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	// seq 2: not a run's first call, which also writes the run's key
	// pointer (TestKeyPointerOnlyWithARunsFirstCall).
	first := reviewtest.Approve(t, rs, envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"once"}`))
	var approval struct {
		ReviewID string `json:"review_id"`
	}
	var env struct{ Approval json.RawMessage }
	json.Unmarshal(first, &env)
	json.Unmarshal(env.Approval, &approval)

	e.db.reset()
	if out, err := d.Handle(ctx, first); err != nil || string(out) != `{"message_id":"m"}` {
		t.Fatalf("approved call: %s %v", out, err)
	}
	// bind, claim and finish (with the row): 3 writes; the toolset and the
	// review are read.
	if e.db.writes() != 3 || e.db.gets.Load() != 2 {
		t.Errorf("first gated call: %d writes, %d reads; want 3 and 2", e.db.writes(), e.db.gets.Load())
	}
	if bound, err := rs.BoundKey(ctx, approval.ReviewID); err != nil || bound != keyOf(t, first) {
		t.Fatalf("the approval's binding after the call: %q %v", bound, err)
	}
	// The call's row names the approval it ran under.
	if rows, err := e.store.RunRows(ctx, runIDOf(t, first)); err != nil || len(rows) != 1 ||
		rows[0].ReviewID != approval.ReviewID || rows[0].Approver != reviewtest.Approver {
		t.Fatalf("rows of the gated call %+v %v: want its review id and approver", rows, err)
	}

	// A replay of the completed key returns the result: the review read,
	// the bind (a PutItem whose condition fails: the approval is bound to
	// this key; dynalite leaves the old item out of that answer, so the
	// binding is read, which DynamoDB's answer would hold), and the claim
	// request, whose answer holds the result.
	e.db.reset()
	if out, err := d.Handle(ctx, first); err != nil || string(out) != `{"message_id":"m"}` {
		t.Fatalf("replay: %s %v", out, err)
	}
	if e.db.gets.Load() != 2 || e.db.writes() != 2 || calls.Load() != 1 {
		t.Errorf("replay: %d reads, %d writes, tool ran %d times", e.db.gets.Load(), e.db.writes(), calls.Load())
	}

	// The same approval on the next call of the run (another key) is
	// refused: a loop back into the step needs a fresh review.
	second := strings.Replace(string(first), `/2"`, `/3"`, 1)
	second = strings.Replace(second, `"seq":"2"`, `"seq":"3"`, 1)
	if _, err := d.Handle(ctx, json.RawMessage(second)); codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), "already authorised another call") {
		t.Fatalf("the approval reused for another key: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
}

// A retry of the same key reuses the approval bound by its first attempt,
// with no further write to the review; a call refused for lack of approval
// can be retried with one. (test-gated is at_most_once: its failed attempt
// may have sent, so the retry carries the author's tolerate_duplicates.)
func TestApprovalRetrySameKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	payload := reviewtest.Approve(t, rs, envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x","fail":"TOOL_UPSTREAM_UNAVAILABLE"}`))
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatalf("first attempt: %v", err)
	}
	payload = json.RawMessage(strings.Replace(string(payload), `"tolerate_duplicates":false`, `"tolerate_duplicates":true`, 1))
	e.db.reset()
	if out, err := d.Handle(ctx, payload); err != nil || string(out) != `{"message_id":"m"}` {
		t.Fatalf("retry with the same key: %s %v", out, err)
	}
	// The bind (a PutItem of the binding item whose condition fails: the
	// approval is this key's already), the claim request, the re-claim,
	// the finish with its row.
	if e.db.updates.Load() != 3 || e.db.puts.Load() != 1 || calls.Load() != 2 {
		t.Errorf("retry: %d updates (want 3: claim request, re-claim, finish), %d puts (want 1: the bind), tool ran %d times (want 2)", e.db.updates.Load(), e.db.puts.Load(), calls.Load())
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	// The tool said its failure was definite (maybe_applied false): FAILED.
	if len(rows) != 2 || rows[0].Status != ledger.StatusFailed || rows[1].Status != ledger.StatusSucceeded || rows[1].Attempt != 2 {
		t.Fatalf("rows %+v", rows)
	}

	// Refused for lack of approval (the key is left unclaimed), then
	// retried with one: it runs as the key's first attempt.
	bare := envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"y"}`)
	if _, err := d.Handle(ctx, bare); codeOf(t, err) != string(tool.PermissionDenied) {
		t.Fatalf("without approval: %v", err)
	}
	if _, err := d.Handle(ctx, reviewtest.Approve(t, rs, bare)); err != nil {
		t.Fatalf("the same key with an approval: %v", err)
	}
	rec := mustRecord(t, e.store, keyOf(t, bare))
	if rec.State != ledger.StateCompleted || rec.Attempts != 1 {
		t.Fatalf("record %+v", rec)
	}
}

// review.Digest, which review-request records, is the dispatcher's
// input_digest: an approval of an input written with other spacing, key
// order, escapes and number forms authorises the call, and the row's digest
// is the review's. Numbers that canonicalisation would change are refused
// by both.
func TestReviewDigestIsDispatcherDigest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	for _, in := range []string{
		`{"text":"plain"}`,
		`{ "n" : 1E2 , "text" : "\u00e9t\u00e9 \ud83d\ude00 <&>" }`,
		`{"text":"x","n":0.1}`,
		`{"text":"x","n":-0}`,
		`{"text":"x","n":1.5e3}`,
	} {
		payload := envelopeFor("test-gated", e.ts.ID, "", 1, in)
		_, digest, err := tool.InputDigest(json.RawMessage(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if _, err := d.Handle(ctx, reviewtest.Approve(t, rs, payload)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
		if len(rows) != 1 || rows[0].InputDigest != digest {
			t.Fatalf("%s: row digest %+v, review digest %s", in, rows, digest)
		}
	}
	for _, in := range []string{`{"text":"x","n":9007199254740993}`, `{"text":"x","n":1e400}`} {
		if _, _, err := tool.InputDigest(json.RawMessage(in)); err == nil {
			t.Errorf("review.Digest accepted %s", in)
		}
		_, err := d.Handle(ctx, envelopeFor("test-gated", e.ts.ID, "", 1, in))
		if codeOf(t, err) != string(tool.InputInvalid) {
			t.Errorf("dispatcher: %s: %v", in, err)
		}
		// The message names where the number ends, never its value (a
		// tool's payload reaches no message or log line).
		if msg := messageOf(err); strings.Contains(msg, "900719925474099") || strings.Contains(msg, "1e400") || !strings.Contains(msg, "ending at byte") {
			t.Errorf("dispatcher message %q", msg)
		}
	}
}

// New refuses a ledger or review store that does not seal what it
// writes: a binding written without the function's seal would be refused
// as forged on its next read, and the approved call with it. A store
// sealed with the function's key writes bindings that a store with that
// key checks as valid and one with another key as forged.
func TestNewRefusesStoresThatDoNotSeal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	cfg := Config{Mode: OneTool("test-gated"), Lane: lane.SFN, LedgerSince: testSince, ExternalKeySecret: testSecret}
	plain := dynamo.NewStore(e.db, e.store.Table())
	for _, c := range []struct {
		name, want string
		deps       Deps
	}{
		{"an unsealed ledger store", "the ledger store does not seal", Deps{Ledger: e.store, Reviews: e.reviews(), Run: gatedTool(&calls)}},
		{"an unsealed review store", "the review store does not seal", Deps{Ledger: e.store.WithMAC(mustSealKey(t, testMAC)), Reviews: plain, Run: gatedTool(&calls)}},
		{"no ledger store", "no ledger store", Deps{Reviews: e.reviews(), Run: gatedTool(&calls)}},
		{"no tool to run", "no tool to run", Deps{Ledger: e.store.WithMAC(mustSealKey(t, testMAC)), Reviews: e.reviews()}},
	} {
		if _, err := New(cfg, c.deps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want it refused (%s)", c.name, err, c.want)
		}
	}
	d, err := New(cfg, e.deps(t, gatedTool(&calls), nil))
	if err != nil {
		t.Fatal(err)
	}
	payload := reviewtest.Approve(t, plain, envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x"}`))
	if _, err := d.Handle(ctx, payload); err != nil || calls.Load() != 1 {
		t.Fatalf("%v, %d calls; want the approved call run", err, calls.Load())
	}
	var ref struct {
		Approval struct {
			ReviewID string `json:"review_id"`
		} `json:"approval"`
	}
	if err := json.Unmarshal(payload, &ref); err != nil {
		t.Fatal(err)
	}
	r, err := plain.GetApproval(ctx, ref.Approval.ReviewID)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := seal.NewKey(bytes.Repeat([]byte{9}, 32))
	for _, c := range []struct {
		s    *dynamo.Store
		want seal.Status
	}{{e.reviews(), seal.Valid}, {plain.WithMAC(other), seal.Forged}} {
		if ok, cur, err := c.s.Bind(ctx, r, keyOf(t, payload)); err != nil || !ok || cur.BindingSeal != c.want {
			t.Fatalf("the binding = %v, %v, %v; want bound to the call, seal %s", ok, cur.BindingSeal, err, c.want)
		}
	}
}

// A dispatcher without a review store refuses gated calls, approved or
// not, and runs ungated ones.
func TestGatedWithoutReviewStore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	d, err := New(Config{Mode: OneTool("test-gated"), Lane: lane.SFN, ExternalKeySecret: testSecret},
		Deps{Ledger: e.store.WithMAC(mustSealKey(t, testMAC)), Run: gatedTool(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	payload := reviewtest.Approve(t, e.reviews(), envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"x"}`))
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.PermissionDenied) || calls.Load() != 0 {
		t.Fatalf("%v, %d calls", err, calls.Load())
	}
}

// An input that fails the pinned schema is refused by JSON Pointer and
// keyword only: neither its values nor its property names reach the
// caller's message (which aws-lambda-go also logs).
func TestSchemaRefusalQuotesNoPayload(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	_, err := d.Handle(context.Background(), envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":7,"SECRETKEY":"SECRETVALUE"}`))
	msg := messageOf(err)
	if codeOf(t, err) != string(tool.InputInvalid) || strings.Contains(msg, "SECRET") || !strings.Contains(msg, `input/text fails "type"`) ||
		!strings.Contains(msg, `input/ fails "additionalProperties"`) {
		t.Fatalf("%v: message %q", err, msg)
	}
}

// An input naming a member twice is refused (its RFC 8785 digest has no
// form for it), and the tool does not run: a reader that took the first
// would see another call than one that took the last.
func TestInputWithDuplicateNamesIsRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	_, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"a","text":"b"}`))
	if codeOf(t, err) != string(tool.InputInvalid) || calls.Load() != 0 {
		t.Fatalf("%v, %d calls; want TOOL_INPUT_INVALID and no call", err, calls.Load())
	}
}
