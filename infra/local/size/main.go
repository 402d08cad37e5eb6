// Command size reports, per function, the size of its deployed bootstrap
// and its cold-start init under the Lambda Runtime Interface Emulator,
// next to a trivial aws-lambda-go handler built the same way
// (infra/local/testdata/echo), as ratios from one run: `make size`. Every
// row, the trivial handler's too, runs with the GOMAXPROCS the CDK app
// sets on the functions (local.StartRIE), so that rows differ only in
// their bootstrap (docs/performance.md, "One P per function").
//
// Init is the first invocation's answer time less a warm one's in the same
// process: work a function moves from its init to its first call still
// counts. Cold starts are interleaved round-robin, one of each function
// per round for rounds rounds, the order rotated each round, so that the
// load of the machine falls on every function alike; each figure is the
// median of its rounds. Next to it is the CPU time the bootstrap spent on
// its init (its threads' time on a CPU up to the first answer, less what
// the warm answer took; Linux's schedstat): wall time on a shared machine
// also counts waiting for a CPU, the CPU time hardly does. The last column says whether a tool function
// (functionconfig.ToolFunctions) is within the goal of initGoal times the
// trivial handler's init (docs/performance.md, "Bootstrap size and cold
// start"). Figures depend on the machine: read the ratios. Nothing is
// asserted.
//
// The tracing column is the init of the packages tracing adds (the
// OpenTelemetry API and SDK, shared/tracing and shared/tracecontext),
// summed from the runtime's GODEBUG=inittrace=1 lines of each function's
// bootstrap run on its own, median of the rounds: clock time and bytes
// allocated (docs/tracing.md, "Export").
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/secrets"
)

// rounds is how many cold starts of each function a run makes, one per
// round; every init figure is their median.
const rounds = 15

// initGoal is the most a tool function's init may be, as a multiple of
// the trivial handler's measured in the same run.
const initGoal = 2.0

// trivial names the baseline's row.
const trivial = "(trivial handler)"

// env is what each function needs to pass its cold-start configuration;
// the first invocation's payload ({}) is refused at once, so no stand-in
// is needed but the SSM stand-in the tool functions read their ledger
// secrets from at cold start (withSecrets).
var env = map[string]string{
	"TOOLGATE_TABLE": "toolgate-size", "TOOLGATE_STAGE": "local", "TOOLGATE_LANE": "sfn",
	"TOOLGATE_SENDER": "size@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com",
	"TOOLGATE_FETCH_ALLOW": "api.example.com", "TOOLGATE_HTTP_ALLOW": "api.example.com", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",
	"TOOLGATE_STS_ENDPOINT": "http://127.0.0.1:9", "TOOLGATE_STS_ALLOW_HTTP": "true", "TOOLGATE_ACCOUNT": "000000000000",
	// The webhook functions' queues and key: names only, nothing is reached
	// at cold start.
	"TOOLGATE_WEBHOOK_EVENTS_QUEUE":     "http://127.0.0.1:9/000000000000/toolgate-size-webhook-events",
	"TOOLGATE_WEBHOOK_DELIVERIES_QUEUE": "http://127.0.0.1:9/000000000000/toolgate-size-webhook-deliveries",
	"TOOLGATE_WEBHOOK_DELIVERIES_DLQ":   "http://127.0.0.1:9/000000000000/toolgate-size-webhook-deliveries-dlq",
	"TOOLGATE_WEBHOOK_EVENTS_DLQ":       "http://127.0.0.1:9/000000000000/toolgate-size-webhook-events-dlq",
	"TOOLGATE_CREDENTIAL_KEY":           "alias/toolgate-size",
	// webhook-receiver's inbound queue, and its dead-letter queue, which
	// the sources function requires with it: names only too.
	"TOOLGATE_INBOUND_QUEUE": "http://127.0.0.1:9/000000000000/toolgate-size-inbound",
	"TOOLGATE_INBOUND_DLQ":   "http://127.0.0.1:9/000000000000/toolgate-size-inbound-dlq",
	// inbound-start's role (review-request reads it too, and requires it
	// among the session roles) and review-request's start alias: names
	// only.
	"TOOLGATE_SESSION_ROLES":      "toolgate-local-inbound-start",
	"TOOLGATE_INBOUND_ROLE":       "arn:aws:iam::000000000000:role/toolgate-local-inbound-start",
	"TOOLGATE_RUN_START_FUNCTION": "arn:aws:lambda:us-east-1:000000000000:function:toolgate-local-review-request:start",
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "size: %v\n", err)
		os.Exit(1)
	}
}

