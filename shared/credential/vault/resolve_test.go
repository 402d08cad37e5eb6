package vault

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/tool"
)

const (
	runARN      = "arn:aws:states:us-east-1:000000000000:execution:sm:run-1"
	otherRunARN = "arn:aws:states:us-east-1:000000000000:execution:sm:run-2"
)

var aliceScope = credential.EndUserScope([]byte("stage key"), "alice")

// resolverFixture is a fixture whose target's toolset id "ts-1" is
// registered and allowed, and a Resolver on it.
func resolverFixture(t *testing.T) (*fixture, *Resolver) {
	t.Helper()
	f := newFixture(t)
	if err := f.store.MarkToolset(t.Context(), crmTarget, "ts-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Allow(t.Context(), crmTarget, "ts-1", admin); err != nil {
		t.Fatal(err)
	}
	return f, NewResolver(f.store, f.kms.Client(), f.clock.Now)
}

func request(runID, starter string, endUser credential.Scope) credential.Request {
	return credential.Request{Target: crmTarget, ToolsetID: "ts-1", RunID: runID, Starter: starter, EndUser: endUser}
}

// resolved resolves req and returns the secret it presents, as
// credential.Transport writes it into a request to its origin.
func resolved(t *testing.T, r *Resolver, req credential.Request) (*credential.Credential, string) {
	t.Helper()
	c, err := r.Resolve(t.Context(), req)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	var sent http.Header
	rt := credential.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.Header
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	}), c)
	out, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.Target.Origin+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RoundTrip(out); err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	secret, ok := strings.CutPrefix(sent.Get("Authorization"), "Bearer ")
	if !ok {
		t.Fatalf("the credential's request carried no bearer token")
	}
	return c, secret
}

// roundTripFunc is an http.RoundTripper that answers without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func wantCode(t *testing.T, err error, code tool.Code, says ...string) *tool.Error {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("Resolve: %v, want %s", err, code)
	}
	for _, s := range says {
		if !strings.Contains(te.Message, s) {
			t.Errorf("message %q does not say %q", te.Message, s)
		}
	}
	return te
}

func TestResolveTakesRunThenEndUserThenToolsetWhole(t *testing.T) {
	f, _ := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "toolset-secret", admin, func(it *Item) { it.ExpiresAt = f.clock.Now().Add(time.Hour) })
	f.set(t, crmTarget, aliceScope, "alice-secret", admin)
	f.set(t, crmTarget, credential.RunScope("run-1"), "run-secret", starter, runItem(runARN))
	for _, c := range []struct {
		name   string
		req    credential.Request
		secret string
		scope  credential.Scope
	}{
		{"run first", request(runARN, starter, aliceScope), "run-secret", credential.RunScope("run-1")},
		{"end user without a run credential", request(otherRunARN, starter, aliceScope), "alice-secret", aliceScope},
		{"toolset without either", request(otherRunARN, starter, ""), "toolset-secret", credential.ScopeToolset},
		{"the direct lane has no run scope", request("direct/abc", starter, ""), "toolset-secret", credential.ScopeToolset},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewResolver(f.store, f.kms.Client(), f.clock.Now)
			cred, secret := resolved(t, r, c.req)
			if secret != c.secret || cred.Scope != c.scope {
				t.Errorf("resolved the %s scope's credential, want the %s scope's", cred.Scope.Kind(), c.scope.Kind())
			}
			// Used whole: the expiry is the scope's own, never another's.
			if c.scope == credential.ScopeToolset && cred.ExpiresAt.IsZero() || c.scope != credential.ScopeToolset && !cred.ExpiresAt.IsZero() {
				t.Errorf("expiry %v merged from another scope", cred.ExpiresAt)
			}
		})
	}
}

