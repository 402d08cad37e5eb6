package stack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// credTwoHostsToolset is a toolset with two http host entries: the stack's
// recording service (HOST), which declares a bearer credential bound to
// http://HOST, and a second recording service (OTHER), another origin,
// which declares none.
const credTwoHostsToolset = `toolset: NAME
tools:
  http:
    hosts:
      - host: "HOST"
        methods: [GET]
        auth: {header: Authorization, scheme: Bearer, origin_scheme: http}
      - host: "OTHER"
        methods: [GET]
`

// credPathToolset is a toolset whose MCP server crm (URL) takes its
// credential in the URL's second path segment, written {secret}.
const credPathToolset = `toolset: NAME
tools:
  crm:
    mcp: URL
    admit: [lookup_customer]
    auth: {path_segment: 2}
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
`

// How a credential is presented, end to end on the local stack
// (docs/credentials.md, "Injecting"): an http host entry's credential
// goes to its own origin only, a read redirected to another allowed host
// included; an http host's 401 invalid_token parks the call; and an MCP
// server that takes the credential in its URL's path gets it there, and
// nowhere else.
func TestCredentialsArePresentedOnlyWhereTheirTargetSays(t *testing.T) {
	e := sharedEnv(t)
	c := &credEnv{env: e, dir: t.TempDir()}
	admin := stack.CredentialAdmin
	hsrv, other := e.st.HTTP, shared.otherHTTP
	tok := token(t)

	hname := fresh("http-cred-two")
	file := c.writeToolset(t, "two", hname, strings.NewReplacer("NAME", hname, "HOST", hsrv.Host(), "OTHER", other.Host()).Replace(credTwoHostsToolset))
	id := e.registerToolset(t, file)
	read := c.publishLookup(t, file, id, credHTTPRead)
	c.set(t, admin, hname, hsrv.Host(), tok)

	t.Run("a read redirected to another allowed host carries the credential to its own origin only", func(t *testing.T) {
		path := fresh("redirect")
		landing := "/cred/" + fresh("landing")
		hsrv.Script("/cred/"+path, httprecorder.Redirect(302, "http://"+other.Host()+landing))
		other.Script(landing, httprecorder.OK(map[string]any{"landed": true}))
		before, otherBefore := len(hsrv.Requests()), len(other.Requests())
		run, _ := c.runAs(t, read, fmt.Sprintf(`{"path": %q}`, path), starter, "", "")
		if out, _ := c.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED", out.Status, out.Error, out.Cause)
		}
		first, second := hsrv.Requests()[before:], other.Requests()[otherBefore:]
		if len(first) != 1 || first[0].AuthorizationSHA256 != authorizationDigest(tok) {
			t.Fatalf("the entry's own origin received %+v, want one request presenting the credential", first)
		}
		if len(second) != 1 || second[0].Path != landing {
			t.Fatalf("the other host received %+v, want the redirected read", second)
		}
		if second[0].AuthorizationSHA256 != "" {
			t.Fatal("the other host received an Authorization header")
		}
	})

	t.Run("an http host's 401 invalid_token parks the call, its attempt FAILED and not applied, the run waiting in its park; a 401 without error= is a denial", func(t *testing.T) {
		for _, tc := range []struct {
			why, challenge string
			code           tool.Code
			says           string
		}{
			{"invalid_token", `Bearer error="invalid_token"`, tool.CallParked, credential.CauseExpired},
			{"no error=", `Bearer realm="api"`, tool.PermissionDenied, "refused the toolset-scope credential"},
		} {
			path := fresh("refused")
			hsrv.Script("/cred/"+path, httprecorder.Status(401, "WWW-Authenticate", tc.challenge))
			before := len(hsrv.Requests())
			run, _ := c.runAs(t, read, fmt.Sprintf(`{"path": %q}`, path), starter, "", "")
			if tc.code == tool.CallParked {
				// Refused after the claim: the attempt FAILED and its
				// PARKED row, and the run waits in its park
				// (endRefusedCall).
				cause, out, _ := c.endRefusedCall(t, run, "read", "http")
				if !strings.Contains(cause, tc.says) || strings.Contains(cause, tok) || strings.Contains(out.Cause, tok) {
					t.Fatalf("%s: the Task's cause %q, the run's %q: want %q, without the credential", tc.why, cause, out.Cause, tc.says)
				}
			} else if out, _ := c.follow(t, run); out.Status != "FAILED" || out.Error != string(tc.code) || !strings.Contains(out.Cause, tc.says) || strings.Contains(out.Cause, tok) {
				t.Fatalf("%s: run %s %s %s, want FAILED %s saying %q", tc.why, out.Status, out.Error, out.Cause, tc.code, tc.says)
			}
			if got := hsrv.Requests()[before:]; len(got) != 1 || got[0].AuthorizationSHA256 != authorizationDigest(tok) {
				t.Fatalf("%s: the host received %+v, want one request presenting the credential", tc.why, got)
			}
			if tc.code == tool.CallParked {
				if !c.refusedRows(t, run, "http") {
					t.Fatalf("%s: parked before the claim, want after it", tc.why)
				}
			} else if rows := c.toolRows(t, run, "http"); len(rows) != 1 || rows[0].Status != ledger.StatusFailed || rows[0].ErrorCode != string(tc.code) || rows[0].Attempt != 1 {
				t.Fatalf("%s: rows %+v, want one FAILED %s at attempt 1", tc.why, rows, tc.code)
			}
		}
	})

	t.Run("an MCP server that takes the credential in its URL's path gets it there and in no header", func(t *testing.T) {
		srv := e.st.MCPAuth
		pathTok := token(t)
		srv.SetBearerTokens(pathTok)
		t.Cleanup(func() { srv.SetBearerTokens(token(t)) })
		name := fresh("crm-path")
		pfile := c.writeToolset(t, "path", name, strings.NewReplacer("NAME", name, "URL", srv.PathURL()).Replace(credPathToolset))
		if out, code := e.toolgate(t, "toolset", "register", pfile, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher); code == cli.ExitOK {
			t.Fatalf("registered without a credential:\n%s", out)
		}
		c.set(t, admin, name, "crm", pathTok, "--draft", pfile)
		pid := e.registerToolset(t, pfile)
		if code, out := c.cred(t, admin, "allow", "--toolset", pid); code != cli.ExitOK {
			t.Fatalf("allow %s: exit %d\n%s", pid, code, out)
		}
		lookup := c.publishLookup(t, pfile, pid, credLookup)

		since := len(srv.Requests())
		run, _ := c.runAs(t, lookup, `{"customer_id": "C-3"}`, starter, "", "")
		out, events := c.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s", out.Status, out.Error, out.Cause)
		}
		calls := 0
		for _, r := range srv.Requests()[since:] {
			if r.PathSecret != pathTok || r.Header.Get("Authorization") != "" {
				t.Fatalf("%s %s: path secret %t, Authorization %q: want the credential in the path only", r.Method, r.RPCMethod, r.PathSecret == pathTok, describe([]string{r.Header.Get("Authorization")}))
			}
			if r.RPCMethod == "tools/call" {
				calls++
			}
		}
		if calls != 1 {
			t.Fatalf("the server received %d tools/call requests, want 1", calls)
		}
		for _, ev := range events {
			if strings.Contains(fmt.Sprintf("%+v", ev), pathTok) {
				t.Fatalf("the run's history holds the credential: %s", ev.Type)
			}
		}
		if led, _ := e.toolgate(t, "ledger", "--json", run, "--endpoint", e.st.Dynamo.Endpoint(), "--table", stack.Table); strings.Contains(led, pathTok) {
			t.Fatal("the run's ledger rows hold the credential")
		}

		// The server stops accepting it: the refused path is answered 401
		// invalid_token, and the call parks without the token in its cause.
		srv.SetBearerTokens(token(t))
		run, _ = c.runAs(t, lookup, `{"customer_id": "C-3"}`, starter, "", "")
		cause, out, events := c.endRefusedCall(t, run, "lookup", "crm.lookup_customer")
		if !strings.Contains(cause, credential.CauseExpired) || strings.Contains(cause, pathTok) || strings.Contains(out.Cause, pathTok) {
			t.Fatalf("the Task's cause %q, the run's %q: want %s, without the credential", cause, out.Cause, credential.CauseExpired)
		}
		for _, ev := range events {
			if strings.Contains(fmt.Sprintf("%+v", ev), pathTok) {
				t.Fatalf("the parked run's history holds the credential: %s", ev.Type)
			}
		}
	})
}