// fn is one measured bootstrap.
type fn struct {
	name  string
	pkg   string
	host  string // built for this machine, run under the RIE
	size  int64  // the deployed (linux/arm64, stripped) bootstrap's bytes
	inits []time.Duration
	cpus  []time.Duration
	// traceInits and traceBytes are the tracing packages' init per round
	// (tracingInit).
	traceInits []time.Duration
	traceBytes []int64
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func run(ctx context.Context) error {
	root, err := local.Root()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "toolgate-size-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ssm, err := withSecrets(env)
	if err != nil {
		return err
	}
	defer ssm.Close()
	fns := []*fn{{name: trivial, pkg: filepath.Join(root, "infra", "local", "testdata", "echo")}}
	mains, _ := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	for _, m := range mains {
		fns = append(fns, &fn{name: filepath.Base(filepath.Dir(m)), pkg: filepath.Dir(m)})
	}
	for _, f := range fns {
		deployed := filepath.Join(dir, "arm64", f.name, "bootstrap")
		if err := build(ctx, f.pkg, deployed, "arm64"); err != nil {
			return err
		}
		st, err := os.Stat(deployed)
		if err != nil {
			return err
		}
		f.size = st.Size()
		f.host = filepath.Join(dir, "host", f.name, "bootstrap")
		if err := build(ctx, f.pkg, f.host, runtime.GOARCH); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "size: %d functions, %d rounds of cold starts\n", len(fns), rounds)
	for r := range rounds {
		for i := range fns {
			f := fns[(i+r)%len(fns)]
			d, cpu, err := coldStart(ctx, f.host, f.name)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			f.inits, f.cpus = append(f.inits, d), append(f.cpus, cpu)
			td, tb, err := tracingInit(ctx, f.host)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			f.traceInits, f.traceBytes = append(f.traceInits, td), append(f.traceBytes, tb)
		}
	}
	base := fns[0]
	fmt.Printf("| function | bootstrap (linux/arm64, stripped) | × trivial | init (median of %d) | × trivial | init CPU | × trivial | tool function ≤ %.0f× | tracing packages' init |\n|---|---|---|---|---|---|---|---|---|\n", rounds, initGoal)
	for _, f := range fns {
		ratio := float64(median(f.inits)) / float64(median(base.inits))
		goal := ""
		if slices.Contains(functionconfig.ToolFunctions, f.name) {
			goal = "met"
			if ratio > initGoal {
				goal = fmt.Sprintf("not met (+%.2f)", ratio-initGoal)
			}
		}
		bytes := slices.Clone(f.traceBytes)
		slices.Sort(bytes)
		fmt.Printf("| %s | %.1f MB | %.2f | %.1f ms | %.2f | %.1f ms | %.2f | %s | %.2f ms, %.1f KB |\n", f.name, float64(f.size)/1e6, float64(f.size)/float64(base.size),
			ms(median(f.inits)), ratio, ms(median(f.cpus)), float64(median(f.cpus))/float64(median(base.cpus)), goal,
			ms(median(f.traceInits)), float64(bytes[len(bytes)/2])/1e3)
	}
	return nil
}

// tracingPackages are the import paths whose init the tracing column sums.
var tracingPackages = []string{"go.opentelemetry.io/", "github.com/toolgate/toolgate/shared/tracing", "github.com/toolgate/toolgate/shared/tracecontext"}

// tracingInit runs bootstrap on its own (no Lambda runtime API: it stops
// after its init) with GODEBUG=inittrace=1 and sums the clock time and
// bytes of the tracingPackages' init lines ("init PKG @T ms, D ms clock,
// B bytes, N allocs"; the runtime package's documentation).
func tracingInit(ctx context.Context, bootstrap string) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bootstrap)
	cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run() // it fails without a runtime API, after its init
	var total time.Duration
	var allocated int64
	for line := range strings.Lines(stderr.String()) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || !slices.ContainsFunc(tracingPackages, func(p string) bool { return strings.HasPrefix(f[1], p) }) {
			continue
		}
		clock, err1 := strconv.ParseFloat(f[4], 64)
		b, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("an inittrace line does not parse: %q", line)
		}
		total += time.Duration(clock * float64(time.Millisecond))
		allocated += b
	}
	return total, allocated, nil
}

