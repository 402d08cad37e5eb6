package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	pathpkg "path"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Rule ids of toolset files (docs/toolsets.md), besides the Solution
// grammar's syntax, unknown-field, missing-field, invalid-value,
// unknown-tool, fetch-host and retry.
const (
	RuleToolSchema = "tool-schema" // a platform tool's input or output schema that does not compile, cannot be read, or is past toolset.CheckSchemaSize's bounds
	RulePolicy     = "policy"      // a policy or review requirement weaker than the catalog's (or the base's), or a platform tool at_least_once without idempotent or tolerate_duplicates
	RuleBase       = "base"        // a base that does not exist, or a derived toolset adding or dropping tools
	RuleToolset    = "toolset"     // the registration check (toolset.Verify) refuses the pinned toolset
	RuleMCPServer  = "mcp-server"  // an MCP server entry's key, URL or admit list, a policy for a tool it does not admit, or too many servers
	// RuleToolsetSize: the pinned toolset (a toolset file's, or the one a
	// Solution pins) is over toolset.MaxBodyBytes in its RFC 8785 form, so
	// its table item could not be written (toolset.CheckSize).
	RuleToolsetSize = toolset.RuleSize
)

// checkToolsetSize reports, at pos, a toolset over toolset.MaxBodyBytes
// (RuleToolsetSize), naming its largest schemas. It reports whether ts fits.
func checkToolsetSize(ds *diags, pos Pos, what string, ts *toolset.Toolset) bool {
	err := ts.CheckSize()
	var refusal *toolset.Refusal
	switch {
	case err == nil:
		return true
	case errors.As(err, &refusal) && refusal.Rule == toolset.RuleSize:
		ds.errorf(pos, RuleToolsetSize, "%s cannot be registered: %s; make schemas smaller, or split the tools into several toolsets", what, refusal.Reason)
	default:
		ds.errorf(pos, RuleToolset, "%v", err)
	}
	return false
}

// ErrToolsetNotFound is what a ToolsetOptions.Lookup (or Options.Toolsets)
// returns, wrapped, for an id it has no toolset for.
var ErrToolsetNotFound = errors.New("toolset not found")

// ToolsetOptions tune CompileToolset.
type ToolsetOptions struct {
	// Catalog is the set of built-in tools; nil means catalog.Default().
	Catalog *catalog.Catalog
	// Lookup finds a registered toolset by id, for a base: a lock file in
	// the toolsets directory (the CLI) or the ledger table's item (the
	// publish function). It returns an error wrapping ErrToolsetNotFound
	// when there is none. nil: every base is refused as not found.
	Lookup func(id string) (*toolset.Toolset, error)
	// ReadFile reads a schema file a platform tool names, by its path
	// relative to the toolset file's directory ("/"-separated, no ".."
	// segment). nil: schema files are refused.
	ReadFile func(rel string) ([]byte, error)
}

// ToolsetResult is the outcome of resolving one toolset file.
type ToolsetResult struct {
	File        string
	Diagnostics []Diagnostic // at most MaxDiagnostics
	// Counts are the file's errors and warnings, those Diagnostics
	// leaves out included.
	Counts Counts
	// Toolset is the pinned toolset with its id; nil when there is an
	// error. For a draft it is the draft: no id, its MCP servers in
	// MCPServers.
	Toolset *toolset.Toolset
	// Draft is set when the file names MCP servers: their tools, and so
	// the toolset's content and id, are known only once registration
	// lists them (the publish function, toolset.ResolveMCP). Toolset is
	// then a draft (toolset.ParseDraft reads it), with no id; every other
	// tool has been through the registration check.
	Draft bool
}

// OK reports whether the file has no error.
func (r *ToolsetResult) OK() bool {
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError {
			return false
		}
	}
	return true
}

// Keys of a toolset file, of a built-in tool's entry and of a platform
// tool's entry (docs/toolsets.md).
var (
	toolsetKeys  = []string{"toolset", "base", "tools", "workflows", "on_schema_change"}
	builtinKeys  = []string{"review_required", "policy", "hosts"}
	platformKeys = append([]string{"function", "description", "input_schema", "output_schema"}, contractKeys...)
	derivedKeys  = []string{"review_required", "policy", "hosts"}
	// contractKeys are the members of a tool's contract that a platform
	// tool's entry and an MCP tool's policy share.
	contractKeys = []string{"idempotent", "policy", "review_required", "timeout_seconds", "retry", "tolerate_duplicates"}
	mcpKeys      = []string{"mcp", "admit", "policy", "auth"}
)

