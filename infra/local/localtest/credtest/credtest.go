package credtest

import (
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
)

// Admin is the principal the credentials are set and allowed by.
const Admin = "arn:aws:iam::000000000000:user/admin"

// ToolsetID is the toolset id Resolved allows its credential for.
const ToolsetID = "ts_0123456789abcdef0123456789abcdef"

// PutAllowed seals secret for target in the toolset scope under k's key,
// puts it with store as set by Admin, and marks and allows toolset id for
// it; it fails tb on any error.
func PutAllowed(tb testing.TB, store *vault.Store, k *localkms.Server, target credential.Target, id, secret string) {
	tb.Helper()
	ctx := tb.Context()
	sealed, err := vault.Seal(ctx, k.Client(), k.Alias, target, credential.ScopeToolset, []byte(secret))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := store.Put(ctx, vault.Item{Target: target, Scope: credential.ScopeToolset, Sealed: sealed, SetBy: Admin}); err != nil {
		tb.Fatal(err)
	}
	if err := store.MarkToolset(ctx, target, id); err != nil {
		tb.Fatal(err)
	}
	if err := store.Allow(ctx, target, id, Admin); err != nil {
		tb.Fatal(err)
	}
}

// Resolved is target's toolset-scope credential holding secret, as a
// tool function's resolver gives it to a direct-lane call of ToolsetID:
// local-kms and dynalite started for tb (localtest.Dynalite), the
// credential put on a table there, and resolved by vault.Resolver.
func Resolved(tb testing.TB, target credential.Target, secret string) *credential.Credential {
	tb.Helper()
	k := localkms.StartForTest(tb, "test")
	db := local.DynamoDB(localtest.Dynalite(tb).Endpoint())
	const table = "toolgate-test"
	if err := tabledef.CreateTable(tb.Context(), db, table); err != nil {
		tb.Fatal(err)
	}
	store := vault.NewStore(db, table, nil)
	PutAllowed(tb, store, k, target, ToolsetID, secret)
	c, err := vault.NewResolver(store, k.Client(), nil).Resolve(tb.Context(), credential.Request{Target: target, ToolsetID: ToolsetID, RunID: "direct/test/1"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
