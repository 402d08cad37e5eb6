package toolset

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/httprule"
)

// HTTPHost is one entry of a toolset's http_hosts: a host the http tool
// may reach, the methods it may send there, the custom headers a call may
// set there, and whether the host honours an idempotency key
// (docs/tools.md, "http"). The tool also needs the host on the platform's
// allow-list for its function.
type HTTPHost struct {
	// Host is a host list entry in package hostlist's canonical form
	// (host[:port], a leading "*." wildcard; no public suffix).
	Host string `json:"host"`
	// Methods are the methods calls may send to the host, from
	// httprule.Methods, sorted and unique; at least one.
	Methods []string `json:"methods"`
	// Headers are the custom request headers a call may set for the host,
	// besides httprule's standard ones, in canonical form
	// (textproto.CanonicalMIMEHeaderKey), sorted and unique; none is
	// httprule.Forbidden. Omitted when empty.
	Headers []string `json:"headers,omitempty"`
	// Idempotency, when set, declares that the host honours an
	// idempotency key in a request header: a call with a method that is
	// not a read is then retried under that key (at_least_once) instead
	// of at most once. Omitted when not set.
	Idempotency *HTTPIdempotency `json:"idempotency,omitempty"`
	// Auth is how the host is presented a credential; only on an exact
	// host entry (no wildcard); nil: never.
	Auth *Auth `json:"auth,omitempty"`
}

// HTTPIdempotency is how a host takes an idempotency key.
type HTTPIdempotency struct {
	// Header is the request header that carries the key, in canonical
	// form (such as "Idempotency-Key"); neither standard nor forbidden
	// (httprule.CheckHeaderName).
	Header string `json:"header"`
	// Format is how the key is written: httprule.FormatRaw (the default
	// when a toolset file leaves it out), FormatSFString or FormatUUID.
	Format string `json:"format"`
}

// RuleHTTPHosts: http_hosts are not canonical host entries (CheckHTTPHosts),
// or are pinned without the http tool.
const RuleHTTPHosts = "toolset-http-hosts"

// HTTPTool is the catalog name of the tool http_hosts are for.
const HTTPTool = "http"

// CanonicalHTTPHost returns h in its pinned form (docs/toolsets.md, "The
// http tool's hosts"): the host in package hostlist's canonical form (a
// public suffix, or a wildcard over one, is refused), the methods sorted
// and unique, the headers in canonical form (textproto.CanonicalMIMEHeaderKey)
// sorted and unique, the idempotency header in canonical form and its
// format httprule.FormatRaw when empty. It refuses a method that is not
// one of httprule.Methods (they are case-sensitive, RFC 9110 §9.1), no
// method at all, a header name httprule.CheckHeaderName refuses, an
// idempotency header it refuses or that the headers also name (the tool
// sets it, never a call), and an unknown format; and puts its auth in its
// pinned form (canonicalHostAuth: refused on a wildcard entry, or naming
// a header the entry's headers or idempotency name). The error is the
// predicate alone, naming the value but not the entry, for the caller
// to name where it is written.
func CanonicalHTTPHost(h HTTPHost) (HTTPHost, error) {
	e, err := hostlist.ParseEntry(h.Host)
	if err != nil {
		return HTTPHost{}, err
	}
	out := HTTPHost{Host: e.String()}
	if len(h.Methods) == 0 {
		return HTTPHost{}, fmt.Errorf("host %s: methods is empty: an entry names the methods calls may send there (%s)", out.Host, strings.Join(httprule.Methods, ", "))
	}
	for _, m := range h.Methods {
		if !httprule.Known(m) {
			return HTTPHost{}, fmt.Errorf("host %s: method %.20q is not one of %s (methods are upper-case, RFC 9110 §9.1)", out.Host, m, strings.Join(httprule.Methods, ", "))
		}
	}
	out.Methods = slices.Compact(slices.Sorted(slices.Values(h.Methods)))
	for _, name := range h.Headers {
		if err := httprule.CheckHeaderName(name); err != nil {
			return HTTPHost{}, fmt.Errorf("host %s: header %v", out.Host, err)
		}
		out.Headers = append(out.Headers, textproto.CanonicalMIMEHeaderKey(name))
	}
	if len(out.Headers) > 0 {
		out.Headers = slices.Compact(slices.Sorted(slices.Values(out.Headers)))
	}
	if k := h.Idempotency; k != nil {
		if err := httprule.CheckHeaderName(k.Header); err != nil {
			return HTTPHost{}, fmt.Errorf("host %s: idempotency header %v", out.Host, err)
		}
		key := &HTTPIdempotency{Header: textproto.CanonicalMIMEHeaderKey(k.Header), Format: k.Format}
		if key.Format == "" {
			key.Format = httprule.FormatRaw
		}
		if !httprule.KnownFormat(key.Format) {
			return HTTPHost{}, fmt.Errorf("host %s: idempotency format %.20q is not one of %s", out.Host, key.Format, strings.Join(httprule.Formats, ", "))
		}
		if slices.ContainsFunc(out.Headers, func(h string) bool { return httprule.SameName(h, key.Header) }) {
			return HTTPHost{}, fmt.Errorf("host %s: headers names %s, the idempotency header: the tool sets it from the call's idempotency key, so no call may", out.Host, key.Header)
		}
		out.Idempotency = key
	}
	if h.Auth != nil {
		a, err := canonicalHostAuth(out, *h.Auth)
		if err != nil {
			return HTTPHost{}, err
		}
		out.Auth = &a
	}
	return out, nil
}