// IsToolsetFile reports whether src is a toolset file rather than a
// Solution: one mapping with a "toolset" key and no "steps". It only sorts
// files: src is read as YAML, which reads JSON too, and CompileToolset or
// Compile then reads it in its file's format.
func IsToolsetFile(src []byte) bool {
	v, _, err := parseValue(src, formatYAML)
	return err == nil && v.kind == kMap && v.get("toolset") != nil && v.get("steps") == nil
}

// IsSolutionFile reports whether src is a Solution rather than a toolset
// file: one mapping with a "solution" or a "steps" key and no "toolset".
// A file that is neither, or that is not YAML, is not a Solution: read as
// a toolset file (CompileToolset), its diagnostics say what is wrong.
func IsSolutionFile(src []byte) bool {
	v, _, err := parseValue(src, formatYAML)
	return err == nil && v.kind == kMap && v.get("toolset") == nil && (v.get("solution") != nil || v.get("steps") != nil)
}

// CompileToolset resolves a toolset file (file names it in diagnostics
// and chooses its format, as for Compile) into the toolset it pins: its base's content when it names
// one, each built-in tool from the catalog with a policy that may only be
// stricter, each platform tool with its schemas compiled. A file naming
// MCP servers resolves to a draft (ToolsetResult.Draft): the servers with
// the tools they admit and their policies, to be listed and pinned at
// registration. Every problem is a diagnostic at the value that causes
// it; the toolset is set only when there is none.
func CompileToolset(file string, src []byte, opts ToolsetOptions) *ToolsetResult {
	res := &ToolsetResult{File: file}
	ds := &diags{file: file}
	defer func() { res.Diagnostics, res.Counts = ds.sorted() }()
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	v, ok := parseChecked(src, ds)
	if !ok {
		return res
	}
	tc := &toolsetCompiler{d: &decoder{ds: ds}, ds: ds, cat: opts.Catalog, opts: opts}
	ts := tc.decode(v)
	if ts == nil || ds.hasErrors() {
		return res
	}
	if len(ts.MCPServers) > 0 {
		// The registration check of everything but the MCP servers, whose
		// tools only registration lists.
		rest := *ts
		rest.MCPServers = nil
		var refusal *toolset.Refusal
		var err error
		if !checkToolsetSize(ds, v.pos, "toolset "+ts.Name+" (before its MCP servers' tools)", &rest) {
			return res
		}
		if rest.ID, err = rest.ComputeID(); err == nil {
			err = rest.Verify(opts.Catalog)
		}
		switch {
		case errors.As(err, &refusal):
			ds.errorf(v.pos, RuleToolset, "the registration check refuses it: [%s] %s", refusal.Rule, refusal.Reason)
		case err != nil:
			ds.errorf(v.pos, RuleToolset, "%v", err)
		default:
			res.Toolset, res.Draft = ts, true
		}
		return res
	}
	id, err := ts.ComputeID()
	if err != nil {
		ds.errorf(v.pos, RuleToolset, "%v", err)
		return res
	}
	ts.ID = id
	if !checkToolsetSize(ds, v.pos, "toolset "+ts.Name, ts) {
		return res
	}
	if err := ts.Verify(opts.Catalog); err != nil {
		ds.errorf(v.pos, RuleToolset, "the registration check refuses it: %v", err)
		return res
	}
	res.Toolset = ts
	return res
}

type toolsetCompiler struct {
	d    *decoder
	ds   *diags
	cat  *catalog.Catalog
	opts ToolsetOptions
}

