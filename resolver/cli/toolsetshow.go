package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// writeAtomic writes data to path through a temporary file in its
// directory, renamed over it, so that a reader never sees half a file.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// toolsetReader finds toolsets by id for toolset show and diff: the
// locks in --toolsets DIR first, then, for an id no lock holds, the
// registered item, read through the publish function when one is named.
type toolsetReader struct {
	fn     publishFunction
	prover *prover // signed with on the first read through the function
}

// errNoToolset is a toolset id that no lock holds and, when a publish
// function was asked, that is not registered.
var errNoToolset = errors.New("not found")

// readFor is read for the command cmd, named name in its messages: the
// toolset, or nil and the exit code, having printed why (a misuse, exit
// 2, for a malformed id; exit 1 when it cannot be read).
func (r *toolsetReader) readFor(ctx context.Context, cmd *cobra.Command, name, id string) (*toolset.Toolset, int) {
	ts, err := r.read(ctx, id)
	var bad *misuseError
	switch {
	case errors.As(err, &bad):
		return nil, misuse(cmd, "%v", err)
	case err != nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", name, err)
		return nil, ExitErrors
	}
	return ts, ExitOK
}

// read returns toolset id. A malformed id is a *misuseError; an id found
// nowhere an error wrapping errNoToolset.
func (r *toolsetReader) read(ctx context.Context, id string) (*toolset.Toolset, error) {
	if !tool.ToolsetIDPattern.MatchString(id) {
		return nil, &misuseError{fmt.Sprintf("%.40q is not a toolset id (%s)", id, tool.ToolsetIDPattern)}
	}
	ts, err := resolver.LockLookup(r.fn.app.toolsetsDir)(id)
	switch {
	case err == nil:
		return ts, nil
	case !errors.Is(err, resolver.ErrToolsetNotFound):
		return nil, fmt.Errorf("toolset %s: --toolsets %s: %v", id, r.fn.app.toolsetsDir, err)
	case !r.fn.named():
		return nil, fmt.Errorf("toolset %s: %w: no lock file (*%s) in --toolsets %s holds it (%s), and no publish function is named to read the registered toolset from (--url or $%s; --function-endpoint with --as on the local stack)",
			id, errNoToolset, resolver.LockSuffix, r.fn.app.toolsetsDir, lookedIn(r.fn.app.toolsetsDir), EnvPublishURL)
	}
	if r.prover == nil {
		if r.prover, err = r.fn.app.newProver(ctx, r.fn.as); err != nil {
			return nil, err
		}
	}
	out, code, msg, err := r.fn.showCall(ctx, r.prover, id)
	switch {
	case err != nil:
		return nil, fmt.Errorf("toolset %s: %v", id, err)
	case code == publishapi.CodeNotFound:
		return nil, fmt.Errorf("toolset %s: %w: no lock file (*%s) in --toolsets %s holds it (%s), and the publish function says: %s: %s", id, errNoToolset, resolver.LockSuffix, r.fn.app.toolsetsDir, lookedIn(r.fn.app.toolsetsDir), code, msg)
	case code != "":
		return nil, fmt.Errorf("toolset %s: the publish function refused the read: %s: %s", id, code, msg)
	}
	return registeredToolset(id, out)
}

// lookedIn says where the locks of --toolsets dir were looked for: the
// directory's absolute path, and that it does not exist, holds no lock
// file, or how many it holds; then that --toolsets names another.
func lookedIn(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	var found string
	switch info, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		found = "which does not exist"
	case err != nil:
		found = "which cannot be read: " + err.Error()
	case !info.IsDir():
		found = "which is not a directory"
	default:
		locks, _ := filepath.Glob(filepath.Join(dir, "*"+resolver.LockSuffix))
		switch len(locks) {
		case 0:
			found = "which holds no lock file"
		case 1:
			found = "which holds 1 lock file"
		default:
			found = fmt.Sprintf("which holds %d lock files", len(locks))
		}
	}
	return fmt.Sprintf("looked in %s, %s; --toolsets DIR looks in another directory", abs, found)
}

// registeredToolset reads the publish function's answer to a read of
// toolset id (publishapi.ShowResult) and believes it only as far as it checks
// here: the body is exactly the RFC 8785 form of a toolset
// (toolset.ParseStored), its digest, recomputed, is the id asked for, and
// it passes the registration check (toolset.Verify) against this CLI's
// catalog.
func registeredToolset(id string, out []byte) (*toolset.Toolset, error) {
	var res publishapi.ShowResult
	if err := json.Unmarshal(out, &res); err != nil || res.Body == "" {
		return nil, fmt.Errorf("toolset %s: unexpected answer from the publish function: %.200s", id, out)
	}
	if res.ToolsetID != id {
		return nil, fmt.Errorf("toolset %s: the publish function answered with toolset %.40q", id, res.ToolsetID)
	}
	ts, err := toolset.ParseStored(id, []byte(res.Body))
	if err != nil {
		return nil, fmt.Errorf("toolset %s: the publish function's document: %v", id, err)
	}
	got, err := ts.ComputeID()
	if err != nil {
		return nil, fmt.Errorf("toolset %s: the publish function's document: %v", id, err)
	}
	if got != id {
		return nil, fmt.Errorf("toolset %s: the publish function's document digests to %s, not to the id asked for", id, got)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		return nil, fmt.Errorf("toolset %s: the publish function's document: %v", id, err)
	}
	return ts, nil
}