// canonicalHostAuth returns a, the auth of entry h (in its pinned form
// but for its auth), in its pinned form (CanonicalAuth), or an error
// naming the entry: auth is refused on a wildcard entry (a credential is
// bound to one origin, and a wildcard would send it to every host under
// a name, docs/toolsets.md), and an auth header that the entry's headers
// name (a call could then set it) or that is its idempotency header.
func canonicalHostAuth(h HTTPHost, a Auth) (Auth, error) {
	if strings.HasPrefix(h.Host, "*.") {
		return Auth{}, fmt.Errorf("host %s: auth on a wildcard entry: a credential is bound to one origin, so only an exact host entry declares auth", h.Host)
	}
	c, err := CanonicalAuth(a, false)
	if err != nil {
		return Auth{}, fmt.Errorf("host %s: %w", h.Host, err)
	}
	if c.Header == "" {
		return c, nil
	}
	if slices.ContainsFunc(h.Headers, func(n string) bool { return httprule.SameName(n, c.Header) }) {
		return Auth{}, fmt.Errorf("host %s: headers names %s, the auth header: the tool sets it from the credential, so no call may", h.Host, c.Header)
	}
	if h.Idempotency != nil && httprule.SameName(h.Idempotency.Header, c.Header) {
		return Auth{}, fmt.Errorf("host %s: the auth header %s is the idempotency header: each needs its own", h.Host, c.Header)
	}
	return c, nil
}

// CanonicalHTTPHosts returns the entries in their pinned form
// (CanonicalHTTPHost), sorted by host; nil for none. Two entries for one
// host are refused rather than merged: which methods they meant is the
// author's to say. The error names the entry by its position (from 0).
func CanonicalHTTPHosts(hosts []HTTPHost) ([]HTTPHost, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	out := make([]HTTPHost, 0, len(hosts))
	for i, h := range hosts {
		c, err := CanonicalHTTPHost(h)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b HTTPHost) int { return strings.Compare(a.Host, b.Host) })
	for i := 1; i < len(out); i++ {
		if out[i].Host == out[i-1].Host {
			return nil, fmt.Errorf("host %s has two entries: write its methods and headers in one", out[i].Host)
		}
	}
	return out, nil
}

