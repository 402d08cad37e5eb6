package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/review"
)

// A fork command line the CLI cannot run is refused with exit 2 and a
// message naming what is wrong, before anything is read, signed or sent.
func TestForkMisuseNamesTheBadArgument(t *testing.T) {
	t.Parallel()
	const parent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:run-1"
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"no run", []string{"fork", "--solution", "x.yaml"}, "name one run"},
		{"two runs", []string{"fork", parent, parent, "--solution", "x.yaml"}, "name one run"},
		{"not an execution ARN", []string{"fork", "run-1", "--solution", "x.yaml"}, `"run-1" is not an execution ARN`},
		{"no solution", []string{"fork", parent}, "--solution FILE is required"},
		{"a child's name", []string{"fork", parent, "--solution", "x.yaml", "--name", "tg-1"}, `--name "tg-1" starts with tg-`},
		{"a bad --as", []string{"fork", parent, "--solution", "x.yaml", "--as", "a b"}, `--as "a b"`},
		{"no timeout", []string{"fork", parent, "--solution", "x.yaml", "--timeout", "0s"}, "--timeout must be positive"},
		{"a missing solution file", []string{"fork", parent, "--solution", "testdata/no-such-file.yaml"}, "no-such-file.yaml"},
		{"a --toolset that is no toolset id", []string{"fork", parent, "--solution", "x.yaml", "--toolset", "demo"}, `--toolset "demo" is not a toolset id`},
		{"a --toolset in upper case", []string{"fork", parent, "--solution", "x.yaml", "--toolset", "ts_0123456789ABCDEF0123456789ABCDEF"}, "is not a toolset id"},
		{"a --toolset for a Solution naming none", []string{"fork", parent, "--solution", "../../testdata/solutions/demo-digest.yaml", "--toolset", "ts_0123456789abcdef0123456789abcdef"},
			"--toolset: the Solution names no registered toolset"},
		{"a --toolset carrying another member", []string{"fork", parent, "--solution", "x.yaml", "--toolset", "ts_0123456789abcdef0123456789abcdef\nsteps: []"}, `\nsteps: []" is not a toolset id`},
		{"a --toolset carrying a terminal escape", []string{"fork", parent, "--solution", "x.yaml", "--toolset", "ts_0123456789abcdef0123456789abcdef\x1b[2J"}, `\x1b[2J" is not a toolset id`},
		{"a --toolset with a trailing newline", []string{"fork", parent, "--solution", "x.yaml", "--toolset", "ts_0123456789abcdef0123456789abcdef\n"}, "is not a toolset id"},
		{"parked fork with a bad --toolset", []string{"parked", "fork", "pk_abcdefghijklmnopqrstuvwxyz", "--solution", "x.yaml", "--toolset", "ts_1"}, `--toolset "ts_1"`},
		{"parked fork without a park", []string{"parked", "fork", "--solution", "x.yaml"}, "name one park id"},
		{"parked fork without a solution", []string{"parked", "fork", "pk_abcdefghijklmnopqrstuvwxyz"}, "--solution FILE is required"},
	} {
		code, _, errs := run(c.args...)
		if code != ExitMisuse || !strings.Contains(errs, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want %d saying %q", c.name, code, errs, ExitMisuse, c.says)
		}
	}
}

// The completed calls a fork reports as never reached are those whose
// step is no tool step of the corrected Solution, a loop's body included.
func TestUnreachedAreCompletedCallsOfStepsTheSolutionNoLongerHas(t *testing.T) {
	sol := &resolver.Solution{Steps: []*resolver.Step{
		{ID: "fetch", Kind: resolver.KindTool},
		{ID: "each", Kind: resolver.KindForEach, ForEach: &resolver.ForEach{Body: []*resolver.Step{{ID: "send", Kind: resolver.KindTool}}}},
	}}
	calls := []review.ForkCall{
		{Key: "r/1", Step: "fetch", State: "COMPLETED"},
		{Key: "r/2.0.1", Step: "send", State: "COMPLETED"},
		{Key: "r/3", Step: "draft", State: "COMPLETED"},
		{Key: "r/4", Step: "notify", State: "FAILED"},
	}
	got := Unreached(calls, sol)
	if len(got) != 1 || got[0].Key != "r/3" {
		t.Fatalf("unreached %+v, want r/3 only", got)
	}
}

// A corrected Solution without the Starter state (no gated tools,
// workflow steps, parkable steps or credentials) is refused as a fork's
// Solution before anything is published, forked or started: its tool
// Tasks would send a start member without forked_from, and every call of
// the parent would be made again.
func TestForkRefusesASolutionWhoseRunsRecordNoStart(t *testing.T) {
	t.Parallel()
	const parent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_repo-views-counter:run-1"
	code, out, errs := run("fork", parent, "--solution", filepath.Join(solutions, "repo-views-counter.yaml"))
	if code != ExitErrors || !strings.Contains(errs, "cannot be a fork's Solution") || !strings.Contains(errs, "nothing was published or forked") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %d, nothing published or forked", code, out, errs, ExitErrors)
	}
}

// A fork's --input that is not JSON is misuse; one the corrected
// Solution's input record refuses (its schema, its input_limit_bytes) is
// refused naming the rule, before anything is published, forked or
// started, so that the parent is not stopped for a fork that cannot start.
func TestForkRefusesAnInputTheCorrectedSolutionRefusesBeforeForking(t *testing.T) {
	t.Parallel()
	const parent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_weekly-digest:run-1"
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, input string
		code        int
		says        string
	}{
		{"not JSON", `{"recipient":`, ExitMisuse, "is not JSON"},
		{"against the schema", `{"recipient": 3}`, ExitErrors, "nothing was published or forked"},
		{"over the input limit", `{"recipient": "` + strings.Repeat("a", 300*1024) + `"}`, ExitErrors, "nothing was published or forked"},
	} {
		code, out, errs := run("fork", parent, "--solution", filepath.Join(solutions, "newsletter.yaml"), "--input", write(c.name+".json", c.input))
		if code != c.code || !strings.Contains(errs, c.says) || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %.300q; want %d saying %q", c.name, code, out, errs, c.code, c.says)
		}
	}
}

// --toolset replaces the toolset the corrected Solution names before it
// is checked: a toolset no lock file in --toolsets DIR holds is the
// checker's [toolset] error naming the id given, and nothing is published.
func TestForkToolsetIsTheToolsetTheSolutionIsCheckedAgainst(t *testing.T) {
	t.Parallel()
	const parent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:run-1"
	const id = "ts_0123456789abcdef0123456789abcdef"
	code, _, errs := run("fork", parent, "--solution", "../../testdata/toolsets/solutions/ticket-parent.yaml", "--toolsets", "../../testdata/toolsets", "--toolset", id)
	if code != ExitErrors || !strings.Contains(errs, id) || !strings.Contains(errs, "[toolset]") || !strings.Contains(errs, "nothing was published or forked") {
		t.Fatalf("exit %d, stderr %q; want %d, a [toolset] error naming %s", code, errs, ExitErrors, id)
	}
}
