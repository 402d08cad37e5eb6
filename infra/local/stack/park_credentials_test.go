package stack_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// resumedBySet fails t unless out, what toolgate credentials set printed,
// says it resumed park p, and p reads RESUMED, decided by setter, who set
// the credential (docs/parking.md, "Who may").
func (c *credEnv) resumedBySet(t *testing.T, out string, p *park.Park, setter string) {
	t.Helper()
	if !strings.Contains(out, "resumed park "+p.ID) {
		t.Fatalf("credentials set printed\n%s\nwant park %s resumed", out, p.ID)
	}
	got, err := c.parks().Get(t.Context(), p.ID)
	if err != nil || got.Status != park.StatusResumed || got.DecidedBy != local.LocalPrincipal(setter) {
		t.Fatalf("park %+v (%v), want RESUMED by %s", got, err, local.LocalPrincipal(setter))
	}
}

// mcpLookup registers a fresh toolset whose MCP server crm, the stack's
// server that requires a bearer token, accepts tokens (which it is told
// here, and forgets when t ends), the credential admin having set the
// toolset's credential first (from the draft) and allowed the id, and
// publishes a lookup Solution on it: the toolset's name and the
// Solution's.
func (c *credEnv) mcpLookup(t *testing.T, first string, tokens ...string) (string, string) {
	t.Helper()
	srv := c.st.MCPAuth
	srv.SetBearerTokens(tokens...)
	t.Cleanup(func() { srv.SetBearerTokens(token(t)) }) // nobody's again
	name := fresh("crm-renewed")
	file := c.writeToolset(t, name, name, strings.NewReplacer("NAME", name, "URL", srv.URL(), "POLICY", "{policy: at_least_once, idempotent: true}").Replace(credToolset))
	c.set(t, stack.CredentialAdmin, name, "crm", first, "--draft", file)
	id := c.registerToolset(t, file)
	if code, out := c.cred(t, stack.CredentialAdmin, "allow", "--toolset", id); code != cli.ExitOK {
		t.Fatalf("allow %s: exit %d\n%s", id, code, out)
	}
	return name, c.publishLookup(t, file, id, credLookup)
}

// setExpiring sets toolset name's crm credential secret as as, expiring
// in 3 s, with more flags, and waits for the wall clock, which the
// functions read, to pass the expiry.
func (c *credEnv) setExpiring(t *testing.T, as, name, secret string, more ...string) {
	t.Helper()
	expires := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	c.set(t, as, name, "crm", secret, append([]string{"--expires-at", expires.Format(time.RFC3339)}, more...)...)
	time.Sleep(time.Until(expires.Add(100 * time.Millisecond)))
}

// resumedOnce fails t unless run, once resumed, succeeded with srv
// receiving one tools/call since since (calls since calls), presenting
// the renewed credential, under the key of run/1.
func (c *credEnv) resumedOnce(t *testing.T, run string, since, calls int, renewed string) {
	t.Helper()
	srv := c.st.MCPAuth
	res, _ := c.follow(t, run)
	if res.Status != "SUCCEEDED" {
		t.Fatalf("run %s %s %s, want SUCCEEDED once resumed", res.Status, res.Error, res.Cause)
	}
	if got := presented(srv, since); len(got) != 1 || got[0] != "Bearer "+renewed {
		t.Fatalf("the server's tools/call requests presented %s, want one, the renewed credential", describe(got))
	}
	sent := srv.Calls()[calls:]
	if len(sent) != 1 || metaKey(sent[0]) != c.externalKey(t, "mcp-call", run, "1") {
		t.Fatalf("the tool ran %d times, want once under the key of %s/1", len(sent), run)
	}
}

