package mcptool

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/credential"
)

// Check's listing is reused per (server URL, credential scope and
// version): a credential set anew (a new version), or another scope's,
// lists again, and the same one within the TTL does not. (The
// credentials here carry no secret and no origin, so none is presented:
// only the cache is under test; the open local server lists to anyone.)
func TestCheckReusesAListingOnlyForTheSameCredential(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	pinned := pin(t, c, srv, mcpserver.CreateTicket) // one tools/list
	c.cfg.SchemaTTL = 5 * time.Second
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	v1 := &credential.Credential{Scope: credential.ScopeToolset, Version: 1}
	v2 := &credential.Credential{Scope: credential.ScopeToolset, Version: 2}
	run := &credential.Credential{Scope: "run:exec-1", Version: 1}
	for i, tc := range []struct {
		cred   *credential.Credential
		listed int
	}{
		{v1, 2}, {v1, 2}, {v2, 3}, {v2, 3}, {run, 4}, {nil, 5}, {v1, 5},
	} {
		call := callOf(pinned, `{}`, "run-1/1", 1)
		call.Credential = tc.cred
		if err := c.Check(t.Context(), call); err != nil {
			t.Fatal(err)
		}
		if got := srv.ToolsListed(); got != tc.listed {
			t.Fatalf("check %d: %d tools/list requests, want %d", i+1, got, tc.listed)
		}
	}
}
