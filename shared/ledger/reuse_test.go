package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// A plain call has no options digest; keep, an output limit or a
// credential each give one, of 16 bytes, that tells them apart, and the
// digest never depends on anything but them.
func TestOptionsDigestIsNoneForAPlainCall(t *testing.T) {
	none, err := OptionsDigest(CallOptions{})
	if err != nil || none != nil {
		t.Fatalf("plain call: %x %v, want none", none, err)
	}
	seen := map[string]string{}
	for name, o := range map[string]CallOptions{
		"keep":              {Keep: []string{"id"}},
		"other keep":        {Keep: []string{"id", "status"}},
		"output limit":      {OutputLimitBytes: 1000},
		"toolset scope":     {Scope: &CallScope{Kind: "toolset", Target: "tickets", Origin: "https://t.example.com"}},
		"end-user scope":    {Scope: &CallScope{Kind: "end_user", EndUser: "end_user:aa", Target: "tickets", Origin: "https://t.example.com"}},
		"other end user":    {Scope: &CallScope{Kind: "end_user", EndUser: "end_user:bb", Target: "tickets", Origin: "https://t.example.com"}},
		"keep and a limit":  {Keep: []string{"id"}, OutputLimitBytes: 1000},
		"another target":    {Scope: &CallScope{Kind: "toolset", Target: "billing", Origin: "https://t.example.com"}},
		"another origin":    {Scope: &CallScope{Kind: "toolset", Target: "tickets", Origin: "https://u.example.com"}},
		"run scope, target": {Scope: &CallScope{Kind: "run", Target: "tickets", Origin: "https://t.example.com"}},
	} {
		d, err := OptionsDigest(o)
		if err != nil || len(d) != OptionsDigestBytes {
			t.Fatalf("%s: %x %v", name, d, err)
		}
		again, _ := OptionsDigest(o)
		if !bytes.Equal(d, again) {
			t.Fatalf("%s: two digests of the same options differ", name)
		}
		if other, ok := seen[string(d)]; ok {
			t.Fatalf("%s and %s have one digest", name, other)
		}
		seen[string(d)] = name
	}
}

// The options digest is written by the claim, read back on the record,
// and sealed: a record whose digest another writer changed reads as
// forged; a record without one keeps the seal it had before digests.
func TestOptionsDigestIsRecordedAndSealed(t *testing.T) {
	plain, _ := newStore(t)
	s := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	opts, _ := OptionsDigest(CallOptions{Keep: []string{"id"}})
	withOpts := claimOf("run-options/1", time.Now().Add(time.Minute))
	withOpts.Options = opts
	without := claimOf("run-options/2", time.Now().Add(time.Minute))
	for _, r := range []*Record{withOpts, without} {
		if ok, _, err := s.Claim(ctx, r); !ok || err != nil {
			t.Fatalf("claim %s: %v %v", r.Key, ok, err)
		}
		row := &Row{RunID: "run-options", Seq: r.Seq, Attempt: 1, Step: r.Step, Tool: r.Tool, ToolsetID: r.ToolsetID, IdempotencyKey: r.Key,
			ExternalKey: r.ExternalKey, InputDigest: r.InputDigest, Status: StatusSucceeded, StartedAt: r.StartedAt, EndedAt: time.Now(), Options: r.Options}
		if ok, err := s.Finish(ctx, r.Key, r.Token, StateCompleted, json.RawMessage(`{"id":"1"}`), row); !ok || err != nil {
			t.Fatalf("finish %s: %v %v", r.Key, ok, err)
		}
	}
	got, err := s.Record(ctx, withOpts.Key)
	if err != nil || !bytes.Equal(got.Options, opts) || got.Seal != seal.Valid || got.State != StateCompleted {
		t.Fatalf("record with options: %+v %v", got, err)
	}
	if got, err := s.Record(ctx, without.Key); err != nil || got.Options != nil || got.Seal != seal.Valid {
		t.Fatalf("record without options: %+v %v", got, err)
	}
	// Another writer changes the digest: the seal no longer verifies.
	other, _ := OptionsDigest(CallOptions{Keep: []string{"other"}})
	if _, err := plain.updateCompact(ctx, callKey("run-options", "1"), "SET c.o=:o", "", map[string]types.AttributeValue{":o": bytesAttr(other)}, types.ReturnValueNone); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Record(ctx, withOpts.Key); err != nil || got.Seal != seal.Forged {
		t.Fatalf("record whose options digest was changed: %+v %v, want forged", got, err)
	}
}

// ParentCalls finds a run's calls of one step and input digest, in call
// order, and none of its row items or other calls; a
// fork's call claims each parent call once, and again when it holds it.
func TestParentCallsAndReuseClaims(t *testing.T) {
	s, _ := newStore(t)
	s = s.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	const parent = "arn:aws:states:us-east-1:000000000000:execution:sol:parent"
	seqs := []tool.Seq{"1", "2", "3.0.1", "3.1.1", "10", "12"}
	for i, seq := range seqs {
		r := claimOf(parent+"/"+string(seq), time.Now().Add(time.Minute))
		if i == 1 { // another input
			r.InputDigest = "sha256:" + string(bytes.Repeat([]byte("a"), 64))
		}
		if i == 5 { // another step
			r.Step = "other"
		}
		if ok, _, err := s.Claim(ctx, r); !ok || err != nil {
			t.Fatalf("claim %s: %v %v", r.Key, ok, err)
		}
		if err := s.PutRow(ctx, &Row{RunID: parent, Seq: seq, Step: r.Step, Tool: r.Tool, IdempotencyKey: r.Key, Status: StatusRefused, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ParentCalls(ctx, parent, "send", claimOf("x/1", time.Now()).InputDigest)
	if err != nil || !slices.Equal(got, []tool.Seq{"1", "3.0.1", "3.1.1", "10"}) {
		t.Fatalf("parent calls %v %v", got, err)
	}
	const fork = "arn:aws:states:us-east-1:000000000000:execution:sol:fork"
	for _, c := range []struct {
		key  string
		seq  tool.Seq
		want bool
	}{
		{fork + "/1", "1", true},
		{fork + "/1", "1", true},  // the same call again
		{fork + "/2", "1", false}, // another call of the fork
		{fork + "/2", "10", true},
	} {
		if ok, err := s.ClaimReuse(ctx, c.key, c.seq); ok != c.want || err != nil {
			t.Fatalf("ClaimReuse(%s, %s) = %v %v, want %v", c.key, c.seq, ok, err, c.want)
		}
	}
	// The fork's calls and rows are untouched by its reuse claims.
	if rows, err := s.RunRows(ctx, fork); err != nil || len(rows) != 0 {
		t.Fatalf("fork rows %+v %v", rows, err)
	}
}
