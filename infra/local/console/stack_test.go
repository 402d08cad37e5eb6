package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/testkit"
)

// suite is the one local stack the package's tests share, and the CLI
// binary they start the console with: made by the first test that asks
// (sharedEnv), stopped by TestMain. Tests that need no stack (the
// harness's) start none.
var suite struct {
	once sync.Once
	dir  string
	st   *stack.Stack
	// bin is toolgate, built from ./resolver/cmd/toolgate.
	bin string
	err error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 && suite.st != nil {
		// A failed run shows the end of review-decision's output (its
		// RIE's and the function's logs: request ids, error classes and
		// codes, never an input): a function that stopped answering says
		// why there.
		for _, p := range suite.st.Processes() {
			if strings.HasPrefix(p.Name, "rie:review-decision") {
				out := p.Stdout() + p.Stderr()
				fmt.Fprintf(os.Stderr, "--- the end of %s's output:\n%s\n", p.Name, out[max(0, len(out)-4000):])
			}
		}
	}
	if suite.st != nil {
		suite.st.Stop()
		os.RemoveAll(suite.st.Dir)
	}
	if suite.dir != "" {
		os.RemoveAll(suite.dir)
	}
	os.Exit(code)
}

// env is a test's view of the shared stack: the CLI's environment for it
// and a directory of the test's own.
type env struct {
	st  *stack.Stack
	sf  *sfn.Client
	bin string
	dir string
	cli map[string]string
}

// sharedEnv is t's env on the package's shared stack, started (with every
// function built once) by the first test that asks. Tests on it use
// Solution and run names of their own (fresh), so they may run in
// parallel.
func sharedEnv(t *testing.T) *env {
	t.Helper()
	suite.once.Do(func() {
		root, err := local.Root()
		if err != nil {
			suite.err = err
			return
		}
		if suite.dir, suite.err = os.MkdirTemp("", "toolgate-console-"); suite.err != nil {
			return
		}
		ctx := context.Background() // the stack outlives the test that started it
		suite.bin = filepath.Join(suite.dir, "toolgate")
		build := exec.CommandContext(ctx, "go", "build", "-o", suite.bin, "./resolver/cmd/toolgate")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			suite.err = fmt.Errorf("build toolgate: %v\n%s", err, out)
			return
		}
		bs, err := stack.BuildAll(ctx, root, filepath.Join(suite.dir, "functions"))
		if err != nil {
			suite.err = err
			return
		}
		suite.st, suite.err = stack.StartStack(ctx, stack.StackOptions{Bootstraps: bs})
	})
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	st := suite.st
	sf := sfn.New(sfn.Options{BaseEndpoint: aws.String(st.SFN.Endpoint()), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	return &env{st: st, sf: sf, bin: suite.bin, dir: t.TempDir(), cli: st.Environ()}
}

// freshNames counts the names fresh made in this test binary.
var freshNames atomic.Int64

// fresh is name with a suffix no other call in this test binary gives:
// the shared stack keeps every Solution and execution name.
func fresh(name string) string { return fmt.Sprintf("%s-%d", name, freshNames.Add(1)) }

// Local names on the stack (docs/identity.md): the starter starts the
// runs, the reviewer decides them, the publisher publishes.
const (
	starter   = "starter"
	reviewer  = "tester"
	publisher = "publisher"
)

// toolgate runs the CLI in-process with args in e's environment, as
// cli.RunWith does, and returns its stdout and exit code.
func (e *env) toolgate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	vars := maps.Clone(e.cli)
	var out, errb bytes.Buffer
	code := cli.RunWith(args, cli.Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars),
		Stdout: &out, Stderr: &errb})
	if errb.Len() > 0 {
		t.Logf("toolgate %s: %s", strings.Join(args, " "), errb.String())
	}
	return out.String(), code
}

// publish publishes the Solution yaml (whose `solution:` line names it
// SOLUTION, replaced by name) through the publish function.
func (e *env) publish(t *testing.T, name, yaml string) {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "SOLUTION", name)
	path := filepath.Join(e.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := e.toolgate(t, "publish", path, "--endpoint", e.st.Endpoints["publish"], "--as", publisher); code != cli.ExitOK {
		t.Fatalf("publish %s: %s", name, out)
	}
}

// start starts a run of solution with input as the starter, and returns
// its execution ARN.
func (e *env) start(t *testing.T, solution string, input any) string {
	t.Helper()
	b, _ := json.Marshal(input)
	path := filepath.Join(e.dir, fmt.Sprintf("input-%d.json", freshNames.Add(1)))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := e.toolgate(t, "run", solution, "--input", path, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage,
		"--params", e.st.ParamsFile, "--as", starter)
	if code != cli.ExitOK {
		t.Fatalf("run %s: %s", solution, out)
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "started"))
}

