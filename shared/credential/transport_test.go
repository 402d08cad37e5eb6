package credential

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/shared/toolset"
)

// recordingServer answers 200 and keeps each request's Authorization
// header and path.
type recordingServer struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
	paths []string
}

func newRecordingServer(t *testing.T, h http.HandlerFunc) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.auths = append(rs.auths, r.Header.Get("Authorization"))
		rs.paths = append(rs.paths, r.URL.EscapedPath())
		rs.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordingServer) seen() ([]string, []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.auths...), append([]string(nil), rs.paths...)
}

func cred(origin string, auth toolset.Auth, secret string) *Credential {
	return &Credential{Target: Target{ToolsetName: "crm", Name: "tickets", Origin: origin, Auth: auth}, Scope: ScopeToolset, secret: []byte(secret)}
}

func get(t *testing.T, c *http.Client, u string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func TestTransportPresentsTheHeaderOnlyToTheExactOrigin(t *testing.T) {
	srv := newRecordingServer(t, nil)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	c := &http.Client{Transport: Transport(http.DefaultTransport, cred(srv.URL, bearer, "tok"))}
	get(t, c, srv.URL+"/mcp")                  // the origin
	get(t, c, "http://localhost:"+port+"/mcp") // the same server by another host name
	other := newRecordingServer(t, nil)
	get(t, c, other.URL+"/mcp") // the same host, another port
	https := &http.Client{Transport: Transport(http.DefaultTransport, cred("https://"+u.Host, bearer, "tok"))}
	get(t, https, srv.URL+"/mcp") // a credential for https, a request over http
	auths, _ := srv.seen()
	want := []string{"Bearer tok", "", ""}
	if strings.Join(auths, "|") != strings.Join(want, "|") {
		t.Errorf("the origin's server saw Authorization %q, want %q", auths, want)
	}
	if a, _ := other.seen(); len(a) != 1 || a[0] != "" {
		t.Errorf("another port saw Authorization %q", a)
	}
}

func TestTransportSendsNoCredentialAfterARedirectToAnotherOrigin(t *testing.T) {
	target := newRecordingServer(t, nil)
	origin := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
		}
	})
	c := &http.Client{Transport: Transport(http.DefaultTransport, cred(origin.URL, apiKeyAuthorization, "tok"))}
	get(t, c, origin.URL+"/start")
	if a, _ := origin.seen(); len(a) != 1 || a[0] != "tok" {
		t.Errorf("the origin saw %q, want the credential once", a)
	}
	if a, _ := target.seen(); len(a) != 1 || a[0] != "" {
		t.Errorf("the redirect's target saw %q, want no credential", a)
	}
}

var apiKeyAuthorization = toolset.Auth{Header: "Authorization"}

func TestTransportFillsThePathPlaceholderOnAClone(t *testing.T) {
	srv := newRecordingServer(t, nil)
	c := cred(srv.URL, toolset.Auth{PathSegment: 2}, "s3cr3t-Path_~")
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/{secret}/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Caller", "kept")
	before := req.URL.String()
	resp, err := Transport(http.DefaultTransport, c).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, paths := srv.seen(); len(paths) != 1 || paths[0] != "/v1/s3cr3t-Path_~/mcp" {
		t.Errorf("server saw %q", paths)
	}
	if req.URL.String() != before || req.Header.Get("Authorization") != "" {
		t.Error("the caller's request was changed")
	}
	// A request to the origin without the placeholder is refused unsent.
	req2, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/other/mcp", nil)
	if _, err := Transport(http.DefaultTransport, c).RoundTrip(req2); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("RoundTrip without the placeholder: %v", err)
	}
	if _, paths := srv.seen(); len(paths) != 1 {
		t.Error("a request without the placeholder was sent")
	}
}

func TestTransportNeverChangesTheCallersHeaders(t *testing.T) {
	srv := newRecordingServer(t, nil)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := Transport(http.DefaultTransport, cred(srv.URL, bearer, "tok")).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(req.Header) != 0 {
		t.Errorf("the caller's request has headers %v", req.Header)
	}
}

func TestOriginsCompareWithDefaultPortsNormalized(t *testing.T) {
	for _, c := range []struct {
		origin, url string
		same        bool
	}{
		{"https://mcp.example.com", "https://mcp.example.com:443/x", true},
		{"https://mcp.example.com:443", "https://MCP.example.com/x", true},
		{"http://h.example", "http://h.example:80/", true},
		{"https://h.example", "http://h.example/", false},
		{"https://h.example", "https://h.example:8443/", false},
		{"http://h.example:443", "https://h.example/", false},
		{"https://h.example", "https://h.example.evil.example/", false},
		{"https://[::1]:8443", "https://[::1]:8443/x", true},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := normalizeOrigin(c.origin) == originOf(u); got != c.same {
			t.Errorf("origin %s, URL %s: same %v, want %v", c.origin, c.url, got, c.same)
		}
	}
	for _, bad := range []string{"https://h.example/path", "https://u@h.example", "h.example", "https://h.example?q"} {
		if got := normalizeOrigin(bad); got != "" {
			t.Errorf("normalizeOrigin(%q) = %q, want none", bad, got)
		}
	}
}

func TestRedactRemovesEveryFormSent(t *testing.T) {
	c := cred("https://h", bearer, "a/b+c=")
	got := c.Redact("401: header was Bearer a/b+c= or a%2Fb+c= or a%2Fb%2Bc%3D; plain a/b+c=")
	if strings.Contains(got, "a/b+c") || strings.Contains(got, "a%2Fb") {
		t.Errorf("Redact left the secret: %q", got)
	}
	if !strings.Contains(got, "401: header was …") {
		t.Errorf("Redact = %q", got)
	}
	var none *Credential
	if none.Redact("x") != "x" {
		t.Error("a nil credential changed the text")
	}
}

// A server that quotes the credential inside JSON (an MCP tool's result,
// an http host's body, both re-encoded by Go's encoding/json) writes it
// escaped: " and \ always, < > & as \u003c \u003e \u0026 (Go's HTML-safe
// default), and / as \/ (PHP's default). Redact must remove those forms
// too, or the secret reaches the step's result and the ledger.
func TestRedactRemovesTheSecretAsJSONEscapesIt(t *testing.T) {
	apiKey := toolset.Auth{Header: "X-Api-Key"}
	for _, secret := range []string{`k"ey\<1>&2`, "a/b/c"} {
		c := cred("https://h", apiKey, secret)
		enc, _ := json.Marshal(map[string]string{"echo": secret})
		var plain bytes.Buffer
		e := json.NewEncoder(&plain)
		e.SetEscapeHTML(false)
		e.Encode(map[string]string{"echo": secret})
		php := strings.ReplaceAll(string(enc), "/", `\/`)
		for _, doc := range []string{string(enc), plain.String(), php} {
			got := c.Redact(doc)
			if got == doc {
				t.Errorf("secret %q: Redact left %s as it was", secret, doc)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("secret %q: Redact(%s) = %s, not JSON", secret, doc, got)
			}
		}
	}
}
