package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
)

func TestProofTableRecordsAProofOnceOnDynalite(t *testing.T) {
	ctx := context.Background()
	db := local.DynamoDB(localtest.Dynalite(t).Endpoint())
	if err := ledger.CreateTable(ctx, db, "proofs"); err != nil {
		t.Fatal(err)
	}
	tab := ledger.ProofTable{DB: db, Table: "proofs"}
	first := caller.ProofRecord{ID: "ab", Binding: "b1", ARN: "arn:aws:iam::1:user/a", ExpiresAt: time.Unix(1800000000, 0)}
	got, fresh, err := tab.Record(ctx, first)
	if err != nil || !fresh || got != first {
		t.Fatalf("first record: %+v %v %v", got, fresh, err)
	}
	got, fresh, err = tab.Record(ctx, caller.ProofRecord{ID: "ab", Binding: "b2", ARN: "arn:aws:iam::1:user/b", ExpiresAt: time.Unix(1900000000, 0)})
	if err != nil || fresh || got.Binding != "b1" || got.ARN != first.ARN || !got.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("second record of the same proof: %+v %v %v; want the first, not fresh", got, fresh, err)
	}
}
