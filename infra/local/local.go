package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/localkeys"
)

const (
	// StartTimeout bounds how long a Start function waits for a stand-in.
	StartTimeout = 20 * time.Second
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	StopGrace = 5 * time.Second

	// Fake credentials given to every Lambda run under the RIE (and to be
	// used by SDK clients talking to the stand-ins). Never real ones.
	FakeAccessKeyID     = "AKIDLOCAL"
	FakeSecretAccessKey = "secretlocal"
	// Region is the region the stand-ins pretend to be in
	// (localkeys.Region, the one local caller proofs are signed for).
	Region = localkeys.Region

	// InvokePath is the one function the RIE serves, on its endpoint.
	InvokePath   = "/2015-03-31/functions/function/invocations"
	tailBytes    = 64 << 10
	errTailLines = 20
	startRetries = 3
)

// Root returns the repository root (walk up from the working directory to go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("local: %w", err)
	}
	for d := dir; ; {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("local: no go.mod in %s or any parent directory", dir)
		}
		d = parent
	}
}

// Process is one started stand-in.
type Process struct {
	Name string // "dynalite", "ses" or "rie:<function name>"
	PID  int    // also the process group id
	Addr string // host:port the stand-in serves on (127.0.0.1:P)
	// RuntimeAPIAddr is the Lambda Runtime API address the RIE gives its
	// bootstrap (RIE only).
	RuntimeAPIAddr string
	// Startup is how long the stand-in took from exec until it was ready.
	Startup time.Duration

	rie            bool
	cmd            *exec.Cmd
	stdout, stderr *tail
	done           chan struct{} // closed once the process has been waited for
	waitErr        error
	stopping       atomic.Bool
	stopOnce       sync.Once
	stopErr        error
	stopOnCancel   func() bool
}

// Endpoint returns "http://" + Addr, the BaseEndpoint for an SDK client.
func (p *Process) Endpoint() string { return "http://" + p.Addr }

// InvokeURL returns the RIE's invocation URL (RIE only; "" otherwise).
// POST the event to it; the response body is the function's result, or
// {"errorType","errorMessage"} with status 200 when the handler failed.
func (p *Process) InvokeURL() string {
	if !p.rie {
		return ""
	}
	return p.Endpoint() + InvokePath
}

// Done is closed when the process has exited (for whatever reason).
func (p *Process) Done() <-chan struct{} { return p.done }

// Stdout returns the last lines the process wrote to standard output.
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr returns the last lines the process wrote to standard error.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stop ends the stand-in: SIGTERM to its process group (and, for the RIE, to
// the bootstrap it runs in a group of its own), up to StopGrace for it to
// exit, then SIGKILL. It is idempotent and safe for concurrent use; every
// call returns the first call's result. Stop reports an error only when the
// process had already exited on its own before Stop was called.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Process) stop() error {
	if p.stopOnCancel != nil {
		p.stopOnCancel()
	}
	select {
	case <-p.done:
		// It ended without us; still clear out whatever it left behind.
		killAll(p.PID, descendants(p.PID), syscall.SIGKILL)
		return fmt.Errorf("local: %s (pid %d) had already exited: %v%s", p.Name, p.PID, p.waitErr, p.tailNote())
	default:
	}
	p.stopping.Store(true)
	others := descendants(p.PID)
	killAll(p.PID, others, syscall.SIGTERM)
	deadline := time.Now().Add(StopGrace)
	select {
	case <-p.done:
	case <-time.After(StopGrace):
		killAll(p.PID, others, syscall.SIGKILL)
		<-p.done
	}
	// The leader is gone; give what is left of the group the rest of the
	// grace period, then kill it.
	for time.Now().Before(deadline) && anyAlive(p.PID, others) {
		time.Sleep(10 * time.Millisecond)
	}
	killAll(p.PID, others, syscall.SIGKILL)
	return nil
}

