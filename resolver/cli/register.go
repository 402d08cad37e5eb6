package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// newToolsetCmd is `toolgate toolset FILE` (print the id a Solution pins),
// `toolgate toolset register ...` (store toolsets in the ledger table) and
// `toolgate toolset lock FILE` (a toolset file's lock, offline).
func (a *app) newToolsetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "toolset FILE [--toolsets DIR]",
		Short: "print the toolset id a Solution pins; register, show and compare toolsets",
		Long: `Prints the id of the toolset a Solution pins: the digest of its content.
toolgate toolset register registers toolsets; toolgate toolset lock writes
a toolset file's lock offline; toolgate toolset show and
toolgate toolset diff print what a toolset pins and what changed.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.toolsetID(cmd, files))
		},
	}
	cmd.AddCommand(a.newRegisterCmd(), a.newToolsetLockCmd(), a.newToolsetShowCmd(), a.newToolsetDiffCmd())
	a.addToolsetsFlag(cmd)
	return cmd
}

// registerOptions are toolgate toolset register's flags.
type registerOptions struct {
	af         awsFlags
	fn         publishFunction
	tool       string
	fetchHosts []string
	replace    bool // --replace: a lock of another toolset id is replaced (checkLockFile)
}

// newRegisterCmd is `toolgate toolset register`.
func (a *app) newRegisterCmd() *cobra.Command {
	var o registerOptions
	cmd := &cobra.Command{
		Use:   "register (--url URL | --function-endpoint URL --as NAME | --endpoint URL --table NAME) (FILE|DIR... | --tool TOOL [--fetch-host ENTRY]...) [--replace] [--toolsets DIR]",
		Short: "register toolsets (publish function, or deploy role)",
		Long: `Registers toolsets after the registration check (the id is the digest of
the content; no tool is weaker than the catalog). FILE is a toolset file
(docs/toolsets.md: its base is read from the locks beside it, then in
--toolsets DIR; once it is registered, its lock <toolset>.lock.json is
written beside it), a compiled toolset (*.toolset.json) or a Solution,
whose toolset is compiled from it; DIR holds *.toolset.json. --tool
registers the one-tool toolset toolgate invoke builds from the catalog.
A toolset file naming MCP servers has no id until the publish function
lists their tools and pins the admitted ones: it is registered through
the publish function only, and its lock is the toolset registered.

People register through the publish function (--url, default
$` + EnvPublishURL + `; --function-endpoint with --as NAME on the local stack),
which checks each toolset again and records who registered it; toolgate
publish registers the toolset of the Solution it publishes by itself. The
form with --endpoint and --table writes the ledger table directly: it is
for the deploy role only (no policy for people allows it), e.g. to seed a
new stage (docs/ledger.md).

` + replaceHelp + `
A toolset file's lock is checked before anything is registered; a
draft's, whose id registration gives, once it is registered.`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			return exit(a.register(cmd, paths, &o))
		},
	}
	fs := cmd.Flags()
	o.af.register(a, fs)
	fs.StringVar(&o.tool, "tool", "", "register the one-tool toolset of this catalog `TOOL`, as toolgate invoke builds it")
	o.fn.addFlags(a, fs)
	fs.StringArrayVar(&o.fetchHosts, "fetch-host", nil, "with --tool: an allowed host `ENTRY` for structured-data-fetch (repeatable)")
	addReplaceFlag(cmd, &o.replace)
	a.addToolsetsFlag(cmd)
	return cmd
}

