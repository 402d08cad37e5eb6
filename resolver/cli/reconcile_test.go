package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
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
		{"reason with an escape sequence", cmd(key, "--not-applied", "--reason", "sent\x1b[2K\rnot sent"), "control or bidirectional"},
		{"reason with a bidi override", cmd(key, "--not-applied", "--reason", "no trace \u202eof it"), "control or bidirectional"},
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

// toolgate ledger reconcile against review-decision under the RIE, with a
// reconciler configured: the result is checked against the pinned output
// schema first (--table), the run's starter is refused, a reconciler
// records it and sees what was recorded, and a second reconcile is
// refused naming who did it.
func TestLedgerReconcileLocal(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	dir := t.TempDir()
	if code, _, errs := run("compile", filepath.Join(solutions, "newsletter.yaml"), "-o", dir); code != ExitOK {
		t.Fatal(errs)
	}
	if code, out, errs := run(append([]string{"toolset", "register"}, append(flags, dir)...)...); code != ExitOK {
		t.Fatalf("register: %s%s", out, errs)
	}
	_, id, _ := run("toolset", filepath.Join(solutions, "newsletter.yaml"))
	ctx := context.Background()
	callers := localtest.StartCallers(t)
	cli := localAWS().with(callers.CLIEnv())
	sfn := reviewtest.NewSFN(t)
	vars := callers.Env(map[string]string{dispatch.EnvTable: store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": flags[1], "AWS_ENDPOINT_URL_SFN": sfn.URL,
		review.EnvReconcilers: `["` + as("ops") + `"]`})
	fn := localtest.RIE(t, "review-decision", localtest.Bootstrap(t, "../../functions/review-decision"), 10*time.Second, vars)

	runID := "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID()
	if err := reviewStoreOn(t, flags[1], store.Table()).RecordStart(ctx, runID, as("bob")); err != nil {
		t.Fatal(err)
	}
	key := runID + "/2"
	c := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: strings.TrimSpace(id),
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(-time.Second),
		ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2"}
	if ok, _, err := store.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := store.MarkUnknown(ctx, mustRecordOf(t, store, key), string(tool.RetryRequiresIdempotency)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"message_id": "0100018c-canary"}`), 0o600)
	os.WriteFile(bad, []byte(`{"id": "canary-bad"}`), 0o600)
	args := func(who string, a ...string) []string {
		return append(append([]string{"ledger", "reconcile", key}, a...), "--endpoint", fn.Endpoint(), "--as", who, "--table", store.Table(), "--ddb-endpoint", flags[1])
	}
	code, _, errs := cli.run(args("ops", "--applied", "--result", bad)...)
	if code != ExitMisuse || !strings.Contains(errs, "does not match the pinned output schema of send-email") || strings.Contains(errs, "canary-bad") {
		t.Fatalf("a result the schema refuses: exit %d %s", code, errs)
	}
	if code, _, errs := cli.run(args("bob", "--applied", "--result", good)...); code != ExitErrors || !strings.Contains(errs, "REVIEW_FORBIDDEN") {
		t.Fatalf("the starter reconciles: exit %d %s", code, errs)
	}
	code, out, errs := cli.run(args("ops", "--applied", "--result", good, "--reason", "SES logged it")...)
	if code != ExitOK || !strings.Contains(out, "reconciled "+key+" as applied, with its result") || !strings.Contains(out, "by "+as("ops")) || strings.Contains(out, "canary") {
		t.Fatalf("ops reconciles: exit %d\n%s%s", code, out, errs)
	}
	if rc, err := store.Reconciliation(ctx, key); err != nil || string(rc.Result) != `{"message_id":"0100018c-canary"}` {
		t.Fatalf("recorded %+v %v", rc, err)
	}
	if code, _, errs := cli.run(args("ops", "--not-applied", "--reason", "again")...); code != ExitErrors || !strings.Contains(errs, "REVIEW_CONFLICT") || !strings.Contains(errs, as("ops")) {
		t.Fatalf("a second reconcile: exit %d %s", code, errs)
	}
}

func mustRecordOf(t *testing.T, s *ledger.Store, key string) *ledger.Record {
	t.Helper()
	r, err := s.Record(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
