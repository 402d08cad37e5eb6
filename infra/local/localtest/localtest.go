package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/secrets"
)

// Dynalite starts dynalite (DynamoDB in memory) for t.
func Dynalite(t testing.TB) *local.Process {
	t.Helper()
	p, err := local.StartDynalite(t.Context())
	return started(t, p, err)
}

// CountingFront starts a counting front (local.StartCountingFront) before
// target for t.
func CountingFront(t testing.TB, target string) *local.CountingFront {
	t.Helper()
	f, err := local.StartCountingFront(t.Context(), target)
	var p *local.Process
	if f != nil {
		p = f.Process
	}
	started(t, p, err)
	return f
}

// SES starts aws-ses-v2-local for t.
func SES(t testing.TB) *local.Process {
	t.Helper()
	p, err := local.StartSES(t.Context())
	return started(t, p, err)
}

// RIE runs bootstrap under the Lambda Runtime Interface Emulator for t.
// See local.StartRIE for name, timeout and env. The RIE has no aliases, so
// a function that takes its lane from one (shared/lane) runs on the sfn
// lane, as Step Functions invokes it, unless env sets TOOLGATE_LANE (to
// "direct", or to "" for no lane at all), and in the local stack's account
// (TOOLGATE_ACCOUNT) unless env sets another; its ledger secrets are
// LedgerSecrets' unless env names a MAC parameter itself.
func RIE(t testing.TB, name, bootstrap string, timeout time.Duration, env map[string]string) *local.Process {
	t.Helper()
	// The local stack's account, which the CDK app sets as TOOLGATE_ACCOUNT
	// on every function: a caller proof of another account is refused.
	vars := map[string]string{"TOOLGATE_LANE": "sfn", "TOOLGATE_ACCOUNT": local.LocalAccountID}
	for k, v := range env {
		vars[k] = v
	}
	if _, ok := vars[functionconfig.EnvMACParam]; !ok {
		for k, v := range LedgerSecrets(t, vars["AWS_ENDPOINT_URL_SSM"], name) {
			vars[k] = v
		}
	}
	p, err := local.StartRIE(t.Context(), name, bootstrap, timeout, vars)
	return started(t, p, err)
}

// Stage is the stage whose parameter names LedgerSecrets provisions.
const Stage = "test"

// testSSM holds each test's SSM stand-in for its functions' secrets.
var testSSM sync.Map // testing.TB -> *local.SSM