func (tc *toolsetCompiler) decode(v *value) *toolset.Toolset {
	if !tc.d.mapping(v, "the toolset file", toolsetKeys, "toolset") {
		return nil
	}
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{}, FetchHosts: []string{}}
	var base *toolset.Toolset
	if f := v.get("base"); f != nil {
		base = tc.base(f)
		if base == nil {
			return nil
		}
		ts.Base = base.ID
	}
	for _, f := range v.fields {
		switch f.key {
		case "toolset":
			if name, ok := tc.d.str(&f, "toolset"); ok {
				if !toolset.NamePattern.MatchString(name) {
					tc.ds.errorf(f.val.pos, RuleInvalidValue, "toolset name %q must match %s", excerpt.BytesWithin(name, maxQuotedBytes, "..."), toolset.NamePattern)
				}
				ts.Name = name
			}
		case "workflows":
			for _, r := range tc.d.strings(&f, "workflows") {
				switch {
				case !toolset.NamePattern.MatchString(r.Name):
					tc.ds.errorf(r.Pos, RuleInvalidValue, "workflows: %q is not a Solution name (%s)", excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."), toolset.NamePattern)
				case slices.Contains(ts.Workflows, r.Name):
					tc.ds.errorf(r.Pos, RuleInvalidValue, "workflows lists %q twice", r.Name)
				default:
					ts.Workflows = append(ts.Workflows, r.Name)
				}
			}
			slices.Sort(ts.Workflows)
		case "on_schema_change":
			tc.onSchemaChange(ts, &f, base)
		}
	}
	if base != nil && v.get("on_schema_change") == nil {
		ts.OnSchemaChange = base.OnSchemaChange
	}
	tools := v.get("tools")
	switch {
	case base != nil:
		tc.derive(ts, base, tools)
	case tools == nil:
		tc.ds.errorf(v.pos, RuleMissingField, "the toolset file has no \"tools\" (a toolset without a base lists its tools)")
	case tools.val.kind != kMap || len(tools.val.fields) == 0:
		tc.ds.errorf(tools.val.pos, RuleInvalidValue, "tools must be a non-empty mapping of tool names to their entries")
	default:
		for _, f := range tools.val.fields {
			_, builtin := tc.cat.Lookup(f.key)
			switch {
			case builtin:
				tc.builtin(ts, f)
			case isMCPServer(f):
				tc.mcpServer(ts, f)
			default:
				tc.platform(ts, f)
			}
		}
		if n := len(ts.MCPServers); n > toolset.MaxMCPServers {
			tc.ds.errorf(tools.keyPos, RuleMCPServer, "the toolset names %d MCP servers; at most %d", n, toolset.MaxMCPServers)
		}
	}
	return ts
}

// onSchemaChange reads on_schema_change: park (pinned as "", the
// default) or allow_additive_input (docs/toolsets.md; docs/parking.md,
// "allow_additive_input"). A derived toolset's policies are no weaker than
// its base's, so it may write park over a base's allow_additive_input,
// never the reverse.
func (tc *toolsetCompiler) onSchemaChange(ts *toolset.Toolset, f *field, base *toolset.Toolset) {
	s, ok := tc.d.str(f, "on_schema_change")
	if !ok {
		return
	}
	switch s {
	case toolset.OnSchemaChangePark:
		ts.OnSchemaChange = ""
	case toolset.OnSchemaChangeAllowAdditiveInput:
		if base != nil && !base.AllowsAdditiveInput() {
			tc.ds.errorf(f.val.pos, RulePolicy, "on_schema_change %s is weaker than base %s's park: a derived toolset's policies may only be stricter", s, base.ID)
			return
		}
		ts.OnSchemaChange = s
	default:
		tc.ds.errorf(f.val.pos, RuleInvalidValue, "on_schema_change %q is not %s or %s", excerpt.BytesWithin(s, maxQuotedBytes, "..."), toolset.OnSchemaChangePark, toolset.OnSchemaChangeAllowAdditiveInput)
	}
}

// isMCPServer reports whether a tool entry names an MCP server (mcp: URL).
func isMCPServer(f field) bool { return f.val.kind == kMap && f.val.get("mcp") != nil }

// base reads the base: a toolset id that the lookup finds.
func (tc *toolsetCompiler) base(f *field) *toolset.Toolset {
	id, ok := tc.d.str(f, "base")
	if !ok {
		return nil
	}
	if !tool.ToolsetIDPattern.MatchString(id) {
		tc.ds.errorf(f.val.pos, RuleBase, "base %q is not a toolset id (%s)", excerpt.BytesWithin(id, maxQuotedBytes, "..."), tool.ToolsetIDPattern)
		return nil
	}
	if tc.opts.Lookup == nil {
		tc.ds.errorf(f.val.pos, RuleBase, "base %s does not exist: no toolset can be looked up here", id)
		return nil
	}
	b, err := tc.opts.Lookup(id)
	if err != nil {
		tc.ds.errorf(f.val.pos, RuleBase, "base %s does not exist: %v", id, err)
		return nil
	}
	return b
}

// entry returns a tool entry's mapping; null stands for {}.
func (tc *toolsetCompiler) entry(f field, what string, allowed []string) (*value, bool) {
	if f.val.kind == kNull {
		return &value{kind: kMap, pos: f.val.pos}, true
	}
	if !tc.d.mapping(f.val, what, allowed) {
		return nil, false
	}
	return f.val, true
}

