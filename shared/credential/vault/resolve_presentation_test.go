package vault

import (
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/toolset"
)

// A credential set for one presentation (Authorization: Bearer) does not
// open for a toolset of the same name, target and origin that
// declares another presentation (a {secret} path segment), even once that
// toolset id is allowed (docs/credentials.md, "Envelope encryption"):
// Open refuses it (GCM's additional data holds the presentation), and so
// does the Resolver's plaintext cache of a warm container, whose key holds
// the presentation, after a call of the header toolset opened the value.
func TestTheResolversCacheOpensACredentialOnlyForItsPresentation(t *testing.T) {
	f, r := resolverFixture(t)
	f.set(t, crmTarget, credential.ScopeToolset, "canarytoken", admin)
	// The header toolset's call: decrypts and caches.
	if _, s := resolved(t, r, request(runARN, starter, "")); s != "canarytoken" {
		t.Fatalf("header toolset: got another secret")
	}
	// A second toolset id of the same name, target and origin, declaring
	// the secret in path segment 1, registered and allowed.
	pathTarget := crmTarget
	pathTarget.Auth = toolset.Auth{PathSegment: 1}
	if err := f.store.MarkToolset(t.Context(), pathTarget, "ts-2"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Allow(t.Context(), pathTarget, "ts-2", admin); err != nil {
		t.Fatal(err)
	}
	// Without the cache, Open refuses it.
	if _, err := NewResolver(f.store, f.kms.Client(), f.clock.Now).Resolve(t.Context(),
		credential.Request{Target: pathTarget, ToolsetID: "ts-2", RunID: runARN, Starter: starter}); err == nil {
		t.Fatal("precondition: a fresh Resolver opened the credential for another presentation")
	}
	// With the warm cache of the same Resolver:
	c, err := r.Resolve(t.Context(), credential.Request{Target: pathTarget, ToolsetID: "ts-2", RunID: runARN, Starter: starter})
	if err != nil {
		return // held
	}
	var sentPath string
	rt := credential.Transport(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sentPath = req.URL.Path
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	}), c)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.Target.Origin+"/{secret}/mcp", nil)
	if _, err := rt.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	t.Errorf("a credential sealed for header Authorization/Bearer was resolved for path_segment 1 from the Resolver's cache and sent in the URL path %q", sentPath)
}