// LedgerSecrets provisions function's ledger secrets (its own MAC key,
// the stage's external key and since time, secrets.Ensure) in the SSM
// stand-in at endpoint, or, when endpoint is "", in one the test starts
// (one per test, shared by its functions), and returns the environment
// that points the function at them: AWS_ENDPOINT_URL_SSM and the three
// names (functionconfig.EnvMACParam, ...). RIE sets it on every function unless
// env names a MAC parameter itself.
func LedgerSecrets(t testing.TB, endpoint, function string) map[string]string {
	t.Helper()
	if endpoint == "" {
		v, ok := testSSM.Load(t)
		if !ok {
			s, err := local.StartSSM(nil)
			if err != nil {
				t.Fatal(err)
			}
			testSSM.Store(t, s)
			t.Cleanup(func() { testSSM.Delete(t); s.Close() })
			v = s
		}
		endpoint = v.(*local.SSM).Endpoint()
	}
	n := functionconfig.SecretNamesFor(Stage, function)
	if _, err := secrets.Ensure(context.Background(), ssmClient(endpoint), secrets.Provision{Secrets: []string{n.MAC, n.ExternalKey}, Since: n.Since, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"AWS_ENDPOINT_URL_SSM": endpoint, functionconfig.EnvMACParam: n.MAC, functionconfig.EnvExternalKeyParam: n.ExternalKey, functionconfig.EnvSinceParam: n.Since}
}

// LoadLedgerSecrets reads function's ledger secrets from the SSM stand-in
// at endpoint as the function reads them at cold start (secrets.Load):
// its MAC key, the stage's external key secret and since time, which
// LedgerSecrets provisioned. Tests compute the external keys a function
// sends with it (externalkey.New on Ledger.ExternalKey). It fails t when
// any is missing.
func LoadLedgerSecrets(t testing.TB, endpoint, function string) secrets.Ledger {
	t.Helper()
	l, err := secrets.Load(context.Background(), ssmClient(endpoint), functionconfig.SecretNamesFor(Stage, function))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ssmClient is a client of the SSM stand-in at endpoint.
func ssmClient(endpoint string) *ssm.Client {
	return ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
}

// Callers is the STS stand-in with fresh local keys, for tests of
// functions that verify caller proofs (shared/caller).
type Callers struct {
	STS      *local.STS
	Keys     *local.LocalKeys
	KeysFile string
}

// StartCallers starts the STS stand-in for t.
func StartCallers(t testing.TB) *Callers {
	t.Helper()
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &Callers{Keys: keys, KeysFile: filepath.Join(t.TempDir(), "local-keys")}
	if err := keys.Save(c.KeysFile); err != nil {
		t.Fatal(err)
	}
	if c.STS, err = local.StartSTS(keys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.STS.Close() })
	return c
}

// Env adds the caller verifier's configuration for the stand-in to a
// function's environment (the local stack's one exemption from https).
func (c *Callers) Env(env map[string]string) map[string]string {
	out := map[string]string{"TOOLGATE_STS_ENDPOINT": c.STS.Endpoint(), "TOOLGATE_STS_ALLOW_HTTP": "true",
		"TOOLGATE_ACCOUNT": local.LocalAccountID}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// CLIEnv is the CLI's environment (cli.Env's Getenv) for the stand-in
// and the keys: AWS_ENDPOINT_URL_STS and TOOLGATE_LOCAL_KEYS, so that
// `--as NAME` signs with NAME's local keys. A test passes it to the CLI
// instead of setting the process's environment.
func (c *Callers) CLIEnv() map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_STS": c.STS.Endpoint(), "TOOLGATE_LOCAL_KEYS": c.KeysFile}
}

// Proof signs a caller proof for b with NAME's local keys, now.
func (c *Callers) Proof(t testing.TB, name string, b caller.Binding) string {
	t.Helper()
	return c.ProofIn(t, local.LocalAccountID, name, b)
}

// ProofIn signs a caller proof for b with the keys of NAME in account
// (local.LocalKeys.CredentialsIn), now: another account's keys, which the
// STS stand-in answers for as real STS does.
func (c *Callers) ProofIn(t testing.TB, account, name string, b caller.Binding) string {
	t.Helper()
	creds, err := c.Keys.CredentialsIn(account, name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, c.STS.Endpoint(), local.Region, b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func started(t testing.TB, p *local.Process, err error) *local.Process {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if s := p.Stderr(); s != "" {
				t.Logf("%s (pid %d) stderr:\n%s", p.Name, p.PID, lastLines(s, 40))
			}
			if s := p.Stdout(); s != "" {
				t.Logf("%s (pid %d) stdout:\n%s", p.Name, p.PID, lastLines(s, 40))
			}
		}
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// builds caches one build per package and tags within the test binary: the
// binary's bytes, so each test gets its own copy in its own t.TempDir() and
// no test depends on another test's temporary directory.
var builds sync.Map // key string -> *build

type build struct {
	once sync.Once
	bin  []byte
	err  error
}

// Bootstrap builds the Go main package pkg (an import path, or a path
// relative to the test's package directory) for the RIE with tags added to
// lambda.norpc, and returns the path of the executable inside t.TempDir().
// The package is compiled once per test binary.
func Bootstrap(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	v, _ := builds.LoadOrStore(pkg+"\x00"+strings.Join(tags, ","), &build{})
	b := v.(*build)
	built := false
	b.once.Do(func() {
		built = true
		if b.err = local.BuildBootstrap(t.Context(), pkg, out, tags...); b.err == nil {
			b.bin, b.err = os.ReadFile(out)
		}
	})
	if b.err != nil {
		t.Fatalf("build bootstrap %s: %v", pkg, b.err)
	}
	if !built {
		if err := os.WriteFile(out, b.bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Invoke posts event to a function under the RIE (JSON-encoded; a []byte
// is sent as it is, well-formed or not) and returns its result, or its
// errorType and errorMessage when the function failed (the RIE marks a
// failure only by the payload's shape).
func Invoke(t testing.TB, fn *local.Process, event any) (out json.RawMessage, errType, errMsg string) {
	t.Helper()
	b, raw := event.([]byte)
	if !raw {
		var err error
		if b, err = json.Marshal(event); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Post(fn.InvokeURL(), "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage string  `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.ErrorType != nil {
		return nil, *fe.ErrorType, fe.ErrorMessage
	}
	return body, "", ""
}

// WaitStdout returns p's standard output once done(stdout) holds, or fails
// t after within. A function under the RIE writes its log lines before it
// answers, but the RIE copies them to its own output on its own time, so a
// test that reads a line the function logged waits for it here.
func WaitStdout(t testing.TB, p *local.Process, within time.Duration, done func(stdout string) bool) string {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		out := p.Stdout()
		if done(out) {
			return out
		}
		select {
		case <-deadline.C:
			t.Fatalf("%s: the awaited output did not come within %s; its output ends:\n%s", p.Name, within, lastLines(out, 20))
			return out
		case <-tick.C:
		}
	}
}

// Mails returns the e-mails the SES emulator p holds, or fails t.
func Mails(t testing.TB, p *local.Process) []local.Mail {
	t.Helper()
	m, err := local.SentMails(t.Context(), p.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	return m
}