// misuseError is a command line argument the command cannot use.
type misuseError struct{ msg string }

func (e *misuseError) Error() string { return e.msg }

// newToolsetShowCmd is `toolgate toolset show ID`.
func (a *app) newToolsetShowCmd() *cobra.Command {
	var r toolsetReader
	var withShapes bool
	cmd := &cobra.Command{
		Use:   "show ID [--shapes] [--toolsets DIR] [--url URL | --function-endpoint URL --as NAME]",
		Short: "print what a toolset pins (its lock, or the registered toolset)",
		Long: `Prints the toolset ID pins, as its lock file holds it: the id, name, base,
tools with their schemas and policies (an MCP tool's server URL and auth),
fetch hosts, http host entries (with their auth), workflows and
on_schema_change (absent: park): an auth
declaration, never a credential, which a toolset never holds. The lock
is found among the *.lock.json in --toolsets DIR (default toolsets).
Control, format and bidirectional characters (a right-to-left override,
a zero-width space) are written as JSON escapes (\u202e): the same
document, with what a reader cannot see shown.

For an id no lock holds, show asks the stage's publish function for the
registered toolset (--url, default $` + EnvPublishURL + `; on the local stack
--function-endpoint with --as NAME), with a caller proof bound to the id,
and prints it only when its digest, recomputed, is the id and it passes
the registration check.

Exit 0 when it is printed; 1 when no lock holds it and it is not
registered (or the function refuses the read); 2 for a malformed id.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exit(misuse(cmd, "name one toolset id"))
			}
			if err := r.fn.check(); err != nil {
				return exit(misuse(cmd, "%v", err))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ts, code := r.readFor(ctx, cmd, "toolgate toolset show", args[0])
			if ts == nil {
				return exit(code)
			}
			if withShapes {
				var err error
				if ts.Observed, err = r.readShapes(ctx, ts); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "toolgate toolset show: %v\n", err)
					return exit(ExitErrors)
				}
			}
			doc, err := ts.MarshalIndent()
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "toolgate toolset show: %v\n", err)
				return exit(ExitErrors)
			}
			// Characters a reader cannot see, or that reorder what they
			// see, as JSON escapes: the same toolset, shown.
			cmd.OutOrStdout().Write(invisible.EscapeJSON(doc))
			return nil
		},
	}
	cmd.Flags().BoolVar(&withShapes, "shapes", false, "add the shapes its tools learned, read through the publish function, as the observed member (toolgate shapes)")
	r.fn.addFlags(a, cmd.Flags())
	a.addToolsetsFlag(cmd)
	return cmd
}

// newToolsetDiffCmd is `toolgate toolset diff A B`.
func (a *app) newToolsetDiffCmd() *cobra.Command {
	var r toolsetReader
	cmd := &cobra.Command{
		Use:   "diff A B [--toolsets DIR] [--url URL | --function-endpoint URL --as NAME]",
		Short: "print what changed from toolset A to toolset B (locks, or the registered toolsets)",
		Long: `Prints one line per difference from toolset A to toolset B: "+ tool NAME"
and "- tool NAME" for a tool only B or only A has, "~ tool NAME: MEMBER A → B"
for a changed member (schemas are compared in their RFC 8785 form and shown
as "changed"), "~ MEMBER: A → B" for name, base, fetch_hosts,
workflows and on_schema_change ("" is park), "~ tool NAME: mcp.url A → B" and "~ tool NAME: mcp.auth A → B"
for an MCP tool's server URL and auth declaration, and "+ http host HOST
{…}", "- http host HOST" and "~ http host HOST: MEMBER A → B" (methods,
headers, idempotency, auth) for the http tool's host entries. An auth
declaration says how a credential is presented (a header, or a {secret}
path segment), never a credential: a toolset holds none. Control, format and bidirectional characters in a line are
written as \u{202E}.

Each toolset is read as toolgate toolset show reads it: its lock in
--toolsets DIR, or else the registered toolset from the stage's publish
function (--url, default $` + EnvPublishURL + `; --function-endpoint with --as
NAME on the local stack), checked against its id.

Exit 0 when they pin the same content, 1 when they differ, 2 when one
cannot be read (a malformed id, or one neither a lock nor the function has).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return exit(misuse(cmd, "name two toolset ids"))
			}
			if err := r.fn.check(); err != nil {
				return exit(misuse(cmd, "%v", err))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var sets [2]*toolset.Toolset
			for i, id := range args {
				ts, err := r.read(ctx, id)
				var bad *misuseError
				switch {
				case errors.As(err, &bad):
					return exit(misuse(cmd, "%v", err))
				case err != nil:
					fmt.Fprintf(cmd.ErrOrStderr(), "toolgate toolset diff: %v\n", err)
					return exit(ExitMisuse)
				}
				sets[i] = ts
			}
			if n := diffToolsets(cmd.OutOrStdout(), sets[0], sets[1]); n > 0 {
				return exit(ExitErrors)
			}
			return nil
		},
	}
	r.fn.addFlags(a, cmd.Flags())
	a.addToolsetsFlag(cmd)
	return cmd
}

