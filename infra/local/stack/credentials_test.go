package stack_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// credToolset is a toolset whose MCP server crm (URL) requires a bearer
// token, even to list its tools: its auth declares the Authorization
// header with the Bearer scheme (docs/toolsets.md, §7). POLICY is the
// lookup's policy, which a later toolset of the same name changes.
const credToolset = `toolset: NAME
tools:
  crm:
    mcp: URL
    admit: [lookup_customer]
    auth: {header: Authorization, scheme: Bearer}
    policy:
      lookup_customer: POLICY
`

// credLookup looks one customer up on the toolset's crm.
var credLookup = string(stack.LookupSolution("NAME", "TOOLSET"))

// credHTTPToolset is a toolset whose one http host entry, the recording
// service (HOST), declares a bearer credential bound to http://HOST.
const credHTTPToolset = `toolset: NAME
tools:
  http:
    hosts:
      - host: "HOST"
        methods: [GET]
        auth: {header: Authorization, scheme: Bearer, origin_scheme: http}
`

// credHTTPRead reads one path of the recording service through the
// toolset's http host entry.
const credHTTPRead = `solution: NAME
version: 1
toolset: TOOLSET
input:
  type: object
  required: [path]
  properties:
    path: {type: string, pattern: "^[a-z0-9-]{1,60}$"}
steps:
  - id: read
    tool: http
    with:
      method: GET
      url: "http://HOST/cred/${input.path}"
    keep: [status, data]
`

// The end users the local end-user mapping lets local user demo act for
// are named customer-* (stack.LocalEndUserMapping); starter may act for
// none.
const endUserActor = "demo"

// credEnv is the shared stack with what the credentials tests keep: a
// directory per registered toolset (its file and lock), and everything
// the CLI printed.
type credEnv struct {
	*env
	dir string
	// printed is every command the helpers ran and what it printed, on
	// stdout and stderr: what the canary test searches.
	printed bytes.Buffer
}

// run runs toolgate ARGS... as e.cliRun does, keeps what it printed, and
// returns its stdout and exit code.
func (c *credEnv) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, errs, code := c.exec(args)
	if errs != "" {
		t.Logf("toolgate %s: %s", strings.Join(args, " "), errs)
	}
	return out, code
}

