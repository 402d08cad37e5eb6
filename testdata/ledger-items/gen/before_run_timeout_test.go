package ledger_test

// Writes published.before-run-timeout.json with the ledger of commit
// 56a327c^, the last whose published items hold no run_timeout_seconds.
// gen.sh copies it, with shared/ledger/itemjson_test.go, into that
// commit's shared/ledger.

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
)

func TestWriteEarlierItems(t *testing.T) {
	ctx := context.Background()
	db := local.DynamoDB(localtest.Dynalite(t).Endpoint())
	if err := ledger.CreateTable(ctx, db, "earlier"); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("earlier")}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	s := ledger.New(db, "earlier").WithClock(func() time.Time { return now })
	if err := s.RecordPublished(ctx, ledger.Published{Solution: "digest",
		VersionARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev_digest:2", Version: 2,
		ToolsetID: "ts_0123456789abcdef0123456789abcdef", OutputBoundBytes: 262144, InputLimitBytes: 65536,
		SourceDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Publisher:    "arn:aws:iam::123456789012:user/reviewer"}); err != nil {
		t.Fatal(err)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("earlier")})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("scan: %v", err)
	}
	if err := writeItems("published.before-run-timeout.json", map[string]Item{"digest": out.Items[0]}); err != nil {
		t.Fatal(err)
	}
}
