package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A reconcile command line the CLI cannot run is refused with exit 2 and
// a message naming what is wrong, before anything is signed or sent: both
// outcomes or neither, not applied without a reason or with a result, a
// key that is not a call's, an unreadable or non-JSON result file.
func TestLedgerReconcileMisuseNamesTheBadArgument(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "result.txt")
	if err := os.WriteFile(notJSON, []byte("secret-canary {not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "arn:aws:states:us-east-1:123456789012:execution:sm:run-1/2"
	local := []string{"--endpoint", "http://127.0.0.1:1", "--as", "ops"}
	cmd := func(args ...string) []string {
		return append(append([]string{"ledger", "reconcile"}, args...), local...)
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"neither outcome", cmd(key), "say --applied or --not-applied"},
		{"both outcomes", cmd(key, "--applied", "--not-applied", "--reason", "x"), "say --applied or --not-applied"},
		{"not applied without reason", cmd(key, "--not-applied"), "--not-applied needs --reason"},
		{"not applied with a result", cmd(key, "--not-applied", "--reason", "x", "--result", notJSON), "--result is for --applied"},
		{"no key", cmd("--applied"), "name one call's idempotency key"},
		{"a run id for a key", cmd("arn:aws:states:us-east-1:123456789012:execution:sm:run-1", "--applied"), "is not a call's idempotency key"},
		{"unreadable result", cmd(key, "--applied", "--result", filepath.Join(dir, "none.json")), "--result: cannot read"},
		{"result not JSON", cmd(key, "--applied", "--result", notJSON), "is not JSON"},
		{"reason too long", cmd(key, "--applied", "--reason", strings.Repeat("x", 1001)), "over 1000"},
		{"no transport", []string{"ledger", "reconcile", key, "--applied"}, "pass --url"},
	} {
		code, _, errs := run(c.args...)
		if code != ExitMisuse || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, errs, ExitMisuse, c.says)
		}
		if strings.Contains(errs, "secret-canary") {
			t.Errorf("%s: the result file's content reached stderr", c.name)
		}
	}
}
