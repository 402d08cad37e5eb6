package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
)

// newToolsetLockCmd is `toolgate toolset lock FILE`.
func newToolsetLockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock FILE [--toolsets DIR]",
		Short: "write a toolset file's lock offline, as registration would write it",
		Long: `Writes the lock of toolset file FILE, <toolset>.lock.json beside it, byte
for byte the lock toolgate toolset register writes once the toolset is
registered, without registering it: check and compile then read the
toolset a Solution pins before anything is deployed. FILE is resolved and
goes through the registration check as registration does (its base is
read from the locks beside it, then in --toolsets DIR); registration
checks it again, and a platform tool's function against its floor.

A toolset file naming MCP servers is refused: its tools' schemas come from
the servers, which only registration lists (docs/toolsets.md).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(lockToolsetFile(cmd, files[0]))
		},
	}
	addToolsetsFlag(cmd)
	return cmd
}

// lockToolsetFile writes the lock of toolset file f: the resolved
// toolset as toolset.MarshalIndent writes it, which is what writeLocks
// writes after registering a toolset file without MCP servers. Nothing is
// written when f has errors, names MCP servers or fails the registration
// check (toolset.Verify against the catalog).
func lockToolsetFile(cmd *cobra.Command, f string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	src, err := os.ReadFile(f)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset lock: %v\n", err)
		return ExitMisuse
	}
	if strings.HasSuffix(f, ".toolset.json") || !resolver.IsToolsetFile(src) {
		fmt.Fprintf(stderr, "toolgate toolset lock: %s is not a toolset file (docs/toolsets.md): a compiled toolset or a Solution has no lock of its own\n", f)
		return ExitMisuse
	}
	res := compileToolsetFile(f, src)
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.String())
	}
	switch {
	case !res.OK():
		fmt.Fprintf(stderr, "%s: the toolset file has errors: no lock was written\n", f)
		return ExitErrors
	case res.Draft:
		fmt.Fprintf(stderr, "%s: %s; no lock is written offline: register it through the publish function (toolgate toolset register), which writes its lock\n", f, draftNote(res.Toolset))
		return ExitErrors
	}
	if err := res.Toolset.Verify(catalog.Default()); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f, err)
		return ExitErrors
	}
	doc, err := res.Toolset.MarshalIndent()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f, err)
		return ExitErrors
	}
	lock := filepath.Join(filepath.Dir(f), resolver.LockFile(res.Toolset.Name))
	if err := writeAtomic(lock, doc); err != nil {
		fmt.Fprintf(stderr, "%s: write the lock: %v\n", f, err)
		return ExitErrors
	}
	// As registration does: invisible and bidirectional characters in
	// descriptions and titles are named, not refused.
	warnInvisible(stderr, f, res.Toolset)
	fmt.Fprintf(stdout, "wrote %s (%s)\n", lock, res.Toolset.ID)
	return ExitOK
}
