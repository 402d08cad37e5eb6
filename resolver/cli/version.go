package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit is the commit toolgate was built from, stamped by make build with
// -ldflags -X github.com/toolgate/toolgate/resolver/cli.commit=...: git
// rev-parse --short HEAD, with "-dirty" when tracked files have
// uncommitted changes, or "unknown" where git is absent. A plain go build
// or go run leaves it empty. The version is CHANGELOG.md's
// (changelogVersion), the same in every build of a commit.
var commit string

// newVersionCmd is `toolgate version`.
func (a *app) newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version and commit toolgate was built from",
		Long: `Prints the version CHANGELOG.md names (its newest release, or "unreleased"
before the first) and the commit toolgate was built from, as make build
stamps it; without the stamp (go build, go run), the revision the Go build
information records, else "unknown".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			fmt.Fprintf(cmd.OutOrStdout(), "toolgate version %s (commit %s)\n", changelogVersion, buildCommit(commit, info))
			return nil
		},
	}
}

// buildCommit returns the commit to print: the stamped one; else the
// revision info records (a build with VCS stamping), with "-dirty" when it
// had uncommitted changes; else "unknown". info may be nil.
func buildCommit(stamped string, info *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	var revision, modified string
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	switch {
	case revision == "":
		return "unknown"
	case modified == "true":
		return revision + "-dirty"
	}
	return revision
}