// builtin pins a catalog tool, with a policy that may only be stricter.
func (tc *toolsetCompiler) builtin(ts *toolset.Toolset, f field) {
	what := fmt.Sprintf("tool %q", f.key)
	v, ok := tc.entry(f, what+" (a built-in tool)", builtinKeys)
	if !ok {
		return
	}
	c, _ := tc.cat.Lookup(f.key)
	t := toolset.Tool{Description: c.Description, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema,
		Idempotent: c.Idempotent, Policy: c.Policy, ReviewRequired: c.ReviewRequired}
	tc.tighten(&t, v, what, "the catalog's")
	hosts := v.get("hosts")
	switch {
	case hosts != nil && f.key != fetchTool && f.key != httpTool:
		tc.ds.errorf(hosts.keyPos, RuleUnknownField, "%s: hosts are for %s and %s only", what, fetchTool, httpTool)
	case f.key == fetchTool && hosts == nil:
		tc.ds.errorf(f.keyPos, RuleFetchHost, "%s has no hosts: without allowed hosts there is no fetch", what)
	case f.key == httpTool && hosts == nil:
		tc.ds.errorf(f.keyPos, RuleHTTPHost, "%s has no hosts: without host entries ({host, methods}) there is no http tool", what)
	case f.key == httpTool:
		ts.HTTPHosts = pinnedHTTPHosts(tc.d.httpHosts(hosts, what+" hosts", true))
	case hosts != nil:
		ts.FetchHosts = tc.hosts(hosts, what)
	}
	ts.Tools[f.key] = t
}

// tighten applies review_required and policy to t, refusing a weaker
// value than t has (from the catalog, or the base).
func (tc *toolsetCompiler) tighten(t *toolset.Tool, v *value, what, whose string) {
	if f := v.get("review_required"); f != nil {
		if b, ok := tc.boolean(f, what+" review_required"); ok {
			if t.ReviewRequired && !b {
				tc.ds.errorf(f.val.pos, RulePolicy, "%s review_required: false is weaker than %s review_required: true; a toolset may make a policy stricter, never weaker", what, whose)
			} else {
				t.ReviewRequired = b
			}
		}
	}
	if f := v.get("policy"); f != nil {
		if p, ok := tc.policy(f, what); ok {
			if t.Policy == catalog.AtMostOnce && p != catalog.AtMostOnce {
				tc.ds.errorf(f.val.pos, RulePolicy, "%s policy %s is weaker than %s at_most_once; a toolset may make a policy stricter, never weaker", what, p, whose)
			} else {
				t.Policy = p
			}
		}
	}
}

func (tc *toolsetCompiler) boolean(f *field, what string) (bool, bool) {
	if f.val.kind != kBool {
		tc.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be true or false, not a %s", what, f.val.kind)
		return false, false
	}
	return f.val.b, true
}

func (tc *toolsetCompiler) policy(f *field, what string) (catalog.Policy, bool) {
	s, ok := tc.d.str(f, what+" policy")
	if !ok {
		return "", false
	}
	if p := catalog.Policy(s); p == catalog.AtLeastOnce || p == catalog.AtMostOnce {
		return p, true
	}
	tc.ds.errorf(f.val.pos, RuleInvalidValue, "%s policy %q is not at_least_once or at_most_once", what, excerpt.BytesWithin(s, maxQuotedBytes, "..."))
	return "", false
}

// hosts reads the http tool's hosts into their canonical form, sorted and
// unique.
func (tc *toolsetCompiler) hosts(f *field, what string) []string {
	var list hostlist.List
	refs := tc.d.strings(f, what+" hosts")
	if f.val.kind == kList && len(f.val.items) == 0 {
		tc.ds.errorf(f.val.pos, RuleFetchHost, "%s hosts is empty: without allowed hosts there is no fetch", what)
	}
	for _, r := range refs {
		e, err := hostlist.ParseEntry(r.Name)
		if err != nil {
			tc.ds.errorf(r.Pos, RuleFetchHost, "%s hosts: %v", what, err)
			continue
		}
		list = append(list, e)
	}
	out := slices.Compact(slices.Sorted(slices.Values(list.Strings())))
	if out == nil {
		out = []string{}
	}
	return out
}

