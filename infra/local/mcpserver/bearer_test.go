package mcpserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport sets Authorization on every request, as a client holding
// a token does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func post(t *testing.T, srv *Server, token string) *http.Response {
	t.Helper()
	return postTo(t, srv.URL(), token)
}

// postTo posts a tools/list to endpoint, with Authorization: Bearer token
// unless token is "".
func postTo(t *testing.T, endpoint, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := (&http.Client{Transport: bearerTransport{token}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	return res
}

func TestBearerModeAnswersAMissingToken401WithoutAnErrorAndAWrongOneInvalidToken(t *testing.T) {
	srv := start(t, Options{BearerTokens: []string{"tok-1"}})
	res := post(t, srv, "")
	if res.StatusCode != http.StatusUnauthorized || strings.Contains(res.Header.Get("WWW-Authenticate"), "error=") {
		t.Errorf("no token: %d %q, want 401 without error=", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	res = post(t, srv, "tok-2")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("wrong token: %d %q, want 401 with error=\"invalid_token\"", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	if len(srv.Calls()) != 0 || srv.ToolsListed() != 0 {
		t.Errorf("refused requests reached the MCP layer: %d calls, %d listings", len(srv.Calls()), srv.ToolsListed())
	}
}

func TestBearerModeServesAnAcceptedTokenAndRecordsItsHeaders(t *testing.T) {
	srv := start(t, Options{BearerTokens: []string{"tok-1"}})
	cs := connectVia(t, &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: bearerTransport{"tok-1"}}}, "", nil)
	call(t, cs, "lookup_customer", map[string]any{"customer_id": "c-1"}, nil)
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request recorded")
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer tok-1" {
			t.Errorf("%s %s recorded Authorization %q", r.Method, r.RPCMethod, got)
		}
	}
	srv.SetBearerTokens("tok-2")
	if res := post(t, srv, "tok-1"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a replaced token: %d, want 401", res.StatusCode)
	}
	srv.SetBearerTokens()
	if res := post(t, srv, ""); res.StatusCode == http.StatusUnauthorized {
		t.Error("the open mode again still asks for a token")
	}
}

// At PathURL the token goes in the path: an accepted one there is served
// and recorded as Request.PathSecret; a wrong one, or an accepted one with
// an Authorization header beside it, is 401 invalid_token.
func TestBearerModeTakesTheTokenInThePathAtPathURL(t *testing.T) {
	srv := start(t, Options{BearerTokens: []string{"tok-1"}})
	at := func(tok string) string { return strings.Replace(srv.PathURL(), "{secret}", tok, 1) }
	if !strings.HasSuffix(srv.PathURL(), "/s/{secret}/mcp") {
		t.Fatalf("PathURL %s", srv.PathURL())
	}
	cs := connectVia(t, &mcp.StreamableClientTransport{Endpoint: at("tok-1")}, "", nil)
	call(t, cs, "lookup_customer", map[string]any{"customer_id": "c-1"}, nil)
	if len(srv.Calls()) != 1 {
		t.Fatalf("%d calls, want 1", len(srv.Calls()))
	}
	for _, r := range srv.Requests() {
		if r.PathSecret != "tok-1" || r.Header.Get("Authorization") != "" {
			t.Errorf("%s %s recorded path secret %q, Authorization %q", r.Method, r.RPCMethod, r.PathSecret, r.Header.Get("Authorization"))
		}
	}
	for _, tc := range []struct{ path, header string }{{"tok-2", ""}, {"tok-1", "tok-1"}} {
		res := postTo(t, at(tc.path), tc.header)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("path %s, header %q: %d %q, want 401 invalid_token", tc.path, tc.header, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	if res := post(t, srv, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("URL without a token: %d, want 401", res.StatusCode)
	}
}
