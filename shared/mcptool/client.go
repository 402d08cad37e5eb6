package mcptool

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Client is toolgate's MCP client: List for registration, Check and Call
// for the mcp-call function. Its methods are safe for concurrent use. It
// keeps, per warm container, the listings Check reuses.
type Client struct {
	cfg Config
	log *slog.Logger
	now func() time.Time // the cache's clock; tests replace it

	mu    sync.Mutex
	cache map[cacheKey]cached
}

// cacheKey is what a listing Check reuses is kept under: the server URL
// and the credential the listing presented (its toolset name, target,
// scope, item version and the digest of its value; none: zero), so that a
// credential set anew (revoked and set again is version 1 again), another
// scope's or another toolset's, is never answered with a listing another
// credential got.
type cacheKey struct {
	url           string
	toolset, name string
	scope         credential.Scope
	version       int64
	value         [32]byte
}

// keyOf is the cache key of a listing of url with cred.
func keyOf(url string, cred *credential.Credential) cacheKey {
	if cred == nil {
		return cacheKey{url: url}
	}
	return cacheKey{url: url, toolset: cred.Target.ToolsetName, name: cred.Target.Name, scope: cred.Scope, version: cred.Version, value: cred.Digest()}
}

// New returns a Client for cfg; log receives what is worth an operator's
// look (tools the SDK drops); nil discards it.
func New(cfg Config, log *slog.Logger) *Client {
	if cfg.Net.AllowName == "" {
		cfg.Net.AllowName = allowName
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, log: log, now: time.Now, cache: map[cacheKey]cached{}}
}

// implementation is how toolgate names itself to servers (initialize's
// clientInfo).
var implementation = &mcp.Implementation{Name: "toolgate", Version: "1"}

// clientOptions: toolgate has no one to ask for input, so it offers no
// client capability (no roots, no elicitation, no sampling), and the
// SDK's multi round-trip middleware, which would answer an input_required
// result itself and send tools/call again, is off: a call is one
// tools/call, and a result asking for input is Call's failure.
var clientOptions = &mcp.ClientOptions{
	Logger:         slog.New(slog.DiscardHandler),
	Capabilities:   &mcp.ClientCapabilities{},
	MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
}

// errRedirect refuses every redirect: an MCP endpoint is one URL, and
// following a redirect of a POST would send a call where no toolset pinned
// it.
var errRedirect = errors.New("redirect not followed")

// session is one MCP session with a server, for one listing or one call.
type session struct {
	cs   *mcp.ClientSession
	host string
	// cred is the credential the session presents (nil: none), whose
	// secret every message built from its answers is redacted of.
	cred *credential.Credential
}

// closeWait bounds the wait for a session's end (the SDK's DELETE of a
// session with an id, which it gives 5 s, detached from every deadline):
// a listing's or a call's outcome is known before it, and a server slow
// to end its session must not hold it, nor turn a call answered in time
// into the dispatcher's TOOL_TIMEOUT. The end goes on in the background.
const closeWait = 250 * time.Millisecond

func (s *session) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.cs.Close()
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// connect opens a new session with the server at rawURL: a new SDK client
// and session each time, so that nothing of an earlier listing is reused
// (the SDK caches tools/list per session under 2026-07-28 for as long as
// the server says). Every HTTP request goes through fetch's Transport, with
// the platform's MCP allow-list and the URL's own host as the pinned list,
// and is recorded into the probe of its context. The handshake runs under
// op, which parent bounds and Config.Timeout too (a failure is classified
// by which ended). mw, if not nil, is added as a sending middleware. tc,
// when it holds a traceparent, is sent as the traceparent and tracestate
// headers of every request of the session (traceHeaders); a listing
// passes none.
//
// cred, when not nil, is presented on every request of the session by
// credential.Transport, the RoundTripper right above fetch's and below
// the trace headers and the recorder, so that nothing that records an
// exchange sees it (docs/credentials.md, "At call time"). rawURL is checked
// with cred's declaration (toolset.ParseMCPURLAuth): a "{secret}" path
// segment is accepted where it declares path_segment, and the endpoint
// the SDK is given keeps it, which credential.Transport fills on the wire.
// The revision is the SDK's default: 2026-07-28 if the server answers
// server/discover, else initialize at the newest the server offers.
func (c *Client) connect(parent, op context.Context, rawURL string, mw mcp.Middleware, tc tool.TraceContext, cred *credential.Credential) (*session, *tool.Error) {
	var auth *toolset.Auth
	if cred != nil {
		auth = &cred.Target.Auth
	}
	u, err := toolset.ParseMCPURLAuth(rawURL, auth)
	if err != nil {
		if cred == nil && strings.Contains(rawURL, toolset.SecretSegment) {
			return nil, tool.Errorf(tool.PermissionDenied, "the MCP server URL holds %s, which only a credential fills: declare the server's auth in the toolset and set its credential with toolgate credentials set (docs/credentials.md)", toolset.SecretSegment)
		}
		return nil, tool.Errorf(tool.PermissionDenied, "the MCP server URL is refused: %v", err)
	}
	host := hostPort(u)
	if len(c.cfg.Net.Allow) == 0 {
		return nil, tool.Errorf(tool.PermissionDenied, "no MCP server may be reached: %s is empty", allowName)
	}
	pinned, err := hostlist.ParseList([]string{host})
	if err != nil {
		return nil, tool.Errorf(tool.PermissionDenied, "the MCP server URL's host %s is not a host entry: %v", host, err)
	}
	limit := c.cfg.maxBytes()
	var rt http.RoundTripper = c.cfg.Net.Transport(pinned, "the MCP server URL's host ("+host+")")
	if cred != nil {
		rt = credential.Transport(rt, cred)
	}
	if tc.Traceparent != "" {
		rt = &traceHeaders{next: rt, tc: tc}
	}
	hc := &http.Client{
		Transport:     &recorder{next: rt, limit: limit},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
	client := mcp.NewClient(implementation, clientOptions)
	if mw != nil {
		client.AddSendingMiddleware(mw)
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:             rawURL,
		HTTPClient:           hc,
		DisableStandaloneSSE: true, // no server-initiated messages are needed
		MaxEventSize:         -1,   // no bound of its own: every body is bounded by limit
	}
	p := &probe{}
	cs, err := client.Connect(withProbe(op, p), transport, nil)
	if err != nil {
		a := attempt{what: "the handshake with", host: host, bound: c.cfg.timeout(), limit: limit, cred: cred}
		return nil, cred.RedactError(failure(parent, op, a, p.lastExchange(), err))
	}
	return &session{cs: cs, host: host, cred: cred}, nil
}

// hostPort is u's host as a hostlist entry: the host (an IPv6 literal in
// brackets) and the port when the URL writes one.
func hostPort(u *fetchurl.URL) string {
	h := u.Host
	if a, ok := u.Addr(); ok && a.Is6() {
		h = "[" + h + "]"
	}
	if u.Port != "" {
		h += ":" + u.Port
	}
	return h
}
