package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/tool"
)

// MCP tools: tools an MCP server defines, which a toolset admits by name
// and pins at registration (docs/toolsets.md, "MCP servers"). A toolset
// file names a server with its URL, the tools it admits and a policy per
// tool (MCPServer); registering it lists the server's tools and pins, for
// each admitted one, its definition (Tool with MCP set) under the name
// "<server>.<tool>".

// MCP is what a toolset pins of a tool an MCP server defines, besides its
// description and schemas (Tool.InputSchema, Tool.OutputSchema: the
// server's inputSchema and outputSchema, {} when it lists none).
type MCP struct {
	// Server is the server's key in the toolset file (tool.MCPServerPattern):
	// the tool's toolset name is "<server>.<name>".
	Server string `json:"server"`
	// URL is the server's streamable HTTP endpoint, as ParseMCPURL
	// accepts it: calls go there, under the http tool's address rules.
	URL string `json:"url"`
	// Name is the tool's name exactly as the server defines it
	// (tool.MCPToolNamePattern): what tools/call names.
	Name string `json:"name"`
	// Annotations are the tool's annotations as the server listed them
	// (readOnlyHint, idempotentHint, destructiveHint, ...): shown, and
	// compared before each call; they never relax a policy.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Protocol is the MCP protocol revision negotiated at registration
	// (MCPProtocols).
	Protocol string `json:"protocol"`
	// Auth is how the server is presented a credential (the server's
	// auth in the toolset file); nil: never.
	Auth *Auth `json:"auth,omitempty"`
}

// ParseMCPURL parses an MCP server's URL: one that fetchurl.Parse
// accepts (http or https, no userinfo, ...), that has no query string and
// no fragment, and no path segment that looks like a secret (secretIn: a
// UUID or 32 or more hex digits anywhere in it, a JWT, or a long
// random-looking run or piece of base64, the segment judged as written
// and percent-decoded; and a base64 token written across segments). The
// URL is pinned in locks and in the table, shown in messages and logged,
// so it must hold no secret: fetchurl refuses userinfo, and this an API
// key in the query (or a token in the fragment) or in the path; a
// credential is declared apart (Auth) and never pinned (docs/toolsets.md,
// "MCP servers"). A "{secret}" path segment is refused: it is accepted
// only where a server's Auth.PathSegment puts it, by ParseMCPURLAuth,
// which ParseMCPURL is with no declaration. Every check of an MCP server
// URL is one of the two: the toolset file's [mcp-server], ParseDraft,
// ResolveMCP, a pin's (Verify), and the MCP client's before each listing
// and call (shared/mcptool). The error
// quotes no part of the URL after a "?" or a "#", no secret-looking path
// segment and no run of 20 or more letters, digits, "_" and "-" that
// fetchurl would quote (it names a port's or a long piece's length); it
// names the host with its secret-looking runs hidden, and the segment's
// position and length (MCPURLShown shows the URL in a message).
func ParseMCPURL(raw string) (*fetchurl.URL, error) {
	return ParseMCPURLAuth(raw, nil)
}

// parseMCPURL is ParseMCPURL's checks, "{secret}" segments left to
// fetchurl (which refuses "{").
func parseMCPURL(raw string) (*fetchurl.URL, error) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		if raw[i] == '?' {
			return nil, errors.New(`the URL has a query string: an MCP server's URL is pinned in locks, shown in messages and logged, so it cannot carry a secret such as an API key; remove the query, and declare the server's auth for its credential (a header, or {secret} in the path)`)
		}
		return nil, errors.New(`the URL has a fragment: an MCP server's URL is pinned in locks, shown in messages and logged, so it cannot carry a secret such as a token; remove the fragment, and declare the server's auth for its credential (a header, or {secret} in the path)`)
	}
	u, err := parseMCPURLHead(raw)
	if err != nil {
		return nil, err
	}
	// fetchurl.Parse has checked that the path Go reads is the path as
	// written.
	if s, ok := findSecretSegment(u.Parsed.EscapedPath()); ok {
		return nil, secretSegmentError(u.Parsed.Hostname(), s)
	}
	return u, nil
}