// checkHTTPHosts refuses (RuleHTTPHosts) http_hosts that are not in their
// pinned form, sorted by host and unique (CanonicalHTTPHosts), and
// http_hosts in a toolset that does not pin the http tool: entries no
// tool uses would widen what a toolset derived from it could reach. A
// toolset that pins the http tool without http_hosts passes: the tool
// then refuses every call.
func (ts *Toolset) checkHTTPHosts() error {
	if len(ts.HTTPHosts) == 0 {
		return nil
	}
	if _, ok := ts.Tools[HTTPTool]; !ok {
		return refuse(ts.ID, RuleHTTPHosts, "it has http_hosts but does not pin the %s tool", HTTPTool)
	}
	canonical, err := CanonicalHTTPHosts(ts.HTTPHosts)
	if err != nil {
		return refuse(ts.ID, RuleHTTPHosts, "%v", err)
	}
	if !slices.EqualFunc(canonical, ts.HTTPHosts, sameHTTPHost) {
		return refuse(ts.ID, RuleHTTPHosts, "http_hosts are not in canonical form (hosts sorted and unique, methods sorted and unique, headers in canonical form sorted and unique, an idempotency format, auth with its header in canonical form and origin_scheme https left out)")
	}
	return nil
}

// sameHTTPHost reports whether two entries are the same.
func sameHTTPHost(a, b HTTPHost) bool {
	return a.Host == b.Host && slices.Equal(a.Methods, b.Methods) && slices.Equal(a.Headers, b.Headers) &&
		(a.Idempotency == nil) == (b.Idempotency == nil) && (a.Idempotency == nil || *a.Idempotency == *b.Idempotency) &&
		sameAuth(a.Auth, b.Auth)
}

// NarrowsHTTPHost returns nil when entry h allows nothing base does not:
// the same host, methods and headers among base's, base's idempotency
// or none (without it, a call that is not a read runs at most once, which
// is stricter), and base's auth exactly (it decides which credential the
// host gets). Otherwise it says what h adds or changes.
func NarrowsHTTPHost(h, base HTTPHost) error {
	switch {
	case h.Host != base.Host:
		return fmt.Errorf("host %s is not %s", h.Host, base.Host)
	case h.Idempotency != nil && (base.Idempotency == nil || *h.Idempotency != *base.Idempotency):
		return fmt.Errorf("host %s: its idempotency is not its base's (which may be dropped, never added or changed)", h.Host)
	case !sameAuth(h.Auth, base.Auth):
		return fmt.Errorf("host %s: its auth is not its base's (a derived toolset keeps its base's auth declarations)", h.Host)
	}
	for _, m := range h.Methods {
		if !slices.Contains(base.Methods, m) {
			return fmt.Errorf("host %s: method %s is not one of its base's (%s)", h.Host, m, strings.Join(base.Methods, ", "))
		}
	}
	for _, name := range h.Headers {
		if !slices.Contains(base.Headers, name) {
			return fmt.Errorf("host %s: header %s is not one of its base's", h.Host, name)
		}
	}
	return nil
}

// checkDerivedHTTPHosts returns nil when every entry of hosts narrows
// base's entry for its host (NarrowsHTTPHost) and no entry base has and
// hosts drop leaves its hosts to a wider entry that allows more there
// (CheckDroppedHTTPHosts), and otherwise what widens.
func checkDerivedHTTPHosts(hosts, base []HTTPHost) error {
	for _, h := range hosts {
		i := slices.IndexFunc(base, func(b HTTPHost) bool { return b.Host == h.Host })
		if i < 0 {
			return fmt.Errorf("http host %s is not one of its base's", h.Host)
		}
		if err := NarrowsHTTPHost(h, base[i]); err != nil {
			return err
		}
	}
	return CheckDroppedHTTPHosts(hosts, base)
}