// build builds pkg as `make build` does for Lambda (lambda.norpc,
// -trimpath, stripped), for linux/arch: arm64 is what is deployed, the
// host's architecture what runs under the RIE here.
func build(ctx context.Context, pkg, out, arch string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, bytes.TrimSpace(b))
	}
	return nil
}

// coldStart starts the bootstrap under a fresh RIE and returns its init,
// the first answer's time less a warm one's, and the CPU time the
// bootstrap spent on it, its CPU time up to the first answer less what
// the warm one took.
func coldStart(ctx context.Context, bootstrap, name string) (wall, cpu time.Duration, err error) {
	fenv := maps.Clone(env)
	fenv[functionconfig.EnvMACParam] = functionconfig.MACParam(sizeStage, name)
	p, err := local.StartRIE(ctx, "size", bootstrap, 10*time.Second, fenv)
	if err != nil {
		return 0, 0, err
	}
	defer p.Stop()
	first, err := invoke(p.InvokeURL())
	if err != nil {
		return 0, 0, err
	}
	cpuFirst, err := bootstrapCPU(p.PID, bootstrap)
	if err != nil {
		return 0, 0, err
	}
	warm, err := invoke(p.InvokeURL())
	if err != nil {
		return 0, 0, err
	}
	cpuWarm, err := bootstrapCPU(p.PID, bootstrap)
	if err != nil {
		return 0, 0, err
	}
	return first - warm, cpuFirst - (cpuWarm - cpuFirst), nil
}

// bootstrapCPU returns the CPU time the bootstrap that the RIE (riePID)
// runs has used so far: the sum over its threads of the first field of
// /proc/<pid>/task/<tid>/schedstat, nanoseconds on a CPU (Linux,
// Documentation/scheduler/sched-stats). Go keeps its threads, so none of
// the time is lost with an exited one.
func bootstrapCPU(riePID int, bootstrap string) (time.Duration, error) {
	children, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", riePID))
	for _, c := range children {
		b, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			if exe, err := os.Readlink("/proc/" + pid + "/exe"); err != nil || exe != bootstrap {
				continue
			}
			stats, _ := filepath.Glob("/proc/" + pid + "/task/*/schedstat")
			var ns int64
			for _, st := range stats {
				b, err := os.ReadFile(st)
				if err != nil {
					return 0, err
				}
				f := strings.Fields(string(b))
				if len(f) == 0 {
					return 0, fmt.Errorf("%s: empty", st)
				}
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %w", st, err)
				}
				ns += n
			}
			return time.Duration(ns), nil
		}
	}
	return 0, fmt.Errorf("%s is not running under the RIE (pid %d): it stopped at cold start", bootstrap, riePID)
}

func invoke(url string) (time.Duration, error) {
	start := time.Now()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, err
	}
	// A function that stopped at cold start (a configuration it refused)
	// is answered by the RIE as Runtime.ExitError, or with an empty body:
	// its "init" would be the time it took to fail. (bootstrapCPU also
	// finds no process then.)
	if len(bytes.TrimSpace(body)) == 0 || bytes.Contains(body, []byte("Runtime.ExitError")) {
		return 0, fmt.Errorf("the function stopped at cold start: %s", bytes.TrimSpace(body))
	}
	return time.Since(start), nil
}

// withSecrets starts an SSM stand-in holding the stage's ledger secrets
// (shared/secrets: each tool function's MAC key, the external key, the
// since time), as the deploy provisions them, and adds its endpoint and
// the parameters' names to env, so that the tool functions' cold start
// includes their one GetParameters, as on Lambda. Every tool function of
// the size run reads the MAC parameter of its own name (coldStart).
func withSecrets(env map[string]string) (*local.SSM, error) {
	params := map[string]string{functionconfig.ExternalKeyParam(sizeStage): randomSecret(), functionconfig.SinceParam(sizeStage): time.Now().UTC().Format(time.RFC3339Nano)}
	for _, fn := range functionconfig.ToolFunctions {
		params[functionconfig.MACParam(sizeStage, fn)] = randomSecret()
	}
	s, err := local.StartSSM(params)
	if err != nil {
		return nil, err
	}
	env["AWS_ENDPOINT_URL_SSM"] = s.Endpoint()
	env[functionconfig.EnvExternalKeyParam] = functionconfig.ExternalKeyParam(sizeStage)
	env[functionconfig.EnvSinceParam] = functionconfig.SinceParam(sizeStage)
	return s, nil
}

// sizeStage is env's TOOLGATE_STAGE.
const sizeStage = "local"

func randomSecret() string {
	var b [secrets.SecretBytes]byte
	rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}