func TestRunScopeIsUsedOnlyByItsRunAndItsSetterAsStarter(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "toolset-secret", admin)
	f.set(t, crmTarget, credential.RunScope("run-1"), "run-secret", other, runItem(runARN))
	if _, secret := resolved(t, r, request(runARN, starter, "")); secret != "toolset-secret" {
		t.Error("a run credential set by someone other than the starter was used")
	}
	if _, secret := resolved(t, r, request(runARN, "", "")); secret != "toolset-secret" {
		t.Error("a run credential was used for a run without a verified starter")
	}
	if _, secret := resolved(t, r, request(runARN, other, "")); secret != "run-secret" {
		t.Error("the setter's own run did not use its run credential")
	}
	// An item under run-1's key whose execution ARN is another run's (an
	// execution name reused in another state machine, set once the first
	// was revoked: Put replaces no run's item with another execution's)
	// is not used.
	if err := f.store.Delete(t.Context(), crmTarget, credential.RunScope("run-1")); err != nil {
		t.Fatal(err)
	}
	f.set(t, crmTarget, credential.RunScope("run-1"), "moved", other, runItem("arn:aws:states:us-east-1:000000000000:execution:other-sm:run-1"))
	r2 := NewResolver(f.store, f.kms.Client(), f.clock.Now)
	if _, secret := resolved(t, r2, request(runARN, other, "")); secret != "toolset-secret" {
		t.Error("a run credential of another execution was used")
	}
}

func TestResolveDeniesWithoutACredentialNamingTheScopesTried(t *testing.T) {
	f, r := resolverFixture(t)
	_, err := r.Resolve(t.Context(), request(runARN, starter, aliceScope))
	te := wantCode(t, err, tool.PermissionDenied, "tickets", "run, end_user, toolset")
	if te.MaybeApplied {
		t.Error("a denial before the call is maybe applied")
	}
	_, err = r.Resolve(t.Context(), request("direct/x", starter, ""))
	wantCode(t, err, tool.PermissionDenied, "scopes tried toolset")
	_ = f
}

func TestResolveDeniesAToolsetIDNotAllowed(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "canary-secret", admin)
	if err := f.store.MarkToolset(t.Context(), crmTarget, "ts-2"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ts-2", "ts-never-registered"} {
		req := request(runARN, starter, "")
		req.ToolsetID = id
		_, err := r.Resolve(t.Context(), req)
		te := wantCode(t, err, tool.PermissionDenied, id, "not allowed", "toolgate credentials allow --toolset "+id)
		if strings.Contains(te.Error(), "canary") {
			t.Error("the error holds the secret")
		}
	}
}

func TestResolveParksAnExpiredCredentialWithoutFallingBack(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "toolset-secret", admin)
	f.set(t, crmTarget, aliceScope, "canary-secret", admin, func(it *Item) { it.ExpiresAt = f.clock.Now().Add(time.Minute) })
	if _, secret := resolved(t, r, request(runARN, starter, aliceScope)); secret != "canary-secret" {
		t.Fatal("the end user's credential was not used before it expired")
	}
	f.clock.Add(time.Minute) // expiry is at or before now
	_, err := r.Resolve(t.Context(), request(runARN, starter, aliceScope))
	te := wantCode(t, err, tool.CallParked, credential.CauseExpired+":", "end_user-scope", "tickets")
	if te.MaybeApplied || strings.Contains(te.Error(), "canary") {
		t.Errorf("parked error maybe applied %v, or holds the secret: %v", te.MaybeApplied, te)
	}
	if !strings.HasPrefix(te.Message, credential.CauseExpired) {
		t.Errorf("message %q does not start with the cause", te.Message)
	}
}