// killAll signals the process group pgid and every pid in others (and their
// groups). Errors (typically ESRCH: already gone) are ignored.
func killAll(pgid int, others []int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
	for _, pid := range others {
		_ = syscall.Kill(pid, sig)
		if g, err := syscall.Getpgid(pid); err == nil && g == pid {
			_ = syscall.Kill(-g, sig)
		}
	}
}

func (p *Process) tailNote() string {
	var b strings.Builder
	if s := p.stderr.lastLines(errTailLines); s != "" {
		b.WriteString("\n--- stderr (last lines) ---\n" + s)
	}
	if s := p.stdout.lastLines(errTailLines); s != "" {
		b.WriteString("\n--- stdout (last lines) ---\n" + s)
	}
	return b.String()
}

// FreePort returns a free 127.0.0.1 TCP port.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free ports (all listeners are held open until
// every port has been chosen).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("local: free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StartDynalite starts dynalite (DynamoDB in memory) on a free port:
// node node_modules/dynalite/cli.js --host 127.0.0.1 --port P --createTableMs 0.
// ctx bounds the start-up; when ctx is done later, the process is stopped (as
// with every Start function). Tables are ACTIVE as soon as CreateTable returns.
func StartDynalite(ctx context.Context) (*Process, error) {
	return startNode(ctx, "dynalite", "node_modules/dynalite/cli.js", nil,
		func(port int) []string {
			return []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0"}
		})
}

// StartSES starts aws-ses-v2-local on a free port and waits for
// GET /health-check to answer 200. Sent mail shows up at GET Endpoint()+"/store";
// POST Endpoint()+"/clear-store" empties it.
func StartSES(ctx context.Context) (*Process, error) {
	return startNode(ctx, "ses", "node_modules/aws-ses-v2-local/dist/cli.js", healthCheck("/health-check"),
		func(port int) []string {
			return []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port)}
		})
}

func startNode(ctx context.Context, name, script string, ready func(context.Context, *Process) error, args func(port int) []string) (*Process, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, script)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("local: %s: %s is missing: run make deps", name, path)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("local: %s: node is not on PATH (Node.js 20 is needed): %w", name, err)
	}
	return start(ctx, spec{
		name:  name,
		ports: 1,
		dir:   root,
		env:   baseEnv(),
		ready: ready,
		argv: func(ports []int) []string {
			return append([]string{node, path}, args(ports[0])...)
		},
	})
}

