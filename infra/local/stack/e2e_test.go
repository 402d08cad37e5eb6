package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/localkeys"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/testkit"
)

// env is one local stack for end-to-end tests: real dynalite, SES v2
// emulator, functions under the RIE and the local Step Functions endpoint.
type env struct {
	st  *stack.Stack
	sf  *sfn.Client
	dir string
	// cli is the CLI's environment (Stack.Environ): cliRun passes it to
	// the CLI, which never reads the process's.
	cli map[string]string
	// versions are the state machine versions publish printed, by Solution.
	versions map[string]string
	// seenMails are the SES emulator's message ids mails leaves out.
	seenMails map[string]bool
}

// built are the functions' bootstraps, built once for the package's tests
// (each stack would otherwise build all of them again): the tests' stacks
// run the same code.
var built struct {
	once sync.Once
	dir  string
	bs   map[string]string
	err  error
}

// sharedBootstraps builds every function once per test binary, into a
// directory TestMain removes, and returns a copy of the map.
func sharedBootstraps(t *testing.T) map[string]string {
	t.Helper()
	built.once.Do(func() {
		root, err := local.Root()
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "toolgate-stack-bootstraps-"); built.err != nil {
			return
		}
		built.bs, built.err = stack.BuildAll(context.Background(), root, built.dir)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return maps.Clone(built.bs)
}

// shared is the one local stack the package's tests share (sharedEnv),
// with default options and a dataRoutes as its data server: started by the
// first test that asks for it, stopped by TestMain.
var shared struct {
	once sync.Once
	st   *stack.Stack
	data *dataRoutes
	// otherHTTP is a second recording HTTP service, another origin on
	// the http tool's allow-list (StackOptions.HTTPAllow): where tests
	// redirect a read from the stack's own (Stack.HTTP).
	otherHTTP *httprecorder.Server
	// hooks is the webhook receiver on 127.0.0.1 whose host and port the
	// shared stack's webhook allow-list names (StackOptions.WebhookAllow):
	// each test subscribes a path of its own.
	hooks *hookreceiver.Receiver
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.st != nil {
		shared.st.Stop()
		os.RemoveAll(shared.st.Dir)
	}
	if shared.otherHTTP != nil {
		shared.otherHTTP.Close()
	}
	if shared.hooks != nil {
		shared.hooks.Close()
	}
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// sharedEnv is an env on the package's shared stack: a test that needs no
// option of its own runs on it, with its own Solution names, run names
// (fresh, where a name must be one no run took) and data server paths,
// never relying on an empty table or store, nor on another test having
// run before it. The tests on it run one at a time: they read the SES
// emulator's store and the team function's tickets as what arrived since
// they looked, which another test's runs would add to. A test on a stack
// of its own (startEnv) runs in parallel with the others of its kind.
func sharedEnv(t *testing.T) *env {
	t.Helper()
	bootstraps := sharedBootstraps(t)
	shared.once.Do(func() {
		shared.data = newDataRoutes()
		if shared.otherHTTP, shared.err = httprecorder.Start(httprecorder.Options{}); shared.err != nil {
			return
		}
		if shared.hooks, shared.err = hookreceiver.Start(); shared.err != nil {
			return
		}
		// Not t.Context(): the stack outlives the test that started it.
		shared.st, shared.err = stack.StartStack(context.Background(), stack.StackOptions{Bootstraps: bootstraps, DataHandler: shared.data,
			HTTPAllow: []string{shared.otherHTTP.Host()}, WebhookAllow: []string{shared.hooks.Host()}})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return newEnv(t, shared.st)
}

// startEnv starts a stack of t's own, for a test whose options differ
// from the shared stack's (sharedEnv), and stops it when t ends.
func startEnv(t *testing.T, o stack.StackOptions) *env {
	t.Helper()
	if o.Bootstraps == nil {
		o.Bootstraps = sharedBootstraps(t)
	}
	st, err := stack.StartStack(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Stop()
		os.RemoveAll(st.Dir)
	})
	return newEnv(t, st)
}

// newEnv is t's env on st: the CLI's environment for st (the --as keys,
// the STS stand-in), a Step Functions client and a directory of its own.
func newEnv(t *testing.T, st *stack.Stack) *env {
	t.Helper()
	sf := sfn.New(sfn.Options{BaseEndpoint: aws.String(st.SFN.Endpoint()), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	e := &env{st: st, sf: sf, dir: t.TempDir(), cli: st.Environ(), versions: map[string]string{}, seenMails: map[string]bool{}}
	e.clearMails(t)
	return e
}

// freshNames counts the names fresh made in this test binary.
var freshNames atomic.Int64

// fresh is name with a suffix ("-1", "-2", ...) no other call in this test
// binary gives: the shared stack keeps every execution name, start record
// and state machine name for the binary's life, and go test -count=N runs
// each test N times on it.
func fresh(name string) string { return fmt.Sprintf("%s-%d", name, freshNames.Add(1)) }

// route makes the shared stack's data server answer path with h, in
// place of what it answered there before; for t's runs only, so path
// names t's own resource (e.g. a queue of t's).
func (e *env) route(t *testing.T, path string, h http.Handler) {
	t.Helper()
	if e.st != shared.st {
		t.Fatal("route: only the shared stack's data server takes routes")
	}
	shared.data.route(path, h)
}

// starter starts the tests' runs; the reviewers are other local names.
const starter = "starter"

// keys are the local stack's keys.
func (e *env) keys(t *testing.T) *local.LocalKeys {
	k, err := localkeys.Load(e.st.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// cliRun runs the CLI with args in e's environment (e.cli), as
// cli.RunWith does, writing to stdout and stderr.
func (e *env) cliRun(args []string, stdout, stderr io.Writer) int {
	vars := maps.Clone(e.cli)
	return cli.RunWith(args, cli.Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars),
		Stdout: stdout, Stderr: stderr})
}

func (e *env) toolgate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := e.cliRun(args, &out, &errb)
	if errb.Len() > 0 {
		t.Logf("toolgate %s: %s", strings.Join(args, " "), errb.String())
	}
	return out.String(), code
}

// publisher publishes the tests' Solutions.
const publisher = "publisher"

// publish writes a Solution (with the data server's address for DATA) and
// publishes it through the publish function, which registers its toolset.
func (e *env) publish(t *testing.T, name, yaml string) {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "DATA", strings.TrimPrefix(e.st.DataURL, "http://"))
	path := filepath.Join(e.dir, name+".yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	out, code := e.toolgate(t, "publish", path, "--endpoint", e.st.Endpoints["publish"], "--as", publisher)
	if code != cli.ExitOK {
		t.Fatalf("publish %s: %s", name, out)
	}
	_, version, _ := strings.Cut(out, "published version ")
	version, _, _ = strings.Cut(version, " ")
	e.versions[name] = version
}

func (e *env) start(t *testing.T, solution string, input any) string {
	t.Helper()
	b, _ := json.Marshal(input)
	path := filepath.Join(e.dir, fmt.Sprintf("input-%d.json", time.Now().UnixNano()))
	os.WriteFile(path, b, 0o644)
	out, code := e.toolgate(t, "run", solution, "--input", path, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter)
	if code != cli.ExitOK {
		t.Fatalf("run %s: %s", solution, out)
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "started"))
}

func (e *env) decisionEndpoint() string { return e.st.Endpoints["review-decision"] }

// pending waits for the run's next pending review.
func (e *env) pending(t *testing.T, run string, skip map[string]bool) string {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		out, code := e.toolgate(t, "review", "list", "--json", "--endpoint", e.decisionEndpoint(), "--as", "tester")
		var res review.ListResult
		if code == cli.ExitOK && json.Unmarshal([]byte(out), &res) == nil {
			for _, v := range res.Reviews {
				if v.RunID == run && !skip[v.ReviewID] {
					return v.ReviewID
				}
			}
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the review appears when the execution, in Step Functions Local, reaches it
	}
	t.Fatalf("no pending review for %s", run)
	return ""
}

func (e *env) decide(t *testing.T, verb, id string) {
	t.Helper()
	if out, code := e.toolgate(t, "review", verb, id, "--reason", "e2e "+verb, "--endpoint", e.decisionEndpoint(), "--as", "tester"); code != cli.ExitOK {
		t.Fatalf("review %s %s: %s", verb, id, out)
	}
}

func (e *env) finish(t *testing.T, run string) *runner.Outcome {
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
	t.Logf("%s: %s via %v", run, out.Status, states)
	return out
}

func (e *env) rows(t *testing.T, run string) []ledger.Row {
	t.Helper()
	out, code := e.toolgate(t, "ledger", "--json", run, "--endpoint", e.st.Dynamo.Endpoint(), "--table", stack.Table)
	var rows []ledger.Row
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("ledger %s: %s", run, out)
	}
	return rows
}

type mail struct {
	MessageID   string `json:"messageId"`
	Destination struct{ To []string }
	Subject     string
}

// store is everything the SES emulator holds.
func (e *env) store(t *testing.T) []mail {
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
	for _, m := range store.Emails {
		if m.MessageID == "" {
			t.Fatalf("the SES emulator's store holds an e-mail without a message id, which mails could not tell apart: %+v", m)
		}
	}
	return store.Emails
}

// mails are the e-mails SES accepted since the env was made or last
// cleared (clearMails): on the shared stack the store also holds other
// tests' e-mails.
func (e *env) mails(t *testing.T) []mail {
	t.Helper()
	var out []mail
	for _, m := range e.store(t) {
		if !e.seenMails[m.MessageID] {
			out = append(out, m)
		}
	}
	return out
}

// clearMails makes mails count from now on; the store itself, which
// other tests read too, is left as it is.
func (e *env) clearMails(t *testing.T) {
	t.Helper()
	for _, m := range e.store(t) {
		e.seenMails[m.MessageID] = true
	}
}

// dataRoutes is the shared stack's data server: each test's own paths
// (route), and otherwise what every test Solution may fetch:
// /digest.json as newDataServer serves it, and 404 elsewhere.
type dataRoutes struct {
	mu     sync.Mutex
	routes map[string]http.Handler
	base   *http.ServeMux
}

func newDataRoutes() *dataRoutes {
	base := http.NewServeMux()
	base.Handle("/digest.json", newDataServer().handler)
	return &dataRoutes{routes: map[string]http.Handler{}, base: base}
}

func (d *dataRoutes) route(path string, h http.Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.routes[path] = h
}

func (d *dataRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	h, ok := d.routes[r.URL.Path]
	d.mu.Unlock()
	if !ok {
		h = d.base
	}
	h.ServeHTTP(w, r)
}

// digestAs is reviewedDigest as the Solution name, its review timing out
// after timeout seconds: each test on the shared stack runs its own.
func digestAs(name, timeout string) string {
	return strings.NewReplacer("solution: e2e-digest", "solution: "+name, "TIMEOUT", timeout).Replace(reviewedDigest)
}

// dataServer is the upstream the test Solutions fetch from.
type dataServer struct {
	mu      sync.Mutex
	flaky   atomic.Int64
	queue   map[string]int
	handler *http.ServeMux
}

func newDataServer() *dataServer {
	d := &dataServer{queue: map[string]int{}, handler: http.NewServeMux()}
	d.handler.HandleFunc("/digest.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"title":"e2e digest","count":2}`)
	})
	// 503, 503, then 200.
	d.handler.HandleFunc("/flaky.json", func(w http.ResponseWriter, r *http.Request) {
		if d.flaky.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"title":"after two 503s","count":1}`)
	})
	// A queue of three items per name, then done.
	d.handler.HandleFunc("/queue/{name}", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		n := d.queue[r.PathValue("name")] + 1
		d.queue[r.PathValue("name")] = n
		d.mu.Unlock()
		if n > 3 {
			io.WriteString(w, `{"done":true}`)
			return
		}
		fmt.Fprintf(w, `{"done":false,"item":{"id":%d,"owner":"owner%d@example.com"}}`, n, n)
	})
	return d
}

const reviewedDigest = `solution: e2e-digest
version: 1
policy: {fetch_hosts: ["DATA"]}
input: {type: object, required: [recipient]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/digest.json"}
    next: approve
  - id: approve
    review: {of: send, timeout_seconds: TIMEOUT}
    on_approve: send
    on_reject: end
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: "Digest: ${steps.fetch.output.data.title}", text: "${steps.fetch.output.data.count} items"}
`

const flakyFetch = `solution: e2e-flaky
version: 1
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/flaky.json"}
    retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 1}
`

const perItem = `solution: e2e-loop
version: 1
policy: {fetch_hosts: ["DATA"], run_timeout_seconds: 3600}
steps:
  - id: next_item
    tool: structured-data-fetch
    with: {url: "http://DATA/queue/loop"}
    next: done
  - id: done
    choice:
      - when: {value: "${steps.next_item.output.data.done}", equals: true}
        next: end
    default: review_item
  - id: review_item
    review: {of: send_item, timeout_seconds: 600}
    on_approve: send_item
    on_reject: next_item
  - id: send_item
    tool: send-email
    with: {to: ["${steps.next_item.output.data.item.owner}"], subject: "Item ${steps.next_item.output.data.item.id}", text: "ready"}
    next: next_item
`

// The governed flow end to end on the local stack.
func TestEndToEnd(t *testing.T) {
	e := sharedEnv(t)
	// A fresh queue and a fresh flaky upstream each time the test runs.
	data := newDataServer()
	e.route(t, "/flaky.json", data.handler)
	e.route(t, "/queue/loop", data.handler)
	e.publish(t, "e2e-digest", digestAs("e2e-digest", "600"))
	e.publish(t, "e2e-flaky", flakyFetch)
	e.publish(t, "e2e-loop", perItem)

	t.Run("publishing goes through the publish function, which records the publisher", func(t *testing.T) {
		v, err := e.sf.DescribeStateMachine(t.Context(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(e.versions["e2e-digest"])})
		if err != nil {
			t.Fatal(err)
		}
		if d := aws.ToString(v.Description); !strings.Contains(d, "by "+local.LocalPrincipal(publisher)) || !strings.Contains(d, "source sha256:") {
			t.Fatalf("the version's description %q does not record the source and the publisher", d)
		}
	})

	t.Run("a refused Solution changes nothing", func(t *testing.T) {
		// A Solution Gate A refuses, sent to the function as it is (the CLI
		// checks first; a direct invocation skips the CLI): the function
		// refuses it with its diagnostics and writes nothing.
		root, err := local.Root()
		if err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join(root, "testdata", "solutions", "refuse-no-review.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		src = []byte(strings.Replace(string(src), "solution: ", "solution: e2e-refused-", 1))
		creds, _ := e.keys(t).Credentials(publisher)
		proof, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region, publishapi.Binding("e2e-refused.yaml", src), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(publishapi.DirectRequest{Action: "publish", File: "e2e-refused.yaml", Source: string(src), Proof: proof})
		out, code, msg := localtest.Invoke(t, e.st.Functions["publish"], json.RawMessage(payload))
		if code != publishapi.CodeInvalid || !strings.Contains(msg, "[review-before-tool]") {
			t.Fatalf("a refused Solution: %s %s %s", out, code, msg)
		}
		list, err := e.sf.ListStateMachines(t.Context(), &sfn.ListStateMachinesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range list.StateMachines {
			if strings.HasPrefix(aws.ToString(m.Name), "toolgate-local_e2e-refused") {
				t.Fatal("the state machine was created")
			}
		}
		// Toolsets are registered through the function too, recording who:
		// a catalog toolset with a host of its own, which no earlier run
		// on the shared stack registered.
		var out2, errb bytes.Buffer
		host := fresh("e2e-register") + ".example.com"
		if code := e.cliRun([]string{"toolset", "register", "--tool", "structured-data-fetch", "--fetch-host", host, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher}, &out2, &errb); code != cli.ExitOK ||
			!strings.Contains(out2.String(), "registered ts_") || !strings.Contains(out2.String(), "by "+local.LocalPrincipal(publisher)) {
			t.Fatalf("register through the publish function: exit %d\n%s\n%s", code, out2.String(), errb.String())
		}
		// A publish without a valid proof changes nothing either.
		payload, _ = json.Marshal(publishapi.DirectRequest{Action: "publish", File: "e2e-digest.yaml", Source: "solution: x\n", Proof: proof})
		if _, code, msg := localtest.Invoke(t, e.st.Functions["publish"], json.RawMessage(payload)); code != publishapi.CodeUnauthenticated {
			t.Fatalf("a proof for another Solution: %s %s", code, msg)
		}
	})

	t.Run("literals the deployment's lists refuse are not published", func(t *testing.T) {
		// check accepts both literals; the publish function, which has the
		// tools' lists, refuses them as the tools would at run time: a
		// recipient off @example.com, and a loopback address other than the
		// exempted 127.0.0.1.
		path := filepath.Join(e.dir, "e2e-lists.yaml")
		os.WriteFile(path, []byte(`solution: e2e-lists
version: 1
policy:
  fetch_hosts: ["127.0.0.2"]
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://127.0.0.2/digest.json"}
    next: approve
  - id: approve
    review: {of: send}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: [team@example.com, bob@other.example], subject: s, text: t}
`), 0o644)
		var stdout, stderr bytes.Buffer
		code := e.cliRun([]string{"publish", path, "--endpoint", e.st.Endpoints["publish"], "--as", publisher}, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code == cli.ExitOK || !strings.Contains(out, publishapi.CodeRefused) ||
			!strings.Contains(out, `e2e-lists.yaml:8:17: error: [deployment] step "fetch" with.url: host 127.0.0.2 is not on the platform allow-list`) ||
			!strings.Contains(out, `e2e-lists.yaml:15:35: error: [deployment] step "send" with.to[1]: recipient "bob@other.example" is not on this deployment's recipient allow-list`) {
			t.Fatalf("publish: exit %d\n%s", code, out)
		}
		list, err := e.sf.ListStateMachines(t.Context(), &sfn.ListStateMachinesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range list.StateMachines {
			if aws.ToString(m.Name) == "toolgate-local_e2e-lists" {
				t.Fatal("the state machine was created")
			}
		}
	})

	t.Run("approved: sent exactly once", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-digest", map[string]string{"recipient": "team@example.com"})
		e.decide(t, "approve", e.pending(t, run, nil))
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if m := e.mails(t); len(m) != 1 || m[0].Subject != "Digest: e2e digest" {
			t.Fatalf("mails %+v", m)
		}
		var sends []ledger.Row
		for _, r := range e.rows(t, run) {
			if r.Tool == "send-email" {
				sends = append(sends, r)
			}
		}
		if len(sends) != 1 || sends[0].Status != ledger.StatusSucceeded {
			t.Fatalf("send-email rows %+v", sends)
		}
	})

	t.Run("run --wait shows the pending review and the outcome", func(t *testing.T) {
		input := filepath.Join(e.dir, "wait-input.json")
		os.WriteFile(input, []byte(`{"recipient":"team@example.com"}`), 0o644)
		var out testkit.Buffer
		done := make(chan int)
		waited := fresh("waited")
		go func() {
			done <- e.cliRun([]string{"run", "e2e-digest", "--input", input, "--name", waited, "--wait", "--timeout", "90s",
				"--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter}, &out, io.Discard)
		}()
		run := "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-digest:" + waited
		id := e.pending(t, run, nil)
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), id) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond) // decide only once run --wait, itself polling the local stack, has shown the review; a poll with a deadline
		}
		e.decide(t, "approve", id)
		if code := <-done; code != cli.ExitOK {
			t.Fatalf("run --wait: exit %d\n%s", code, out.String())
		}
		for _, want := range []string{"→ approve", "⏸ review rv_", "toolgate review approve rv_", "SUCCEEDED"} {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("run --wait output lacks %q:\n%s", want, out.String())
			}
		}
	})

	t.Run("rejected: nothing sent, ends through on_reject", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-digest", map[string]string{"recipient": "team@example.com"})
		e.decide(t, "reject", e.pending(t, run, nil))
		out := e.finish(t, run)
		if out.Status != "SUCCEEDED" || len(e.mails(t)) != 0 {
			t.Fatalf("rejected run %s, %d mails", out.Status, len(e.mails(t)))
		}
		for _, r := range e.rows(t, run) {
			if r.Tool == "send-email" {
				t.Fatalf("a rejected review reached send-email: %+v", r)
			}
		}
	})

	t.Run("retries: 503, 503, 200 under one key", func(t *testing.T) {
		run := e.start(t, "e2e-flaky", map[string]string{})
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		rows := e.rows(t, run)
		if len(rows) != 3 {
			t.Fatalf("%d rows: %+v", len(rows), rows)
		}
		for i, r := range rows {
			if r.IdempotencyKey != rows[0].IdempotencyKey || r.Attempt != i+1 {
				t.Fatalf("row %d: key %s attempt %d", i, r.IdempotencyKey, r.Attempt)
			}
		}
		if rows[0].ErrorCode != "TOOL_UPSTREAM_UNAVAILABLE" || rows[2].Status != ledger.StatusSucceeded {
			t.Fatalf("rows %+v", rows)
		}
	})

	t.Run("toolgate run refuses an input the Solution's schema refuses, and starts nothing", func(t *testing.T) {
		bad := filepath.Join(e.dir, "bad-input.json")
		os.WriteFile(bad, []byte(`{"recipients": ["team@example.com"]}`), 0o644)
		var out, errb bytes.Buffer
		refused := fresh("refused")
		code := e.cliRun([]string{"run", "e2e-digest", "--input", bad, "--name", refused, "--endpoint", e.st.SFN.Endpoint(),
			"--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter}, &out, &errb)
		if code != cli.ExitErrors || !strings.Contains(errb.String(), `input/ fails "required" (schema /required): want property "recipient"`) ||
			strings.Contains(errb.String(), "team@example.com") {
			t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
		}
		_, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{
			ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-digest:" + refused)})
		var missing *sfntypes.ExecutionDoesNotExist
		if !errors.As(err, &missing) {
			t.Fatalf("the refused input started a run: %v", err)
		}
	})

	t.Run("a run without a start record fails at once", func(t *testing.T) {
		e.clearMails(t)
		machine := "arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-local_e2e-digest"
		other := "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-digest:another-run"
		keys, err := localkeys.Load(e.st.KeysFile)
		if err != nil {
			t.Fatal(err)
		}
		creds, _ := keys.Credentials(starter)
		proofFor := func(target string, at time.Time) string {
			p, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region,
				caller.Binding{Action: caller.ActionStart, Target: target}, at)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		stale := fresh("stale")
		for name, c := range map[string]struct {
			input map[string]any
			error string
		}{
			"bare-input":         {map[string]any{"recipient": "team@example.com"}, "TOOLGATE_START_INVALID"},
			"no-record":          {map[string]any{"input": map[string]any{"recipient": "team@example.com"}, "meta": map[string]any{}}, "REVIEW_UNAUTHENTICATED"},
			"another-executions": {map[string]any{"input": map[string]any{"recipient": "team@example.com"}, "meta": map[string]any{"start_proof": proofFor(other, time.Now())}}, "REVIEW_UNAUTHENTICATED"},
			"stale":              {map[string]any{"input": map[string]any{"recipient": "team@example.com"}, "meta": map[string]any{"start_proof": proofFor("arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-digest:"+stale, time.Now().Add(-2*time.Minute))}}, "REVIEW_UNAUTHENTICATED"},
		} {
			b, _ := json.Marshal(c.input)
			execName := fresh(name)
			if name == "stale" {
				execName = stale // the name its proof was signed for
			}
			out, err := e.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String(execName), Input: aws.String(string(b))})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.finish(t, aws.ToString(out.ExecutionArn)); got.Status != "FAILED" || got.Error != c.error {
				t.Errorf("%s: %s %s %s, want FAILED %s", name, got.Status, got.Error, got.Cause, c.error)
			}
		}
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails", len(m))
		}
	})

	t.Run("loop: three approvals, three e-mails, three keys", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-loop", map[string]string{})
		seen := map[string]bool{}
		for range 3 {
			id := e.pending(t, run, seen)
			seen[id] = true
			e.decide(t, "approve", id)
		}
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if m := e.mails(t); len(m) != 3 {
			t.Fatalf("%d mails", len(m))
		}
		keys := map[string]bool{}
		for _, r := range e.rows(t, run) {
			if r.Tool == "send-email" && r.Status == ledger.StatusSucceeded {
				keys[r.IdempotencyKey] = true
			}
		}
		if len(keys) != 3 {
			t.Fatalf("send keys %v", keys)
		}
	})
}

