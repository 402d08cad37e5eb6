package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/declare"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// newDeclarationsCmd is `toolgate declarations (LOCK | ID | SOLUTION) -o DIR`.
func (a *app) newDeclarationsCmd() *cobra.Command {
	var r toolsetReader
	var dir string
	cmd := &cobra.Command{
		Use:   "declarations (LOCK | ID | SOLUTION) -o DIR [--toolsets DIR] [--shapes FILE] [--url URL | --function-endpoint URL --as NAME]",
		Short: "write a toolset's declarations: DIR/" + declare.TypeScriptFile + " and DIR/" + declare.SolutionSchemaFile,
		Long: `Writes the declarations of one pinned toolset to DIR (created if missing),
each file through a temporary file renamed over it (docs/declarations.md):

  ` + declare.TypeScriptFile + `            one TypeScript declaration per tool, under the
                        tool's exact name, with its input and output types
  ` + declare.SolutionSchemaFile + `  a JSON Schema (draft-07) of the Solution grammar
                        for that toolset, for an editor's YAML language server

The toolset is named in one of three ways:

  LOCK      a lock file (*` + resolver.LockSuffix + `), as toolgate toolset lock and
            register write it, or a compiled toolset (*` + compiledToolsetSuffix + `),
            as toolgate compile writes it; its id is checked against its
            content;
  ID        a toolset id (ts_ and 32 hex digits): the lock in --toolsets DIR
            (default toolsets) holding it, else the registered toolset read
            through the stage's publish function (--url, default
            $` + EnvPublishURL + `; --function-endpoint with --as NAME on the local
            stack), as toolgate toolset show reads it;
  SOLUTION  a Solution file: the toolset the resolver pins for it, its
            toolset: id read as ID is, or without one the toolset derived
            from the catalog for the tools it uses.

With --shapes FILE (toolgate shapes --json writes one), a tool without an
output schema gets the type learned from its results, marked @observed, and
the per-host shapes of structured-data-fetch's and http's data are declared
as ObservedData; the binding checks of a SOLUTION use them too.

It prints the toolset's id and the two paths. No Node.js is needed.

Exit 0 when both files are written; 1 when the toolset cannot be read or
found, the Solution has errors (its diagnostics are printed), or a file
cannot be written; 2 on misuse (no argument or two, no -o, an unreadable
file).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(a.declarations(cmd, &r, args, dir))
		},
	}
	cmd.Flags().StringVarP(&dir, "o", "o", "", "the output directory `DIR` (created if missing)")
	r.fn.addFlags(a, cmd.Flags())
	a.addToolsetsFlag(cmd)
	a.addShapesFlag(cmd)
	return cmd
}

// declarations runs toolgate declarations and returns its exit code.
func (a *app) declarations(cmd *cobra.Command, r *toolsetReader, args []string, dir string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(args) != 1:
		return misuse(cmd, "name one lock file, toolset id or Solution file")
	case dir == "":
		return misuse(cmd, "-o DIR is required")
	}
	if err := r.fn.check(); err != nil {
		return misuse(cmd, "%v", err)
	}
	if err := a.loadShapes(); err != nil {
		fmt.Fprintf(stderr, "toolgate declarations: %v\n", err)
		return ExitMisuse
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ts, code := a.declaredToolset(ctx, cmd, r, args[0])
	if ts == nil {
		return code
	}
	// Both renderings before either file is written: a toolset one of
	// them cannot render leaves DIR as it was.
	tsd, err := declare.TypeScriptObserved(ts, a.shapes)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate declarations: toolset %s: %s: %v\n", ts.ID, declare.TypeScriptFile, err)
		return ExitErrors
	}
	schema, err := declare.SolutionSchema(ts)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate declarations: toolset %s: %s: %v\n", ts.ID, declare.SolutionSchemaFile, err)
		return ExitErrors
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "toolgate declarations: -o %s: %v\n", dir, err)
		return ExitErrors
	}
	// Neither target may be a directory: checked before either is written,
	// so that DIR never holds one new file beside an old one.
	for _, name := range []string{declare.TypeScriptFile, declare.SolutionSchemaFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.IsDir() {
			fmt.Fprintf(stderr, "toolgate declarations: %s is a directory: nothing was written\n", filepath.Join(dir, name))
			return ExitErrors
		}
	}
	if ts.Name != "" {
		fmt.Fprintf(stdout, "toolset %s (%s)\n", ts.ID, ts.Name)
	} else {
		fmt.Fprintf(stdout, "toolset %s (derived from the catalog)\n", ts.ID)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{declare.TypeScriptFile, tsd}, {declare.SolutionSchemaFile, schema}} {
		path := filepath.Join(dir, f.name)
		if err := writeAtomic(path, f.data); err != nil {
			fmt.Fprintf(stderr, "toolgate declarations: write %s: %v\n", path, err)
			return ExitErrors
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
	}
	return ExitOK
}

// compiledToolsetSuffix ends the name of the toolset file toolgate
// compile writes beside a definition (writeOutputs): a lock's format.
const compiledToolsetSuffix = ".toolset.json"

// declaredToolset is the toolset arg names: a lock file (a name ending
// in resolver.LockSuffix) or a compiled toolset (compiledToolsetSuffix), a toolset id (tool.ToolsetIDPattern), or else
// a Solution file, whose pinned toolset the resolver gives. nil and the
// exit code when there is none; what is wrong is said on stderr.
func (a *app) declaredToolset(ctx context.Context, cmd *cobra.Command, r *toolsetReader, arg string) (*toolset.Toolset, int) {
	stderr := cmd.ErrOrStderr()
	fail := func(code int, format string, args ...any) (*toolset.Toolset, int) {
		fmt.Fprintf(stderr, "toolgate declarations: "+format+"\n", args...)
		return nil, code
	}
	switch {
	case strings.HasSuffix(arg, resolver.LockSuffix), strings.HasSuffix(arg, compiledToolsetSuffix):
		data, err := resolver.ReadFile(arg, resolver.LockFileBound)
		if err != nil {
			return fail(ExitMisuse, "%v", err)
		}
		ts, err := toolset.Parse(data)
		if err != nil {
			return fail(ExitErrors, "lock %s: %v", arg, err)
		}
		return ts, ExitOK
	case tool.ToolsetIDPattern.MatchString(arg):
		ts, err := r.read(ctx, arg)
		if err != nil {
			return fail(ExitErrors, "%v", err)
		}
		return ts, ExitOK
	}
	src, err := resolver.ReadFile(arg, resolver.SourceFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(arg, "ts_"):
		return nil, misuse(cmd, "%.60q is neither a toolset id (%s) nor a file", arg, tool.ToolsetIDPattern)
	case err != nil:
		return fail(ExitMisuse, "%v", err)
	case resolver.IsToolsetFile(src):
		return fail(ExitMisuse, "%s is a toolset file: name its lock (toolgate toolset lock %s writes it) or its registered id", arg, arg)
	}
	// The Solution's toolset: id is read as an ID argument is: a lock in
	// --toolsets, else the registered toolset through the publish function.
	lookup := func(id string) (*toolset.Toolset, error) {
		ts, err := r.read(ctx, id)
		if errors.Is(err, errNoToolset) {
			return nil, fmt.Errorf("%w (%v)", resolver.ErrToolsetNotFound, err)
		}
		return ts, err
	}
	res := resolver.Compile(arg, src, resolver.Options{Toolsets: lookup, Observed: a.shapes})
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.String())
	}
	if !res.OK() {
		return fail(ExitErrors, "%s has errors: no declarations were written", arg)
	}
	return res.Toolset, ExitOK
}