// register stores every toolset named: compiled toolsets, the toolsets of
// Solutions, *.toolset.json in a named directory, or the one-tool toolset
// of --tool. Everything is read and checked first: one bad file registers
// nothing. Registering the same content again is a no-op.
func (a *app) register(cmd *cobra.Command, paths []string, o *registerOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(paths) == 0 && o.tool == "":
		return misuse(cmd, "name toolset files or directories, or --tool TOOL")
	case len(paths) > 0 && o.tool != "":
		return misuse(cmd, "name toolset files or directories, or --tool TOOL, not both")
	case len(o.fetchHosts) > 0 && o.tool == "":
		return misuse(cmd, "--fetch-host is for --tool")
	}
	var sets []*toolset.Toolset
	var names, locks []string
	var drafts []bool
	if o.tool != "" {
		ts, err := catalogToolset(o.tool, o.fetchHosts)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
			return ExitMisuse
		}
		sets, names = append(sets, ts), append(names, "--tool "+o.tool)
		drafts = append(drafts, false)
	}
	for _, p := range paths {
		found, code := a.toolsetsAt(p, stderr)
		if code != ExitOK {
			return code
		}
		for _, f := range found {
			sets, names = append(sets, f.ts), append(names, f.path)
			locks, drafts = append(locks, f.lock), append(drafts, f.draft)
		}
	}
	// The registration check of every toolset before the first write; a
	// draft's other tools have been through it (resolver.CompileToolset),
	// its MCP tools are known only once the publish function lists them.
	for i, ts := range sets {
		if drafts[i] {
			continue
		}
		if err := ts.Verify(catalog.Default()); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", names[i], err)
			return ExitErrors
		}
		if i < len(locks) && locks[i] != "" {
			if err := checkLockFile(locks[i], ts, o.replace); err != nil {
				fmt.Fprintf(stderr, "%s: %v; nothing was registered\n", names[i], err)
				return ExitErrors
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	viaFunction := o.fn.named()
	if viaFunction && o.af.endpoint != "" {
		fmt.Fprintln(stderr, "toolgate toolset register: --endpoint (the table, deploy role) and the publish function exclude each other")
		return ExitMisuse
	}
	if err := o.fn.check(); err != nil {
		fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
		return ExitMisuse
	}
	if !viaFunction && o.af.endpoint == "" && o.af.table == "" {
		return misuse(cmd, "name the publish function people register through: --url URL, or set $%s (--function-endpoint URL --as NAME on the local stack); --endpoint and --table write the ledger table directly, for the deploy role only", EnvPublishURL)
	}
	if viaFunction {
		code := a.registerThroughFunction(ctx, sets, names, drafts, &o.fn, stdout, stderr)
		return writeLocks(code, sets, names, locks, o.replace, stdout, stderr)
	}
	for i, draft := range drafts {
		if draft {
			fmt.Fprintf(stderr, "%s: %s; register it through the publish function (--url or $%s; --function-endpoint with --as on the local stack): the table is written only with tools already pinned\n", names[i], draftNote(sets[i]), EnvPublishURL)
			return ExitMisuse
		}
	}
	store, err := o.af.store(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
		return ExitMisuse
	}
	code := ExitOK
	for i, ts := range sets {
		created, err := store.RegisterToolset(ctx, ts)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", names[i], err)
			code = ExitErrors
		case created:
			fmt.Fprintf(stdout, "registered %s (%s)\n", ts.ID, names[i])
		default:
			fmt.Fprintf(stdout, "already registered %s (%s)\n", ts.ID, names[i])
		}
		if err == nil {
			warnInvisible(stderr, names[i], ts)
		}
	}
	return writeLocks(code, sets, names, locks, o.replace, stdout, stderr)
}

// warnInvisible writes a warning for each tool of registered toolset ts
// whose texts hold invisible or bidirectional characters
// (toolset.InvisibleText), computed here from the toolset the CLI checked.
func warnInvisible(stderr io.Writer, name string, ts *toolset.Toolset) {
	for _, f := range ts.InvisibleText() {
		fmt.Fprintf(stderr, "%s: warning: toolset %s: %s\n", name, ts.ID, f)
	}
}

