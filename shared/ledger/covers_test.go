package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
)

// A cover reads back with a valid seal only from the store that wrote
// it, under the run, tool and digest it was written for; a store with
// another key finds it forged, and another run, tool or digest finds
// none. Its sort key is outside the run's calls and rows.
func TestACoverIsSealedByItsWriterAndKeyedByRunToolAndDigest(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	mine, other := s.WithMAC(keyOf(t, 1)), s.WithMAC(keyOf(t, 2))
	c := Cover{RunID: "run-1", Tool: "crm.lookup_customer", ParkID: "pk_abcdefghijklmnopqrstuvwxyz",
		PinnedDigest: "sha256:aa", CurrentDigest: "sha256:bb", DecidedBy: "arn:aws:iam::123456789012:user/a"}
	if err := s.PutCover(ctx, c); err == nil {
		t.Fatal("a store without a key put an unsealed cover")
	}
	if err := mine.PutCover(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err := mine.Cover(ctx, c.RunID, c.Tool, c.CurrentDigest)
	c.Seal = seal.Valid
	if err != nil || got != c {
		t.Fatalf("Cover = %+v, %v; want %+v", got, err, c)
	}
	if got, err := other.Cover(ctx, c.RunID, c.Tool, c.CurrentDigest); err != nil || got.Seal != seal.Forged {
		t.Fatalf("another key's read: %+v, %v; want it forged", got, err)
	}
	for _, k := range [][3]string{{"run-2", c.Tool, c.CurrentDigest}, {c.RunID, "crm.create_ticket", c.CurrentDigest}, {c.RunID, c.Tool, "sha256:cc"}} {
		if _, err := mine.Cover(ctx, k[0], k[1], k[2]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Cover%v = %v, want ErrNotFound", k, err)
		}
	}
	if rows, err := mine.RunRows(ctx, c.RunID); err != nil || len(rows) != 0 {
		t.Fatalf("the run's rows %+v (%v), want none", rows, err)
	}
	// The item moved to another run's partition, or to another
	// definition's sort key, does not verify there.
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table()), Key: coverKey(c.RunID, c.Tool, c.CurrentDigest)})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][3]string{{"run-2", c.Tool, c.CurrentDigest}, {c.RunID, c.Tool, "sha256:cc"}} {
		moved := map[string]types.AttributeValue{}
		for n, v := range out.Item {
			moved[n] = v
		}
		for n, v := range coverKey(k[0], k[1], k[2]) {
			moved[n] = v
		}
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: moved}); err != nil {
			t.Fatal(err)
		}
		if got, err := mine.Cover(ctx, k[0], k[1], k[2]); err != nil || got.Seal != seal.Forged {
			t.Errorf("the cover moved to %v: %+v, %v; want it forged", k, got, err)
		}
	}
}
