package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// shapesCall asks the publish function for toolset id's learned shapes
// (publishapi.ActionShapes), with a proof bound to the id.
func (f *publishFunction) shapesCall(ctx context.Context, p *prover, id string) ([]byte, string, string, error) {
	proof, err := p.sign(ctx, publishapi.ShapesBinding(id))
	if err != nil {
		return nil, "", "", err
	}
	return f.call(ctx, publishapi.DirectRequest{Action: publishapi.ActionShapes, ToolsetID: id}, http.MethodGet, "/shapes/"+url.PathEscape(id), nil, proof)
}

// readShapes reads the shapes toolset ts's tools learned through the
// publish function r names, and believes them only as far as they check
// here: a shapes file (observed.ParseFile) of ts, naming only its tools.
func (r *toolsetReader) readShapes(ctx context.Context, ts *toolset.Toolset) (*observed.File, error) {
	if !r.fn.named() {
		return nil, fmt.Errorf("toolset %s: the shapes are read through the publish function: name it (--url or $%s; --function-endpoint with --as on the local stack)", ts.ID, EnvPublishURL)
	}
	if r.prover == nil {
		var err error
		if r.prover, err = r.fn.app.newProver(ctx, r.fn.as); err != nil {
			return nil, err
		}
	}
	out, code, msg, err := r.fn.shapesCall(ctx, r.prover, ts.ID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("toolset %s: %v", ts.ID, err)
	case code != "":
		return nil, fmt.Errorf("toolset %s: the publish function refused the read of its shapes: %s: %s", ts.ID, code, msg)
	}
	var res publishapi.ShapesResult
	if err := json.Unmarshal(out, &res); err != nil || res.File == "" {
		return nil, fmt.Errorf("toolset %s: unexpected answer from the publish function", ts.ID)
	}
	file, err := observed.ParseFile([]byte(res.File))
	if err != nil {
		return nil, fmt.Errorf("toolset %s: the publish function's shapes: %v", ts.ID, err)
	}
	if file.Toolset != ts.ID {
		return nil, fmt.Errorf("toolset %s: the publish function answered with the shapes of %.40q", ts.ID, file.Toolset)
	}
	for _, name := range file.ToolNames() {
		if _, ok := ts.Tools[name]; !ok {
			return nil, fmt.Errorf("toolset %s: the publish function's shapes name tool %q, which it does not pin", ts.ID, name)
		}
	}
	return file, nil
}

// writeShapesText writes file's shapes for people: per tool (and host),
// how many results it was learned from and its JSON Schema, indented.
func writeShapesText(w io.Writer, file *observed.File) error {
	if len(file.Tools) == 0 {
		fmt.Fprintf(w, "toolset %s: no tool learned a shape yet\n", file.Toolset)
		return nil
	}
	for _, name := range file.ToolNames() {
		t := file.Tools[name]
		if t.Shape != nil {
			fmt.Fprintf(w, "%s (learned from %d results):\n", name, t.LearnedFrom)
			if err := writeIndentedSchema(w, t.Shape); err != nil {
				return err
			}
		}
		for _, h := range slices.Sorted(maps.Keys(t.Hosts)) {
			fmt.Fprintf(w, "%s, data from %s (learned from %d results):\n", name, h, t.Hosts[h].LearnedFrom)
			if err := writeIndentedSchema(w, t.Hosts[h].Shape); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeIndentedSchema writes s's JSON Schema, indented by two spaces.
func writeIndentedSchema(w io.Writer, s *observed.Shape) error {
	var b bytes.Buffer
	if err := json.Indent(&b, s.Schema(), "  ", "  "); err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s\n", b.Bytes())
	return nil
}

// newShapesCmd is `toolgate shapes TOOLSET [TOOL]`.
func (a *app) newShapesCmd() *cobra.Command {
	var r toolsetReader
	var asJSON bool
	var lock string
	cmd := &cobra.Command{
		Use:   "shapes TOOLSET [TOOL] [--json] [--lock LOCKFILE] [--toolsets DIR] (--url URL | --function-endpoint URL --as NAME)",
		Short: "print the shapes a toolset's tools learned from their results (never a value)",
		Long: `Prints the shapes the tools of toolset TOOLSET (an id: its lock in
--toolsets DIR, or the registered toolset, as toolgate toolset show reads
it) learned from their successful results (docs/declarations.md, "Observed
shapes"): per tool, and per host for structured-data-fetch and http, the
number of results it was learned from and the shape as a JSON Schema. A
shape holds JSON types and member names, never a value.

The shapes are read through the stage's publish function (--url, default
$` + EnvPublishURL + `; --function-endpoint with --as NAME on the local
stack), with a caller proof bound to the id. TOOL limits the output to one
tool. --json prints the shapes file instead (the form a lock's "observed"
member holds); --lock LOCKFILE writes them into that lock's "observed"
member, which is no part of the toolset's content (its id is unchanged).

Exit 0 when printed (or written); 1 when the toolset cannot be read or the
function refuses; 2 for a malformed id, a tool the toolset does not pin, or
no publish function named.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return exit(misuse(cmd, "name one toolset id, and at most one tool"))
			}
			if err := r.fn.check(); err != nil {
				return exit(misuse(cmd, "%v", err))
			}
			if !r.fn.named() {
				return exit(misuse(cmd, "the shapes are read through the publish function: name it (--url or $%s; --function-endpoint with --as on the local stack)", EnvPublishURL))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ts, code := r.readFor(ctx, cmd, "toolgate shapes", args[0])
			if ts == nil {
				return exit(code)
			}
			if len(args) == 2 {
				if _, ok := ts.Tools[args[1]]; !ok {
					return exit(misuse(cmd, "toolset %s pins no tool %q", ts.ID, args[1]))
				}
			}
			file, err := r.readShapes(ctx, ts)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "toolgate shapes: %v\n", err)
				return exit(ExitErrors)
			}
			if len(args) == 2 {
				one := map[string]observed.ToolShapes{}
				if t, ok := file.Tools[args[1]]; ok {
					one[args[1]] = t
				}
				file.Tools = one
			}
			if lock != "" {
				if err := writeObservedLock(lock, ts.ID, file); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "toolgate shapes: --lock %s: %v\n", lock, err)
					return exit(ExitErrors)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote the shapes of %d tools into %s\n", len(file.Tools), lock)
				return nil
			}
			if asJSON {
				doc, err := file.Marshal()
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "toolgate shapes: %v\n", err)
					return exit(ExitErrors)
				}
				cmd.OutOrStdout().Write(doc)
				return nil
			}
			return writeShapesText(cmd.OutOrStdout(), file)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the shapes file (JSON) instead of the text")
	cmd.Flags().StringVar(&lock, "lock", "", "write the shapes into this lock `FILE`'s observed member (the toolset's lock)")
	r.fn.addFlags(a, cmd.Flags())
	a.addToolsetsFlag(cmd)
	return cmd
}

// writeObservedLock writes file into the "observed" member of the lock
// at path, which must be toolset id's lock (toolset.Parse), replacing
// what it held there.
func writeObservedLock(path, id string, file *observed.File) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ts, err := toolset.Parse(data)
	if err != nil {
		return err
	}
	if ts.ID != id {
		return fmt.Errorf("the lock is of toolset %s, not of %s", ts.ID, id)
	}
	ts.Observed = file
	doc, err := ts.MarshalIndent()
	if err != nil {
		return err
	}
	return writeAtomic(path, doc)
}
