package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
)

// checkURL is `toolgate check-url [--allow ENTRY]... [--allow-address
// CIDR]... [--resolve HOST=IP[,IP]]... URL`: the fetch tool's decision, the
// same code as the Lambda, as a dry run. The allow entries stand for both
// lists (the platform's and the toolset's). Without --resolve, names are
// resolved with this machine's resolver; no connection is ever made.
func checkURL(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check-url", stderr)
	var allow, addrs, resolve stringList
	fs.Var(&allow, "allow", "an allowed host entry: host, *.domain, IP literal, optional :port (repeatable)")
	fs.Var(&addrs, "allow-address", "a CIDR exempted from the address refusal (repeatable)")
	fs.Var(&resolve, "resolve", "HOST=IP[,IP]: a fixed answer for HOST instead of DNS (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: toolgate check-url [--allow ENTRY]... [--allow-address CIDR]... [--resolve HOST=IP[,IP]]... URL")
		return ExitMisuse
	}
	cfg, err := fetch.ParseConfig(allow, addrs)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate check-url: %v\n", err)
		return ExitMisuse
	}
	if len(resolve) > 0 {
		fixed, err := fetch.ParseResolve(resolve)
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
