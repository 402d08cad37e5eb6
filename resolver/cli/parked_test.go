package cli

import (
	"strings"
	"testing"
)

// A parked command line the CLI cannot run is refused with exit 2 and a
// message naming what is wrong, before anything is signed or sent.
func TestParkedMisuseNamesTheBadArgument(t *testing.T) {
	t.Parallel()
	const id = "pk_abcdefghijklmnopqrstuvwxyz"
	local := []string{"--endpoint", "http://127.0.0.1:1", "--as", "alice"}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"no subcommand", []string{"parked"}, "name a command"},
		{"unknown subcommand", []string{"parked", "delete", id}, `unknown command "delete"`},
		{"no transport", []string{"parked", "list"}, "pass --url"},
		{"--as with --url", []string{"parked", "list", "--url", "https://x.lambda-url.us-east-1.on.aws/", "--as", "a"}, "--as is for the local stack"},
		{"--endpoint without --as", []string{"parked", "list", "--endpoint", "http://127.0.0.1:1"}, "--endpoint needs --as"},
		{"reject without reason", append([]string{"parked", "reject", id}, local...), "needs --reason"},
		{"show without id", append([]string{"parked", "show"}, local...), "name one park id"},
		{"a review id for a park id", append([]string{"parked", "approve", "rv_0123456789abcdef0123456789abcdef"}, local...), `"rv_0123456789abcdef0123456789abcdef" is not a park id`},
		{"list with an argument", append([]string{"parked", "list", id}, local...), "list takes no arguments"},
		{"a reason for approve", append([]string{"parked", "approve", id, "--reason", "x"}, local...), "unknown flag: --reason"},
	} {
		code, _, errs := run(c.args...)
		if code != ExitMisuse || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, errs, ExitMisuse, c.says)
		}
	}
}
