package dispatch

// Writes call.dispatched-before-compact.json: call items as the dispatcher
// of commit 107d92a, the last before the compact call layout, wrote them
// (sealed with the dispatcher tests' testMAC, external keys under
// testSecret, the test toolset), for a run started at dispatchedRunStart,
// its store's clock at dispatchedNow. gen.sh copies it, with
// shared/ledger/itemjson_test.go (its package clause made dispatch's),
// into that commit's shared/dispatch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

const (
	dispatchedRun      = "arn:aws:states:us-east-1:000000000000:execution:toolgate-test:before-compact"
	dispatchedRunStart = "2026-12-02T06:59:00Z"
)

var dispatchedNow = time.Date(2026, 12, 2, 7, 0, 0, 123456789, time.UTC)

func TestWriteEarlierItems(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.store = e.store.WithClock(func() time.Time { return dispatchedNow })
	// The tool echoes text, and fails with the code in "fail" on the first
	// call of each input (a plain error for "plain").
	seen := map[string]bool{}
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		var in struct{ Text, Fail string }
		json.Unmarshal(c.Input, &in)
		if in.Fail != "" && !seen[string(c.Input)] {
			seen[string(c.Input)] = true
			if in.Fail == "plain" { // not a tool.Error: maybe applied, for a tool not idempotent
				return nil, errors.New("boom")
			}
			return nil, tool.Errorf(tool.Code(in.Fail), "raised %s", in.Fail)
		}
		return json.Marshal(map[string]string{"text": in.Text})
	}
	echoD := e.dispatcher(t, "test-echo", run)
	sendD := e.dispatcher(t, "test-send", run)
	env := func(toolName string, seq int, input string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"tool":%q,"toolset_id":%q,"run_id":%q,"run_started_at":%q,"seq":"%d","step":"s%d","idempotency_key":"%s/%d","attempt":1,"tolerate_duplicates":false,"input":%s}`,
			toolName, e.ts.ID, dispatchedRun, dispatchedRunStart, seq, seq, dispatchedRun, seq, input))
	}
	steps := []struct {
		d        *Dispatcher
		tool, in string
		seq      int
	}{
		{echoD, "test-echo", `{"text":"one"}`, 1}, // COMPLETED, the run's first call
		{echoD, "test-echo", `{"text":"two"}`, 2}, // COMPLETED, then replayed twice
		{echoD, "test-echo", `{"text":"two"}`, 2},
		{echoD, "test-echo", `{"text":"two"}`, 2},
		{sendD, "test-send", `{"text":"three","fail":"TOOL_UPSTREAM_UNAVAILABLE"}`, 3}, // FAILED
		{echoD, "test-echo", `{"text":"five","fail":"TOOL_RATE_LIMITED"}`, 5},          // FAILED, then
		{echoD, "test-echo", `{"text":"five","fail":"TOOL_RATE_LIMITED"}`, 5},          // COMPLETED at attempt 2
		{sendD, "test-send", `{"text":"six","fail":"plain"}`, 6},                       // UNKNOWN: at_most_once, maybe applied
	}
	for _, s := range steps {
		s.d.Handle(ctx, env(s.tool, s.seq, s.in))
	}
	// seq 4: test-send's claim, whose attempt never finished (a crash).
	_, digest, err := tool.InputDigest(json.RawMessage(`{"text":"four"}`))
	if err != nil {
		t.Fatal(err)
	}
	ext, err := externalkey.New(testSecret, dispatchedRun, "4")
	if err != nil {
		t.Fatal(err)
	}
	r := &ledger.Record{Key: dispatchedRun + "/4", Step: "s4", Tool: "test-send", ToolsetID: e.ts.ID, InputDigest: digest,
		LeaseUntil: dispatchedNow.Add(40 * time.Second), StartedAt: dispatchedNow, ExternalKey: ext}
	if ok, _, err := e.store.WithMAC(mustSealKey(t, testMAC)).Claim(ctx, r); err != nil || !ok {
		t.Fatalf("claim seq 4: %v %v", ok, err)
	}
	out, err := e.db.API.(*dynamodb.Client).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.store.Table())})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"1": "completed-first-call", "2": "completed-replayed", "3": "failed",
		"4": "in-progress", "5": "retried", "6": "unknown"}
	items := map[string]Item{}
	for _, it := range out.Items {
		sk, _ := it[ledger.AttrSK].(*types.AttributeValueMemberS)
		if sk == nil || !strings.HasPrefix(sk.Value, "CALL#") || strings.Count(sk.Value, "#") != 1 {
			continue // the toolset, the key pointer, row items
		}
		seq := strings.TrimLeft(strings.TrimPrefix(sk.Value, "CALL#"), "0")
		items[names[seq]] = it
	}
	if len(items) != len(names) {
		t.Fatalf("%d call items, want %d", len(items), len(names))
	}
	if err := writeItems("call.dispatched-before-compact.json", items); err != nil {
		t.Fatal(err)
	}
}
