package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The version and commit toolgate was built from, stamped by make build
// with -ldflags -X (github.com/toolgate/toolgate/resolver/cli.version=...
// and .commit=...). A plain go build or go run leaves them empty.
var (
	// version is the module version: git describe --tags --always, or
	// "devel" where git is absent.
	version string
	// commit is the commit: git rev-parse --short HEAD, with "-dirty" when
	// tracked files have uncommitted changes, or "unknown" where git is
	// absent.
	commit string
)

// newVersionCmd is `toolgate version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version and commit toolgate was built from",
		Long: `Prints the module version and the commit toolgate was built from, as
make build stamps them; without them (go build, go run), what the Go build
information records, else "devel" and "unknown".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			v, c := buildVersion(version, commit, info)
			fmt.Fprintf(cmd.OutOrStdout(), "toolgate version %s (commit %s)\n", v, c)
			return nil
		},
	}
}

// buildVersion returns the version and commit to print: the stamped ones;
// else what info records (the module version of a go install pkg@version,
// the revision of a build with VCS stamping, "-dirty" when it had
// uncommitted changes); else "devel" and "unknown". info may be nil.
func buildVersion(stampedVersion, stampedCommit string, info *debug.BuildInfo) (string, string) {
	v, c := stampedVersion, stampedCommit
	if info != nil {
		if v == "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		var revision, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if c == "" && revision != "" {
			c = revision
			if modified == "true" {
				c += "-dirty"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}