// diffToolsets writes the differences from a to b and returns how many.
func diffToolsets(w io.Writer, a, b *toolset.Toolset) int {
	n := 0
	line := func(format string, args ...any) {
		// A description's characters a reader cannot see, or that
		// reorder the line, as \u{…}.
		fmt.Fprintln(w, invisible.Escape(fmt.Sprintf(format, args...)))
		n++
	}
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	for _, h := range []struct {
		name string
		a, b any
	}{{"name", a.Name, b.Name}, {"base", a.Base, b.Base}, {"fetch_hosts", a.FetchHosts, b.FetchHosts}, {"workflows", a.Workflows, b.Workflows}, {"on_schema_change", a.OnSchemaChange, b.OnSchemaChange}} {
		if js(h.a) != js(h.b) {
			line("~ %s: %s → %s", h.name, js(h.a), js(h.b))
		}
	}
	diffHTTPHosts(line, js, a.HTTPHosts, b.HTTPHosts)
	names := slices.Sorted(maps.Keys(a.Tools))
	for name := range b.Tools {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ta, inA := a.Tools[name]
		tb, inB := b.Tools[name]
		switch {
		case !inA:
			line("+ tool %s", name)
			continue
		case !inB:
			line("- tool %s", name)
			continue
		}
		for _, m := range []struct {
			name string
			a, b any
		}{{"function", ta.Function, tb.Function}, {"description", ta.Description, tb.Description}, {"idempotent", ta.Idempotent, tb.Idempotent},
			{"policy", ta.Policy, tb.Policy}, {"review_required", ta.ReviewRequired, tb.ReviewRequired}, {"timeout_seconds", ta.TimeoutSeconds, tb.TimeoutSeconds},
			{"retry", ta.Retry, tb.Retry}, {"tolerate_duplicates", ta.TolerateDuplicates, tb.TolerateDuplicates},
			{"mcp.url", mcpURL(ta.MCP), mcpURL(tb.MCP)}, {"mcp.auth", mcpAuth(ta.MCP), mcpAuth(tb.MCP)}} {
			if js(m.a) != js(m.b) {
				line("~ tool %s: %s %s → %s", name, m.name, js(m.a), js(m.b))
			}
		}
		for _, s := range []struct {
			name string
			a, b json.RawMessage
		}{{"input_schema", ta.InputSchema, tb.InputSchema}, {"output_schema", ta.OutputSchema, tb.OutputSchema}} {
			if !sameCanonical(s.a, s.b) {
				line("~ tool %s: %s changed", name, s.name)
			}
		}
	}
	return n
}

// mcpURL is an MCP pin's URL, "" for a tool that is not an MCP tool: the
// URL pinned holds no credential ("{secret}" where one goes).
func mcpURL(m *toolset.MCP) string {
	if m == nil {
		return ""
	}
	return m.URL
}

// mcpAuth is an MCP pin's auth declaration (nil: none, or not an MCP
// tool): how a credential is presented, never one.
func mcpAuth(m *toolset.MCP) *toolset.Auth {
	if m == nil {
		return nil
	}
	return m.Auth
}

// sameCanonical reports whether two JSON documents are equal as values.
func sameCanonical(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ea, _ := json.Marshal(va)
	eb, _ := json.Marshal(vb)
	return bytes.Equal(ea, eb)
}

// diffHTTPHosts writes, through line, the differences from http host
// entries a to b: "+ http host HOST {methods …}" and "- http host HOST"
// for an entry only b or only a has, and "~ http host HOST: MEMBER A → B"
// for a changed methods, headers, idempotency or auth.
func diffHTTPHosts(line func(string, ...any), js func(any) string, a, b []toolset.HTTPHost) {
	find := func(list []toolset.HTTPHost, host string) (toolset.HTTPHost, bool) {
		i := slices.IndexFunc(list, func(h toolset.HTTPHost) bool { return h.Host == host })
		if i < 0 {
			return toolset.HTTPHost{}, false
		}
		return list[i], true
	}
	var hosts []string
	for _, h := range append(slices.Clone(a), b...) {
		if !slices.Contains(hosts, h.Host) {
			hosts = append(hosts, h.Host)
		}
	}
	slices.Sort(hosts)
	for _, host := range hosts {
		ha, inA := find(a, host)
		hb, inB := find(b, host)
		switch {
		case !inA:
			line("+ http host %s %s", host, js(hb))
			continue
		case !inB:
			line("- http host %s", host)
			continue
		}
		for _, m := range []struct {
			name string
			a, b any
		}{{"methods", ha.Methods, hb.Methods}, {"headers", ha.Headers, hb.Headers}, {"idempotency", ha.Idempotency, hb.Idempotency}, {"auth", ha.Auth, hb.Auth}} {
			if js(m.a) != js(m.b) {
				line("~ http host %s: %s %s → %s", host, m.name, js(m.a), js(m.b))
			}
		}
	}
}