// writeLocks writes the lock file of every registered toolset file
// (resolver.LockFile: the whole pinned toolset and its id), when all
// registrations succeeded (code is ExitOK); a lock names only a
// registered toolset. A lock of another toolset id is not replaced
// without replace (checkLockFile): for a draft, whose id registration
// gave, this is the first time it is checked.
func writeLocks(code int, sets []*toolset.Toolset, names, locks []string, replace bool, stdout, stderr io.Writer) int {
	if code != ExitOK {
		return code
	}
	for i, lock := range locks {
		if lock == "" || i >= len(sets) {
			continue
		}
		if err := checkLockFile(lock, sets[i], replace); err != nil {
			fmt.Fprintf(stderr, "%s: toolset %s is registered, but its lock was not written: %v\n", names[i], sets[i].ID, err)
			return ExitErrors
		}
		doc, err := sets[i].MarshalIndent()
		if err == nil {
			err = writeAtomic(lock, doc)
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: write the lock: %v\n", names[i], err)
			return ExitErrors
		}
		fmt.Fprintf(stdout, "wrote %s\n", lock)
	}
	return ExitOK
}

// draftNote says why draft ts has no id yet.
func draftNote(ts *toolset.Toolset) string {
	return fmt.Sprintf("toolset %s names MCP servers (%s): its id is known only after registration lists their tools and pins the admitted ones",
		ts.Name, strings.Join(slices.Sorted(maps.Keys(ts.MCPServers)), ", "))
}

// registerThroughFunction sends each toolset to the publish function with
// a caller proof bound to its id and document, or, for a draft (drafts[i]),
// to its name and document. A draft's answer is believed as far as
// draftAnswer checks it, and replaces the draft in sets, so that its lock
// is the registered toolset.
func (a *app) registerThroughFunction(ctx context.Context, sets []*toolset.Toolset, names []string, drafts []bool, fn *publishFunction, stdout, stderr io.Writer) int {
	p, err := a.newProver(ctx, fn.as)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
		return ExitMisuse
	}
	code := ExitOK
	for i, ts := range sets {
		doc, err := ts.MarshalIndent() // a *.toolset.json document (its id and its content), or a draft
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", names[i], err)
			return ExitErrors
		}
		doc = bytes.TrimSpace(doc)
		binding := publishapi.RegisterBinding(ts.ID, doc)
		if drafts[i] {
			binding = publishapi.RegisterDraftBinding(ts.Name, doc)
		}
		proof, err := p.sign(ctx, binding)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
			return ExitErrors
		}
		body, _ := json.Marshal(publishapi.RegisterBody{Toolset: string(doc)})
		out, errCode, msg, err := fn.call(ctx, publishapi.DirectRequest{Action: "register", Toolset: string(doc)}, http.MethodPost, "/toolsets", body, proof)
		var res publishapi.RegisterResult
		var registered *toolset.Toolset
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "%s: %v\n", names[i], err)
		case errCode != "":
			fmt.Fprintf(stderr, "%s: %s: %s\n", names[i], errCode, invisible.Escape(msg))
		case json.Unmarshal(out, &res) != nil:
			fmt.Fprintf(stderr, "%s: unexpected answer: %.200s\n", names[i], out)
		case drafts[i]:
			if registered, err = draftAnswer(ctx, ts, res); err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", names[i], err)
				break
			}
			sets[i] = registered
		default:
			registered = ts
		}
		switch {
		case registered == nil:
			code = ExitErrors
		case res.Created:
			fmt.Fprintf(stdout, "registered %s (%s) by %s\n", res.ToolsetID, names[i], invisible.Escape(res.Publisher))
		default:
			fmt.Fprintf(stdout, "already registered %s (%s)\n", res.ToolsetID, names[i])
		}
		if registered != nil {
			warnInvisible(stderr, names[i], registered)
		}
	}
	return code
}

