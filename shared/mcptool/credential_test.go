package mcptool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local/localtest/credtest"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
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

// resolvedCredential is target's toolset-scope credential holding secret,
// as mcp-call's resolver gives it (credtest.Resolved).
func resolvedCredential(t *testing.T, target credential.Target, secret string) *credential.Credential {
	t.Helper()
	return credtest.Resolved(t, target, secret)
}

// authServer is an MCP server (2025-11-25, with sessions) behind a gate
// that wants the header "Authorization: Bearer <secret>" on every request
// (or, with pathSegment, the secret as the path's second segment:
// /k/<secret>/mcp) and records what each request carried. A request
// without it is answered 401 with a Bearer challenge, and error=
// "invalid_token" when it carried another token (RFC 6750 §3.1). Its
// tools: echo, answering "done", and leak, answering isError with the
// Authorization header it got.
type authServer struct {
	*httptest.Server
	secret      string
	pathSegment bool
	mu          sync.Mutex
	seen        []string // each request's Authorization header, or its path
}

func newAuthServer(t *testing.T, secret string, pathSegment bool) *authServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "auth", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "leak", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "you sent " + req.Extra.Header.Get("Authorization")}}}, nil
		})
	// quote answers success, quoting the header in its text.
	s.AddTool(&mcp.Tool{Name: "quote", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you sent " + req.Extra.Header.Get("Authorization")}}}, nil
		})
	// leak-late quotes the header after 168 bytes, so that a cut to
	// MaxServerText falls inside a credential of 40 bytes.
	s.AddTool(&mcp.Tool{Name: "leak-late", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("refused ", 21) + req.Extra.Header.Get("Authorization")}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	a := &authServer{secret: secret, pathSegment: pathSegment}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		ok := got == "Bearer "+secret
		if pathSegment {
			got = r.URL.Path
			ok = got == "/k/"+secret+"/mcp"
		}
		a.mu.Lock()
		a.seen = append(a.seen, got)
		a.mu.Unlock()
		switch {
		case ok:
			h.ServeHTTP(w, r)
		case got == "" || pathSegment:
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", error="invalid_token", error_description="expired"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *authServer) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

// bearerTarget is crm's target at a's origin, presented as a bearer token.
func bearerTarget(a *authServer) credential.Target {
	return credential.Target{ToolsetName: "crm-tools", Name: "crm", Origin: a.URL, Auth: toolset.Auth{Header: "Authorization", Scheme: "Bearer"}}
}

// pinWith registers tool name of the server at url as registration does,
// listing with cred (ListWithCredential) and pinning auth.
func pinWith(t *testing.T, c *Client, url, name string, cred *credential.Credential, auth *toolset.Auth) toolset.Tool {
	t.Helper()
	l, err := c.ListWithCredential(t.Context(), url, cred)
	if err != nil {
		t.Fatalf("ListWithCredential: %v", err)
	}
	pinned, err := toolset.MCPServer{URL: url, Admit: []string{name}, Auth: auth}.Pin("crm", l)
	if err != nil {
		t.Fatalf("Pin: %v", err)
	}
	return pinned["crm."+name]
}

// A server that declares auth is presented the credential on every
// request of the listing at registration, of the check's listing and of
// the call's session; the same calls without it are refused
// TOOL_PERMISSION_DENIED pointing to auth and toolgate credentials set.
func TestASessionPresentsItsCredentialOnEveryRequest(t *testing.T) {
	const secret = "s3cret-token.AbC~"
	a := newAuthServer(t, secret, false)
	c := New(config(t, hostOf(t, a.URL)), nil)
	cred := resolvedCredential(t, bearerTarget(a), secret)
	pinned := pinWith(t, c, a.URL, "echo", cred, &cred.Target.Auth)
	call := callOf(pinned, `{}`, "run-1/1", 1)
	call.Credential = cred
	if err := c.Check(t.Context(), call); err != nil {
		t.Fatal(err)
	}
	out, err := c.Call(t.Context(), call)
	if err != nil || !strings.Contains(string(out), "done") {
		t.Fatalf("Call = %s, %v", out, err)
	}
	seen := a.requests()
	for i, got := range seen {
		if got != "Bearer "+secret {
			t.Fatalf("request %d of %d carried Authorization %q", i+1, len(seen), got)
		}
	}
	call.Credential = nil
	wantError(t, c.Check(t.Context(), call), tool.PermissionDenied, false, "HTTP 401", "auth", "toolgate credentials set")
	_, err = c.ListWithCredential(t.Context(), a.URL, nil)
	var le *ListError
	if !errors.As(err, &le) || le.Code != tool.PermissionDenied || !strings.Contains(le.Message, "toolgate credentials set") {
		t.Fatalf("a listing without the credential: %v", err)
	}
}

// A server that answers 401 with error="invalid_token" (RFC 6750 §3.1) to
// a request that carried a credential parks the call: CALL_PARKED, cause
// credentials.expired, naming the scope kind and the target, not applied,
// before the claim (Check) and after it (Call). No message holds the
// token.
func TestARefusedTokenParksTheCall(t *testing.T) {
	const secret, stale = "the-current-token", "a-revoked-token"
	a := newAuthServer(t, secret, false)
	c := New(config(t, hostOf(t, a.URL)), nil)
	pinned := pinWith(t, c, a.URL, "echo", resolvedCredential(t, bearerTarget(a), secret), &toolset.Auth{Header: "Authorization", Scheme: "Bearer"})
	call := callOf(pinned, `{}`, "run-1/1", 1)
	call.Credential = resolvedCredential(t, bearerTarget(a), stale)
	for name, err := range map[string]error{"Check": c.Check(t.Context(), call), "Call": func() error { _, err := c.Call(t.Context(), call); return err }()} {
		te := wantError(t, err, tool.CallParked, false, credential.CauseExpired+": ", "crm", "toolset")
		if strings.Contains(te.Error(), stale) {
			t.Errorf("%s: the error holds the token: %v", name, te)
		}
	}
}

// Text a server sends back from a request that carried the credential
// (here an isError text quoting the Authorization header) reaches no
// message: it is redacted.
func TestAServerEchoingTheCredentialIsRedacted(t *testing.T) {
	const secret = "echoed-token-123"
	a := newAuthServer(t, secret, false)
	c := New(config(t, hostOf(t, a.URL)), nil)
	cred := resolvedCredential(t, bearerTarget(a), secret)
	call := callOf(pinWith(t, c, a.URL, "leak", cred, &cred.Target.Auth), `{}`, "run-1/1", 1)
	call.Credential = cred
	_, err := c.Call(t.Context(), call)
	te := wantError(t, err, tool.PermanentFailure, false, "you sent …")
	if strings.Contains(te.Error(), secret) {
		t.Fatalf("the error holds the credential: %v", te)
	}
}

// A credential quoted back where the message's cut to MaxServerText falls
// inside it is taken out before the cut: no part of it is left.
func TestACredentialEchoedAcrossTheCutLeavesNoPart(t *testing.T) {
	const secret = "0bd1402ee1426521ee5f0c9d2b7a61e3f48c5a17"
	a := newAuthServer(t, secret, false)
	c := New(config(t, hostOf(t, a.URL)), nil)
	cred := resolvedCredential(t, bearerTarget(a), secret)
	call := callOf(pinWith(t, c, a.URL, "leak-late", cred, &cred.Target.Auth), `{}`, "run-1/1", 1)
	call.Credential = cred
	_, err := c.Call(t.Context(), call)
	te := wantError(t, err, tool.PermanentFailure, false, "refused …")
	if text := te.Error(); strings.Contains(text, secret[:8]) {
		t.Fatalf("the error holds a part of the credential: %v", te)
	}
}

// A successful answer quoting the credential back is the result with the
// credential taken out: it would otherwise be kept in the execution's
// state and history.
func TestACredentialQuotedInASuccessIsRedacted(t *testing.T) {
	const secret = "quoted-token-456"
	a := newAuthServer(t, secret, false)
	c := New(config(t, hostOf(t, a.URL)), nil)
	cred := resolvedCredential(t, bearerTarget(a), secret)
	call := callOf(pinWith(t, c, a.URL, "quote", cred, &cred.Target.Auth), `{}`, "run-1/1", 1)
	call.Credential = cred
	out, err := c.Call(t.Context(), call)
	if err != nil || !strings.Contains(string(out), "you sent …") || strings.Contains(string(out), secret) {
		t.Fatalf("Call = %s, %v; want the text with the credential taken out", out, err)
	}
}

// A server pinned with a "{secret}" path segment gets the credential in
// that segment of every request; the endpoint the SDK holds is the pinned
// URL, which messages may name.
func TestAPathSegmentCredentialFillsThePinnedURL(t *testing.T) {
	const secret = "PathKey-0123"
	a := newAuthServer(t, secret, true)
	c := New(config(t, hostOf(t, a.URL)), nil)
	auth := toolset.Auth{PathSegment: 2}
	url := a.URL + "/k/" + toolset.SecretSegment + "/mcp"
	cred := resolvedCredential(t, credential.Target{ToolsetName: "crm-tools", Name: "crm", Origin: a.URL, Auth: auth}, secret)
	call := callOf(pinWith(t, c, url, "echo", cred, &auth), `{}`, "run-1/1", 1)
	call.Credential = cred
	if _, err := c.Call(t.Context(), call); err != nil {
		t.Fatal(err)
	}
	for i, got := range a.requests() {
		if got != "/k/"+secret+"/mcp" {
			t.Fatalf("request %d went to %q", i+1, got)
		}
	}
	call.Credential = nil
	_, err := c.Call(t.Context(), call)
	wantError(t, err, tool.PermissionDenied, false, toolset.SecretSegment, "toolgate credentials set")
}

// Two credentials of the same scope and version are not the same
// credential: another toolset name's (two toolsets pinning one URL), or
// one revoked and set again (revoke deletes the item, so the new one is
// version 1 again). A listing made with one must not serve the other
// (docs/credentials.md, "Revocation").
func TestCheckDoesNotReuseAListingAcrossCredentialsOfOneVersion(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	pinned := pin(t, c, srv, mcpserver.CreateTicket)
	c.cfg.SchemaTTL = 5 * time.Second
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	a := credential.Opened(credential.Target{ToolsetName: "crm-a", Name: "crm"}, credential.ScopeToolset, 1, time.Time{}, []byte("old-token"))
	b := credential.Opened(credential.Target{ToolsetName: "crm-b", Name: "crm"}, credential.ScopeToolset, 1, time.Time{}, []byte("new-token"))
	for _, cred := range []*credential.Credential{a, b} {
		call := callOf(pinned, `{}`, "run-1/1", 1)
		call.Credential = cred
		if err := c.Check(t.Context(), call); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.ToolsListed(); got != 3 {
		t.Fatalf("%d tools/list requests, want 3: the second credential reused the first one's listing", got)
	}
}