// must is run that fails t unless the command exits 0.
func (c *credEnv) must(t *testing.T, args ...string) string {
	t.Helper()
	out, code := c.run(t, args...)
	if code != cli.ExitOK {
		t.Fatalf("toolgate %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// exec runs toolgate ARGS..., keeps what it printed in c.printed, and
// returns its stdout, its stderr and its exit code.
func (c *credEnv) exec(args []string) (string, string, int) {
	var out, errb bytes.Buffer
	code := c.cliRun(args, &out, &errb)
	fmt.Fprintf(&c.printed, "$ toolgate %s\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	return out.String(), errb.String(), code
}

// withOrigin is a set's flags more with --origin added when they name
// neither it nor a draft: the origin the test's toolsets give target, the
// bearer-token MCP server's for crm, http://<host entry> for a host entry
// (their auth names origin_scheme http).
func withOrigin(e *env, target string, more []string) []string {
	if slices.Contains(more, "--draft") || slices.Contains(more, "--origin") {
		return more
	}
	origin := "http://" + target
	if target == "crm" {
		origin = "http://" + hostOfURL(e.st.MCPAuth.URL())
	}
	return append(append([]string{}, more...), "--origin", origin)
}

// hostOfURL is the host and port of an http URL.
func hostOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	return u.Host
}

// authorizationDigest is httprecorder.Request.AuthorizationSHA256 of an
// Authorization field "Bearer <secret>": which credential the recording
// service received, without it.
func authorizationDigest(secret string) string {
	sum := sha256.Sum256([]byte("Bearer " + secret))
	return hex.EncodeToString(sum[:])
}

// token is a fresh random b64token (RFC 6750 §2.1) nobody else holds.
func token(t *testing.T) string {
	t.Helper()
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tok-" + hex.EncodeToString(b)
}

// cred runs toolgate credentials ARGS... through the publish function as
// local user as, and returns the exit code and everything printed.
func (c *credEnv) cred(t *testing.T, as string, args ...string) (int, string) {
	t.Helper()
	out, errs, code := c.exec(append(append([]string{"credentials"}, args...), "--function-endpoint", c.st.Endpoints["publish"], "--as", as))
	return code, out + errs
}

// set stores secret for toolset name's target as local user as, with
// more flags (--end-user, --run, --expires-at, --draft), and fails t
// unless it was stored; it returns what toolgate printed. The secret goes
// through a file, never argv.
func (c *credEnv) set(t *testing.T, as, name, target, secret string, more ...string) string {
	t.Helper()
	code, out := c.trySet(t, as, name, target, secret, more...)
	if code != cli.ExitOK {
		t.Fatalf("credentials set by %s %v: exit %d\n%s", as, more, code, out)
	}
	t.Logf("credentials set by %s %v: %s", as, more, out)
	return out
}

// trySet is set without the verdict.
func (c *credEnv) trySet(t *testing.T, as, name, target, secret string, more ...string) (int, string) {
	t.Helper()
	f := filepath.Join(c.dir, fmt.Sprintf("secret-%d", time.Now().UnixNano()))
	if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f)
	code, out := c.cred(t, as, append([]string{"set", "--toolset", name, "--target", target, "--from-file", f}, withOrigin(c.env, target, more)...)...)
	if strings.Contains(out, secret) {
		t.Fatalf("credentials set printed the secret:\n%s", out)
	}
	return code, out
}

// writeToolset writes toolset name's file, name.yaml, in a directory of
// its own (so that its lock, name.lock.json, is the only one there) and
// returns the file's path.
func (c *credEnv) writeToolset(t *testing.T, sub, name, content string) string {
	t.Helper()
	d := filepath.Join(c.dir, sub)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, name+".yaml")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// publishLookup publishes a fresh lookup Solution on the toolset
// registered from file (its lock beside it) and returns its name.
func (c *credEnv) publishLookup(t *testing.T, file, id, src string) string {
	t.Helper()
	name := fresh("cred-lookup")
	sol := filepath.Join(c.dir, name+".yaml")
	src = strings.NewReplacer("NAME", name, "HOST", c.st.HTTP.Host()).Replace(src)
	if err := os.WriteFile(sol, stack.OnToolset([]byte(src), id), 0o644); err != nil {
		t.Fatal(err)
	}
	c.publishOn(t, filepath.Dir(file), sol)
	return name
}

// runAs starts a run of solution as local user as, named name ("" for a
// generated name), for endUser ("" for none), and returns its execution
// ARN and what toolgate run printed on stderr.
func (c *credEnv) runAs(t *testing.T, solution, input, as, name, endUser string) (string, string) {
	t.Helper()
	args := []string{"run", solution, "--input", writeInput(t, c.env, input), "--endpoint", c.st.SFN.Endpoint(), "--stage", stack.Stage,
		"--params", c.st.ParamsFile, "--as", as}
	if name != "" {
		args = append(args, "--name", name)
	}
	if endUser != "" {
		args = append(args, "--end-user", endUser)
	}
	out, errs, code := c.exec(args)
	if code != cli.ExitOK {
		t.Fatalf("toolgate %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "started")), errs
}

// presented are the Authorization values of the tools/call requests srv
// received since request since.
func presented(srv *mcpserver.Server, since int) []string {
	var out []string
	for _, r := range srv.Requests()[since:] {
		if r.RPCMethod == "tools/call" {
			out = append(out, r.Header.Get("Authorization"))
		}
	}
	return out
}

// succeededWith fails t unless run succeeded with one SUCCEEDED row, and
// every tools/call srv received since since presented exactly
// "Bearer <want>" (at least one did).
func (c *credEnv) succeededWith(t *testing.T, srv *mcpserver.Server, since int, run, want, why string) {
	t.Helper()
	out, _ := c.follow(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("%s: run %s %s %s, want SUCCEEDED", why, out.Status, out.Error, out.Cause)
	}
	got := presented(srv, since)
	if len(got) == 0 || slices.ContainsFunc(got, func(v string) bool { return v != "Bearer "+want }) {
		t.Fatalf("%s: the server's tools/call requests presented %s, want each the %s credential", why, describe(got), want[:8])
	}
	rows := c.toolRows(t, run, "crm.lookup_customer")
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded {
		t.Fatalf("%s: rows %+v, want one SUCCEEDED", why, rows)
	}
}

// describe names Authorization values by their first characters only,
// so that a failure shows which token was presented without the whole.
func describe(vals []string) string {
	var out []string
	for _, v := range vals {
		tok := strings.TrimPrefix(v, "Bearer ")
		if len(tok) > 12 {
			tok = tok[:12] + "…"
		}
		out = append(out, fmt.Sprintf("%q", tok))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// endedBefore fails t unless run failed with code, its cause holding
// each of want, with one row of status at attempt 0 (nothing claimed),
// and srv received no tools/call since since.
func (c *credEnv) endedBefore(t *testing.T, srv *mcpserver.Server, since int, run string, code tool.Code, status ledger.Status, want ...string) *runner.Outcome {
	t.Helper()
	out, _ := c.follow(t, run)
	if out.Status != "FAILED" || out.Error != string(code) {
		t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, code)
	}
	for _, w := range want {
		if !strings.Contains(out.Cause, w) {
			t.Errorf("the cause lacks %q:\n%s", w, out.Cause)
		}
	}
	rows := c.toolRows(t, run, "crm.lookup_customer")
	if len(rows) != 1 || rows[0].Status != status || rows[0].ErrorCode != string(code) || rows[0].Attempt != 0 {
		t.Fatalf("rows %+v, want one %s %s, attempt 0", rows, status, code)
	}
	if got := presented(srv, since); len(got) != 0 {
		t.Fatalf("the server received %d tools/call requests, want none", len(got))
	}
	return out
}

// Credentials end to end on the local stack (docs/credentials.md): local-kms
// seals them, the publish function stores them through the CLI, and
// mcp-call and http present them to the stack's MCP server that requires a
// bearer token (Stack.MCPAuth) and to the recording HTTP service. Each
// scope gets a token of its own, the server accepting all of them, so
// that which token a call presented tells which scope was used. The waits
// are polls with deadlines (follow, and the revocation's), or for the
// wall clock to pass a credential's expiry; nothing orders goroutines by
// sleeping.
func TestCredentialsOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	c := &credEnv{env: e, dir: t.TempDir()}
	srv := e.st.MCPAuth
	admin := stack.CredentialAdmin
	tokToolset, tokEndUser, tokRun, tokOther := token(t), token(t), token(t), token(t)
	srv.SetBearerTokens(tokToolset, tokEndUser, tokRun, tokOther)
	t.Cleanup(func() { srv.SetBearerTokens(token(t)) }) // nobody's again

	name := fresh("crm-cred")
	policy := "{policy: at_least_once, idempotent: true}"
	fileA := c.writeToolset(t, "a", name, strings.NewReplacer("NAME", name, "URL", srv.URL(), "POLICY", policy).Replace(credToolset))
	var idA, lookup string

	t.Run("a toolset whose server needs a token to list is registered once the admin set it from the draft, and allowed, its run's call presents it", func(t *testing.T) {
		listed := srv.ToolsListed()
		if out, code := e.toolgate(t, "toolset", "register", fileA, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher); code == cli.ExitOK {
			t.Fatalf("registered without a credential:\n%s", out)
		}
		if srv.ToolsListed() != listed {
			t.Fatal("the server listed its tools to a request without its token")
		}
		c.set(t, admin, name, "crm", tokToolset, "--draft", fileA)
		id := e.registerToolset(t, fileA)
		if srv.ToolsListed() == listed {
			t.Fatal("registration did not list the server")
		}
		lookup = c.publishLookup(t, fileA, id, credLookup)
		// Registered after the set: the id is not allowed the name's
		// credentials until a credential admin allows it.
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, `{"customer_id": "C-1"}`, starter, "", "")
		c.endedBefore(t, srv, since, run, tool.PermissionDenied, ledger.StatusRefused, id, "not allowed", "toolgate credentials allow --toolset "+id)
		if code, out := c.cred(t, admin, "allow", "--toolset", id); code != cli.ExitOK || !strings.Contains(out, "allowed "+id+" for crm") {
			t.Fatalf("allow %s: exit %d\n%s", id, code, out)
		}
		since = len(srv.Requests())
		run, _ = c.runAs(t, lookup, `{"customer_id": "C-1"}`, starter, "", "")
		c.succeededWith(t, srv, since, run, tokToolset, "the toolset's credential")
		if out, _ := e.toolgate(t, "ledger", "--json", run, "--endpoint", e.st.Dynamo.Endpoint(), "--table", stack.Table); strings.Contains(out, tokToolset) {
			t.Fatal("the run's ledger rows hold the credential")
		}
		code, out := c.cred(t, admin, "list", "--toolset", name)
		if code != cli.ExitOK || !strings.Contains(out, "crm "+strings.TrimSuffix(srv.URL(), "/mcp")+" toolset version 1") || !strings.Contains(out, "toolset "+id+" crm") ||
			strings.Contains(out, tokToolset) {
			t.Fatalf("credentials list: exit %d\n%s", code, out)
		}
		idA = id
	})
	if idA == "" {
		t.Fatal("nothing to run the other cases on")
	}
	const input = `{"customer_id": "C-2"}`

	t.Run("each scope presents its own token whole, run before end user before toolset", func(t *testing.T) {
		customer := fresh("customer-scopes")
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer)

		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, endUserActor, "", customer)
		c.succeededWith(t, srv, since, run, tokEndUser, "a run for the end user")

		runName := fresh("cred-run")
		c.set(t, endUserActor, name, "crm", tokRun, "--run", executionARN(lookup, runName))
		since = len(srv.Requests())
		run, _ = c.runAs(t, lookup, input, endUserActor, runName, customer)
		if run != executionARN(lookup, runName) {
			t.Fatalf("started %s, want %s", run, executionARN(lookup, runName))
		}
		c.succeededWith(t, srv, since, run, tokRun, "the run with a run credential, for the end user")

		since = len(srv.Requests())
		run, _ = c.runAs(t, lookup, input, endUserActor, "", "")
		c.succeededWith(t, srv, since, run, tokToolset, "a run for no end user")
	})

	t.Run("a run credential set by someone other than the run's starter is not used", func(t *testing.T) {
		runName := fresh("cred-run-other")
		c.set(t, publisher, name, "crm", tokRun, "--run", executionARN(lookup, runName))
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, starter, runName, "")
		c.succeededWith(t, srv, since, run, tokToolset, "a run started by another than the run credential's setter")
	})

	t.Run("the end-user scope is skipped for a starter the mapping does not let act for that end user", func(t *testing.T) {
		customer := fresh("customer-skipped")
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer)
		since := len(srv.Requests())
		run, stderr := c.runAs(t, lookup, input, starter, "", customer)
		if !strings.Contains(stderr, "does not act for end user "+customer) {
			t.Errorf("toolgate run did not warn that the end user was skipped:\n%s", stderr)
		}
		c.succeededWith(t, srv, since, run, tokToolset, "a run whose starter may not act for the end user")
	})

	t.Run("each scope's writers: others are refused with credentials-forbidden, and a started run's credential is sealed", func(t *testing.T) {
		customer := fresh("customer-writers")
		started, _ := c.runAs(t, lookup, input, starter, "", "")
		for _, w := range []struct {
			why, as string
			args    []string
			want    string
		}{
			{"the toolset scope by a non-admin", publisher, nil, "[credentials-forbidden]"},
			{"the toolset scope by the end users' actor", endUserActor, nil, "[credentials-forbidden]"},
			{"an end user's scope by someone the mapping does not let act for it", starter, []string{"--end-user", customer}, "[credentials-forbidden]"},
			{"an end user's scope by the mapping's actor for an end user outside its pattern", endUserActor, []string{"--end-user", "other-" + customer}, "[credentials-forbidden]"},
			{"a run's scope once the run has started", starter, []string{"--run", started}, "[credentials-run-started]"},
		} {
			if code, out := c.trySet(t, w.as, name, "crm", tokOther, w.args...); code == cli.ExitOK || !strings.Contains(out, w.want) {
				t.Errorf("%s: exit %d, want refused %s:\n%s", w.why, code, w.want, out)
			}
		}
		for _, w := range []struct {
			why, as string
			args    []string
		}{
			{"the admin sets an end user's", admin, []string{"--end-user", customer}},
			{"the mapping's actor sets an end user's", endUserActor, []string{"--end-user", customer}},
			{"anyone who starts runs sets a run's not started", publisher, []string{"--run", executionARN(lookup, fresh("cred-writers"))}},
		} {
			if code, out := c.trySet(t, w.as, name, "crm", tokOther, w.args...); code != cli.ExitOK {
				t.Errorf("%s: exit %d\n%s", w.why, code, out)
			}
		}
		if code, out := c.cred(t, starter, "revoke", "--toolset", name, "--target", "crm", "--end-user", customer); code == cli.ExitOK || !strings.Contains(out, "[credentials-forbidden]") {
			t.Errorf("an end user's credential revoked by someone the mapping does not let act for it: exit %d\n%s", code, out)
		}
		if code, out := c.cred(t, publisher, "allow", "--toolset", idA); code == cli.ExitOK || !strings.Contains(out, "[credentials-forbidden]") {
			t.Errorf("a toolset id allowed by a non-admin: exit %d\n%s", code, out)
		}
		if code, out := c.cred(t, endUserActor, "revoke", "--toolset", name, "--target", "crm", "--end-user", customer); code != cli.ExitOK || !strings.Contains(out, "revoked") {
			t.Errorf("the mapping's actor revoking an end user's credential: exit %d\n%s", code, out)
		}
	})

	t.Run("a revoked credential is presented no longer than the cache's 5 s", func(t *testing.T) {
		customer := fresh("customer-revoked")
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer)
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, endUserActor, "", customer)
		c.succeededWith(t, srv, since, run, tokEndUser, "before the revocation") // mcp-call now holds it
		if code, out := c.cred(t, endUserActor, "revoke", "--toolset", name, "--target", "crm", "--end-user", customer); code != cli.ExitOK {
			t.Fatalf("revoke: exit %d\n%s", code, out)
		}
		revoked := time.Now()
		// A poll with a deadline: runs until one falls to the toolset's
		// credential. A run started after the cache's time has passed
		// since the revocation must not present the revoked one.
		for deadline := revoked.Add(60 * time.Second); ; {
			if time.Now().After(deadline) {
				t.Fatal("runs still presented the revoked credential a minute after its revocation")
			}
			startedAt := time.Now()
			since := len(srv.Requests())
			run, _ := c.runAs(t, lookup, input, endUserActor, "", customer)
			if out, _ := c.follow(t, run); out.Status != "SUCCEEDED" {
				t.Fatalf("run %s %s %s", out.Status, out.Error, out.Cause)
			}
			got := presented(srv, since)
			if slices.Equal(got, []string{"Bearer " + tokToolset}) {
				t.Logf("the toolset's credential presented %s after the revocation", time.Since(revoked).Round(time.Millisecond))
				break
			}
			if !slices.Equal(got, []string{"Bearer " + tokEndUser}) {
				t.Fatalf("a run after the revocation presented %s", describe(got))
			}
			if startedAt.Sub(revoked) > vault.CacheTTL {
				t.Fatalf("a run started %s after the revocation presented the revoked credential", startedAt.Sub(revoked).Round(time.Millisecond))
			}
		}
	})

	t.Run("an expired credential parks the call unsent, and does not fall back to the next scope", func(t *testing.T) {
		customer := fresh("customer-expiring")
		if code, out := c.trySet(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer, "--expires-at", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)); code == cli.ExitOK || !strings.Contains(out, "has passed") {
			t.Fatalf("an expiry in the past: exit %d\n%s", code, out)
		}
		expires := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer, "--expires-at", expires.Format(time.RFC3339))
		// The functions read the wall clock: wait for it to pass the expiry.
		time.Sleep(time.Until(expires.Add(100 * time.Millisecond)))
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, endUserActor, "", customer)
		// The run waits in its park for the credential (docs/parking.md),
		// the call unsent, its park naming the target and scope, never the
		// secret; the test ends the wait.
		p, events := c.awaitParked(t, run, "lookup")
		cause := parkedCause(events)
		for _, w := range []string{credential.CauseExpired, credential.KindEndUser, "crm"} {
			if !strings.Contains(cause, w) {
				t.Errorf("the cause lacks %q:\n%s", w, cause)
			}
		}
		if p.Cause != park.CredentialsExpired || p.Target != "crm" || !strings.Contains(p.Scope, credential.KindEndUser) {
			t.Errorf("park %+v, want %s of target crm in an end-user scope", p, park.CredentialsExpired)
		}
		if strings.Contains(fmt.Sprintf("%+v", p), tokEndUser) || strings.Contains(cause, tokEndUser) {
			t.Fatal("the park or the cause quotes the credential")
		}
		rows := c.toolRows(t, run, "crm.lookup_customer")
		if len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].ErrorCode != string(tool.CallParked) || rows[0].Attempt != 0 {
			t.Fatalf("rows %+v, want one PARKED %s, attempt 0", rows, tool.CallParked)
		}
		c.stopParked(t, run, p)
		if got := presented(srv, since); len(got) != 0 {
			t.Fatalf("the server received %d tools/call requests, want none", len(got))
		}
	})

	t.Run("a ciphertext moved to another end user's item is not presented", func(t *testing.T) {
		from, to := fresh("customer-moved-from"), fresh("customer-moved-to")
		fromOut := c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", from)
		out := c.set(t, endUserActor, name, "crm", tokOther, "--end-user", to)
		scopeOf := func(out string) string {
			_, rest, _ := strings.Cut(out, "set the ")
			scope, _, _ := strings.Cut(rest, " ")
			if !strings.HasPrefix(scope, credential.KindEndUser+":") {
				t.Fatalf("no end-user scope in %q", out)
			}
			return scope
		}
		origin := strings.TrimSuffix(srv.URL(), "/mcp")
		db := local.DynamoDB(e.st.Dynamo.Endpoint())
		key := func(scope string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Credential.Key(name)},
				table.SK: &types.AttributeValueMemberS{Value: table.CredentialSK("crm", origin, scope)}}
		}
		got, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table), Key: key(scopeOf(fromOut)), ConsistentRead: aws.Bool(true)})
		if err != nil || got.Item == nil {
			t.Fatalf("read %s's credential item: %v", from, err)
		}
		update := &dynamodb.UpdateItemInput{TableName: aws.String(stack.Table), Key: key(scopeOf(out)),
			UpdateExpression:          aws.String("SET ct = :ct, nonce = :nonce, edk = :edk, key_id = :key"),
			ConditionExpression:       aws.String("attribute_exists(ct)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":ct": got.Item["ct"], ":nonce": got.Item["nonce"], ":edk": got.Item["edk"], ":key": got.Item["key_id"]}}
		if _, err := db.UpdateItem(t.Context(), update); err != nil {
			t.Fatalf("move the ciphertext: %v", err)
		}
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, endUserActor, "", to)
		res, _ := c.follow(t, run)
		// KMS refuses the data key under the other scope's context.
		if res.Status != "FAILED" || res.Error != string(tool.Internal) || !strings.Contains(res.Cause, "could not be decrypted") || strings.Contains(res.Cause, tokEndUser) {
			t.Fatalf("run %s %s %s, want FAILED %s, the credential not decrypted", res.Status, res.Error, res.Cause, tool.Internal)
		}
		if got := presented(srv, since); len(got) != 0 {
			t.Fatalf("the server received tools/call requests presenting %s", describe(got))
		}
		for _, r := range srv.Requests()[since:] {
			if v := r.Header.Get("Authorization"); v != "" {
				t.Fatalf("the server received a request presenting %s", describe([]string{v}))
			}
		}
	})

	t.Run("a 401 invalid_token parks the call, its attempt FAILED and not applied, and the run waits in its park", func(t *testing.T) {
		// A run just before, so that mcp-call's listing under this
		// credential version is fresh and the refusal meets tools/call.
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, input, starter, "", "")
		c.succeededWith(t, srv, since, run, tokToolset, "before the server stops accepting it")
		srv.SetBearerTokens(tokEndUser, tokRun, tokOther)
		calls := len(srv.Calls())
		defer srv.SetBearerTokens(tokToolset, tokEndUser, tokRun, tokOther)
		since = len(srv.Requests())
		run, _ = c.runAs(t, lookup, input, starter, "", "")
		// Refused at the listing or at tools/call, after the claim, the
		// run waits in its park (endRefusedCall checks the rows).
		cause, out, _ := c.endRefusedCall(t, run, "lookup", "crm.lookup_customer")
		if !strings.Contains(cause, credential.CauseExpired) {
			t.Fatalf("the Task's cause %q, want %s", cause, credential.CauseExpired)
		}
		if strings.Contains(cause, tokToolset) || strings.Contains(out.Cause, tokToolset) {
			t.Fatal("the cause quotes the credential")
		}
		reqs := srv.Requests()[since:]
		if len(reqs) == 0 {
			t.Fatal("the server received nothing: the refused credential was never sent")
		}
		if v := reqs[0].Header.Get("Authorization"); v != "Bearer "+tokToolset {
			t.Fatalf("the server's first request presented %s, want the toolset's credential", describe([]string{v}))
		}
		var methods []string
		for _, r := range reqs {
			methods = append(methods, r.RPCMethod)
		}
		t.Logf("the server received %q, each refused", methods)
		if len(srv.Calls()) != calls {
			t.Fatal("a tools/call reached the server's tool: it was applied")
		}
	})

	t.Run("an http host entry's credential goes to its origin, and an echo of it is kept out of the run", func(t *testing.T) {
		hsrv := e.st.HTTP
		hname := fresh("http-cred")
		file := c.writeToolset(t, "http", hname, strings.NewReplacer("NAME", hname, "HOST", hsrv.Host()).Replace(credHTTPToolset))
		id := e.registerToolset(t, file)
		read := c.publishLookup(t, file, id, credHTTPRead)
		path := fresh("echo")
		hsrv.Script("/cred/"+path, httprecorder.Answer{EchoHeaders: true})

		before := len(hsrv.Requests())
		run, _ := c.runAs(t, read, fmt.Sprintf(`{"path": %q}`, path), starter, "", "")
		if out, _ := c.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || !strings.Contains(out.Cause, "scopes tried") {
			t.Fatalf("a run before any credential is set: %s %s %s, want FAILED %s naming the scopes tried", out.Status, out.Error, out.Cause, tool.PermissionDenied)
		}
		if n := len(hsrv.Requests()) - before; n != 0 {
			t.Fatalf("the service received %d requests from a call with no credential", n)
		}

		c.set(t, admin, hname, hsrv.Host(), tokOther)
		hsrv.Script("/cred/"+path, httprecorder.Answer{EchoHeaders: true})
		run, _ = c.runAs(t, read, fmt.Sprintf(`{"path": %q}`, path), starter, "", "")
		out, events := c.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s", out.Status, out.Error, out.Cause)
		}
		got := hsrv.Requests()[before:]
		if len(got) != 1 || got[0].Path != "/cred/"+path || got[0].AuthorizationSHA256 != authorizationDigest(tokOther) {
			t.Fatalf("the service received %+v, want one GET presenting the credential", got)
		}
		for _, ev := range events {
			if strings.Contains(fmt.Sprintf("%+v", ev), tokOther) {
				t.Fatalf("the run's history holds the credential the service echoed: %s", ev.Type)
			}
		}
		if strings.Contains(out.Output, tokOther) {
			t.Fatal("the run's output holds the credential the service echoed")
		}
	})

	t.Run("a toolset registered later under the name with another policy gets nothing until allowed, and one at another origin gets nothing", func(t *testing.T) {
		fileB := c.writeToolset(t, "b", name, strings.NewReplacer("NAME", name, "URL", srv.URL(), "POLICY", "{policy: at_least_once, idempotent: true, timeout_seconds: 7}").Replace(credToolset))
		idB := e.registerToolset(t, fileB)
		if idB == idA {
			t.Fatalf("another policy registered as the same id %s", idA)
		}
		lookupB := c.publishLookup(t, fileB, idB, credLookup)
		since := len(srv.Requests())
		run, _ := c.runAs(t, lookupB, input, starter, "", "")
		c.endedBefore(t, srv, since, run, tool.PermissionDenied, ledger.StatusRefused, idB, "not allowed", "toolgate credentials allow --toolset "+idB)
		// Sets by others than a credential admin (a run's, an end user's)
		// allow no id.
		c.set(t, publisher, name, "crm", tokRun, "--run", executionARN(lookupB, fresh("cred-run-b")))
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", fresh("customer-b"))
		since = len(srv.Requests())
		run, _ = c.runAs(t, lookupB, input, starter, "", "")
		c.endedBefore(t, srv, since, run, tool.PermissionDenied, ledger.StatusRefused, idB, "not allowed")
		if code, out := c.cred(t, admin, "allow", "--toolset", idB); code != cli.ExitOK || !strings.Contains(out, "allowed "+idB) {
			t.Fatalf("allow %s: exit %d\n%s", idB, code, out)
		}
		since = len(srv.Requests())
		run, _ = c.runAs(t, lookupB, input, starter, "", "")
		c.succeededWith(t, srv, since, run, tokToolset, "the toolset id once allowed")

		// The same name and target on the stack's open MCP server: another
		// origin. Nothing set for this one goes there: registration finds
		// no toolset-scope credential at that origin and lists nothing,
		// and once the admin set one there, a run for an end user whose
		// credential is at the first origin presents only that one.
		open := e.st.MCP
		customer := fresh("customer-origin")
		c.set(t, endUserActor, name, "crm", tokEndUser, "--end-user", customer)
		fileC := c.writeToolset(t, "c", name, strings.NewReplacer("NAME", name, "URL", open.URL(), "POLICY", policy).Replace(credToolset))
		openSince := len(open.Requests())
		if out, code := e.toolgate(t, "toolset", "register", fileC, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher); code == cli.ExitOK {
			t.Fatalf("registered at another origin with no credential set there:\n%s", out)
		}
		c.set(t, admin, name, "crm", tokOther, "--draft", fileC)
		idC := e.registerToolset(t, fileC)
		lookupC := c.publishLookup(t, fileC, idC, credLookup)
		if code, out := c.cred(t, admin, "allow", "--toolset", idC); code != cli.ExitOK {
			t.Fatalf("allow %s: exit %d\n%s", idC, code, out)
		}
		since = len(open.Requests())
		run, _ = c.runAs(t, lookupC, input, endUserActor, "", customer)
		c.succeededWith(t, open, since, run, tokOther, "a run at another origin, for an end user with a credential at the first")
		for _, r := range open.Requests()[openSince:] {
			if v := r.Header.Get("Authorization"); v != "" && v != "Bearer "+tokOther {
				t.Fatalf("the server at another origin received %s", describe([]string{v}))
			}
		}
	})
}