// platform pins a platform tool: any Lambda function, with its own
// contract.
func (tc *toolsetCompiler) platform(ts *toolset.Toolset, f field) {
	what := fmt.Sprintf("tool %q", f.key)
	if !catalog.NamePattern.MatchString(f.key) {
		tc.ds.errorf(f.keyPos, RuleInvalidValue, "tool name %q must match %s", excerpt.BytesWithin(f.key, maxQuotedBytes, "..."), catalog.NamePattern)
		return
	}
	if f.val.kind != kMap || f.val.get("function") == nil {
		tc.ds.errorf(f.keyPos, RuleUnknownTool, "%s is not a built-in tool (%s), and a platform tool names its function: write function: ${Function...} or an ARN (or, for an MCP server, mcp: URL)", what, strings.Join(tc.cat.Names(), ", "))
		return
	}
	if !tc.d.mapping(f.val, what, platformKeys, "function", "input_schema", "output_schema", "timeout_seconds") {
		return
	}
	t := toolset.Tool{Policy: catalog.AtMostOnce}
	var at contractAt
	for _, pf := range f.val.fields {
		if tc.contractMember(&pf, what, &t, &at, catalog.MaxFunctionTimeout) {
			continue
		}
		switch pf.key {
		case "function":
			if s, ok := tc.d.str(&pf, what+" function"); ok {
				if !toolset.FunctionPattern.MatchString(s) && !toolset.LambdaARNPattern.MatchString(s) {
					tc.ds.errorf(pf.val.pos, RuleInvalidValue, "%s function %q is neither a placeholder ${Function<Name>} (letters and digits) nor a Lambda function ARN", what, excerpt.BytesWithin(s, maxQuotedBytes, "..."))
				}
				t.Function = s
			}
		case "description":
			t.Description, _ = tc.d.str(&pf, what+" description")
		case "input_schema":
			t.InputSchema = tc.schema(&pf, what+" input_schema")
		case "output_schema":
			t.OutputSchema = tc.schema(&pf, what+" output_schema")
		}
	}
	tc.checkContract(&t, at, what, "function")
	ts.Tools[f.key] = t
}

// contractAt is where a tool's policy and retry were written, for
// checkContract's diagnostics.
type contractAt struct{ policy, retry Pos }

// contractMember reads f into t when it is one of contractKeys, the
// members of the tool contract a platform tool and an MCP tool share
// (idempotent, policy, review_required, timeout_seconds of 1..maxTimeout,
// retry, tolerate_duplicates), and reports whether it was.
func (tc *toolsetCompiler) contractMember(f *field, what string, t *toolset.Tool, at *contractAt, maxTimeout int) bool {
	switch f.key {
	case "idempotent":
		t.Idempotent, _ = tc.boolean(f, what+" idempotent")
	case "policy":
		t.Policy, _ = tc.policy(f, what)
		at.policy = f.val.pos
	case "review_required":
		t.ReviewRequired, _ = tc.boolean(f, what+" review_required")
	case "timeout_seconds":
		t.TimeoutSeconds, _ = tc.d.integer(f, what+" timeout_seconds", 1, maxTimeout)
	case "retry":
		if r := tc.d.decodeRetry(f.val, what); r != nil {
			at.retry = r.Pos
			t.Retry = &catalog.Retry{MaxAttempts: r.MaxAttempts, IntervalSeconds: r.IntervalSeconds, BackoffRate: r.BackoffRate}
			if t.Retry.MaxAttempts == 0 {
				t.Retry.MaxAttempts = 1
			}
			if t.Retry.IntervalSeconds == 0 {
				t.Retry.IntervalSeconds = 1
			}
			if t.Retry.BackoffRate == 0 {
				t.Retry.BackoffRate = 2
			}
		}
	case "tolerate_duplicates":
		t.TolerateDuplicates, _ = tc.boolean(f, what+" tolerate_duplicates")
	default:
		return false
	}
	return true
}

// checkContract refuses a contract that could repeat a tool's effect
// (docs/design.md, "The tool contract"): a tool that does not honour
// idempotency keys runs again only where duplicates are tolerated, and
// at_least_once runs a call whose outcome is unknown again. runs names
// what receives the key ("function", "server").
func (tc *toolsetCompiler) checkContract(t *toolset.Tool, at contractAt, what, runs string) {
	if t.Policy == catalog.AtLeastOnce && !t.Idempotent && !t.TolerateDuplicates {
		tc.ds.errorf(at.policy, RulePolicy, "%s policy at_least_once would run a call whose outcome is unknown again, and idempotent is false, so its effect could repeat; set idempotent: true if the %s honours the idempotency key, tolerate_duplicates: true to accept duplicates, or policy: at_most_once", what, runs)
	}
	if t.Retry != nil && !t.Idempotent && t.Retry.MaxAttempts > 1 && !t.TolerateDuplicates {
		tc.ds.errorf(at.retry, RuleRetry, "%s: idempotent is false, so retry.max_attempts %d could repeat its effect; set tolerate_duplicates: true to accept duplicates, or max_attempts: 1", what, t.Retry.MaxAttempts)
	}
}