func (e *env) decisionEndpoint() string { return e.st.Endpoints["review-decision"] }

// pending is the id of run's pending review other than those in skip,
// waiting up to 45 s for the execution to reach it.
func (e *env) pending(t *testing.T, run string, skip map[string]bool) string {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		for _, v := range e.list(t) {
			if v.RunID == run && !skip[v.ReviewID] {
				return v.ReviewID
			}
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the review appears when the execution reaches it
	}
	t.Fatalf("no pending review for %s", run)
	return ""
}

// list are the pending reviews as toolgate review list --json prints
// them to the reviewer (none when it fails).
func (e *env) list(t *testing.T) []reviewView {
	t.Helper()
	out, code := e.toolgate(t, "review", "list", "--json", "--endpoint", e.decisionEndpoint(), "--as", reviewer)
	var res review.ListResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		return nil
	}
	return res.Reviews
}

// decideCLI decides a review with toolgate review VERB as the reviewer
// (args: --answer, --reason ...).
func (e *env) decideCLI(t *testing.T, verb, id string, args ...string) {
	t.Helper()
	if out, code := e.toolgate(t, append([]string{"review", verb, id, "--endpoint", e.decisionEndpoint(), "--as", reviewer}, args...)...); code != cli.ExitOK {
		t.Fatalf("review %s %s: %s", verb, id, out)
	}
}

// finish follows run to its end, within 90 s, and returns its outcome
// and the states it entered.
func (e *env) finish(t *testing.T, run string) (*runner.Outcome, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var states []string
	out, err := runner.Follow(ctx, e.sf, run, 200*time.Millisecond, func(ev runner.Event) {
		if strings.HasSuffix(ev.Type, "StateEntered") {
			states = append(states, ev.State)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, states
}

// rows are run's ledger rows as toolgate ledger --json prints them.
func (e *env) rows(t *testing.T, run string) []ledger.Row {
	t.Helper()
	out, code := e.toolgate(t, "ledger", "--json", run, "--endpoint", e.st.Dynamo.Endpoint(), "--table", stack.Table)
	var rows []ledger.Row
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("ledger %s: %s", run, out)
	}
	return rows
}

// mail is an e-mail the SES emulator accepted.
type mail struct {
	MessageID   string `json:"messageId"`
	Destination struct{ To, Cc, Bcc []string }
	Subject     string
	Body        struct{ Text, HTML string }
}

// mailsWithSubject are the e-mails in the SES emulator's store with the
// subject (each test's subjects are its own).
func (e *env) mailsWithSubject(t *testing.T, subject string) []mail {
	t.Helper()
	resp, err := http.Get(e.st.SES.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var store struct{ Emails []mail }
	if err := json.NewDecoder(resp.Body).Decode(&store); err != nil {
		t.Fatalf("the SES emulator's store: %v", err)
	}
	var out []mail
	for _, m := range store.Emails {
		if m.Subject == subject {
			out = append(out, m)
		}
	}
	return out
}

// consoleLine is the one line toolgate review console prints on stdout.
const consoleLine = "review console: "

// console is a running `toolgate review console` process.
type console struct {
	// open is the URL it printed (http://127.0.0.1:PORT/open?c=CAP).
	open string
	// base is http://127.0.0.1:PORT.
	base string
	// stderr is what it wrote to its standard error so far.
	stderr *testkit.Buffer
}

// startConsole starts toolgate review console --no-open on the stack's
// review-decision endpoint as the local name as, reads its URL from its
// stdout line, and stops it with SIGINT when t ends.
func (e *env) startConsole(t *testing.T, as string) *console {
	t.Helper()
	cmd := exec.Command(e.bin, "review", "console", "--no-open", "--endpoint", e.decisionEndpoint(), "--as", as)
	cmd.Env = os.Environ()
	for k, v := range e.cli {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &console{stderr: &testkit.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("toolgate review console on SIGINT: %v (want exit 0)\n%s", err, c.stderr)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Errorf("toolgate review console did not stop within 10 s of SIGINT")
		}
	})
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, r)
		done <- cmd.Wait()
	}()
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), consoleLine)
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/open?c=") {
			t.Fatalf("toolgate review console printed %q, want %q followed by http://127.0.0.1:PORT/open?c=CAP\n%s", line, consoleLine, c.stderr)
		}
		c.open = u
		c.base, _, _ = strings.Cut(u, "/open?")
	case <-time.After(30 * time.Second):
		t.Fatalf("toolgate review console printed no URL within 30 s\n%s", c.stderr)
	}
	return c
}

// reviewView is a review as toolgate review list --json prints it.
type reviewView = review.View