func TestResolveKeepsWhatItReadForCacheTTLThenSeesChangesAndRevocation(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "first", admin)
	req := request(runARN, starter, "")
	if _, s := resolved(t, r, req); s != "first" {
		t.Fatalf("got another secret")
	}
	batches, decrypts := f.db.batches.Load(), f.kms.Calls("Decrypt")
	f.set(t, crmTarget, credential.ScopeToolset, "second", admin)
	f.clock.Add(CacheTTL - time.Millisecond)
	if _, s := resolved(t, r, req); s != "first" {
		t.Error("a read within CacheTTL went to the table")
	}
	if f.db.batches.Load() != batches || f.kms.Calls("Decrypt") != decrypts {
		t.Error("a resolve within CacheTTL read the table or called KMS")
	}
	f.clock.Add(time.Millisecond)
	if c, s := resolved(t, r, req); s != "second" || c.Version != 2 {
		t.Errorf("after CacheTTL: version %d, want the new version 2", c.Version)
	}
	if err := f.store.Delete(t.Context(), crmTarget, credential.ScopeToolset); err != nil {
		t.Fatal(err)
	}
	if _, s := resolved(t, r, req); s != "second" {
		t.Error("a revocation was seen before CacheTTL")
	}
	f.clock.Add(CacheTTL)
	_, err := r.Resolve(t.Context(), req)
	wantCode(t, err, tool.PermissionDenied)
}

// A fresh request (a call sent again under a decided park) reads the
// store within CacheTTL: the credential set while the call was parked,
// not the expired one read when it parked.
func TestAFreshResolveSeesACredentialSetWithinCacheTTL(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "first", admin)
	req := request(runARN, starter, "")
	if _, s := resolved(t, r, req); s != "first" {
		t.Fatalf("got another secret")
	}
	f.set(t, crmTarget, credential.ScopeToolset, "second", admin)
	f.clock.Add(time.Second)
	req.Fresh = true
	if c, s := resolved(t, r, req); s != "second" || c.Version != 2 {
		t.Errorf("a fresh resolve within CacheTTL: version %d, want the new version 2", c.Version)
	}
	req.Fresh = false
	if _, s := resolved(t, r, req); s != "second" {
		t.Error("the fresh read was not kept for the requests after it")
	}
}

func TestResolveDecryptsEachStoredValueOnce(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "first", admin)
	start := f.kms.Calls("Decrypt")
	for range 3 {
		resolved(t, r, request(runARN, starter, ""))
		f.clock.Add(CacheTTL) // the table is read again each time
	}
	if n := f.kms.Calls("Decrypt") - start; n != 1 {
		t.Errorf("%d KMS Decrypt calls for one stored value, want 1", n)
	}
	// Revoked and set again: version 1 again, but another value.
	if err := f.store.Delete(t.Context(), crmTarget, credential.ScopeToolset); err != nil {
		t.Fatal(err)
	}
	f.set(t, crmTarget, credential.ScopeToolset, "again", admin)
	if c, s := resolved(t, r, request(runARN, starter, "")); s != "again" || c.Version != 1 {
		t.Errorf("after revoke and set: version %d and an old value", c.Version)
	}
	if n := f.kms.Calls("Decrypt") - start; n != 2 {
		t.Errorf("%d KMS Decrypt calls for two stored values, want 2", n)
	}
}

func TestResolveGivesNothingToATargetWithoutAuth(t *testing.T) {
	_, r := resolverFixture(t)
	req := request(runARN, starter, "")
	req.Target.Auth = (credential.Target{}).Auth
	if c, err := r.Resolve(t.Context(), req); c != nil || err != nil {
		t.Errorf("Resolve = %v, %v; want nil, nil", c, err)
	}
}

func TestAnotherOriginOfTheSameTargetGetsNothing(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "secret", admin)
	moved := request(runARN, starter, "")
	moved.Target.Origin = "https://mcp.example.com:8443"
	if err := f.store.MarkToolset(t.Context(), moved.Target, "ts-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Allow(t.Context(), moved.Target, "ts-1", admin); err != nil {
		t.Fatal(err)
	}
	_, err := r.Resolve(t.Context(), moved)
	wantCode(t, err, tool.PermissionDenied, "none is set")
}