// mcpServer reads an MCP server entry of a toolset without a base: its
// URL (mcp), the tools it admits by their exact MCP names (admit), a
// policy per admitted tool (policy, contractKeys) and how it is presented
// a credential (auth, decoder.auth; the URL then checked with it,
// toolset.ParseMCPURLAuth). The draft's server is
// listed and its admitted tools pinned at registration
// (toolset.ResolveMCP), each at_most_once and not idempotent unless its
// policy says otherwise; what the server's annotations say never changes
// that.
func (tc *toolsetCompiler) mcpServer(ts *toolset.Toolset, f field) {
	what := fmt.Sprintf("MCP server %q", f.key)
	switch {
	case strings.Contains(f.key, "."):
		tc.ds.errorf(f.keyPos, RuleMCPServer, "%s: a server's key has no \".\": its tools are named <server>.<tool>, split at the first dot (the key must match %s)", what, tool.MCPServerPattern)
		return
	case !tool.MCPServerPattern.MatchString(f.key):
		tc.ds.errorf(f.keyPos, RuleMCPServer, "%s: a server's key must match %s", what, tool.MCPServerPattern)
		return
	}
	if !tc.d.mapping(f.val, what, mcpKeys, "mcp", "admit") {
		return
	}
	srv := toolset.MCPServer{}
	authOK := true
	if a := f.val.get("auth"); a != nil {
		srv.Auth, authOK = tc.d.auth(a, what+" auth", RuleMCPServer, true)
	}
	if u := f.val.get("mcp"); u != nil {
		if s, ok := tc.d.str(u, what+" mcp"); ok {
			if _, err := toolset.ParseMCPURLAuth(s, srv.Auth); err != nil && authOK {
				tc.ds.errorf(u.val.pos, RuleMCPServer, "%s mcp %q is not a URL toolgate can call: %v", what, excerpt.BytesWithin(toolset.MCPURLShown(s), maxQuotedBytes, "..."), err)
			}
			srv.URL = s
		}
	}
	if a := f.val.get("admit"); a != nil {
		refs := tc.d.strings(a, what+" admit")
		if a.val.kind == kList && len(a.val.items) == 0 {
			tc.ds.errorf(a.val.pos, RuleMCPServer, "%s admit is empty: a server admits the tools a toolset may call, by their exact names", what)
		}
		if len(refs) > toolset.MaxMCPTools {
			tc.ds.errorf(a.val.pos, RuleMCPServer, "%s admits %d tools; at most %d", what, len(refs), toolset.MaxMCPTools)
		}
		for _, r := range refs {
			switch {
			case !tool.MCPToolNamePattern.MatchString(r.Name):
				tc.ds.errorf(r.Pos, RuleMCPServer, "%s admit: %q is not an MCP tool name (%s)", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."), tool.MCPToolNamePattern)
			case slices.Contains(srv.Admit, r.Name):
				tc.ds.errorf(r.Pos, RuleMCPServer, "%s admits %q twice", what, r.Name)
			default:
				srv.Admit = append(srv.Admit, r.Name)
			}
		}
	}
	if p := f.val.get("policy"); p != nil {
		srv.Policies = tc.mcpPolicies(f.key, p, srv.Admit)
	}
	if ts.MCPServers == nil {
		ts.MCPServers = map[string]toolset.MCPServer{}
	}
	ts.MCPServers[f.key] = srv
}

// mcpPolicies reads a server's policy mapping: admitted tool name → its
// contract (contractKeys), with a platform tool's rules and a timeout of
// at most toolset.MCPToolTimeout seconds, the mcp-call function's own.
func (tc *toolsetCompiler) mcpPolicies(server string, p *field, admit []string) map[string]toolset.MCPPolicy {
	what := fmt.Sprintf("MCP server %q", server)
	if p.val.kind != kMap {
		tc.ds.errorf(p.val.pos, RuleInvalidValue, "%s policy must be a mapping of admitted tool names to their policies, not a %s", what, p.val.kind)
		return nil
	}
	out := map[string]toolset.MCPPolicy{}
	for _, f := range p.val.fields {
		tool := fmt.Sprintf("tool %q", server+"."+f.key)
		if !slices.Contains(admit, f.key) {
			tc.ds.errorf(f.keyPos, RuleMCPServer, "%s policy names %q, which admit does not list: admit it, or leave its policy out", what, excerpt.BytesWithin(f.key, maxQuotedBytes, "..."))
			continue
		}
		v, ok := tc.entry(f, tool+" (an MCP tool's policy)", contractKeys)
		if !ok {
			continue
		}
		t := toolset.Tool{Policy: catalog.AtMostOnce}
		var at contractAt
		for _, pf := range v.fields {
			tc.contractMember(&pf, tool, &t, &at, toolset.MCPToolTimeout)
		}
		tc.checkContract(&t, at, tool, "server")
		out[f.key] = toolset.MCPPolicy{Policy: t.Policy, Idempotent: t.Idempotent, ReviewRequired: t.ReviewRequired,
			TimeoutSeconds: t.TimeoutSeconds, Retry: t.Retry, TolerateDuplicates: t.TolerateDuplicates}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// schema reads a JSON Schema written inline (a mapping or a boolean) or
// in a file named relative to the toolset file, and compiles it as JSON
// Schema 2020-12; it returns the schema as JSON.
func (tc *toolsetCompiler) schema(f *field, what string) json.RawMessage {
	v := f.val
	from := ""
	if v.kind == kString {
		rel := v.str
		if tc.opts.ReadFile == nil || rel == "" || pathpkg.IsAbs(rel) || strings.Contains(rel, "\\") || slices.Contains(strings.Split(rel, "/"), "..") {
			tc.ds.errorf(v.pos, RuleToolSchema, "%s names the file %q: a schema file is a path relative to the toolset file's directory, without \"..\"", what, excerpt.BytesWithin(rel, maxQuotedBytes, "..."))
			return nil
		}
		src, err := tc.opts.ReadFile(rel)
		if err != nil {
			tc.ds.errorf(v.pos, RuleToolSchema, "%s: the file %q cannot be read: %v", what, excerpt.BytesWithin(rel, maxQuotedBytes, "..."), errors.Unwrap(err))
			return nil
		}
		fv, at, err := parseValue(src, formatOf(rel))
		if err == nil {
			if bad := refusedNumbers(fv); len(bad) > 0 {
				at, err = bad[0].pos, errors.New(bad[0].String())
			}
		}
		if err != nil {
			tc.ds.errorf(v.pos, RuleToolSchema, "%s: the file %q is not one YAML or JSON value: %d:%d: %v", what, excerpt.BytesWithin(rel, maxQuotedBytes, "..."), at.Line, at.Column, err)
			return nil
		}
		v, from = fv, fmt.Sprintf(" (file %s)", rel)
	}
	if v.kind != kMap && v.kind != kBool {
		tc.ds.errorf(f.val.pos, RuleToolSchema, "%s must be a JSON Schema (a mapping or a boolean) or a file name, not a %s", what, v.kind)
		return nil
	}
	raw, err := json.Marshal(v.plain())
	if err != nil {
		tc.ds.errorf(f.val.pos, RuleToolSchema, "%s: %v", what, err)
		return nil
	}
	// The registration check's bounds, here at the schema or at the line
	// naming its file, rather than at the toolset file's start when
	// toolset.Verify refuses; and before compiling, which a schema past
	// them can make slow.
	if err := toolset.CheckSchemaSize(raw); err != nil {
		tc.ds.errorf(f.val.pos, RuleToolSchema, "%s%s %v: a pinned schema is at most %d bytes (64 KiB) of compact JSON, nested at most %d levels, with at most %d reference keywords", what, from, err, toolset.MaxSchemaBytes, toolset.MaxSchemaDepth, toolset.MaxSchemaRefs)
		return nil
	}
	if _, err := schema.CompileValue(v.plain()); err != nil {
		for _, p := range schema.Problems(err, nil) {
			at := f.val.pos
			if from == "" {
				at = locate(v, p.Location)
			}
			tc.ds.errorf(at, RuleToolSchema, "%s%s does not compile as JSON Schema 2020-12: %s%s: %s", what, from, what[strings.LastIndex(what, " ")+1:], strings.ReplaceAll(p.Location, "/", "."), p.Message)
		}
		return nil
	}
	return raw
}

// derive pins a toolset derived from base: base's tools, each with a
// policy that may only be stricter, and the file's own workflows. When
// the file lists tools, it lists every tool of the base and no other.
func (tc *toolsetCompiler) derive(ts *toolset.Toolset, base *toolset.Toolset, tools *field) {
	ts.Tools = maps.Clone(base.Tools)
	ts.FetchHosts = slices.Clone(base.FetchHosts)
	ts.HTTPHosts = slices.Clone(base.HTTPHosts)
	if tools == nil {
		return
	}
	if tools.val.kind != kMap {
		tc.ds.errorf(tools.val.pos, RuleInvalidValue, "tools must be a mapping of the base's tool names to stricter policies")
		return
	}
	listed := map[string]bool{}
	for _, f := range tools.val.fields {
		listed[f.key] = true
		what := fmt.Sprintf("tool %q", f.key)
		t, ok := base.Tools[f.key]
		if !ok && isMCPServer(f) {
			tc.ds.errorf(f.keyPos, RuleBase, "MCP server %q: a derived toolset has its base's tools and adds no MCP server; name the server in a toolset without a base", excerpt.BytesWithin(f.key, maxQuotedBytes, "..."))
			continue
		}
		if !ok {
			tc.ds.errorf(f.keyPos, RuleBase, "%s is not a tool of base %s (%s): a derived toolset has its base's tools; adding one makes a new toolset, without a base", what, base.ID, strings.Join(slices.Sorted(maps.Keys(base.Tools)), ", "))
			continue
		}
		v, ok := tc.entry(f, what+" (in a derived toolset)", derivedKeys)
		if !ok {
			continue
		}
		tc.tighten(&t, v, what, "base "+base.ID+"'s")
		if h := v.get("hosts"); h != nil {
			switch f.key {
			case fetchTool:
				narrowed := tc.hosts(h, what)
				for _, e := range narrowed {
					if !slices.Contains(base.FetchHosts, e) {
						tc.ds.errorf(h.val.pos, RulePolicy, "%s hosts: %s is not a host of base %s (%s): a derived toolset may narrow the hosts, never widen them", what, e, base.ID, strings.Join(base.FetchHosts, ", "))
					}
				}
				ts.FetchHosts = narrowed
			case httpTool:
				ts.HTTPHosts = tc.narrowHTTP(h, what, base)
			default:
				tc.ds.errorf(h.keyPos, RuleUnknownField, "%s: hosts are for %s and %s only", what, fetchTool, httpTool)
			}
		}
		ts.Tools[f.key] = t
	}
	var dropped []string
	for _, name := range slices.Sorted(maps.Keys(base.Tools)) {
		if !listed[name] {
			dropped = append(dropped, name)
		}
	}
	if len(dropped) > 0 {
		tc.ds.errorf(tools.keyPos, RuleBase, "tools leaves out %s of base %s: a derived toolset has all its base's tools; dropping one makes a new toolset, without a base (or leave tools out to take them all)", strings.Join(dropped, ", "), base.ID)
	}
}

// narrowHTTP reads a derived toolset's http host entries: each must
// narrow its base's entry for the same host (toolset.NarrowsHTTPHost:
// methods and headers among the base's, its idempotency or none), and an
// entry of the base they leave out must not hand its hosts to a wider
// entry that allows more there (toolset.CheckDroppedHTTPHosts).
func (tc *toolsetCompiler) narrowHTTP(h *field, what string, base *toolset.Toolset) []toolset.HTTPHost {
	entries := tc.d.httpHosts(h, what+" hosts", true)
	for i, e := range entries {
		// An entry written without auth keeps its base's: a derived
		// toolset never changes a declaration (toolset.NarrowsHTTPHost).
		if j := slices.IndexFunc(base.HTTPHosts, func(b toolset.HTTPHost) bool { return b.Host == e.Host }); j >= 0 && e.Auth == nil && base.HTTPHosts[j].Auth != nil {
			entries[i].Auth = base.HTTPHosts[j].Auth
		}
	}
	for _, e := range entries {
		i := slices.IndexFunc(base.HTTPHosts, func(b toolset.HTTPHost) bool { return b.Host == e.Host })
		if i < 0 {
			tc.ds.errorf(e.Pos, RulePolicy, "%s hosts: %s is not a host of base %s (%s): a derived toolset may narrow the hosts, never widen them", what, e.Host, base.ID, httpHostsShown(base.HTTPHosts))
			continue
		}
		if err := toolset.NarrowsHTTPHost(e.HTTPHost, base.HTTPHosts[i]); err != nil {
			tc.ds.errorf(e.Pos, RulePolicy, "%s hosts: %v: a derived toolset may narrow an entry (drop methods, headers or its idempotency), never widen it", what, err)
		}
	}
	pinned := pinnedHTTPHosts(entries)
	if err := toolset.CheckDroppedHTTPHosts(pinned, base.HTTPHosts); err != nil {
		tc.ds.errorf(h.val.pos, RulePolicy, "%s hosts: %v: a derived toolset may drop an entry only where no wider entry it keeps allows more", what, err)
	}
	return pinned
}
