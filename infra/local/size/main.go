// Command size reports, per function, the size of its deployed bootstrap
// and its cold-start init under the Lambda Runtime Interface Emulator,
// next to a trivial aws-lambda-go handler built the same way
// (infra/local/testdata/echo): `make size`. Init is the first invocation's
// answer time less a warm one's, the median of several fresh starts.
// Figures depend on the machine: read the ratios (docs/performance.md).
// Nothing is asserted.
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
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/secrets"
)

// starts is how many fresh starts each init figure is the median of.
const starts = 5

// env is what each function needs to pass its cold-start configuration;
// the first invocation's payload ({}) is refused at once, so no stand-in
// is needed but the SSM stand-in the tool functions read their ledger
// secrets from at cold start (withSecrets).
var env = map[string]string{
	"TOOLGATE_TABLE": "toolgate-size", "TOOLGATE_STAGE": "local", "TOOLGATE_LANE": "sfn",
	"TOOLGATE_SENDER": "size@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com",
	"TOOLGATE_FETCH_ALLOW": "api.example.com", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",
	"TOOLGATE_STS_ENDPOINT": "http://127.0.0.1:9", "TOOLGATE_STS_ALLOW_HTTP": "true", "TOOLGATE_ACCOUNT": "000000000000",
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "size: %v\n", err)
		os.Exit(1)
	}
}

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
	pkgs := map[string]string{"(trivial handler)": filepath.Join(root, "infra", "local", "testdata", "echo")}
	mains, _ := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	for _, m := range mains {
		pkgs[filepath.Base(filepath.Dir(m))] = filepath.Dir(m)
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	type row struct {
		name string
		size int64
		init time.Duration
	}
	var rows []row
	for _, n := range names {
		deployed := filepath.Join(dir, n+".arm64")
		if err := deployBuild(ctx, pkgs[n], deployed); err != nil {
			return err
		}
		st, err := os.Stat(deployed)
		if err != nil {
			return err
		}
		host := filepath.Join(dir, n, "bootstrap")
		if err := local.BuildBootstrap(ctx, pkgs[n], host); err != nil {
			return err
		}
		init, err := coldStart(ctx, host, n)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		rows = append(rows, row{n, st.Size(), init})
	}
	base := rows[slices.IndexFunc(rows, func(r row) bool { return strings.HasPrefix(r.name, "(") })]
	fmt.Printf("| function | bootstrap (linux/arm64, stripped) | × trivial | init (median of %d) | × trivial |\n|---|---|---|---|---|\n", starts)
	for _, r := range rows {
		fmt.Printf("| %s | %.1f MB | %.2f | %.1f ms | %.2f |\n", r.name, float64(r.size)/1e6, float64(r.size)/float64(base.size),
			float64(r.init.Microseconds())/1000, float64(r.init)/float64(base.init))
	}
	return nil
}

// deployBuild builds pkg as `make build` does for Lambda.
func deployBuild(ctx context.Context, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, bytes.TrimSpace(b))
	}
	return nil
}

// coldStart starts the bootstrap under the RIE `starts` times and returns
// the median init: the first answer's time less a warm one's.
func coldStart(ctx context.Context, bootstrap, name string) (time.Duration, error) {
	fenv := maps.Clone(env)
	fenv[functionconfig.EnvMACParam] = functionconfig.MACParam(sizeStage, name)
	var inits []time.Duration
	for range starts {
		p, err := local.StartRIE(ctx, "size", bootstrap, 10*time.Second, fenv)
		if err != nil {
			return 0, err
		}
		first, err := invoke(p.InvokeURL())
		if err == nil {
			var warm time.Duration
			if warm, err = invoke(p.InvokeURL()); err == nil {
				inits = append(inits, first-warm)
			}
		}
		p.Stop()
		if err != nil {
			return 0, err
		}
	}
	slices.Sort(inits)
	return inits[len(inits)/2], nil
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
	// is answered by the RIE as Runtime.ExitError: its "init" would be the
	// time it took to fail.
	if bytes.Contains(body, []byte("Runtime.ExitError")) {
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
