package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/recipient"
)

// Exit codes of check-recipient beyond ExitOK (allow), ExitErrors (refuse)
// and ExitMisuse.
const ExitInvalid = 3

// newCheckRecipientCmd is `toolgate check-recipient [--allow ENTRY]...
// ADDRESS`: the send-email tool's recipient decision, the same code, as a
// dry run.
func (a *app) newCheckRecipientCmd() *cobra.Command {
	var allow []string
	cmd := &cobra.Command{
		Use:   "check-recipient [--allow ENTRY]... ADDRESS",
		Short: "send-email's recipient decision: allow (0), refuse (1), invalid (3)",
		Long: `Prints the send-email tool's decision on a recipient address, with the
same code as the Lambda: allow (exit 0), refuse: REASON (exit 1) or
invalid: REASON (exit 3).`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(checkRecipient(cmd, pos, allow))
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "an allow-list `ENTRY`: a full address or @domain (repeatable)")
	return cmd
}

func checkRecipient(cmd *cobra.Command, pos, allow []string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if len(pos) != 1 {
		return misuse(cmd, "name one address")
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