// draftAnswer reads the publish function's answer to the registration of
// draft and believes it only as far as it checks here: its body is
// exactly the RFC 8785 form of a toolset (toolset.ParseStored) that
// passes the registration check (toolset.Verify: its digest is the id
// answered), and it is what the draft resolves to (toolset.ResolveMCP)
// from the tools the body says its servers listed: the draft's name,
// workflows and other tools, each admitted tool pinned under
// <server>.<tool> with the server's URL and the draft's policy, and no
// other tool.
func draftAnswer(ctx context.Context, draft *toolset.Toolset, res publishapi.RegisterResult) (*toolset.Toolset, error) {
	ts, err := toolset.ParseStored(res.ToolsetID, []byte(res.Body))
	if err != nil {
		return nil, fmt.Errorf("the publish function's answer: %v", err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		return nil, fmt.Errorf("the publish function's answer: %v", err)
	}
	resolved, err := draft.ResolveMCP(ctx, listedIn(ts))
	if err != nil {
		return nil, fmt.Errorf("the publish function registered %s, which does not pin the draft's MCP tools: %v", ts.ID, err)
	}
	if resolved.ID != ts.ID {
		return nil, fmt.Errorf("the publish function registered %s, which is not the draft with the tools it says its servers listed (that is %s)", ts.ID, resolved.ID)
	}
	return ts, nil
}

// listedIn is a toolset.Lister that answers, for a server URL, what
// registered toolset ts pins of it: each of its MCP tools at that URL, as
// the server must have listed it, and the revision recorded.
func listedIn(ts *toolset.Toolset) toolset.Lister {
	byURL := map[string]*toolset.Listed{}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		if t.MCP == nil {
			continue
		}
		l := byURL[t.MCP.URL]
		if l == nil {
			l = &toolset.Listed{Protocol: t.MCP.Protocol}
			byURL[t.MCP.URL] = l
		}
		if slices.ContainsFunc(l.Tools, func(lt toolset.ListedTool) bool { return lt.Name == t.MCP.Name }) {
			continue
		}
		l.Tools = append(l.Tools, toolset.ListedTool{Name: t.MCP.Name, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.MCP.Annotations})
	}
	return func(_ context.Context, url string) (toolset.Listed, error) {
		l, ok := byURL[url]
		if !ok {
			return toolset.Listed{}, fmt.Errorf("it pins no tool of %s", url)
		}
		return *l, nil
	}
}

type namedToolset struct {
	path string
	ts   *toolset.Toolset
	// lock is the lock file to write once ts is registered: for a
	// toolset file, <name>.lock.json beside it; "" otherwise.
	lock string
	// draft: ts is a draft (a toolset file naming MCP servers), with no
	// id until the publish function lists them.
	draft bool
}

// toolsetsAt reads the toolsets at path: a directory's *.toolset.json, a
// compiled toolset, or a Solution's compiled toolset. Diagnostics and
// errors name the file.
func (a *app) toolsetsAt(path string, stderr io.Writer) ([]namedToolset, int) {
	st, err := os.Stat(path)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
		return nil, ExitMisuse
	}
	files := []string{path}
	if st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.toolset.json"))
		if len(files) == 0 {
			fmt.Fprintf(stderr, "toolgate toolset register: %s holds no *.toolset.json\n", path)
			return nil, ExitMisuse
		}
	}
	var out []namedToolset
	for _, f := range files {
		bound := resolver.SourceFile
		if strings.HasSuffix(f, ".toolset.json") {
			bound = resolver.LockFileBound
		}
		src, err := resolver.ReadFile(f, bound)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate toolset register: %v\n", err)
			return nil, ExitMisuse
		}
		if !strings.HasSuffix(f, ".toolset.json") && resolver.IsToolsetFile(src) {
			res := a.compileToolsetFile(f, src)
			for _, d := range res.Diagnostics {
				fmt.Fprintln(stderr, d.String())
			}
			if !res.OK() {
				fmt.Fprintf(stderr, "%s: the toolset file has errors: nothing was registered\n", f)
				return nil, ExitErrors
			}
			out = append(out, namedToolset{f, res.Toolset, filepath.Join(filepath.Dir(f), resolver.LockFile(res.Toolset.Name)), res.Draft})
			continue
		}
		if !strings.HasSuffix(f, ".toolset.json") {
			res := a.compileSource(f, src)
			for _, d := range res.Diagnostics {
				fmt.Fprintln(stderr, d.String())
			}
			if !res.OK() {
				fmt.Fprintf(stderr, "%s: the Solution has errors: nothing was registered\n", f)
				return nil, ExitErrors
			}
			out = append(out, namedToolset{f, res.Toolset, "", false})
			continue
		}
		ts, err := toolset.Parse(src)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			return nil, ExitErrors
		}
		out = append(out, namedToolset{f, ts, "", false})
	}
	return out, ExitOK
}

