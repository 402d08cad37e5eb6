package cli

import (
	"fmt"
	"io"

	"github.com/toolgate/toolgate/shared/recipient"
)

// Exit codes of check-recipient beyond ExitOK (allow), ExitErrors (refuse)
// and ExitMisuse.
const ExitInvalid = 3

// checkRecipient is `toolgate check-recipient [--allow ENTRY]... ADDRESS`:
// the send-email tool's recipient decision, the same code, as a dry run.
func checkRecipient(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check-recipient", stderr)
	var allow stringList
	fs.Var(&allow, "allow", "an allow-list entry: a full address or @domain (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: toolgate check-recipient [--allow ENTRY]... ADDRESS")
		return ExitMisuse
	}
	list, err := recipient.ParseList(allow)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate check-recipient: --allow: %v\n", err)
		return ExitMisuse
	}
	d := list.Decide(pos[0])
	switch d.Verdict {
	case recipient.Allow:
		fmt.Fprintln(stdout, "allow")
		return ExitOK
	case recipient.Refuse:
		fmt.Fprintf(stdout, "refuse: %s\n", d.Reason)
		return ExitErrors
	}
	fmt.Fprintf(stdout, "invalid: %s\n", d.Reason)
	return ExitInvalid
}