// parseMCPURLHead is ParseMCPURL's checks of raw, an MCP server URL cut
// before any "?" or "#", that come before its path is judged: fetchurl's.
func parseMCPURLHead(raw string) (*fetchurl.URL, error) {
	if colon := strings.IndexByte(raw, ':'); colon >= 0 && strings.Contains(raw[:colon], "/") {
		// The text before the ":" holds part of the path, not a
		// scheme.
		return nil, errors.New("the URL has no scheme: write http:// or https:// before the host")
	}
	return fetchurl.Parse(raw)
}

// MCPURLShown is raw, an MCP server URL ParseMCPURL may have refused, as
// a message may show it, so that no credential it carries is shown or
// logged. When its part before any "?" or "#" passes ParseMCPURL's checks
// but the path's, it is that part with every run of the host that looks
// like a secret (secretIn) and every path segment ParseMCPURL refuses
// shown as "…" ("{secret}" segments shown as written), then "?…" or "#…"
// for a query or a fragment. Otherwise
// (a malformed URL, whose path cannot be told from its authority, nor a
// port from a token) it is only "<scheme>://<host>/…", with "…" for a
// scheme that is not one, "…@" for userinfo, and "…" for a host that is
// not a valid host or holds a secret-looking run; "…" without "://".
func MCPURLShown(raw string) string {
	head, tail := raw, ""
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		head, tail = raw[:i], raw[i:i+1]+"…"
	}
	u, err := parseMCPURLHead(head)
	if err != nil {
		return secretSegmentShown(head, tail)
	}
	return shownAccepted(head[:strings.IndexByte(head, ':')], u, tail)
}

// secretSegmentShown is MCPURLShown of head (a URL cut before any "?" or
// "#") followed by tail, for a head fetchurl refuses: when it does so only
// for its "{secret}" segments (SecretSegment, which a server's auth may
// declare), it is shown as an accepted URL is, each "{secret}" as written;
// otherwise as malformedShown shows it.
func secretSegmentShown(head, tail string) string {
	before, segs, ok := splitPath(head)
	if !ok || !slices.Contains(segs, SecretSegment) {
		return malformedShown(head + tail)
	}
	stood := slices.Clone(segs)
	for i, s := range stood {
		if s == SecretSegment {
			stood[i] = secretStandIn
		}
	}
	u, err := parseMCPURLHead(before + "/" + strings.Join(stood, "/"))
	if err != nil {
		return malformedShown(head + tail)
	}
	shown := shownAccepted(before[:strings.IndexByte(before, ':')], u, "")
	shownBefore, shownSegs, _ := splitPath(shown)
	for i, s := range segs {
		if s == SecretSegment && i < len(shownSegs) {
			shownSegs[i] = SecretSegment
		}
	}
	return shownBefore + "/" + strings.Join(shownSegs, "/") + tail
}

// MCPProtocols are the MCP protocol revisions a pin may record: those the
// MCP Go SDK v1.8.0 negotiates, newest first.
var MCPProtocols = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// SplitMCPName splits a toolset tool name "<server>.<tool>" at its first
// dot; ok is false for a name that is not one (a catalog or platform
// tool's name has no dot).
func SplitMCPName(name string) (server, mcpName string, ok bool) {
	server, mcpName, ok = strings.Cut(name, ".")
	if !ok || !tool.MCPServerPattern.MatchString(server) || !tool.MCPToolNamePattern.MatchString(mcpName) {
		return "", "", false
	}
	return server, mcpName, true
}

// MCPServer is an MCP server as a toolset file names it, before
// registration lists its tools: its URL, the tools it admits (by their
// exact names) and a policy per admitted tool.
type MCPServer struct {
	URL   string   `json:"url"`
	Admit []string `json:"admit"`
	// Policies by tool name; a tool without one is at_most_once, not
	// idempotent, not reviewed.
	Policies map[string]MCPPolicy `json:"policies,omitempty"`
	// Auth is how the server is presented a credential; nil: never.
	Auth *Auth `json:"auth,omitempty"`
}

