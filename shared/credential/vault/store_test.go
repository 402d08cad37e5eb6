package vault

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/table"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countingDB is the dynalite client, counting BatchGetItem requests.
type countingDB struct {
	*dynamodb.Client
	batches atomic.Int64
}

func (c *countingDB) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.batches.Add(1)
	return c.Client.BatchGetItem(ctx, in, opts...)
}

// fixture is a Store on a table of the test's own on the shared dynalite,
// local-kms with the stage's key, and a clock.
type fixture struct {
	store *Store
	db    *countingDB
	table string
	kms   *localkms.Server
	clock *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, client, name := localtest.SharedTable(t, "cred")
	c := &clock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	db := &countingDB{Client: client}
	return &fixture{store: NewStore(db, name, c.Now), db: db, table: name, kms: localkms.StartForTest(t, "test"), clock: c}
}

// set seals secret for t in scope s and puts it, set by setBy.
func (f *fixture) set(t *testing.T, target credential.Target, s credential.Scope, secret, setBy string, mod ...func(*Item)) int64 {
	t.Helper()
	sealed, err := Seal(t.Context(), f.kms.Client(), f.kms.Alias, target, s, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	it := Item{Target: target, Scope: s, Sealed: sealed, SetBy: setBy}
	for _, m := range mod {
		m(&it)
	}
	v, err := f.store.Put(t.Context(), it)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const (
	admin   = "arn:aws:iam::000000000000:user/admin"
	starter = "arn:aws:iam::000000000000:user/starter"
	other   = "arn:aws:iam::000000000000:user/other"
)

func runItem(arn string) func(*Item) {
	return func(it *Item) { it.ExecutionARN, it.DeleteAfter = arn, time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC) }
}

func TestPutCountsVersionsAndListShowsMetadataOnly(t *testing.T) {
	f := newFixture(t)
	if v := f.set(t, crmTarget, credential.ScopeToolset, "first", admin); v != 1 {
		t.Errorf("first set: version %d, want 1", v)
	}
	f.clock.Add(time.Minute)
	exp := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if v := f.set(t, crmTarget, credential.ScopeToolset, "second", other, func(it *Item) { it.ExpiresAt = exp }); v != 2 {
		t.Errorf("second set: version %d, want 2", v)
	}
	arn := "arn:aws:states:us-east-1:000000000000:execution:sm:run-1"
	f.set(t, crmTarget, credential.RunScope("run-1"), "third", starter, runItem(arn))
	if err := f.store.MarkToolset(t.Context(), crmTarget, "ts-1"); err != nil {
		t.Fatal(err)
	}
	l, err := f.store.List(t.Context(), "crm")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Credentials) != 2 || len(l.Markers) != 1 {
		t.Fatalf("List: %d credentials, %d markers; want 2 and 1", len(l.Credentials), len(l.Markers))
	}
	run, ts := l.Credentials[0], l.Credentials[1]
	if ts.Scope != credential.ScopeToolset || ts.Version != 2 || ts.SetBy != other || !ts.ExpiresAt.Equal(exp) ||
		!ts.CreatedAt.Equal(time.Date(2026, 12, 2, 12, 1, 0, 0, time.UTC)) || ts.Target != "tickets" || ts.Origin != crmTarget.Origin || ts.KeyID != f.kms.KeyARN {
		t.Errorf("toolset credential listed as %+v", ts)
	}
	if run.Scope != credential.RunScope("run-1") || run.ExecutionARN != arn || run.Version != 1 {
		t.Errorf("run credential listed as %+v", run)
	}
	// The item holds the ciphertext; no listing request could read it.
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(f.table), Key: credentialKey(crmTarget, credential.ScopeToolset)})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ct", "nonce", "edk"} {
		if _, ok := out.Item[n].(*types.AttributeValueMemberB); !ok {
			t.Errorf("item has no binary %s", n)
		}
		if slices.Contains(listAttributes, n) {
			t.Errorf("List projects %s", n)
		}
	}
	if _, ok := out.Item[table.ExpiresAt]; ok {
		t.Error("a toolset-scope item has the TTL attribute")
	}
	// Setting again without an expiry removes the old one.
	f.set(t, crmTarget, credential.ScopeToolset, "fourth", admin)
	l, _ = f.store.List(t.Context(), "crm")
	if got := l.Credentials[1]; got.Version != 3 || !got.ExpiresAt.IsZero() {
		t.Errorf("after a set without expiry: %+v", got)
	}
}

