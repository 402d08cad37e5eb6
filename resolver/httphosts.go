package resolver

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/toolset"
)

// httpTool is the catalog name of the http tool (docs/tools.md, "http"):
// any method to a host its toolset's http_hosts pin for that method.
const httpTool = toolset.HTTPTool

// HTTPHostEntry is one http host entry as written in policy.http_hosts or
// in a toolset file's http tool entry: the entry in its pinned form
// (toolset.CanonicalHTTPHost) and where it is written.
type HTTPHostEntry struct {
	toolset.HTTPHost
	Pos Pos
}

// maxPathSegment bounds an auth's path_segment as the decoder reads it:
// a URL of fetchurl.MaxBytes has fewer segments.
const maxPathSegment = fetchurl.MaxBytes / 2

// auth decodes a target's auth (docs/toolsets.md, "Credentials: auth")
// at f, an MCP server's (mcp) or an http host entry's, into its pinned
// form (toolset.CanonicalAuth), reporting a problem at the value that
// causes it as rule; ok is false after reporting one.
func (d *decoder) auth(f *field, what, rule string, mcp bool) (*toolset.Auth, bool) {
	errs := len(d.ds.list)
	if !d.grammar(f.val, what, GrammarAuth) {
		return nil, false
	}
	var a toolset.Auth
	for _, af := range f.val.fields {
		switch af.key {
		case "header":
			a.Header, _ = d.str(&af, what+".header")
		case "scheme":
			a.Scheme, _ = d.str(&af, what+".scheme")
		case "path_segment":
			a.PathSegment, _ = d.integer(&af, what+".path_segment", 1, maxPathSegment)
		case "origin_scheme":
			a.OriginScheme, _ = d.str(&af, what+".origin_scheme")
		}
	}
	if len(d.ds.list) > errs {
		return nil, false
	}
	c, err := toolset.CanonicalAuth(a, mcp)
	if err != nil {
		d.ds.errorf(f.val.pos, rule, "%s: %v", what, err)
		return nil, false
	}
	return &c, true
}

