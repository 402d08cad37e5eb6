package ledger_test

// Writes call.before-for-each.json and row.before-for-each.json with the
// ledger of commit 66f43df^, the last before for_each, whose seq is an
// int64 and whose items hold a number seq. gen.sh copies it, with
// shared/ledger/itemjson_test.go, into that commit's shared/ledger.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
)

const (
	fxRun       = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-digest:run-before-for-each"
	fxToolsetID = "ts_0123456789abcdef0123456789abcdef"
	fxDigest    = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	fxOutDigest = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
)

var fxNow = time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)

func TestWriteEarlierItems(t *testing.T) {
	ctx := context.Background()
	db := local.DynamoDB(localtest.Dynalite(t).Endpoint())
	n := 0
	one := func(write func(s *ledger.Store) error) Item {
		n++
		tab := fmt.Sprintf("earlier-%d", n)
		if err := ledger.CreateTable(ctx, db, tab); err != nil {
			t.Fatal(err)
		}
		w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tab)}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := write(ledger.New(db, tab).WithClock(func() time.Time { return fxNow })); err != nil {
			t.Fatal(err)
		}
		out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tab)})
		if err != nil || len(out.Items) != 1 {
			t.Fatalf("scan: %d items, %v", len(out.Items), err)
		}
		return out.Items[0]
	}
	calls := map[string]Item{
		// Seq 1, completed and replayed once a minute later.
		"completed": one(func(s *ledger.Store) error {
			r := &ledger.Record{Key: fxRun + "/1", Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest,
				LeaseUntil: fxNow.Add(15 * time.Minute), Token: "00000000000000000000000000000001"}
			if ok, _, err := s.Claim(ctx, r); err != nil || !ok {
				return fmt.Errorf("claim: %v %v", ok, err)
			}
			row := &ledger.Row{RunID: fxRun, Seq: 1, Attempt: 1, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID,
				IdempotencyKey: r.Key, Status: ledger.Succeeded, StartedAt: fxNow, EndedAt: fxNow.Add(1500 * time.Millisecond),
				DurationMS: 1500, InputDigest: fxDigest, InputBytes: 120, OutputDigest: fxOutDigest, OutputBytes: 24, MemoryMB: 256}
			if ok, err := s.Finish(ctx, r.Key, r.Token, ledger.Completed, json.RawMessage(`{"message_id":"m-1"}`), row); err != nil || !ok {
				return fmt.Errorf("finish: %v %v", ok, err)
			}
			replay := &ledger.Record{Key: r.Key, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest,
				LeaseUntil: fxNow.Add(16 * time.Minute), Token: "00000000000000000000000000000011"}
			_, _, err := s.WithClock(func() time.Time { return fxNow.Add(time.Minute) }).Claim(ctx, replay)
			return err
		}),
		// Seq 2, claimed and not finished.
		"in-progress": one(func(s *ledger.Store) error {
			r := &ledger.Record{Key: fxRun + "/2", Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest,
				LeaseUntil: fxNow.Add(15 * time.Minute), Token: "00000000000000000000000000000002"}
			if ok, _, err := s.Claim(ctx, r); err != nil || !ok {
				return fmt.Errorf("claim: %v %v", ok, err)
			}
			return nil
		}),
	}
	rows := map[string]Item{
		// Seq 3, refused before any claim.
		"refused-before-claim": one(func(s *ledger.Store) error {
			return s.PutRow(ctx, &ledger.Row{RunID: fxRun, Seq: 3, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID,
				IdempotencyKey: fxRun + "/3", Status: ledger.Refused, ErrorCode: "TOOL_INPUT_INVALID", StartedAt: fxNow,
				EndedAt: fxNow.Add(2 * time.Millisecond), DurationMS: 2, InputDigest: fxDigest, InputBytes: 120, MemoryMB: 128})
		}),
	}
	if err := writeItems("call.before-for-each.json", calls); err != nil {
		t.Fatal(err)
	}
	if err := writeItems("row.before-for-each.json", rows); err != nil {
		t.Fatal(err)
	}
}