func TestItemsConformToTheDeclaration(t *testing.T) {
	if err := table.Conform(table.Credential, credentialItem{}); err != nil {
		t.Error(err)
	}
	if err := table.Conform(table.CredentialToolset, markerItem{}); err != nil {
		t.Error(err)
	}
}

func TestPutRefusesAnInconsistentRunScope(t *testing.T) {
	f := newFixture(t)
	sealed, err := Seal(t.Context(), f.kms.Client(), f.kms.Alias, crmTarget, credential.RunScope("run-1"), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for name, it := range map[string]Item{
		"run scope without execution":  {Target: crmTarget, Scope: credential.RunScope("run-1"), Sealed: sealed, SetBy: starter},
		"run scope of another run":     {Target: crmTarget, Scope: credential.RunScope("run-1"), Sealed: sealed, SetBy: starter, ExecutionARN: "arn:aws:states:us-east-1:000000000000:execution:sm:run-2", DeleteAfter: time.Now()},
		"toolset scope with execution": {Target: crmTarget, Scope: credential.ScopeToolset, Sealed: sealed, SetBy: admin, ExecutionARN: "arn:aws:states:us-east-1:000000000000:execution:sm:run-1"},
		"no setter":                    {Target: crmTarget, Scope: credential.ScopeToolset, Sealed: sealed},
		"target with #":                {Target: credential.Target{ToolsetName: "crm", Name: "a#b", Origin: "https://h"}, Scope: credential.ScopeToolset, Sealed: sealed, SetBy: admin},
	} {
		if _, err := f.store.Put(t.Context(), it); err == nil {
			t.Errorf("%s: Put succeeded", name)
		}
	}
}

func TestDeleteRevokesAndASetAfterStartsAgain(t *testing.T) {
	f := newFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "a", admin)
	f.set(t, crmTarget, credential.ScopeToolset, "b", admin)
	if err := f.store.Delete(t.Context(), crmTarget, credential.ScopeToolset); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Delete(t.Context(), crmTarget, credential.ScopeToolset); !errors.Is(err, ErrNotFound) {
		t.Errorf("second revoke: %v, want ErrNotFound", err)
	}
	if v := f.set(t, crmTarget, credential.ScopeToolset, "c", admin); v != 1 {
		t.Errorf("set after revoke: version %d, want 1", v)
	}
}

func TestMarkersAreAllowedByAllowAndAllowRegistered(t *testing.T) {
	f := newFixture(t)
	otherOrigin := crmTarget
	otherOrigin.Origin = "https://mcp2.example.com"
	for _, m := range []struct {
		t  credential.Target
		id string
	}{{crmTarget, "ts-1"}, {crmTarget, "ts-2"}, {otherOrigin, "ts-3"}} {
		if err := f.store.MarkToolset(t.Context(), m.t, m.id); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := f.store.AllowRegistered(t.Context(), crmTarget, admin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"ts-1", "ts-2"}) {
		t.Errorf("AllowRegistered allowed %v, want ts-1 and ts-2 (not the other origin's ts-3)", ids)
	}
	// Marking again leaves an allowed marker allowed.
	if err := f.store.MarkToolset(t.Context(), crmTarget, "ts-1"); err != nil {
		t.Fatal(err)
	}
	l, err := f.store.List(t.Context(), "crm")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]string{}
	for _, m := range l.Markers {
		allowed[m.ToolsetID] = m.AllowedBy
	}
	if allowed["ts-1"] != admin || allowed["ts-2"] != admin || allowed["ts-3"] != "" {
		t.Errorf("markers allowed by %v", allowed)
	}
	if err := f.store.Allow(t.Context(), otherOrigin, "ts-3", other); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Allow(t.Context(), crmTarget, "ts-9", other); !errors.Is(err, ErrNotFound) {
		t.Errorf("Allow of an unregistered id: %v, want ErrNotFound", err)
	}
}