// CheckDroppedHTTPHosts returns nil when no entry of base that hosts (a
// derived toolset's entries, each one of base's) leave out hands the
// hosts it governed to a wider entry of hosts that allows more there. The
// most specific entry governs a host (MatchHTTPHost), so dropping
// api.example.com [GET] under *.example.com [GET, POST] would let a call
// POST to api.example.com. Each kept entry that matches some host and
// port the dropped one matches (a wider one: a wildcard over it, or the
// same host without a port) must allow there nothing the dropped one
// does not: its methods and headers among the dropped one's, the
// dropped one's idempotency or none, and, when it declares auth, the
// dropped one's (so that no host gets a credential it did not get
// before; a wider entry without auth sends none). Otherwise the error names both
// entries and what the wider one adds.
func CheckDroppedHTTPHosts(hosts, base []HTTPHost) error {
	for _, b := range base {
		if slices.ContainsFunc(hosts, func(h HTTPHost) bool { return h.Host == b.Host }) {
			continue
		}
		be, err := hostlist.ParseEntry(b.Host)
		if err != nil {
			return err
		}
		for _, h := range hosts {
			he, err := hostlist.ParseEntry(h.Host)
			if err != nil {
				return err
			}
			if !takesOver(he, be) {
				continue
			}
			auth := b.Auth // a wider entry without auth sends no credential: fewer, never more
			if h.Auth != nil {
				auth = h.Auth
			}
			if err := NarrowsHTTPHost(HTTPHost{Host: b.Host, Methods: h.Methods, Headers: h.Headers, Idempotency: h.Idempotency, Auth: auth}, b); err != nil {
				return fmt.Errorf("dropping http host %s leaves its hosts to %s, which allows more there: %w", b.Host, h.Host, err)
			}
		}
	}
	return nil
}

// takesOver reports whether wider matches some host and port that
// dropped matches, and would govern it once dropped is gone: a wildcard
// over dropped's host (or over its wildcard's suffix), or dropped's host
// without the port dropped names (which allows only 80 and 443).
func takesOver(wider, dropped hostlist.Entry) bool {
	portsMeet := wider.Port == dropped.Port ||
		wider.Port == 0 && (dropped.Port == 80 || dropped.Port == 443) ||
		dropped.Port == 0 && (wider.Port == 80 || wider.Port == 443)
	if !portsMeet {
		return false
	}
	switch {
	case wider.Wildcard:
		return dropped.Host == wider.Host && dropped.Wildcard || strings.HasSuffix(dropped.Host, "."+wider.Host)
	case dropped.Wildcard:
		return false // a host name governs itself alone, in both toolsets
	}
	return wider.Host == dropped.Host
}

// MatchHTTPHost returns the entry of hosts (canonical, CanonicalHTTPHosts)
// that governs scheme://host:port (port "" for the scheme's default): of
// the entries whose host and port allow it (hostlist.List.Match), the
// most specific one: a host name or address over a wildcard, a longer
// wildcard over a shorter one, an entry naming the port over one that
// does not; so that a host named on its own is never governed by a wider
// entry. This is the order the http tool's function applies at run time
// (package httptool, EntryFor). ok is false when none allows it, or when
// an entry does not parse (a canonical list's always do).
func MatchHTTPHost(hosts []HTTPHost, scheme, host, port string) (entry HTTPHost, ok bool) {
	best := -1
	var bestEntry hostlist.Entry
	for i, h := range hosts {
		e, err := hostlist.ParseEntry(h.Host)
		if err != nil {
			return HTTPHost{}, false
		}
		if _, match := (hostlist.List{e}).Match(scheme, host, port); !match {
			continue
		}
		if best < 0 || moreSpecific(e, bestEntry) {
			best, bestEntry = i, e
		}
	}
	if best < 0 {
		return HTTPHost{}, false
	}
	return hosts[best], true
}

// moreSpecific reports whether entry a governs a host both a and b match
// rather than b.
func moreSpecific(a, b hostlist.Entry) bool {
	switch {
	case a.Wildcard != b.Wildcard:
		return !a.Wildcard
	case len(a.Host) != len(b.Host):
		return len(a.Host) > len(b.Host)
	}
	return a.Port != 0 && b.Port == 0
}
