package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
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

// lockedToolset reads the toolset id from the locks in --toolsets DIR.
func lockedToolset(id string) (*toolset.Toolset, error) {
	if !toolset.IDPattern.MatchString(id) {
		return nil, fmt.Errorf("%.40q is not a toolset id (%s)", id, toolset.IDPattern)
	}
	return resolver.LockLookup(toolsetsDir)(id)
}

// newToolsetShowCmd is `toolgate toolset show ID`.
func newToolsetShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "print what a toolset pins (from its lock in --toolsets DIR)",
		Long: `Prints the toolset ID pins, as its lock file holds it: the id, name, base,
tools with their schemas and policies, fetch hosts and workflows. The lock
is found among the *.lock.json in --toolsets DIR (default toolsets).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exit(misuse(cmd, "name one toolset id"))
			}
			ts, err := lockedToolset(args[0])
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "toolgate toolset show: %v\n", err)
				return exit(ExitErrors)
			}
			doc, _ := ts.MarshalIndent()
			cmd.OutOrStdout().Write(doc)
			return nil
		},
	}
}

// newToolsetDiffCmd is `toolgate toolset diff A B`.
func newToolsetDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff A B",
		Short: "print what changed from toolset A to toolset B (from their locks)",
		Long: `Prints one line per difference from toolset A to toolset B, both read from
their locks in --toolsets DIR: "+ tool NAME" and "- tool NAME" for a tool
only B or only A has, "~ tool NAME: MEMBER A → B" for a changed member
(schemas are compared in their RFC 8785 form and shown as "changed"), and
"~ MEMBER: A → B" for name, base, fetch_hosts and workflows. Exits 0 when
they pin the same content, 1 when they differ.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return exit(misuse(cmd, "name two toolset ids"))
			}
			var sets [2]*toolset.Toolset
			for i, id := range args {
				ts, err := lockedToolset(id)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "toolgate toolset diff: %s: %v\n", id, err)
					return exit(ExitErrors)
				}
				sets[i] = ts
			}
			if n := diffToolsets(cmd.OutOrStdout(), sets[0], sets[1]); n > 0 {
				return exit(ExitErrors)
			}
			return nil
		},
	}
}

// diffToolsets writes the differences from a to b and returns how many.
func diffToolsets(w io.Writer, a, b *toolset.Toolset) int {
	n := 0
	line := func(format string, args ...any) {
		fmt.Fprintf(w, format+"\n", args...)
		n++
	}
	js := func(v any) string { out, _ := json.Marshal(v); return string(out) }
	for _, h := range []struct {
		name string
		a, b any
	}{{"name", a.Name, b.Name}, {"base", a.Base, b.Base}, {"fetch_hosts", a.FetchHosts, b.FetchHosts}, {"workflows", a.Workflows, b.Workflows}} {
		if js(h.a) != js(h.b) {
			line("~ %s: %s → %s", h.name, js(h.a), js(h.b))
		}
	}
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
			{"retry", ta.Retry, tb.Retry}, {"tolerate_duplicates", ta.TolerateDuplicates, tb.TolerateDuplicates}} {
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