// A review that times out ends the run like a rejection.
func TestReviewTimeout(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-timeout", digestAs("e2e-timeout", "2"))
	run := e.start(t, "e2e-timeout", map[string]string{"recipient": "team@example.com"})
	out := e.finish(t, run)
	if out.Status != "SUCCEEDED" || len(e.mails(t)) != 0 {
		t.Fatalf("timed-out review: %s, %d mails", out.Status, len(e.mails(t)))
	}
}

// crashingSendEmail is the stack's bootstraps with send-email built with
// the crashtest tag (functions/send-email/hook_crashtest.go): killed right
// after SES accepted a message when TOOLGATE_TEST_CRASH_AFTER_SEND=1.
func crashingSendEmail(t *testing.T) map[string]string {
	t.Helper()
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	bootstraps := sharedBootstraps(t)
	crashing := filepath.Join(t.TempDir(), "bootstrap")
	if err := local.BuildBootstrap(t.Context(), filepath.Join(root, "functions", "send-email"), crashing, "crashtest"); err != nil {
		t.Fatal(err)
	}
	bootstraps["send-email"] = crashing
	return bootstraps
}

// send-email killed after SES accepted the message and before the record
// completed: the run fails without a retry; the same key once the lease has
// passed (a redrive) is refused; the ledger shows UNKNOWN and SES holds one
// e-mail.
func TestCrashAfterSend(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	bootstraps := crashingSendEmail(t)
	e := startEnv(t, stack.StackOptions{DataHandler: newDataServer().handler, Bootstraps: bootstraps,
		Env: map[string]string{"TOOLGATE_TEST_CRASH_AFTER_SEND": "1", "TOOLGATE_LEASE_SECONDS": "2"}})
	e.publish(t, "e2e-digest", strings.Replace(reviewedDigest, "TIMEOUT", "600", 1))
	run := e.start(t, "e2e-digest", map[string]string{"recipient": "team@example.com"})
	e.decide(t, "approve", e.pending(t, run, nil))
	out := e.finish(t, run)
	if out.Status != "FAILED" {
		t.Fatalf("run %s, want FAILED", out.Status)
	}
	var send []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			send = append(send, r)
		}
	}
	// The crashed attempt is on its call's item, with no outcome.
	if len(send) != 1 || send[0].Status != ledger.StatusInProgress || send[0].Attempt != 1 {
		t.Fatalf("after the crash: rows %+v, want the one attempt IN_PROGRESS", send)
	}
	if m := e.mails(t); len(m) != 1 {
		t.Fatalf("%d mails after the crash", len(m))
	}
	// The redrive: the same call, the same key, after the lease.
	time.Sleep(2100 * time.Millisecond) // real time: send-email under the RIE reads the real clock for its 2 s lease
	payload := e.taskPayload(t, run, "send-email")
	// A redrive comes from Step Functions: the sfn lane.
	resp, err := http.Post(e.st.SFNEndpoints["send-email"]+"/2015-03-31/functions/function/invocations", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "TOOL_RETRY_REQUIRES_IDEMPOTENCY") {
		t.Fatalf("redrive answered %s", body)
	}
	var statuses []string
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			statuses = append(statuses, string(r.Status))
		}
	}
	// The crashed attempt (UNKNOWN: it never recorded its outcome) and the
	// refused redrive.
	if strings.Join(statuses, ",") != "UNKNOWN,UNKNOWN" || len(e.mails(t)) != 1 {
		t.Fatalf("after the redrive: rows %v, %d mails", statuses, len(e.mails(t)))
	}
}
