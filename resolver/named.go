package resolver

import (
	"errors"
	"maps"
	"slices"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ProxyFunction is toolgate's function that runs the dispatcher for every
// platform tool and then invokes the tool's own function (the envelope's
// "function"): a platform tool's Task invokes it (docs/toolsets.md).
const ProxyFunction = "lambda-tool"

// MCPFunction is toolgate's function that runs the dispatcher for every
// MCP tool, checks the tool's definition on its server against the pin and
// sends the call (functions/mcp-call): an MCP tool's Task invokes it
// (docs/tools.md, "MCP tools").
const MCPFunction = "mcp-call"

// namedToolset finds the toolset a Solution names and refuses what cannot
// go with it: an id that is not one, a toolset not found, and
// policy.fetch_hosts or policy.http_hosts (the toolset pins the hosts). It returns nil after
// reporting.
func namedToolset(ds *diags, sol *Solution, opts Options) *toolset.Toolset {
	id := sol.Toolset.Name
	switch {
	case !tool.ToolsetIDPattern.MatchString(id):
		ds.errorf(sol.Toolset.Pos, RuleToolset, "toolset %q is not a toolset id (%s): name a registered toolset by its id", excerpt.BytesWithin(id, maxQuotedBytes, "..."), tool.ToolsetIDPattern)
		return nil
	case opts.Toolsets == nil:
		ds.errorf(sol.Toolset.Pos, RuleToolset, "toolset %s: no registered toolset can be looked up here", id)
		return nil
	}
	ts, err := opts.Toolsets(id)
	if errors.Is(err, ErrToolsetNotFound) {
		ds.errorf(sol.Toolset.Pos, RuleToolset, "toolset %s is not found: %v; register its file with toolgate toolset register", id, err)
		return nil
	}
	if err != nil {
		ds.errorf(sol.Toolset.Pos, RuleToolset, "toolset %s: %v", id, err)
		return nil
	}
	if len(sol.FetchHosts) > 0 {
		ds.errorf(sol.FetchPos, RuleFetchHost, "policy.fetch_hosts cannot go with toolset %s: the toolset pins the hosts structured-data-fetch may reach (%v)", id, ts.FetchHosts)
		return nil
	}
	if len(sol.HTTPHosts) > 0 {
		ds.errorf(sol.HTTPPos, RuleHTTPHost, "policy.http_hosts cannot go with toolset %s: the toolset pins the hosts and methods the http tool may use (%s)", id, httpHostsShown(ts.HTTPHosts))
		return nil
	}
	for _, h := range ts.FetchHosts {
		sol.FetchHosts = append(sol.FetchHosts, Ref{Name: h, Pos: sol.Toolset.Pos, Set: true})
	}
	for _, h := range ts.HTTPHosts {
		sol.HTTPHosts = append(sol.HTTPHosts, HTTPHostEntry{HTTPHost: h, Pos: sol.Toolset.Pos})
	}
	return ts
}

// toolsetCatalog is the catalog a Solution on toolset ts is checked
// against: exactly ts's tools, with its pinned policies, review
// requirements and schemas. A built-in keeps the catalog's function,
// timeout and retry; a platform tool runs in ProxyFunction and an MCP tool
// in MCPFunction, each with its pinned timeout (its Task waits that plus
// catalog.TaskTimeoutMargin) and retry (one attempt when none is pinned).
func toolsetCatalog(base *catalog.Catalog, ts *toolset.Toolset) *catalog.Catalog {
	var tools []*catalog.Tool
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		p := ts.Tools[name]
		t := &catalog.Tool{Name: name, Description: p.Description, Idempotent: p.Idempotent, Policy: p.Policy,
			ReviewRequired: p.ReviewRequired, InputSchema: p.InputSchema, OutputSchema: p.OutputSchema}
		b, builtin := base.Lookup(name)
		switch {
		case p.MCP != nil:
			t.Retry, t.FunctionTimeoutSeconds, t.Function = pinnedRetry(p), p.TimeoutSeconds, MCPFunction
		case p.Platform():
			t.Retry, t.FunctionTimeoutSeconds, t.Function = pinnedRetry(p), p.TimeoutSeconds, ProxyFunction
		case builtin:
			t.Retry, t.FunctionTimeoutSeconds, t.Function = b.Retry, b.FunctionTimeoutSeconds, b.Function
		default:
			continue // no function runs it: never admitted
		}
		tools = append(tools, t)
	}
	return catalog.New(tools)
}

// pinnedRetry is a platform or MCP tool's pinned retry, or one attempt.
func pinnedRetry(p toolset.Tool) catalog.Retry {
	if p.Retry != nil {
		return *p.Retry
	}
	return catalog.Retry{MaxAttempts: 1, IntervalSeconds: 1, BackoffRate: 2}
}

// pinNamed is the toolset a run of a Solution on named pins: named
// itself, or, when policy.review_before requires a review named does not,
// a toolset derived from it (base: named) with those reviews, which the
// publish function registers with the Solution.
func pinNamed(named *toolset.Toolset, reviewBefore []string) (*toolset.Toolset, error) {
	tools := maps.Clone(named.Tools)
	changed := false
	for _, name := range reviewBefore {
		if t, ok := tools[name]; ok && !t.ReviewRequired {
			t.ReviewRequired, changed = true, true
			tools[name] = t
		}
	}
	if !changed {
		return named, nil
	}
	d := &toolset.Toolset{Name: named.Name, Base: named.ID, Tools: tools, FetchHosts: named.FetchHosts, HTTPHosts: named.HTTPHosts, Workflows: named.Workflows, OnSchemaChange: named.OnSchemaChange}
	id, err := d.ComputeID()
	if err != nil {
		return nil, err
	}
	d.ID = id
	return d, nil
}
