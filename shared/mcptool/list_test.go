package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Compile-time: the methods are the function types their users take.
var (
	_ toolset.Lister = (*Client)(nil).List
	_ toolcall.Check = (*Client)(nil).Check
	_ toolcall.Func  = (*Client)(nil).Call
)

func TestListFollowsEveryPage(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts
			opts.PageSize = 1
			srv := start(t, opts)
			l, err := clientFor(t, srv).List(t.Context(), srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range l.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if want := []string{mcpserver.CreateTicket, mcpserver.LookupCustomer, mcpserver.SendSMS}; !slices.Equal(names, want) {
				t.Errorf("tools %v, want %v", names, want)
			}
			if got := srv.ToolsListed(); got != 3 {
				t.Errorf("tools/list requests: %d, want 3 (one per page)", got)
			}
		})
	}
}

func TestListRecordsTheNegotiatedRevisionAndTheDefinitions(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			l, err := clientFor(t, srv).List(t.Context(), srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			if l.Protocol != m.revision {
				t.Errorf("protocol %q, want %q", l.Protocol, m.revision)
			}
			byName := map[string]toolset.ListedTool{}
			for _, tl := range l.Tools {
				byName[tl.Name] = tl
			}
			lookup, sms := byName[mcpserver.LookupCustomer], byName[mcpserver.SendSMS]
			if !strings.HasPrefix(lookup.Description, "Returns a customer's name") {
				t.Errorf("description %q", lookup.Description)
			}
			var in, out, ann map[string]any
			for raw, v := range map[string]*map[string]any{string(lookup.InputSchema): &in, string(lookup.OutputSchema): &out, string(lookup.Annotations): &ann} {
				if err := json.Unmarshal([]byte(raw), v); err != nil {
					t.Fatalf("%s: %v", raw, err)
				}
			}
			if in["required"].([]any)[0] != "customer_id" || out["additionalProperties"] != false || ann["readOnlyHint"] != true {
				t.Errorf("lookup_customer: input %v, output %v, annotations %v", in, out, ann)
			}
			if sms.OutputSchema != nil {
				t.Errorf("send_sms lists no output schema, got %s", sms.OutputSchema)
			}
		})
	}
}

func TestListRefusesWhatTheAddressRulesRefuse(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	tests := []struct {
		name   string
		cfg    func(Config) Config
		url    string
		reason string
	}{
		{"host not on the allow-list", func(c Config) Config { c.Net.Allow = config(t, "mcp.example.com").Net.Allow; return c },
			srv.URL(), "is not on the platform's MCP allow-list (TOOLGATE_MCP_ALLOW)"},
		{"empty allow-list", func(c Config) Config { c.Net.Allow = nil; return c },
			srv.URL(), "no MCP server may be reached"},
		{"loopback without the exemption", func(c Config) Config { c.Net.AllowAddresses = nil; return c },
			srv.URL(), "127.0.0.1 is loopback"},
		{"a name resolving to the metadata address", resolving("169.254.169.254"),
			"http://mcp.example.com/mcp", "169.254.169.254 is the instance metadata service"},
		{"a name resolving to a private address", resolving("10.0.0.1"),
			"http://mcp.example.com/mcp", "10.0.0.1 is private-use"},
		{"a name with a private answer among public ones", resolving("93.184.216.34", "10.0.0.1"),
			"http://mcp.example.com/mcp", "10.0.0.1 is private-use"},
		{"a URL fetch refuses", func(c Config) Config { return c }, "ftp://mcp.example.com/", "the MCP server URL is refused"},
		{"a URL with a query string", func(c Config) Config { return c }, srv.URL() + "?api_key=sk-live-4f9a", "the URL has a query string"},
		{"a URL with a fragment", func(c Config) Config { return c }, srv.URL() + "#token=sk-live-4f9a", "the URL has a fragment"},
		{"a URL with a key in its path", func(c Config) Config { return c }, strings.TrimSuffix(srv.URL(), "/mcp") + "/s/sk-live-4f9a7Qx2ZmK8pL3vR6tY1w/mcp", "secret-looking path segment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(t, hostOf(t, srv.URL()), "mcp.example.com")
			_, err := New(tt.cfg(cfg), nil).List(t.Context(), tt.url)
			var le *ListError
			if !errors.As(err, &le) || le.Code != tool.PermissionDenied || !strings.Contains(le.Message, tt.reason) {
				t.Fatalf("error %v, want TOOL_PERMISSION_DENIED saying %q", err, tt.reason)
			}
			if strings.Contains(le.Message, "sk-live") {
				t.Errorf("the error quotes the URL's secret: %s", le.Message)
			}
			if got := srv.ToolsListed(); got != 0 {
				t.Errorf("the server was listed %d times", got)
			}
		})
	}
}

