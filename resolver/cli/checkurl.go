package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/fetch"
)

// checkURLOptions are toolgate check-url's flags.
type checkURLOptions struct {
	allow, addrs, resolve []string
}

// newCheckURLCmd is `toolgate check-url [--allow ENTRY]... [--allow-address
// CIDR]... [--resolve HOST=IP[,IP]]... URL`: the fetch tool's decision, the
// same code as the Lambda, as a dry run. The allow entries stand for both
// lists (the platform's and the toolset's). Without --resolve, names are
// resolved with this machine's resolver; no connection is ever made.
func (a *app) newCheckURLCmd() *cobra.Command {
	var o checkURLOptions
	cmd := &cobra.Command{
		Use:   "check-url [--allow ENTRY]... [--allow-address CIDR]... [--resolve HOST=IP[,IP]]... URL",
		Short: "the fetch tool's decision: allow (0), refuse (1)",
		Long: `Prints the fetch tool's decision on a URL, with the same code as the
Lambda: allow (exit 0) or refuse: REASON (exit 1). The allow entries stand
for both lists (the platform's and the toolset's). Without --resolve, names
are resolved with this machine's resolver; no connection is ever made.`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(checkURL(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.allow, "allow", nil, "an allowed host `ENTRY`: host, *.domain, IP literal, optional :port (repeatable)")
	fs.StringArrayVar(&o.addrs, "allow-address", nil, "a `CIDR` exempted from the address refusal (repeatable)")
	fs.StringArrayVar(&o.resolve, "resolve", nil, "a fixed answer `HOST=IP[,IP]` for HOST instead of DNS (repeatable)")
	return cmd
}

func checkURL(cmd *cobra.Command, pos []string, o *checkURLOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if len(pos) != 1 {
		return misuse(cmd, "name one URL")
	}
	cfg, err := fetch.ParseConfig(o.allow, o.addrs)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate check-url: %v\n", err)
		return ExitMisuse
	}
	if len(o.resolve) > 0 {
		fixed, err := fetch.ParseResolve(o.resolve)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate check-url: --resolve: %v\n", err)
			return ExitMisuse
		}
		cfg.Resolver = fixed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := cfg.Decide(ctx, pos[0], cfg.Allow)
	if d.Allow {
		fmt.Fprintln(stdout, "allow")
		return ExitOK
	}
	fmt.Fprintf(stdout, "refuse: %s\n", d.Reason)
	return ExitErrors
}
