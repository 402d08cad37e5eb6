package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/observed"
)

// shapesFileBound is what --shapes reads: a regular file of at most
// resolver.MaxLockBytes (32 MiB), as a lock, which may carry the same
// shapes in its observed member; observed.ParseFile bounds what it holds.
var shapesFileBound = resolver.FileBound{Kind: "a shapes file", Max: resolver.MaxLockBytes}

// addShapesFlag gives check, compile and declarations the --shapes flag:
// a shapes file (toolgate shapes --json writes one) whose learned shapes
// the binding checks and tools.d.ts use (docs/declarations.md,
// "Observed shapes").
func (a *app) addShapesFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.shapesFile, "shapes", "", "a shapes `FILE` (toolgate shapes --json): the learned shapes the binding checks and tools.d.ts use for tools without an output schema")
}

// loadShapes reads --shapes into a.shapes once. An error names the file
// and what is wrong (observed.ParseFile's rule), never its content; the
// caller exits ExitMisuse, as for a Solution file it cannot read.
func (a *app) loadShapes() error {
	if a.shapesFile == "" || a.shapes != nil {
		return nil
	}
	data, err := resolver.ReadFile(a.shapesFile, shapesFileBound)
	if err != nil {
		return fmt.Errorf("--shapes: %w", err)
	}
	f, err := observed.ParseFile(data)
	if err != nil {
		return fmt.Errorf("--shapes %s: %w", a.shapesFile, err)
	}
	a.shapes = f
	return nil
}