// MCPPolicy is the policy a toolset gives one MCP tool: the members a
// platform tool has besides its function, with the same rules.
type MCPPolicy struct {
	Policy             catalog.Policy `json:"policy,omitempty"`
	Idempotent         bool           `json:"idempotent,omitempty"`
	ReviewRequired     bool           `json:"review_required,omitempty"`
	TimeoutSeconds     int            `json:"timeout_seconds,omitempty"`
	Retry              *catalog.Retry `json:"retry,omitempty"`
	TolerateDuplicates bool           `json:"tolerate_duplicates,omitempty"`
}

// ListedTool is one tool as a server's tools/list answered it.
type ListedTool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage // nil: the server lists none
	Annotations  json.RawMessage // nil: none
}

// Listed is what registration learnt of one server: the negotiated
// revision and every tool it lists (all pages).
type Listed struct {
	Protocol string
	Tools    []ListedTool
}

// MCPToolTimeout is an MCP tool's timeout when its policy names none, in
// seconds: the mcp-call function's own Lambda timeout, which the CDK app
// deploys it with (infra). A policy's timeout_seconds may only be shorter:
// checkMCP refuses a longer one, which the function's deadline would cut.
const MCPToolTimeout = 60

// emptySchema is the output schema of a tool whose server lists none.
var emptySchema = json.RawMessage(`{}`)

// Pin pins the admitted tools of server key from what the server listed:
// each under "<key>.<name>", with its listed definition, the server's
// policy for it and the server's Auth (a copy on each). A tool the server does not list, one listed twice, or a
// policy for a tool not admitted is an error naming it. The schemas are
// checked by Verify, once the toolset holds them.
func (s MCPServer) Pin(key string, l Listed) (map[string]Tool, error) {
	byName := map[string]ListedTool{}
	for _, t := range l.Tools {
		if _, dup := byName[t.Name]; dup {
			return nil, fmt.Errorf("server %s lists tool %s twice", key, listedName(t.Name))
		}
		byName[t.Name] = t
	}
	for name := range s.Policies {
		if !slices.Contains(s.Admit, name) {
			return nil, fmt.Errorf("server %s: a policy for %q, which admit does not list", key, name)
		}
	}
	out := map[string]Tool{}
	for _, name := range s.Admit {
		lt, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("server %s does not list tool %q (it lists %s)", key, name, listedNames(slices.Sorted(maps.Keys(byName))))
		}
		p := s.Policies[name]
		t := Tool{Description: lt.Description, InputSchema: compactJSON(lt.InputSchema), OutputSchema: emptySchema,
			Idempotent: p.Idempotent, Policy: p.Policy, ReviewRequired: p.ReviewRequired,
			TimeoutSeconds: p.TimeoutSeconds, Retry: p.Retry, TolerateDuplicates: p.TolerateDuplicates,
			MCP: &MCP{Server: key, URL: s.URL, Name: name, Protocol: l.Protocol, Auth: cloneAuth(s.Auth)}}
		if t.Policy == "" {
			t.Policy = catalog.AtMostOnce
		}
		if t.TimeoutSeconds == 0 {
			t.TimeoutSeconds = MCPToolTimeout
		}
		if len(lt.OutputSchema) > 0 && string(lt.OutputSchema) != "null" {
			t.OutputSchema = compactJSON(lt.OutputSchema)
		}
		if len(lt.Annotations) > 0 && string(lt.Annotations) != "null" && string(lt.Annotations) != "{}" {
			t.MCP.Annotations = compactJSON(lt.Annotations)
		}
		out[key+"."+name] = t
	}
	return out, nil
}

// maxListedNames bounds the names of a server's tools a refusal names.
const maxListedNames = 20