func TestOriginsPutTheMostRecentlyRegisteredFirst(t *testing.T) {
	f := newFixture(t)
	old, recent := crmTarget, crmTarget
	recent.Origin = "https://new.example.com"
	if err := f.store.MarkToolset(t.Context(), old, "ts-1"); err != nil {
		t.Fatal(err)
	}
	f.set(t, old, credential.ScopeToolset, "a", admin)
	f.clock.Add(time.Hour)
	if err := f.store.MarkToolset(t.Context(), recent, "ts-2"); err != nil {
		t.Fatal(err)
	}
	// Another target whose name starts like this one's is not read.
	if err := f.store.MarkToolset(t.Context(), credential.Target{ToolsetName: "crm", Name: "tickets-archive", Origin: "https://z.example.com"}, "ts-3"); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Origins(t.Context(), "crm", "tickets")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Origin != recent.Origin || got[1].Origin != old.Origin {
		t.Fatalf("Origins = %+v, want %s then %s", got, recent.Origin, old.Origin)
	}
	if !slices.Equal(got[1].Scopes, []credential.Scope{credential.ScopeToolset}) || !slices.Equal(got[1].ToolsetIDs, []string{"ts-1"}) {
		t.Errorf("old origin: %+v", got[1])
	}
}

func TestLookupIsOneBatchGetItemOfTheScopesAskedFor(t *testing.T) {
	f := newFixture(t)
	arn := "arn:aws:states:us-east-1:000000000000:execution:sm:run-1"
	eu := credential.EndUserScope([]byte("k"), "alice")
	f.set(t, crmTarget, credential.ScopeToolset, "ts", admin)
	f.set(t, crmTarget, credential.RunScope("run-1"), "run", starter, runItem(arn))
	f.set(t, crmTarget, eu, "eu", admin)
	f.set(t, crmTarget, credential.RunScope("run-2"), "run2", starter, runItem("arn:aws:states:us-east-1:000000000000:execution:sm:run-2"))
	if err := f.store.MarkToolset(t.Context(), crmTarget, "ts-1"); err != nil {
		t.Fatal(err)
	}
	before := f.db.batches.Load()
	got, err := f.store.Lookup(t.Context(), crmTarget, "ts-1", credential.RunScope("run-1"), eu)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.db.batches.Load() - before; n != 1 {
		t.Errorf("Lookup made %d BatchGetItem requests, want 1", n)
	}
	if got.Run == nil || got.Run.Scope != credential.RunScope("run-1") || got.Run.ExecutionARN != arn || got.EndUser == nil || got.Toolset == nil || !got.Marked || got.Allowed {
		t.Errorf("Lookup = %+v", got)
	}
	none, err := f.store.Lookup(t.Context(), crmTarget, "ts-2", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if none.Run != nil || none.EndUser != nil || none.Toolset == nil || none.Marked {
		t.Errorf("Lookup without run and end user, of an unmarked id = %+v", none)
	}
}

func TestExecutionName(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:states:us-east-1:000000000000:execution:sm:run-1":   "run-1",
		"arn:aws:states:us-east-1:000000000000:express:sm:run-1:abc": "",
		"direct/2026-12-02/abc":                                  "",
		"arn:aws:states:us-east-1:000000000000:stateMachine:sm":  "",
		"arn:aws:states:us-east-1:000000000000:execution:sm:a:b": "b",
	} {
		if got := executionName(in); got != want {
			t.Errorf("executionName(%q) = %q, want %q", in, got, want)
		}
	}
}
