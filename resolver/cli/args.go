package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// goFlagSpelling returns args with the called command's long flags written
// with one dash (-format json, -summary=false), as Go's flag package reads
// them and as toolgate read them before it moved to cobra, respelled with
// two (--format json), as pflag reads them. An unknown -name is respelled
// too, so that pflag refuses it (-output is not -o with the value
// "utput"). A flag's value and everything after "--" stay as they are; -o
// and -h are pflag's one-letter spellings already.
func goFlagSpelling(root *cobra.Command, args []string) []string {
	out := append([]string{}, args...)
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return out // a shell completing a partial command line
	}
	// The help and completion commands as ExecuteC adds them, so that Find
	// finds them too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	cmd, _, err := root.Find(args)
	if err != nil {
		return out
	}
	cmd.InitDefaultHelpFlag()
	flags := cmd.Flags()
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		double := strings.HasPrefix(a, "--")
		name, _, inline := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		var f *pflag.Flag
		switch {
		case double:
			f = flags.Lookup(name)
		case len(name) == 1:
			f = flags.ShorthandLookup(name)
		default:
			// -name is a long flag, known or not: an unknown one is pflag's
			// "unknown flag" (misuse), never -n with the value "ame".
			out[i] = "-" + a
			f = flags.Lookup(name)
		}
		if f != nil && !inline && f.NoOptDefVal == "" {
			i++ // the flag's value, whatever it looks like
		}
	}
	return out
}