// resolving makes mcp.example.com resolve to addrs, with no DNS.
func resolving(addrs ...string) func(Config) Config {
	return func(c Config) Config {
		r := fetch.FixedResolver{}
		for _, a := range addrs {
			r["mcp.example.com"] = append(r["mcp.example.com"], netip.MustParseAddr(a))
		}
		c.Net.Resolver = r
		return c
	}
}

func TestListSaysAServerNeedsCredentials(t *testing.T) {
	// A server that needs credentials for everything: no MCP layer is
	// reached, so a plain handler stands in for it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, err := New(config(t, hostOf(t, srv.URL)), nil).List(t.Context(), srv.URL+"/mcp")
	var le *ListError
	if !errors.As(err, &le) || le.Code != tool.PermissionDenied || !strings.Contains(le.Message, "HTTP 401 Unauthorized") ||
		!strings.Contains(le.Message, "needs credentials even to list its tools; declare them with auth") || !strings.Contains(le.Message, "toolgate credentials set") {
		t.Errorf("error %v, want one saying the server needs credentials, and how to give them", err)
	}
}

func TestListOfAnUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = New(config(t, addr), nil).List(t.Context(), "http://"+addr+"/mcp")
	var le *ListError
	if !errors.As(err, &le) || le.Code != tool.UpstreamUnavailable || !strings.Contains(le.Message, "the handshake with "+addr+" failed") {
		t.Errorf("error %v, want TOOL_UPSTREAM_UNAVAILABLE for the handshake", err)
	}
}

func TestListReportsToolsTheSDKDrops(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			srv.ListAlso(&mcp.Tool{Name: "bad_header", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)})
			srv.ListAlso(nil)
			_, err := clientFor(t, srv).List(t.Context(), srv.URL())
			var le *ListError
			if !errors.As(err, &le) || le.Code != tool.PermanentFailure {
				t.Fatalf("error %v, want a ListError", err)
			}
			for _, s := range []string{`2 tool(s) that the MCP Go SDK drops as invalid`, `"bad_header", null`, "nothing is registered"} {
				if !strings.Contains(le.Message, s) {
					t.Errorf("message %q does not say %q", le.Message, s)
				}
			}
		})
	}
}

func TestListedToolsPinAsRegistrationPinsThem(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	got := pin(t, c, srv, mcpserver.LookupCustomer)
	want := toolset.MCP{Server: "crm", URL: srv.URL(), Name: mcpserver.LookupCustomer, Protocol: "2026-07-28",
		Annotations: json.RawMessage(`{"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true}`)}
	if diff := cmp.Diff(&want, got.MCP); diff != "" {
		t.Errorf("pin (-want +got):\n%s", diff)
	}
}

func TestListFollowsNoRedirect(t *testing.T) {
	target := start(t, mcpserver.Options{Stateless: true})
	srv := httptest.NewServer(http.RedirectHandler(target.URL(), http.StatusTemporaryRedirect))
	defer srv.Close()
	_, err := New(config(t, hostOf(t, srv.URL), hostOf(t, target.URL())), nil).List(t.Context(), srv.URL+"/mcp")
	var le *ListError
	if !errors.As(err, &le) || le.Code != tool.PermanentFailure || !strings.Contains(le.Message, "HTTP 307 Temporary Redirect: toolgate follows no redirect") {
		t.Errorf("error %v, want a refused redirect", err)
	}
	if got := target.ToolsListed(); got != 0 {
		t.Errorf("the redirect's target was listed %d times", got)
	}
}

// Each response is read up to the read limit, and so is a whole listing:
// a server whose every page is under the limit, over as many pages as
// MaxPages allows, would otherwise have a listing (which Check keeps for
// its TTL) hold MaxPages times the limit, far over the memory of the
// function (mcp-call has 256 MB; 100 pages of 5 MiB are 500 MiB).
func TestListBoundsAWholeListing(t *testing.T) {
	const limit = 64 << 10
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	for i := range 4 {
		s.AddTool(&mcp.Tool{Name: "tool_" + string(rune('a'+i)), Description: strings.Repeat("x", 40<<10), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	cfg := config(t, hostOf(t, srv.URL))
	cfg.MaxBytes = limit
	_, err := New(cfg, nil).List(t.Context(), srv.URL)
	var le *ListError
	if !errors.As(err, &le) || le.Code != tool.PermanentFailure || !strings.Contains(le.Message, "read limit") {
		t.Fatalf("List of 4 pages of 40 KiB under a %d-byte limit: %v, want a TOOL_PERMANENT_FAILURE naming the read limit", limit, err)
	}
}