// listedNames names a server's tools in a refusal: at most
// maxListedNames of them (listedName), and how many more.
func listedNames(names []string) string {
	shown := make([]string, 0, min(len(names), maxListedNames+1))
	for i, n := range names {
		if i == maxListedNames {
			shown = append(shown, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		shown = append(shown, listedName(n))
	}
	return strings.Join(shown, ", ")
}

// listedName is a name a server lists, for a message: as it is when it is
// an MCP tool name (tool.MCPToolNamePattern), and otherwise quoted and cut, so
// that none of the server's text (a control character, a line break, a
// terminal escape) reaches a log or the publisher's terminal raw.
func listedName(n string) string {
	if tool.MCPToolNamePattern.MatchString(n) {
		return n
	}
	return fmt.Sprintf("%.80q", n)
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// RuleMCPTool: an MCP tool's pin is malformed.
const RuleMCPTool = "toolset-mcp-tool"

// checkMCP refuses a malformed MCP tool pin: its name is not
// "<server>.<name>" of its pin, the URL is not one ParseMCPURLAuth accepts
// with the pin's Auth, the
// revision is unknown, or its policy breaks a platform tool's rules
// (checkPolicy).
func checkMCP(id, name string, t *Tool) error {
	refuse := func(rule, format string, a ...any) error { return refuse(id, rule, format, a...) }
	m := t.MCP
	server, tool, ok := SplitMCPName(name)
	switch {
	case !ok || server != m.Server || tool != m.Name:
		return refuse(RuleMCPTool, "tool name %.80q is not <server>.<tool> of its pin (%.30q, %.80q)", name, m.Server, m.Name)
	case t.Function != "":
		return refuse(RuleMCPTool, "MCP tool %s names a function", name)
	case !slices.Contains(MCPProtocols, m.Protocol):
		return refuse(RuleMCPTool, "MCP tool %s: protocol revision %.30q is not one of %s", name, m.Protocol, strings.Join(MCPProtocols, ", "))
	case m.Annotations != nil && !json.Valid(m.Annotations):
		return refuse(RuleMCPTool, "MCP tool %s: annotations are not JSON", name)
	case t.TimeoutSeconds > MCPToolTimeout:
		return refuse(RuleMCPTool, "MCP tool %s: timeout_seconds %d is over %d, the mcp-call function's timeout", name, t.TimeoutSeconds, MCPToolTimeout)
	}
	if _, err := ParseMCPURLAuth(m.URL, m.Auth); err != nil {
		return refuse(RuleMCPTool, "MCP tool %s: server URL: %v", name, err)
	}
	return checkPolicy(id, name, t)
}

// Lister lists an MCP server's tools (every page) and says which revision
// it negotiated: shared/mcptool's, under the http tool's address rules.
type Lister func(ctx context.Context, url string) (Listed, error)

// ParseDraft decodes a draft toolset strictly: a toolset document without
// an id, with a name and no base (a derived toolset's tools are its
// base's), naming at least one MCP server, no other tool of which is an
// MCP tool (registration pins those from the listing), whose tools and
// header are
// checked once it is resolved (ResolveMCP, then Verify). As Parse, it
// takes only a document whose members are the draft's fields in their
// exact names, once each, with no member its form leaves out
// (MarshalIndent's form): the caller proof binds the document's bytes, so
// they must say exactly what is registered. A server's auth must be in
// its pinned form (CanonicalAuth, RuleAuth), and its URL one
// ParseMCPURLAuth accepts with it.
func ParseDraft(data []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ts Toolset
	if err := dec.Decode(&ts); err != nil {
		return nil, refuse("", RuleFormat, "decode draft toolset: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	switch {
	case dec.More():
		return nil, refuse("", RuleFormat, "data after the draft toolset object")
	case ts.ID != "":
		return nil, refuse(ts.ID, RuleFormat, "a draft toolset has no id")
	case ts.Name == "":
		return nil, refuse("", RuleFormat, "a draft toolset has a name")
	case ts.Base != "":
		return nil, refuse("", RuleFormat, "a draft toolset has no base: a derived toolset's tools are its base's, and it names no MCP server")
	case len(ts.MCPServers) == 0:
		return nil, refuse("", RuleFormat, "a draft toolset names MCP servers; this one names none")
	case ts.Observed != nil:
		return nil, refuse("", RuleFormat, "a draft toolset carries no observed shapes: they are a lock's")
	case len(ts.MCPServers) > MaxMCPServers:
		return nil, refuse("", RuleFormat, "a toolset names at most %d MCP servers", MaxMCPServers)
	}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		if ts.Tools[name].MCP != nil {
			return nil, refuse("", RuleMCPTool, "tool %.80q is pinned as an MCP tool: a draft's MCP tools are pinned by registration, from the listing of the servers it names", name)
		}
	}
	for key, srv := range ts.MCPServers {
		switch {
		case !tool.MCPServerPattern.MatchString(key):
			return nil, refuse("", RuleMCPTool, "server key %.40q does not match %s", key, tool.MCPServerPattern)
		case len(srv.Admit) == 0 || len(srv.Admit) > MaxMCPTools:
			return nil, refuse("", RuleMCPTool, "server %s admits %d tools; 1 to %d", key, len(srv.Admit), MaxMCPTools)
		}
		if srv.Auth != nil {
			c, err := CanonicalAuth(*srv.Auth, true)
			switch {
			case err != nil:
				return nil, refuse("", RuleAuth, "server %s: %v", key, err)
			case c != *srv.Auth:
				return nil, refuse("", RuleAuth, "server %s: auth is not in its pinned form (header in canonical form)", key)
			}
		}
		if _, err := ParseMCPURLAuth(srv.URL, srv.Auth); err != nil {
			return nil, refuse("", RuleMCPTool, "server %s: URL: %v", key, err)
		}
		for _, name := range srv.Admit {
			if !tool.MCPToolNamePattern.MatchString(name) {
				return nil, refuse("", RuleMCPTool, "server %s admits %.80q, which is not an MCP tool name (%s)", key, name, tool.MCPToolNamePattern)
			}
		}
	}
	shown, err := jcs.Transform(data)
	if err != nil {
		return nil, refuse("", RuleFormat, "the draft is not canonicalizable JSON (RFC 8785): %v", err)
	}
	decoded, err := json.Marshal(&ts)
	if err == nil {
		decoded, err = jcs.Transform(decoded)
	}
	if err != nil || !bytes.Equal(shown, decoded) {
		return nil, refuse("", RuleFormat, "the draft holds members that are not its fields in their exact names, once each, or members its form leaves out (write it as toolgate writes a draft)")
	}
	return &ts, nil
}

// Bounds of a draft: servers per toolset, and tools admitted per server.
const (
	MaxMCPServers = 16
	MaxMCPTools   = 64
)

// ResolveMCP lists each MCP server of draft ts with list (in key order)
// and returns the registered form: its tools with the admitted MCP tools
// pinned, no MCPServers, and its id. A server URL ParseMCPURLAuth refuses
// (with the server's Auth) is
// an error naming the server before any server is listed, and so is a
// server that cannot be listed, or that does not list an admitted tool; a
// pinned name that is already a tool of ts too. The result still needs
// Verify.
func (ts *Toolset) ResolveMCP(ctx context.Context, list Lister) (*Toolset, error) {
	out := &Toolset{Name: ts.Name, Base: ts.Base, Tools: maps.Clone(ts.Tools), FetchHosts: ts.FetchHosts, HTTPHosts: ts.HTTPHosts, Workflows: ts.Workflows, OnSchemaChange: ts.OnSchemaChange}
	if out.Tools == nil {
		out.Tools = map[string]Tool{}
	}
	keys := slices.Sorted(maps.Keys(ts.MCPServers))
	for _, key := range keys {
		if _, err := ParseMCPURLAuth(ts.MCPServers[key].URL, ts.MCPServers[key].Auth); err != nil {
			return nil, fmt.Errorf("MCP server %s (%s): %w", key, MCPURLShown(ts.MCPServers[key].URL), err)
		}
	}
	for _, key := range keys {
		srv := ts.MCPServers[key]
		l, err := list(ctx, srv.URL)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s (%s): %w", key, MCPURLShown(srv.URL), err)
		}
		pinned, err := srv.Pin(key, l)
		if err != nil {
			return nil, err
		}
		for name, t := range pinned {
			if _, dup := out.Tools[name]; dup {
				return nil, fmt.Errorf("MCP tool %s is already a tool of the toolset", name)
			}
			out.Tools[name] = t
		}
	}
	return out.withID()
}

// cloneAuth returns a copy of a (nil for nil), so that pins never share
// a declaration.
func cloneAuth(a *Auth) *Auth {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}
