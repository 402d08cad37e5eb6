package ledger

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A run's key pointer is written once: a second put (another attempt of
// the run's first call) leaves the first; an opaque run id without a
// pointer is ErrNotFound.
func TestKeyPointerIsWrittenOnce(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const opaque = "q3Xb0Yl2u1Vv9tA8rXkE_w"
	if err := s.PutKeyPointer(ctx, opaque, "run-first"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKeyPointer(ctx, opaque, "run-second"); err != nil {
		t.Fatalf("a pointer already there: %v", err)
	}
	if got, err := s.KeyPointer(ctx, opaque); err != nil || got != "run-first" {
		t.Fatalf("KeyPointer = %q, %v; want run-first", got, err)
	}
	if got, err := s.KeyPointer(ctx, "AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("KeyPointer of an unknown id = %q, %v; want ErrNotFound", got, err)
	}
}

// A pointer outlives its run's call items: the ledger's retention plus a
// Standard execution's longest run.
func TestKeyPointerOutlivesItsRun(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s, db := newStore(t)
	s = s.WithClock(func() time.Time { return now })
	if err := s.PutKeyPointer(context.Background(), "BBBBBBBBBBBBBBBBBBBBBB", "run"); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{AttrPK: str("KEY#BBBBBBBBBBBBBBBBBBBBBB"), AttrSK: str("KEY")}})
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(now.Add(DefaultRetention+MaxExecutionDuration).Unix(), 10)
	if n, ok := out.Item[AttrExpiresAt].(*types.AttributeValueMemberN); !ok || n.Value != want {
		t.Fatalf("expires_at %v, want %s", out.Item[AttrExpiresAt], want)
	}
}