// sentOnceUnder fails t unless run's rows of toolName are want (each a
// status and an attempt, in time order), all under the one idempotency
// key run/1, the last SUCCEEDED and sent under park p.
func (c *credEnv) sentOnceUnder(t *testing.T, run, toolName string, p *park.Park, want ...string) {
	t.Helper()
	rows := c.toolRows(t, run, toolName)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s %d", r.Status, r.Attempt))
		if r.IdempotencyKey != run+"/1" {
			t.Fatalf("row %+v: want the key %s/1", r, run)
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("rows %s, want %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if last := rows[len(rows)-1]; last.Status != ledger.StatusSucceeded || last.ParkID != p.ID {
		t.Fatalf("the last row %+v: want SUCCEEDED under park %s", last, p.ID)
	}
}

// Credentials parks end to end on the local stack (docs/parking.md,
// docs/credentials.md "Expiry"): a call whose credential expired, or
// whose server refused it after the claim, parks, its run waiting in its
// park; the credential admin's toolgate credentials set of a fresh token
// for that target and scope resumes the park through review-decision
// with the admin's own proofs, and the run goes on by itself: the call is
// sent once more under the same key, presenting the new token, and the
// run succeeds. The waits are polls with deadlines (awaitParked, follow),
// or for the wall clock to pass a credential's expiry.
func TestCredentialsSetResumesTheCallParkedOnItOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	c := &credEnv{env: e, dir: t.TempDir()}
	admin := stack.CredentialAdmin
	const input = `{"customer_id": "C-2"}`

	t.Run("an expired credential parks the call unsent; the set of a fresh one resumes it once, under the same key", func(t *testing.T) {
		srv := e.st.MCPAuth
		old, renewed := token(t), token(t)
		name, lookup := c.mcpLookup(t, old, old, renewed)
		c.setExpiring(t, admin, name, old)

		since, calls := len(srv.Requests()), len(srv.Calls())
		run, _ := c.runAs(t, lookup, input, starter, "", "")
		p, _ := c.awaitParked(t, run, "lookup")
		if p.Cause != park.CredentialsExpired || p.Target != "crm" || p.Scope != credential.KindToolset {
			t.Fatalf("park %+v, want %s of crm in the toolset scope", p, park.CredentialsExpired)
		}
		if got := presented(srv, since); len(got) != 0 {
			t.Fatalf("the parked call sent %d tools/call requests, want none", len(got))
		}

		out := c.set(t, admin, name, "crm", renewed, "--review-endpoint", e.decisionEndpoint())
		c.resumedBySet(t, out, p, admin)
		c.resumedOnce(t, run, since, calls, renewed)
		c.sentOnceUnder(t, run, "crm.lookup_customer", p, "PARKED 0", "SUCCEEDED 1")
	})

	t.Run("a started run's expired run credential is set again by its starter alone, which resumes its park", func(t *testing.T) {
		srv := e.st.MCPAuth
		toolsetTok, old, renewed := token(t), token(t), token(t)
		name, lookup := c.mcpLookup(t, toolsetTok, toolsetTok, old, renewed)
		runName := fresh("cred-run-renewed")
		c.setExpiring(t, starter, name, old, "--run", executionARN(lookup, runName))

		since, calls := len(srv.Requests()), len(srv.Calls())
		run, _ := c.runAs(t, lookup, input, starter, runName, "")
		p, _ := c.awaitParked(t, run, "lookup")
		if p.Cause != park.CredentialsExpired || p.Target != "crm" || p.Scope != string(credential.RunScope(runName)) {
			t.Fatalf("park %+v, want %s of crm in the run's scope", p, park.CredentialsExpired)
		}
		// The run has started: its scope is sealed but for its starter,
		// while the run waits for that credential (docs/credentials.md,
		// "Run credentials").
		for _, who := range []string{publisher, admin} {
			if code, out := c.trySet(t, who, name, "crm", renewed, "--run", run); code == cli.ExitOK || !strings.Contains(out, "[credentials-run-started]") {
				t.Fatalf("%s sets the started run's credential: exit %d\n%s", who, code, out)
			}
		}
		out := c.set(t, starter, name, "crm", renewed, "--run", run, "--review-endpoint", e.decisionEndpoint())
		c.resumedBySet(t, out, p, starter)
		c.resumedOnce(t, run, since, calls, renewed)
		c.sentOnceUnder(t, run, "crm.lookup_customer", p, "PARKED 0", "SUCCEEDED 1")
		if code, out := c.trySet(t, starter, name, "crm", renewed, "--run", run); code == cli.ExitOK || !strings.Contains(out, "[credentials-run-started]") {
			t.Fatalf("the starter sets it once nothing waits: exit %d\n%s", code, out)
		}
	})

	t.Run("a 401 invalid_token after the claim parks the call; the set of a fresh token resumes it as attempt 2, under the same key", func(t *testing.T) {
		hsrv := e.st.HTTP
		old, renewed := token(t), token(t)
		hname := fresh("http-renewed")
		file := c.writeToolset(t, "http-renewed", hname, strings.NewReplacer("NAME", hname, "HOST", hsrv.Host()).Replace(credHTTPToolset))
		id := e.registerToolset(t, file)
		read := c.publishLookup(t, file, id, credHTTPRead)
		c.set(t, admin, hname, hsrv.Host(), old)
		path := fresh("renewed")
		hsrv.Script("/cred/"+path, httprecorder.Status(401, "WWW-Authenticate", `Bearer error="invalid_token"`), httprecorder.OK(map[string]any{"renewed": true}))

		before := len(hsrv.Requests())
		run, _ := c.runAs(t, read, fmt.Sprintf(`{"path": %q}`, path), starter, "", "")
		p, _ := c.awaitParked(t, run, "read")
		if p.Cause != park.CredentialsExpired || p.Target != hsrv.Host() || p.Scope != credential.KindToolset {
			t.Fatalf("park %+v, want %s of %s in the toolset scope", p, park.CredentialsExpired, hsrv.Host())
		}
		if !c.refusedRows(t, run, "http") {
			t.Fatal("parked before the claim, want after it")
		}

		out := c.set(t, admin, hname, hsrv.Host(), renewed, "--review-endpoint", e.decisionEndpoint())
		c.resumedBySet(t, out, p, admin)
		res, _ := c.follow(t, run)
		if res.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED once resumed", res.Status, res.Error, res.Cause)
		}
		got := hsrv.Requests()[before:]
		if len(got) != 2 || got[0].AuthorizationSHA256 != authorizationDigest(old) || got[1].AuthorizationSHA256 != authorizationDigest(renewed) || got[1].Status != 200 {
			t.Fatalf("the service received %+v, want the refused request, then one presenting the renewed credential", got)
		}
		c.sentOnceUnder(t, run, "http", p, fmt.Sprintf("%s 1", ledger.StatusFailed), "PARKED 1", "SUCCEEDED 2")
		if rows := c.toolRows(t, run, "http"); rows[0].ErrorCode != string(tool.CallParked) {
			t.Fatalf("the first attempt %+v, want FAILED %s", rows[0], tool.CallParked)
		}
	})
}
