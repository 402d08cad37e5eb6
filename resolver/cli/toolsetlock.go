package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// newToolsetLockCmd is `toolgate toolset lock FILE`.
func (a *app) newToolsetLockCmd() *cobra.Command {
	var replace bool
	cmd := &cobra.Command{
		Use:   "lock FILE [--replace] [--toolsets DIR]",
		Short: "write a toolset file's lock offline, as registration would write it",
		Long: `Writes the lock of toolset file FILE, <toolset>.lock.json beside it, byte
for byte the lock toolgate toolset register writes once the toolset is
registered, without registering it: check and compile then read the
toolset a Solution pins before anything is deployed. FILE is resolved and
goes through the registration check as registration does (its base is
read from the locks beside it, then in --toolsets DIR); registration
checks it again, and a platform tool's function against its floor.

A toolset file naming MCP servers is refused: its tools' schemas come from
the servers, which only registration lists (docs/toolsets.md).

` + replaceHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.lockToolsetFile(cmd, files[0], replace))
		},
	}
	addReplaceFlag(cmd, &replace)
	a.addToolsetsFlag(cmd)
	return cmd
}

// replaceHelp says, in toolset lock's and toolset register's --help,
// when a lock is replaced.
const replaceHelp = `A lock <toolset>.lock.json that is already there is written again when it
holds the same toolset id (the same bytes); one that holds another id, or
that is not a lock, is not replaced unless --replace is given: the command
fails naming the file and both ids, and writes nothing.`

// addReplaceFlag adds --replace, which lets a lock of another toolset id
// be replaced (checkLockFile).
func addReplaceFlag(cmd *cobra.Command, replace *bool) {
	cmd.Flags().BoolVar(replace, "replace", false, "replace a lock of the same toolset name that holds another toolset id")
}

// checkLockFile reports whether lock file path may be written with
// toolset ts: when no file is there, when the file is a lock of ts.ID
// (writing it again changes nothing), or with replace. A lock of another
// id, or a file toolset.Parse refuses, is an error naming the file and
// both ids, which says to pass --replace; so is a file that cannot be read
// for another reason than not being there.
func checkLockFile(path string, ts *toolset.Toolset, replace bool) error {
	data, err := resolver.ReadFile(path, resolver.LockFileBound)
	switch {
	case errors.Is(err, fs.ErrNotExist) || replace:
		return nil
	case err != nil:
		return fmt.Errorf("read the lock there: %w", err)
	}
	old, err := toolset.Parse(data)
	if err != nil {
		var head struct {
			ID string `json:"id"`
		}
		id := "no id"
		if json.Unmarshal(data, &head) == nil && tool.ToolsetIDPattern.MatchString(head.ID) {
			id = "id " + head.ID
		}
		return fmt.Errorf("%s is there and is not a lock toolgate reads (%s: %v); it was not replaced with the lock of %s: pass --replace to replace it", path, id, err, ts.ID)
	}
	if old.ID != ts.ID {
		return fmt.Errorf("%s holds the lock of toolset %s (%s), not of %s: it was not replaced; pass --replace to replace it", path, old.ID, old.Name, ts.ID)
	}
	return nil
}

// lockToolsetFile writes the lock of toolset file f: the resolved
// toolset as toolset.MarshalIndent writes it, which is what writeLocks
// writes after registering a toolset file without MCP servers. Nothing is
// written when f has errors, names MCP servers or fails the registration
// check (toolset.Verify against the catalog), nor over a lock of another
// toolset id without replace (checkLockFile).
func (a *app) lockToolsetFile(cmd *cobra.Command, f string, replace bool) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	src, err := resolver.ReadFile(f, resolver.SourceFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset lock: %v\n", err)
		return ExitMisuse
	}
	// A file that is neither is read as a toolset file, whose diagnostics
	// say what is wrong: a syntax error, an empty file, no toolset key.
	if strings.HasSuffix(f, ".toolset.json") || resolver.IsSolutionFile(src) {
		fmt.Fprintf(stderr, "toolgate toolset lock: %s is not a toolset file (docs/toolsets.md): a compiled toolset or a Solution has no lock of its own\n", f)
		return ExitMisuse
	}
	res := a.compileToolsetFile(f, src)
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
	if err := checkLockFile(lock, res.Toolset, replace); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f, err)
		return ExitErrors
	}
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