// httpHosts decodes a list of http host entries (docs/toolsets.md, "The
// http tool's hosts"): each a mapping of host (a host list entry, package
// hostlist), methods (from httprule.Methods), headers (custom header
// names, httprule.CheckHeaderName), idempotency {header, format} and,
// where auth is true (a toolset file's), auth (decoder.auth; a
// Solution's policy.http_hosts pins a toolset without a name, which no
// credential is stored for). Each
// problem is reported at the value that causes it, a broken rule of the
// entries as [http-host]. It returns the entries that pass in their pinned
// form, sorted by host; a host written twice is reported at its second
// entry, and an empty list is refused (without entries there is no http
// tool: leave the list out).
func (d *decoder) httpHosts(f *field, what string, auth bool) []HTTPHostEntry {
	if f.val.kind != kList {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be a list of host entries ({host, methods, headers, idempotency}), not a %s", what, f.val.kind)
		return nil
	}
	if len(f.val.items) == 0 {
		d.ds.errorf(f.val.pos, RuleHTTPHost, "%s is empty: without host entries there is no http tool; leave it out", what)
		return nil
	}
	var out []HTTPHostEntry
	for i, it := range f.val.items {
		e, ok := d.httpHost(it, fmt.Sprintf("%s[%d]", what, i), auth)
		if !ok {
			continue
		}
		if j := slices.IndexFunc(out, func(o HTTPHostEntry) bool { return o.Host == e.Host }); j >= 0 {
			d.ds.errorf(e.Pos, RuleHTTPHost, "%s names host %s a second time (first at line %d): write its methods and headers in one entry", what, e.Host, out[j].Pos.Line)
			continue
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b HTTPHostEntry) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// httpHost decodes one entry; ok is false after reporting a problem.
func (d *decoder) httpHost(v *value, what string, auth bool) (HTTPHostEntry, bool) {
	errs := len(d.ds.list)
	if !d.grammar(v, what, GrammarHTTPHost) {
		return HTTPHostEntry{}, false
	}
	var h toolset.HTTPHost
	if f := v.get("host"); f != nil {
		if s, ok := d.str(f, what+".host"); ok {
			if e, err := hostlist.ParseEntry(s); err != nil {
				d.ds.errorf(f.val.pos, RuleHTTPHost, "%s.host: %v", what, err)
			} else {
				h.Host = e.String()
			}
		}
	}
	if f := v.get("methods"); f != nil {
		if f.val.kind == kList && len(f.val.items) == 0 {
			d.ds.errorf(f.val.pos, RuleHTTPHost, "%s.methods is empty: an entry names the methods calls may send to its host (%s)", what, strings.Join(httprule.Methods, ", "))
		}
		for _, r := range d.strings(f, what+".methods") {
			if !httprule.Known(r.Name) {
				d.ds.errorf(r.Pos, RuleHTTPHost, "%s.methods: %q is not one of %s (methods are upper-case, RFC 9110 §9.1)", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."), strings.Join(httprule.Methods, ", "))
				continue
			}
			h.Methods = append(h.Methods, r.Name)
		}
	}
	if f := v.get("headers"); f != nil {
		for _, r := range d.strings(f, what+".headers") {
			if err := httprule.CheckHeaderName(r.Name); err != nil {
				d.ds.errorf(r.Pos, RuleHTTPHost, "%s.headers: %v", what, err)
				continue
			}
			h.Headers = append(h.Headers, r.Name)
		}
	}
	if f := v.get("idempotency"); f != nil && d.grammar(f.val, what+".idempotency", GrammarIdempotency) {
		k := &toolset.HTTPIdempotency{}
		if hf := f.val.get("header"); hf != nil {
			if s, ok := d.str(hf, what+".idempotency.header"); ok {
				if err := httprule.CheckHeaderName(s); err != nil {
					d.ds.errorf(hf.val.pos, RuleHTTPHost, "%s.idempotency.header: %v", what, err)
				} else if slices.ContainsFunc(h.Headers, func(n string) bool { return httprule.SameName(n, s) }) {
					d.ds.errorf(hf.val.pos, RuleHTTPHost, "%s.idempotency.header %s is also in headers: the tool sets it from the call's idempotency key, so no call may; leave it out of headers", what, textproto.CanonicalMIMEHeaderKey(s))
				}
				k.Header = s
			}
		}
		if ff := f.val.get("format"); ff != nil {
			if s, ok := d.str(ff, what+".idempotency.format"); ok {
				if !httprule.KnownFormat(s) {
					d.ds.errorf(ff.val.pos, RuleHTTPHost, "%s.idempotency.format %q is not one of %s", what, excerpt.BytesWithin(s, maxQuotedBytes, "..."), strings.Join(httprule.Formats, ", "))
				}
				k.Format = s
			}
		}
		h.Idempotency = k
	}
	var authAt Pos
	if f := v.get("auth"); f != nil {
		if !auth {
			d.ds.errorf(f.keyPos, RuleHTTPHost, "%s.auth: auth is declared in a toolset file: a credential is stored for a registered toolset's name, which a Solution's own toolset has none of; register a toolset file naming this host and name it (toolset: ID)", what)
		} else if a, ok := d.auth(f, what+".auth", RuleHTTPHost, false); ok {
			h.Auth, authAt = a, f.val.pos
		}
	}
	if len(d.ds.list) > errs {
		return HTTPHostEntry{}, false
	}
	c, err := toolset.CanonicalHTTPHost(h)
	if err != nil { // every rule it applies is reported above, but auth's that involve the entry
		at := v.pos
		if h.Auth != nil {
			bare := h
			bare.Auth = nil
			if _, bareErr := toolset.CanonicalHTTPHost(bare); bareErr == nil {
				at = authAt
			}
		}
		d.ds.errorf(at, RuleHTTPHost, "%s: %v", what, err)
		return HTTPHostEntry{}, false
	}
	return HTTPHostEntry{HTTPHost: c, Pos: v.pos}, true
}

// pinnedHTTPHosts returns the entries as a toolset pins them.
func pinnedHTTPHosts(entries []HTTPHostEntry) []toolset.HTTPHost {
	var out []toolset.HTTPHost
	for _, e := range entries {
		out = append(out, e.HTTPHost)
	}
	return out
}

// httpHostsShown lists entries for a diagnostic: "host (METHODS)", or
// "none".
func httpHostsShown(hosts []toolset.HTTPHost) string {
	if len(hosts) == 0 {
		return "none"
	}
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		parts[i] = h.Host + " (" + strings.Join(h.Methods, ", ") + ")"
	}
	return excerpt.BytesWithin(strings.Join(parts, ", "), 200, "...")
}

// httpEntries is the http tool's entries the Solution's steps are checked
// against: policy.http_hosts, or the named toolset's.
func (c *checker) httpEntries() []toolset.HTTPHost { return pinnedHTTPHosts(c.sol.HTTPHosts) }

// isHTTP reports whether step i calls the http tool.
func (c *checker) isHTTP(i int) bool { return c.tools[i] != nil && c.tools[i].Name == httpTool }

// httpMethod returns step i's method when its with writes it as a literal
// string; ok is false when it is bound, absent or not a string.
func (c *checker) httpMethod(st *Step) (method string, at *value, ok bool) {
	if st.With == nil || st.With.kind != kMap {
		return "", nil, false
	}
	f := st.With.get("method")
	if f == nil {
		return "", nil, false
	}
	m, ok := literalText(f.val)
	return m, f.val, ok
}

// stepGated reports whether Gate A requires an approved review before
// tool step i: its tool is on the review list (the catalog's, the
// toolset's or policy.review_before), except for an http step whose
// method is a literal GET or HEAD, a read the dispatcher runs without
// review whatever the list says (httprule.Decide). A bound method could
// be any, so it needs a review.
func (c *checker) stepGated(i int) bool {
	st := c.sol.Steps[i]
	if !c.gated[st.Tool] {
		return false
	}
	if c.isHTTP(i) {
		m, _, ok := c.httpMethod(st)
		return !ok || !httprule.IsRead(m)
	}
	return true
}

// gatedTool names gated tool step i's tool for Gate A's diagnostic: the
// tool, and for an http step why its method needs a review.
func (c *checker) gatedTool(i int) string {
	st := c.sol.Steps[i]
	if !c.isHTTP(i) {
		return st.Tool
	}
	if m, _, ok := c.httpMethod(st); ok {
		return fmt.Sprintf("%s %.10s, a method that is not a read", st.Tool, m)
	}
	return st.Tool + " with a method that is bound or absent, so it could be any"
}

// httpContract is what the dispatcher will decide for an http step i as
// far as its literals say (httprule.Decide): a literal read method is
// idempotent; a literal method that is not a read, to a literal URL whose
// entry declares an idempotency key, is too; anything else gets the
// strictest contract.
func (c *checker) httpContract(i int) httprule.Contract {
	st := c.sol.Steps[i]
	m, _, ok := c.httpMethod(st)
	if !ok {
		return httprule.Decide("", false)
	}
	e, found := c.httpEntry[i]
	return httprule.Decide(m, found && e.Idempotency != nil)
}

// retryOf returns tool step i's retry with the tool's defaults. An http
// step that httpContract finds not idempotent takes one attempt unless
// its retry names more: the catalog's default retry is for the calls the
// dispatcher may repeat.
func (c *checker) retryOf(i int) catalog.Retry {
	st, t := c.sol.Steps[i], c.tools[i]
	r := effectiveRetry(st, t)
	written := st.Retry != nil && st.Retry.MaxAttempts != 0
	if c.isHTTP(i) && !c.httpContract(i).Idempotent && !written {
		r.MaxAttempts = 1
	}
	if !written && c.parkable(st) && c.parksAfterClaim(st) {
		r.MaxAttempts = min(r.MaxAttempts, maxAttemptsParkingAfterClaim)
	}
	return r
}

// idempotentStep reports whether a retry of tool step i cannot repeat its
// effect: its tool honours idempotency keys, or, for the http tool, its
// call's contract says so (httpContract).
func (c *checker) idempotentStep(i int) bool {
	if c.isHTTP(i) {
		return c.httpContract(i).Idempotent
	}
	return c.tools[i].Idempotent
}

// checkHTTP applies the http tool's rules to every http step's literal
// values (docs/tools.md, "http"), as its function applies them before it
// sends anything: without host entries there is no http tool; a literal
// URL must parse (fetchurl.Parse) and its host and port match an entry
// (toolset.MatchHTTPHost), recorded for publish; a literal method must be
// one of that entry's; a body goes only with POST, PUT and PATCH; and a
// literal header must not be forbidden, and a custom one must be named
// by the entry (or, when the URL is bound, by some entry), never as its
// idempotency header. Bound values are the tool's to check at run time.
func (c *checker) checkHTTP() {
	hosts := c.httpEntries()
	c.httpEntry = map[int]toolset.HTTPHost{}
	if len(hosts) > 0 && c.named == nil && !c.usesHTTP() {
		c.ds.warnf(c.sol.HTTPPos, RuleHTTPHost, "policy.http_hosts has no effect: no step uses the %s tool, so the toolset pins no http hosts", httpTool)
	}
	for i, st := range c.sol.Steps {
		if !c.isHTTP(i) {
			continue
		}
		if len(hosts) == 0 {
			c.ds.errorf(st.ToolPos, RuleHTTPHost, "step %q uses %s, but %s: without host entries there is no http tool", st.ID, httpTool, c.noHTTPHosts())
			continue
		}
		if st.With == nil || st.With.kind != kMap {
			continue
		}
		entry, found := c.checkHTTPURL(i, st, hosts)
		if found {
			c.httpEntry[i] = entry
		}
		method, mv, literal := c.httpMethod(st)
		if literal && found && httprule.Known(method) && !slices.Contains(entry.Methods, method) {
			c.ds.errorf(mv.pos, RuleHTTPMethod, "step %q with.method %s is not pinned for host %s (methods: %s); the http tool refuses it (TOOL_PERMISSION_DENIED)", st.ID, method, entry.Host, strings.Join(entry.Methods, ", "))
		}
		if b := st.With.get("body"); b != nil && literal && httprule.Known(method) && !httprule.TakesBody(method) {
			c.ds.errorf(b.keyPos, RuleToolInput, "step %q with.body goes with method %s: only POST, PUT and PATCH send a body; the http tool refuses it (TOOL_INPUT_INVALID)", st.ID, method)
		}
		if h := st.With.get("headers"); h != nil && h.val.kind == kMap {
			c.checkHTTPHeaders(st, h.val, entry, found, hosts)
		}
	}
}

// noHTTPHosts says where the Solution's http entries would come from.
func (c *checker) noHTTPHosts() string {
	if c.named != nil {
		return "toolset " + c.named.ID + " has no http_hosts"
	}
	return "policy.http_hosts is not set"
}

// checkHTTPURL checks an http step's literal URL, or its literal scheme
// and authority (literalURL), and returns the entry it matches.
func (c *checker) checkHTTPURL(i int, st *Step, hosts []toolset.HTTPHost) (toolset.HTTPHost, bool) {
	f := st.With.get("url")
	if f == nil || f.val.kind != kString {
		return toolset.HTTPHost{}, false
	}
	v := f.val
	raw, ok, textErr := literalURL(v)
	if textErr != nil {
		c.ds.errorf(v.pos, RuleFetchURL, "step %q with.url %q, a template whose literal text alone decides this: %v; the http tool refuses every value of it", st.ID, excerpt.BytesWithin(v.str, maxQuotedBytes, "..."), textErr)
		return toolset.HTTPHost{}, false
	}
	if !ok {
		return toolset.HTTPHost{}, false
	}
	u, err := fetchurl.Parse(raw)
	if err != nil {
		c.ds.errorf(v.pos, RuleFetchURL, "step %q with.url %q: %v; the http tool refuses it", st.ID, excerpt.BytesWithin(v.str, maxQuotedBytes, "..."), err)
		return toolset.HTTPHost{}, false
	}
	entry, found := toolset.MatchHTTPHost(hosts, u.Scheme, u.Host, u.Port)
	if !found {
		var list hostlist.List
		for _, h := range hosts {
			if e, err := hostlist.ParseEntry(h.Host); err == nil {
				list = append(list, e)
			}
		}
		name := "http_hosts (" + httpHostsShown(hosts) + ")"
		err := fetchurl.Listed(list, name, u)
		if err == nil {
			err = fmt.Errorf("host %s matches no entry of %s", u.Host, name)
		}
		c.ds.errorf(v.pos, RuleHTTPHost, "step %q with.url %q: %v; the http tool refuses it (TOOL_PERMISSION_DENIED)", st.ID, excerpt.BytesWithin(v.str, maxQuotedBytes, "..."), err)
		return toolset.HTTPHost{}, false
	}
	c.literal(i, Literal{Kind: LiteralHTTPURL, Pos: v.pos, Step: st.ID, Field: "url", Value: raw})
	return entry, true
}

// checkHTTPHeaders checks an http step's literal header names and values:
// never a forbidden header (httprule.Forbidden), a value CheckHeaderValue
// passes, and a custom header only when entry names it and it is not
// entry's idempotency header; with no entry known (a bound URL), a custom
// header must be named by some entry of hosts.
func (c *checker) checkHTTPHeaders(st *Step, v *value, entry toolset.HTTPHost, found bool, hosts []toolset.HTTPHost) {
	for _, f := range v.fields {
		name := textproto.CanonicalMIMEHeaderKey(f.key)
		what := fmt.Sprintf("step %q with.headers", st.ID)
		if bad, why := httprule.Forbidden(f.key); bad {
			c.ds.errorf(f.keyPos, RuleHTTPHeader, "%s: %s may never be set: %s; the http tool refuses it (TOOL_PERMISSION_DENIED)", what, name, why)
			continue
		}
		if s, ok := literalText(f.val); ok {
			if err := httprule.CheckHeaderValue(s); err != nil {
				c.ds.errorf(f.val.pos, RuleToolInput, "%s: the value of %s %v; the http tool refuses it (TOOL_INPUT_INVALID)", what, name, err)
			}
		}
		if httprule.Standard(f.key) {
			continue
		}
		switch {
		case found && entry.Auth != nil && entry.Auth.Header != "" && httprule.SameName(entry.Auth.Header, name):
			c.ds.errorf(f.keyPos, RuleHTTPHeader, "%s: %s is host %s's auth header, which the tool sets from the target's credential; the http tool refuses it (TOOL_PERMISSION_DENIED)", what, name, entry.Host)
		case found && entry.Idempotency != nil && httprule.SameName(entry.Idempotency.Header, name):
			c.ds.errorf(f.keyPos, RuleHTTPHeader, "%s: %s is host %s's idempotency header, which the tool sets from the call's idempotency key; the http tool refuses it (TOOL_PERMISSION_DENIED)", what, name, entry.Host)
		case found && !slices.Contains(entry.Headers, name):
			c.ds.errorf(f.keyPos, RuleHTTPHeader, "%s: %s is not a standard header, and host %s's entry does not name it (headers: %s); the http tool refuses it (TOOL_PERMISSION_DENIED)", what, name, entry.Host, orNone(entry.Headers))
		case !found && !slices.ContainsFunc(hosts, func(h toolset.HTTPHost) bool { return slices.Contains(h.Headers, name) }):
			c.ds.errorf(f.keyPos, RuleHTTPHeader, "%s: %s is not a standard header, and no http host entry names it; the http tool refuses it (TOOL_PERMISSION_DENIED)", what, name)
		}
	}
}

// orNone joins names, or says "none".
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// pinnedHTTPHosts is the http_hosts the toolset a Solution derives from
// the catalog pins: policy.http_hosts when a step uses the http tool.
// Without one they are left out (checkHTTP warns), so that the toolset
// pins no hosts for a tool it does not have (toolset.RuleHTTPHosts).
func (c *checker) pinnedHTTPHosts() []toolset.HTTPHost {
	if len(c.sol.HTTPHosts) == 0 {
		return nil
	}
	if !c.usesHTTP() {
		return nil
	}
	return c.httpEntries()
}

// usesHTTP reports whether a step calls the http tool.
func (c *checker) usesHTTP() bool {
	for i := range c.sol.Steps {
		if c.isHTTP(i) {
			return true
		}
	}
	return false
}
