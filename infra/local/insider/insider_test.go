package insider

import (
	"errors"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/toolset"
)

// What PutToolset writes is where every load reads a toolset (the key and
// the body the declaration gives): an allowed toolset written around
// registration loads, a weakened one is refused by the registration check
// the load runs. On dynalite.
func TestLoadsReadWhatPutToolsetWrites(t *testing.T) {
	db := local.DynamoDB(localtest.Dynalite(t).Endpoint())
	const table = "toolgate-insider"
	if err := ledger.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	store := ledger.New(db, table)

	allowed, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := PutTheirs(t.Context(), db, table, allowed); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Toolset(t.Context(), allowed.ID); err != nil || got.ID != allowed.ID {
		t.Fatalf("Toolset(%s) = %v, %v; want the toolset PutTheirs wrote", allowed.ID, got, err)
	}

	weak, err := Ungated()
	if err != nil {
		t.Fatal(err)
	}
	if err := PutTheirs(t.Context(), db, table, weak); err != nil {
		t.Fatal(err)
	}
	var refusal *toolset.Refusal
	if _, err := store.Toolset(t.Context(), weak.ID); !errors.As(err, &refusal) {
		t.Fatalf("Toolset(%s) = %v, want the registration check's refusal", weak.ID, err)
	}
}
