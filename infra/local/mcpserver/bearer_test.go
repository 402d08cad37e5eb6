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
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
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
