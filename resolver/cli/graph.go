package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver/flowchart"
)

// newGraphCmd is `toolgate graph FILE [--format mermaid|dot]`.
func (a *app) newGraphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph [--format mermaid|dot] [--toolsets DIR] FILE",
		Short: "print a Solution as a Mermaid flowchart or a Graphviz digraph",
		Long: `Prints a Solution's steps and edges as a Mermaid flowchart (the default;
GitHub renders it in a mermaid code block) or a Graphviz DOT digraph:
each step's kind, reviews and the tool steps they approve, gated tool steps
with a thick border, on_error, on_reject and on_timeout edges dotted and
coloured apart, and a for_each's body as a subgraph. The path each
[review-before-tool] and [no-fallback] error names is drawn red.

A refused Solution is drawn too, with its diagnostics on stderr, and exits
1; one whose steps cannot be read (syntax, grammar, an unknown toolset)
prints only its diagnostics.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.graph(cmd, files, format))
		},
	}
	cmd.Flags().StringVar(&format, "format", string(flowchart.Mermaid), "output `FORMAT`: mermaid or dot")
	a.addToolsetsFlag(cmd)
	return cmd
}

func (a *app) graph(cmd *cobra.Command, files []string, format string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(files) != 1:
		return misuse(cmd, "name one Solution file")
	case !slices.Contains(flowchart.Formats, flowchart.Format(format)):
		return misuse(cmd, "--format %q: want mermaid or dot", format)
	}
	res, err := a.compileFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate graph: %v\n", err)
		return ExitMisuse
	}
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.String())
	}
	if res.Graph == nil {
		return ExitErrors
	}
	if err := flowchart.Write(stdout, flowchart.Format(format), res.Graph, res.Refused); err != nil {
		fmt.Fprintf(stderr, "toolgate graph: %v\n", err)
		return ExitErrors
	}
	if !res.OK() {
		return ExitErrors
	}
	return ExitOK
}