// compileToolsetFile resolves toolset file f (source src), its base
// looked up among the locks beside it, then in --toolsets DIR.
func (a *app) compileToolsetFile(f string, src []byte) *resolver.ToolsetResult {
	dir := filepath.Dir(f)
	lookup := func(id string) (*toolset.Toolset, error) {
		if ts, err := resolver.LockLookup(dir)(id); err == nil {
			return ts, nil
		}
		return resolver.LockLookup(a.toolsetsDir)(id)
	}
	return resolver.CompileToolset(f, src, resolver.ToolsetOptions{Lookup: lookup, ReadFile: resolver.DirReader(dir)})
}

// catalogToolset is the one-tool toolset of a catalog tool that toolgate
// invoke builds when it is given no toolset.
func catalogToolset(name string, fetchHosts []string) (*toolset.Toolset, error) {
	if _, ok := catalog.Default().Lookup(name); !ok {
		return nil, fmt.Errorf("tool %q is not in the catalog (%s)", name, strings.Join(catalog.Default().Names(), ", "))
	}
	hosts, err := hostlist.ParseList(fetchHosts)
	if err != nil {
		return nil, fmt.Errorf("--fetch-host: %w", err)
	}
	return toolset.FromCatalog(catalog.Default(), []string{name}, nil, hosts.Strings())
}

// readRegistered reads a toolset that toolgate invoke only uses: the
// toolset, when it is registered and passes the registration check;
// otherwise an error that says what to do, with the register command
// (how), for a toolset that is not registered.
func readRegistered(ctx context.Context, store *ledger.Store, id, how string) (*toolset.Toolset, error) {
	ts, err := store.Toolset(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, fmt.Errorf("toolset %s is not registered: %s", id, how)
	}
	if err != nil {
		return nil, fmt.Errorf("read toolset %s: %w", id, err)
	}
	return ts, nil
}

// registerHint says how to register what args name (e.g. --tool TOOL):
// through the publish function at url (empty: URL, to be filled in), as
// people do, and, when table is not empty, the ledger table directly, as
// the deployment's operator with the deploy role may, for the table and
// DynamoDB endpoint given (none: the standard AWS configuration). The
// command lines are quoted for a POSIX shell.
func registerHint(url, table, endpoint string, args ...string) string {
	if url == "" {
		url = "URL"
	}
	hint := "register it through the publish function (--url, or $" + EnvPublishURL + "):\n    " +
		commandLine(append([]string{"toolgate", "toolset", "register", "--url", url}, args...))
	if table == "" {
		return hint
	}
	parts := []string{"toolgate", "toolset", "register"}
	if endpoint != "" {
		parts = append(parts, "--endpoint", endpoint)
	}
	parts = append(append(parts, "--table", table), args...)
	return hint + "\nor, as the deployment's operator with the deploy role, write the ledger table directly:\n    " + commandLine(parts)
}

// commandLine joins parts as POSIX shell words.
func commandLine(parts []string) string {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = shellQuote(p)
	}
	return strings.Join(quoted, " ")
}

// shellQuote returns s as one POSIX shell word.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@=,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
