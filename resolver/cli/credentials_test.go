package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// canary is a secret no output may show.
const canary = "canary-7f3e9b1c-secret"

// credentialsFunction stands in for the publish function's Function URL:
// a fake, since the test checks only what the CLI sends and prints (the
// function itself is tested in functions/publish). It records each
// request's method, path and body, and answers set, list, revoke and
// allow with fixed results that hold no secret.
type credentialsFunction struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	method, path string
	body         publishapi.CredentialRequest
	proof        bool
}

func newCredentialsFunction(t *testing.T) *credentialsFunction {
	f := &credentialsFunction{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b publishapi.CredentialRequest
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Errorf("body %q: %v", raw, err)
			}
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, recordedRequest{r.Method, r.URL.Path, b, r.Header.Get(publishapi.ProofHeader) != ""})
		f.mu.Unlock()
		var res any
		switch r.URL.Path {
		case "/credentials":
			res = publishapi.CredentialSetResult{Toolset: b.Toolset, Target: b.Target, Origin: "https://mcp.example.org", Scope: "toolset", Version: 1,
				SetBy: "arn:aws:iam::000000000000:user/alice", Allowed: []string{"ts_0123456789abcdef0123456789abcdef"}}
		case "/credentials/revoke":
			res = publishapi.CredentialRevokeResult{Revoked: true}
		case "/credentials/allow":
			res = publishapi.CredentialAllowResult{ToolsetID: b.ToolsetID, Targets: []string{"crm (https://mcp.example.org)"}, AllowedBy: "arn:aws:iam::000000000000:user/admin"}
		default:
			res = publishapi.CredentialListResult{Toolset: "crm", Credentials: []publishapi.CredentialInfo{{Target: "crm", Origin: "https://mcp.example.org",
				Scope: "toolset", Version: 2, CreatedAt: "2026-12-02T10:00:00Z", SetBy: "arn:aws:iam::000000000000:user/admin"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// runWithStdin runs the CLI in localAWS with stdin.
func runWithStdin(stdin io.Reader, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	vars := maps.Clone(localAWS())
	code := RunWith(args, Env{Getenv: func(k string) string { return vars[k] }, LoadAWSConfig: local.AWSConfigLoader(vars), Stdout: &out, Stderr: &errb, Stdin: stdin})
	return code, out.String(), errb.String()
}

// toolgate credentials set reads the secret from --from-file or
// --from-stdin, one trailing newline left out, sends it to the publish
// function with a caller proof, and never prints it.
func TestCredentialsSetReadsTheSecretFromAFileOrStandardInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		stdin string
		file  string
	}{
		{"from a file", "", canary + "\n"},
		{"from a file with CRLF", "", canary + "\r\n"},
		{"from standard input", canary + "\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newCredentialsFunction(t)
			args := []string{"credentials", "set", "--toolset", "crm", "--target", "crm", "--origin", "https://mcp.example.org", "--url", f.srv.URL}
			if c.file != "" {
				path := filepath.Join(t.TempDir(), "secret")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--from-file", path)
			} else {
				args = append(args, "--from-stdin")
			}
			code, stdout, stderr := runWithStdin(strings.NewReader(c.stdin), args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.Contains(stdout+stderr, canary) {
				t.Fatalf("the secret was printed:\n%s\n%s", stdout, stderr)
			}
			if !strings.Contains(stdout, "version 1") || !strings.Contains(stdout, "ts_0123456789abcdef0123456789abcdef") {
				t.Errorf("stdout %q: want the version and the allowed ids", stdout)
			}
			if len(f.reqs) != 1 {
				t.Fatalf("%d requests", len(f.reqs))
			}
			r := f.reqs[0]
			if r.method != http.MethodPost || r.path != "/credentials" || !r.proof || string(r.body.Secret) != canary || r.body.Toolset != "crm" || r.body.Target != "crm" {
				t.Fatalf("request %s %s proof %v body %+v", r.method, r.path, r.proof, r.body)
			}
		})
	}
}

// A secret given on the command line is refused before anything is
// sent, and the refusal does not show it; so are a command line reading
// from two places or none, and an empty or oversized secret.
func TestCredentialsSetRefusesASecretOnTheCommandLine(t *testing.T) {
	t.Parallel()
	f := newCredentialsFunction(t)
	empty := filepath.Join(t.TempDir(), "empty")
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte("a"), 8<<10+1), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"credentials", "set", "--toolset", "crm", "--target", "crm", "--origin", "https://mcp.example.org", "--url", f.srv.URL}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument", append(slicesClone(base), "--from-stdin", canary), "no secret from the command line"},
		{"an unknown --secret flag", append(slicesClone(base), "--secret="+canary), "unknown flag"},
		{"neither source", base, "--from-file FILE or --from-stdin"},
		{"both sources", append(slicesClone(base), "--from-stdin", "--from-file", empty), "--from-file FILE or --from-stdin"},
		{"an empty secret", append(slicesClone(base), "--from-file", empty), "is empty"},
		{"an oversized secret", append(slicesClone(base), "--from-file", big), "over 8192 bytes"},
		{"the secret where the file's name goes", append(slicesClone(base), "--from-file", canary), "--from-file"},
		{"two scopes", append(slicesClone(base), "--from-stdin", "--end-user", "u1", "--run", "arn:aws:states:eu-west-1:000000000000:execution:sm:x"), "two scopes"},
		{"a past expiry", append(slicesClone(base), "--from-stdin", "--expires-at", "2001-01-01T00:00:00Z"), "has passed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runWithStdin(strings.NewReader(canary), c.args...)
			if code != ExitMisuse || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q: want %d saying %q", code, stderr, ExitMisuse, c.want)
			}
			if strings.Contains(stdout+stderr, canary) {
				t.Fatalf("the secret was printed:\n%s\n%s", stdout, stderr)
			}
		})
	}
	if len(f.reqs) != 0 {
		t.Fatalf("refused command lines sent %d requests", len(f.reqs))
	}
}

func slicesClone(s []string) []string { return append([]string{}, s...) }

// list, revoke and allow reach their routes with a proof and print the
// answer: metadata, never a secret.
func TestCredentialsListRevokeAndAllowCallTheirRoutes(t *testing.T) {
	t.Parallel()
	f := newCredentialsFunction(t)
	for _, c := range []struct {
		args         []string
		method, path string
		want         string
	}{
		{[]string{"credentials", "list", "--toolset", "crm"}, http.MethodGet, "/credentials/crm", "crm https://mcp.example.org toolset version 2"},
		{[]string{"credentials", "revoke", "--toolset", "crm", "--target", "crm", "--end-user", "u1"}, http.MethodPost, "/credentials/revoke", "revoked"},
		{[]string{"credentials", "allow", "--toolset", "ts_0123456789abcdef0123456789abcdef"}, http.MethodPost, "/credentials/allow", "allowed ts_0123456789abcdef0123456789abcdef"},
	} {
		f.reqs = nil
		code, stdout, stderr := runWithStdin(nil, append(c.args, "--url", f.srv.URL)...)
		if code != ExitOK || !strings.Contains(stdout, c.want) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
		if len(f.reqs) != 1 || f.reqs[0].method != c.method || f.reqs[0].path != c.path || !f.reqs[0].proof {
			t.Fatalf("%v: requests %+v", c.args, f.reqs)
		}
	}
}
