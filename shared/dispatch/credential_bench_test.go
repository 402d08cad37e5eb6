package dispatch

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest/credtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// credentialDispatcher is a test-echo dispatcher on e whose calls present
// a credential: its toolset (registered on e) pins an http_hosts entry
// declaring auth, which its Contract names for every call, and its
// resolver is vault.Resolver on e's table (read past the counting
// front) with local-kms, the credential set and its toolset id allowed.
// The resolver's clock stands still, so that after the first call every
// resolution is its cache's (a warm container within CacheTTL). It
// returns the dispatcher and its toolset id.
func credentialDispatcher(b *testing.B, e *env) (*Dispatcher, string) {
	b.Helper()
	ctx := context.Background()
	ts := testToolset(b, 100)
	ts.Name = "bench-tools"
	builtin, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ts.Tools["http"] = builtin.Tools["http"]
	ts.HTTPHosts = []toolset.HTTPHost{{Host: "api.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}}}
	if ts.ID, err = ts.ComputeID(); err != nil {
		b.Fatal(err)
	}
	if _, err := e.store.RegisterToolset(ctx, ts); err != nil {
		b.Fatal(err)
	}
	at, ok := ts.HTTPAuthTarget("api.example.com")
	if !ok {
		b.Fatal("no auth target")
	}
	target := credential.Target{ToolsetName: ts.Name, Name: at.Name, Origin: at.Origin, Auth: at.Auth}
	k := localkms.StartForTest(b, "bench")
	// Through the counting front, and each BatchGetItem counted with the
	// ledger's reads, so that the resolver's requests are in the figures.
	store := vault.NewStore(countedBatchGets{DB: dynamoClient(e.front.Endpoint()), n: &e.db.gets}, e.store.Table(), nil)
	credtest.PutAllowed(b, store, k, target, ts.ID, "bench-token-0123456789")
	frozen := time.Now()
	resolver := vault.NewResolver(store, k.Client(), func() time.Time { return frozen })
	entry := ts.HTTPHosts[0]
	contract := func(c *toolcall.Call) (toolcall.CallContract, error) {
		return toolcall.CallContract{Contract: httprule.Decide("GET", false), Host: &entry}, nil
	}
	cfg := Config{Mode: OneTool("test-echo"), MemoryMB: 128, Lane: "sfn", LedgerSince: testSince, CompactSince: time.Now(), ExternalKeySecret: testSecret, Contract: contract}
	var calls atomic.Int64
	deps := e.deps(b, echo(&calls), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	deps.Credentials = resolver
	d, err := New(cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	return d, ts.ID
}

// countedBatchGets counts each BatchGetItem (the resolver's one read of a
// run's scopes) in n, the benchmark's count of reads.
type countedBatchGets struct {
	vault.DB
	n *atomic.Int64
}

func (c countedBatchGets) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.n.Add(1)
	return c.DB.BatchGetItem(ctx, in, opts...)
}
