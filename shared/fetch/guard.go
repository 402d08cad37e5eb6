package fetch

import (
	"net/http"

	"github.com/toolgate/toolgate/shared/hostlist"
)

// Refusal is the error Transport's RoundTrip returns for a request whose
// URL Decide does not allow: nothing was sent. Decision.Code says why
// (tool.PermissionDenied for a refusal, or the code of a failed look-up)
// and Decision.Reason in words.
type Refusal struct {
	Decision Decision
}

func (r *Refusal) Error() string { return "request refused: " + r.Decision.Reason }

// Transport returns an http.RoundTripper that applies Fetch's connection
// rules to every request sent through it, for clients of other protocols
// over HTTP (the MCP tools' client, shared/mcptool). For each request, in
// this order:
//
//   - Decide runs on the request's URL: its syntax, its host on Allow
//     (named Config.AllowName in refusals) and on pinned (named
//     pinnedName), one look-up of a host name and CheckAddr on every
//     answer. A refusal, or a failed look-up, returns a *Refusal and
//     sends nothing.
//   - The request goes to the URL as Decide normalised it (the canonical
//     host; a default port left out), over a new connection, with no
//     proxy, to one of the decided addresses only (the dialer checks the
//     socket's address once more), TLS verified against the URL's host
//     with Config.RootCAs. The connection is not reused.
//
// It follows no redirect itself: an http.Client that follows one calls
// RoundTrip again for the new URL, which is decided again. Bounds (time,
// body size) are the caller's.
func (c *Config) Transport(pinned hostlist.List, pinnedName string) http.RoundTripper {
	return &guarded{c: c, pinned: pinned, pinnedName: pinnedName}
}

type guarded struct {
	c          *Config
	pinned     hostlist.List
	pinnedName string
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	d := g.c.decide(req.Context(), req.URL.String(), g.pinned, g.pinnedName)
	if !d.Allow {
		if req.Body != nil {
			_ = req.Body.Close() // RoundTrip closes the body, even on errors
		}
		return nil, &Refusal{Decision: d}
	}
	return g.c.RoundTrip(d, req)
}

// RoundTrip sends req, whose URL Decide allowed as d, to d's URL (the
// canonical host, a default port left out) over a new connection to one
// of d.Addrs only, with no proxy and TLS verified against the URL's host
// with Config.RootCAs; the connection is not reused. req itself is not
// changed. It follows no redirect. It is how Fetch, Transport and the
// http tool (shared/httptool) send every request.
func (c *Config) RoundTrip(d Decision, req *http.Request) (*http.Response, error) {
	if !d.Allow || d.url == nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &Refusal{Decision: d}
	}
	out := req.Clone(req.Context())
	out.URL, out.Host = d.URL(), ""
	tr := c.transportFor(d)
	defer tr.CloseIdleConnections()
	return tr.RoundTrip(out)
}