// StartRIE runs one Lambda bootstrap under aws-lambda-rie (bin/aws-lambda-rie) with distinct
// --runtime-interface-emulator-address and --runtime-api-address ports; env is added to a minimal
// environment (PATH, HOME, AWS_LAMBDA_FUNCTION_NAME=name, AWS_LAMBDA_FUNCTION_MEMORY_SIZE default 128,
// AWS_LAMBDA_FUNCTION_TIMEOUT from timeout, AWS_REGION=us-east-1, fake AWS credentials AKIDLOCAL/secretlocal — never real ones).
//
// The minimal environment is exactly: PATH, HOME/TMPDIR/TZ when set,
// AWS_LAMBDA_FUNCTION_NAME, AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128,
// AWS_LAMBDA_FUNCTION_TIMEOUT, AWS_REGION and AWS_DEFAULT_REGION=us-east-1,
// AWS_ACCESS_KEY_ID=AKIDLOCAL, AWS_SECRET_ACCESS_KEY=secretlocal and
// AWS_EC2_METADATA_DISABLED=true; env entries are added last and win. Then
// GOMAXPROCS, unless env sets it, as the CDK app sets it on a function of
// that memory (functionconfig.GoMaxProcs: 1 at 128 MB). The RIE, a Go
// program too, runs with it as well, as under SAM local, where the
// function's variables are the container's. The RIE
// adds AWS_LAMBDA_RUNTIME_API and its own variables for the bootstrap.
//
// timeout is rounded up to whole seconds (the RIE reads an integer); zero or
// less leaves the RIE's default of 300 s. A timed-out invocation answers
// HTTP 200 with the plain text "Task timed out after N.00 seconds" (not AWS's
// JSON error) and the next invocation starts a fresh runtime.
//
// The bootstrap runs in its own directory, as in /var/task, and starts on the
// first invocation (the cold start), not here. The RIE serves one invocation
// at a time: run several for concurrent invocations.
func StartRIE(ctx context.Context, name, bootstrap string, timeout time.Duration, env map[string]string) (*Process, error) {
	if name == "" {
		return nil, errors.New("local: StartRIE: empty function name")
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	rie := filepath.Join(root, "bin", "aws-lambda-rie")
	if _, err := os.Stat(rie); err != nil {
		return nil, fmt.Errorf("local: %s is missing: run make deps", rie)
	}
	bs, err := filepath.Abs(bootstrap)
	if err != nil {
		return nil, fmt.Errorf("local: StartRIE: %w", err)
	}
	if fi, err := os.Stat(bs); err != nil {
		return nil, fmt.Errorf("local: StartRIE: bootstrap: %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("local: StartRIE: bootstrap %s is not an executable file", bs)
	}

	vars := map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
		"AWS_REGION":                      Region,
		"AWS_DEFAULT_REGION":              Region,
		"AWS_ACCESS_KEY_ID":               FakeAccessKeyID,
		"AWS_SECRET_ACCESS_KEY":           FakeSecretAccessKey,
		"AWS_EC2_METADATA_DISABLED":       "true",
	}
	if timeout > 0 {
		vars["AWS_LAMBDA_FUNCTION_TIMEOUT"] = strconv.FormatInt(int64(math.Ceil(timeout.Seconds())), 10)
	}
	for k, v := range env {
		vars[k] = v
	}
	// GOMAXPROCS as the CDK app sets it for the function's memory.
	if _, set := env[functionconfig.EnvGoMaxProcs]; !set {
		memory, _ := strconv.Atoi(vars["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
		if v := functionconfig.GoMaxProcs(memory); v != "" {
			vars[functionconfig.EnvGoMaxProcs] = v
		}
	}
	environ := baseEnv()
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		environ = setEnv(environ, k, vars[k])
	}

	p, err := start(ctx, spec{
		name:  "rie:" + name,
		ports: 2,
		dir:   filepath.Dir(bs),
		env:   environ,
		argv: func(ports []int) []string {
			return []string{rie,
				"--runtime-interface-emulator-address", "127.0.0.1:" + strconv.Itoa(ports[0]),
				"--runtime-api-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
				bs}
		},
	})
	if err != nil {
		return nil, err
	}
	p.rie = true
	return p, nil
}

// BuildBootstrap compiles a Go main package for the RIE: GOOS=linux GOARCH=<host arch> CGO_ENABLED=0 go build -tags lambda.norpc -o out pkg.
// pkg is an import path or a path relative to the working directory;
// extraTags are added to lambda.norpc.
func BuildBootstrap(ctx context.Context, pkg, out string, extraTags ...string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	tags := append([]string{"lambda.norpc"}, extraTags...)
	cmd := exec.CommandContext(ctx, goBin, "build", "-tags", strings.Join(tags, ","), "-o", out, pkg)
	env := os.Environ()
	env = setEnv(env, "GOOS", "linux")
	env = setEnv(env, "GOARCH", runtime.GOARCH)
	env = setEnv(env, "CGO_ENABLED", "0")
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("local: go build %s: %w\n%s", pkg, err, bytes.TrimSpace(b))
	}
	return nil
}

// baseEnv is the minimal environment every stand-in starts with: nothing of
// the caller's AWS configuration or credentials leaks into it.
func baseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range []string{"HOME", "TMPDIR", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func setEnv(env []string, k, v string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

// spec describes how to start one stand-in.
type spec struct {
	name  string
	ports int // how many distinct free ports argv needs; ports[0] is Addr
	dir   string
	env   []string
	argv  func(ports []int) []string
	ready func(context.Context, *Process) error // after the port accepts connections
}

var errPortTaken = errors.New("port taken")

// start starts s, retrying with fresh ports when a chosen port was taken
// between FreePort and the child's bind.
func start(ctx context.Context, s spec) (*Process, error) {
	var err error
	for range startRetries {
		var p *Process
		p, err = startOnce(ctx, s)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

func startOnce(ctx context.Context, s spec) (*Process, error) {
	ports, err := freePorts(s.ports)
	if err != nil {
		return nil, err
	}
	argv := s.argv(ports)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.Stdin = nil
	p := &Process{
		Name:   s.name,
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		cmd:    cmd,
		stdout: newTail(),
		stderr: newTail(),
		done:   make(chan struct{}),
	}
	if s.ports > 1 {
		p.RuntimeAPIAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	}
	cmd.Stdout = p.stdout
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild holding the output pipes open must not block Wait.
	cmd.WaitDelay = time.Second

	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start %s: %w", s.name, err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()

	if err := p.waitReady(ctx, s.ready); err != nil {
		_ = p.Stop()
		msg := strings.ToLower(p.stderr.String() + p.stdout.String())
		if strings.Contains(msg, "eaddrinuse") || strings.Contains(msg, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	p.Startup = time.Since(began)
	p.stopOnCancel = context.AfterFunc(ctx, func() { _ = p.Stop() })
	return p, nil
}

// waitReady waits until p accepts connections on Addr and ready (if any)
// succeeds, within StartTimeout.
func (p *Process) waitReady(ctx context.Context, ready func(context.Context, *Process) error) error {
	limit := time.NewTimer(StartTimeout)
	defer limit.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	_, portStr, _ := net.SplitHostPort(p.Addr)
	port, _ := strconv.Atoi(portStr)
	var last error
	for {
		c, err := net.DialTimeout("tcp", p.Addr, 250*time.Millisecond)
		if err == nil {
			c.Close()
			if !listensOn(p.PID, port) {
				last = fmt.Errorf("%s accepts connections, but not for pid %d", p.Addr, p.PID)
			} else if ready == nil {
				last = nil
			} else {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				last = ready(rctx, p)
				cancel()
			}
			if last == nil {
				select {
				case <-p.done: // the port answered, but not for our process
				default:
					return nil
				}
			}
		} else {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("local: %s (pid %d) exited before it was ready: %v%s", p.Name, p.PID, p.waitErr, p.tailNote())
		case <-ctx.Done():
			return fmt.Errorf("local: %s (pid %d) not ready: %w%s", p.Name, p.PID, ctx.Err(), p.tailNote())
		case <-limit.C:
			return fmt.Errorf("local: %s (pid %d) not ready on %s after %v: %v%s", p.Name, p.PID, p.Addr, StartTimeout, last, p.tailNote())
		case <-tick.C:
		}
	}
}

// healthCheck is a readiness check: GET path answers 200.
func healthCheck(path string) func(context.Context, *Process) error {
	return func(ctx context.Context, p *Process) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Endpoint()+path, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}
}

// tail keeps the last tailBytes bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func newTail() *tail { return &tail{} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
	}
	return string(b)
}

func (t *tail) lastLines(n int) string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Mail is one e-mail the SES v2 emulator captured (its GET /store).
type Mail struct {
	From        string
	Destination struct{ To, Cc, Bcc []string }
	Subject     string
	Body        struct{ Text, HTML string }
}

// SentMails returns the e-mails the SES emulator at endpoint holds.
func SentMails(ctx context.Context, endpoint string) ([]Mail, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/store", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the SES emulator's store: %w", err)
	}
	defer resp.Body.Close()
	var store struct{ Emails []Mail }
	if err := json.NewDecoder(resp.Body).Decode(&store); err != nil {
		return nil, fmt.Errorf("read the SES emulator's store: %w", err)
	}
	return store.Emails, nil
}
