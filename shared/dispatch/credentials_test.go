package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// credToolset is mcpToolset's crm server declaring auth (a bearer token),
// under the toolset name crm-tools, with the tool open.lookup (test-send's
// schemas too) of a server without auth beside it.
func credToolset(t *testing.T, e *env) *toolset.Toolset {
	t.Helper()
	ts := testToolset(t, 100)
	ts.Name = "crm-tools"
	pin := func(from, server, url, name string, auth *toolset.Auth) {
		p := ts.Tools[from]
		p.TimeoutSeconds = toolset.MCPToolTimeout
		p.MCP = &toolset.MCP{Server: server, URL: url, Name: name, Protocol: "2026-07-28", Auth: auth}
		ts.Tools[server+"."+name] = p
	}
	bearer := &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}
	pin("test-send", "crm", "https://mcp.crm.example.com:8443/mcp", "create_ticket", bearer)
	pin("test-send", "open", "https://mcp.open.example.com/mcp", "lookup", nil)
	return registerAs(t, e, ts)
}

// resolver stands in for shared/credential's Resolver, whose store and
// KMS the dispatcher's phases do not depend on (the package's own tests
// and the stack tests run the real one): it answers err, or cred, and
// records what it was asked.
type resolver struct {
	mu   sync.Mutex
	cred *credential.Credential
	err  error
	reqs []credential.Request
}

func (r *resolver) Resolve(ctx context.Context, req credential.Request) (*credential.Credential, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return r.cred, r.err
}

func (r *resolver) set(c *credential.Credential, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cred, r.err = c, err
}

func (r *resolver) asked() []credential.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]credential.Request(nil), r.reqs...)
}

// credDispatcher is an MCPTools dispatcher on e with creds (nil: no
// store), check and run.
func credDispatcher(t *testing.T, e *env, creds Credentials, check toolcall.Check, run toolcall.Func) *Dispatcher {
	t.Helper()
	cfg := Config{Mode: MCPTools, MemoryMB: 128, LedgerSince: testSince, ExternalKeySecret: testSecret, Check: check}
	cfg.Lane, cfg.CompactSince = "sfn", testSince
	deps := e.deps(t, run, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if creds != nil {
		deps.Credentials = creds
	}
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// seen records the credential each check and tool call was handed.
type seen struct {
	mu           sync.Mutex
	checks, runs []*credential.Credential
}

func (s *seen) check(ctx context.Context, c *toolcall.Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, c.Credential)
	return nil
}

func (s *seen) run(next toolcall.Func) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		s.mu.Lock()
		s.runs = append(s.runs, c.Credential)
		s.mu.Unlock()
		return next(ctx, c)
	}
}

// A call to a server that declares auth resolves its credential before
// the check and the claim, for the target (server key, pinned URL's
// origin with its written port, the declaration), the run's toolset id
// and run id; the check and the tool are handed that credential. A call
// to a server without auth resolves nothing and is handed none.
func TestTheResolvedCredentialReachesTheCheckAndTheTool(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	c := &credential.Credential{Target: credential.Target{ToolsetName: "crm-tools", Name: "crm"}, Scope: credential.ScopeToolset, Version: 3}
	r := &resolver{cred: c}
	var calls atomic.Int64
	s := &seen{}
	d := credDispatcher(t, e, r, s.check, s.run(echoSend(&calls)))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
	if _, err := d.Handle(ctx, payload); err != nil {
		t.Fatal(err)
	}
	want := credential.Request{
		Target:    credential.Target{ToolsetName: "crm-tools", Name: "crm", Origin: "https://mcp.crm.example.com:8443", Auth: toolset.Auth{Header: "Authorization", Scheme: "Bearer"}},
		ToolsetID: ts.ID, RunID: runIDOf(t, payload),
	}
	if got := r.asked(); len(got) != 1 || got[0] != want {
		t.Fatalf("resolved %+v, want %+v", got, want)
	}
	if len(s.checks) != 1 || s.checks[0] != c || len(s.runs) != 1 || s.runs[0] != c {
		t.Fatalf("the check got %v, the tool %v; want the resolved credential each", s.checks, s.runs)
	}
	if _, err := d.Handle(ctx, envelopeFor("open.lookup", ts.ID, "", 1, `{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if got := r.asked(); len(got) != 1 || s.checks[1] != nil || s.runs[1] != nil {
		t.Fatalf("a server without auth: resolved %d times, the check got %v, the tool %v", len(got), s.checks[1], s.runs[1])
	}
}

// A credential found expired before the claim parks the call: one PARKED
// row with the resolver's message (cause credentials.expired), nothing
// claimed, neither the check nor the tool run. None found, or no store at
// all, refuses it TOOL_PERMISSION_DENIED with a REFUSED row; a store that
// cannot be read, TOOL_UPSTREAM_UNAVAILABLE. In each case a later call
// under the same key is the key's first attempt.
func TestACredentialThatCannotBePresentedStopsTheCallBeforeTheClaim(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	for _, tc := range []struct {
		name    string
		err     error
		noStore bool
		code    string
		status  ledger.Status
		says    string
	}{
		{name: "expired", err: expired("the toolset scope's credential for crm expired at 2026-01-01T00:00:00Z"),
			code: "CALL_PARKED", status: ledger.StatusParked, says: "credentials.expired: the toolset scope's credential for crm"},
		{name: "none", err: tool.Errorf(tool.PermissionDenied, "no credential for crm in the run, end-user or toolset scope"),
			code: "TOOL_PERMISSION_DENIED", status: ledger.StatusRefused, says: "no credential for crm in the run, end-user or toolset scope"},
		{name: "no store", noStore: true, code: "TOOL_PERMISSION_DENIED", status: ledger.StatusRefused, says: "no credential store configured"},
		{name: "store unavailable", err: errors.New("dial tcp: connection refused"),
			code: "TOOL_UPSTREAM_UNAVAILABLE", status: ledger.StatusRefused, says: "the credentials of crm cannot be read now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &resolver{err: tc.err}
			var creds Credentials = r
			if tc.noStore {
				creds = nil
			}
			var calls atomic.Int64
			s := &seen{}
			d := credDispatcher(t, e, creds, s.check, s.run(echoSend(&calls)))
			payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
			runID := runIDOf(t, payload)
			_, err := d.Handle(ctx, payload)
			if codeOf(t, err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("answer %v; want %s saying %q", err, tc.code, tc.says)
			}
			if len(s.checks) != 0 || calls.Load() != 0 {
				t.Fatalf("the check ran %d times, the tool %d", len(s.checks), calls.Load())
			}
			if rec, err := e.store.Record(ctx, runID+"/1"); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("the call claimed its key: %+v %v", rec, err)
			}
			rows := ledgertest.RunRows(t, e.store, runID)
			if len(rows) != 1 || rows[0].Status != tc.status || rows[0].Attempt != 0 || rows[0].ErrorCode != tc.code {
				t.Fatalf("rows %+v", rows)
			}
			if tc.noStore {
				return
			}
			r.set(&credential.Credential{Scope: credential.ScopeToolset, Version: 2}, nil)
			if _, err := d.Handle(ctx, payload); err != nil || calls.Load() != 1 {
				t.Fatalf("the call once its credential resolves: %v (tool ran %d times)", err, calls.Load())
			}
			if rec := mustRecord(t, e.store, runID+"/1"); rec.Attempts != 1 || rec.State != ledger.StateCompleted {
				t.Fatalf("record %+v; want attempt 1 completed", rec)
			}
		})
	}
}

// A server that refuses the call's credential as an invalid token
// (credential.Credential.Refused from the tool) ends the call CALL_PARKED, cause
// credentials.expired, after the claim: the record is finished FAILED,
// not UNKNOWN (the server applied nothing, even for an at_most_once
// tool), the attempt counted, and a PARKED row of the attempt names the
// target and scope; once the credential is renewed the same key is sent
// again as attempt 2. A tool that answers the same for a call
// that carried no credential is TOOL_INTERNAL, as any CALL_PARKED after
// the claim.
func TestAnInvalidTokenAfterTheClaimParksTheCallWithNothingApplied(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	r := &resolver{cred: &credential.Credential{Scope: credential.ScopeToolset, Version: 1}}
	var refuse atomic.Bool
	refuse.Store(true)
	var calls atomic.Int64
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if refuse.Load() {
			return nil, expired("tools/call of crm.create_ticket on mcp.crm.example.com:8443 was answered HTTP 401 error=\"invalid_token\" for the toolset scope's credential")
		}
		return echoSend(&calls)(ctx, c)
	}
	d := credDispatcher(t, e, r, nil, run)
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
	runID := runIDOf(t, payload)
	_, err := d.Handle(ctx, payload)
	if codeOf(t, err) != "CALL_PARKED" || !strings.Contains(err.Error(), "credentials.expired: tools/call of crm.create_ticket") {
		t.Fatalf("answer %v", err)
	}
	rec := mustRecord(t, e.store, runID+"/1")
	if rec.State != ledger.StateFailed || rec.Attempts != 1 {
		t.Fatalf("record %+v; want FAILED after attempt 1", rec)
	}
	// The attempt's entry in the call's item, FAILED, and the attempt's
	// PARKED row, an item of its own, which the park Task records the
	// park from: its cause, target and scope.
	rows := mustKeyRows(t, e.store, runID, "1")
	if len(rows) != 2 || rows[0].Status != ledger.StatusFailed || rows[0].ErrorCode != "CALL_PARKED" || rows[0].Retryable || rows[0].Attempt != 1 {
		t.Fatalf("rows %+v, want the FAILED attempt 1, then its PARKED row", rows)
	}
	if p := rows[1]; p.Status != ledger.StatusParked || p.ErrorCode != "CALL_PARKED" || p.Attempt != 1 || p.ParkCause != "credentials.expired" ||
		p.ParkTarget != "crm" || p.ParkScope != string(credential.ScopeToolset) || p.ExternalKey != "" {
		t.Fatalf("PARKED row %+v, want attempt 1, credentials.expired of crm in the toolset scope", p)
	}
	refuse.Store(false)
	r.set(&credential.Credential{Scope: credential.ScopeToolset, Version: 2}, nil)
	if _, err := d.Handle(ctx, payload); err != nil || calls.Load() != 1 {
		t.Fatalf("the call once renewed: %v (tool ran %d times)", err, calls.Load())
	}
	if rec := mustRecord(t, e.store, runID+"/1"); rec.State != ledger.StateCompleted || rec.Attempts != 2 {
		t.Fatalf("record %+v; want attempt 2 completed", rec)
	}

	// No credential carried: the same answer is the tool's defect.
	refuse.Store(true)
	payload = envelopeFor("open.lookup", ts.ID, "", 1, `{"text":"hi"}`)
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != "TOOL_INTERNAL" {
		t.Fatalf("a call without a credential answered CALL_PARKED after the claim: %v", err)
	}
}

// withStart adds the envelope member start to payload.
func withStart(t *testing.T, payload json.RawMessage, start string) json.RawMessage {
	t.Helper()
	s := string(payload)
	return json.RawMessage(s[:len(s)-1] + `,"start":` + start + `}`)
}

// The run's verified starter and end-user scope (the envelope's start)
// go to the resolver, which uses run- and end-user-scope credentials only
// by them; a null end user is none.
func TestTheRunsStartGoesToTheResolver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	r := &resolver{cred: &credential.Credential{Scope: credential.ScopeToolset, Version: 1}}
	var calls atomic.Int64
	d := credDispatcher(t, e, r, nil, echoSend(&calls))
	const starter = "arn:aws:iam::000000000000:role/alice"
	scope := "end_user:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		start, endUser string
	}{
		{`{"starter":"` + starter + `","end_user":"` + scope + `"}`, scope},
		{`{"starter":"` + starter + `","end_user":null}`, ""},
	} {
		payload := withStart(t, envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`), tc.start)
		if _, err := d.Handle(ctx, payload); err != nil {
			t.Fatal(err)
		}
		got := r.asked()
		if last := got[len(got)-1]; last.Starter != starter || string(last.EndUser) != tc.endUser {
			t.Fatalf("start %s: resolved with starter %q end user %q", tc.start, last.Starter, last.EndUser)
		}
	}
}

// The http tool's contract names the host entry a call goes to; when the
// entry declares auth, the call resolves the entry's credential (the
// entry as its target, "<origin_scheme>://<entry>" its origin) before it
// is claimed, and an entry without auth resolves nothing.
func TestAnHTTPHostEntryWithAuthResolvesItsCredential(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := testToolset(t, 100)
	ts.Name = "crm-tools"
	builtin, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.Tools["http"] = builtin.Tools["http"]
	apiKey := &toolset.Auth{Header: "X-Api-Key", OriginScheme: "http"}
	ts.HTTPHosts = []toolset.HTTPHost{
		{Host: "api.example.com:8080", Methods: []string{"POST"}, Auth: apiKey},
		{Host: "open.example.com", Methods: []string{"POST"}},
	}
	ts = registerAs(t, e, ts)
	r := &resolver{cred: &credential.Credential{Scope: credential.ScopeToolset, Version: 1}}
	entry := "api.example.com:8080"
	contract := func(c *toolcall.Call) (toolcall.CallContract, error) {
		for i, h := range c.Toolset.HTTPHosts {
			if h.Host == entry {
				return toolcall.CallContract{Contract: httprule.Decide("GET", false), Host: &c.Toolset.HTTPHosts[i]}, nil
			}
		}
		return toolcall.CallContract{}, errors.New("no entry")
	}
	var got []*credential.Credential
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		got = append(got, c.Credential)
		return json.RawMessage(`{"status":200,"content_type":"","bytes":0,"headers":{},"sends":1,"data":null}`), nil
	}
	cfg := Config{Mode: OneTool("http"), MemoryMB: 128, LedgerSince: testSince, ExternalKeySecret: testSecret, Contract: contract, Lane: "sfn", CompactSince: testSince}
	deps := e.deps(t, run, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	deps.Credentials = r
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	const input = `{"method":"GET","url":"http://api.example.com:8080/x"}`
	if _, err := d.Handle(ctx, envelopeFor("http", ts.ID, "", 1, input)); err != nil {
		t.Fatal(err)
	}
	want := credential.Target{ToolsetName: "crm-tools", Name: "api.example.com:8080", Origin: "http://api.example.com:8080", Auth: *apiKey}
	if asked := r.asked(); len(asked) != 1 || asked[0].Target != want || len(got) != 1 || got[0] == nil {
		t.Fatalf("resolved %+v, the tool got %v; want %+v", asked, got, want)
	}
	entry = "open.example.com"
	if _, err := d.Handle(ctx, envelopeFor("http", ts.ID, "", 1, input)); err != nil {
		t.Fatal(err)
	}
	if asked := r.asked(); len(asked) != 1 || len(got) != 2 || got[1] != nil {
		t.Fatalf("an entry without auth: resolved %d times, the tool got %v", len(asked), got[1])
	}
}

// expired is the CALL_PARKED error, cause credentials.expired, that the
// resolver answers for an expired credential and a tool for one its
// server refused (credential.Credential.Refused).
func expired(what string) *tool.Error {
	return tool.Errorf(tool.CallParked, "%s: %s", credential.CauseExpired, what)
}

// A server that refuses the call's credential as an invalid token while
// the check lists its tools (before the claim) parks the call as
// credentials.expired, not as a changed tool: its PARKED row names the
// credential's target and scope, what the park route records the park
// from, and the key is left unclaimed.
func TestAnInvalidTokenAtTheListingParksTheCallOnItsCredential(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	r := &resolver{cred: &credential.Credential{Scope: credential.ScopeToolset, Version: 1}}
	check := func(ctx context.Context, c *toolcall.Call) error {
		return expired("tools/list on mcp.crm.example.com:8443 was answered HTTP 401 error=\"invalid_token\" for the toolset scope's credential")
	}
	var calls atomic.Int64
	d := credDispatcher(t, e, r, check, echoSend(&calls))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
	runID := runIDOf(t, payload)
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != "CALL_PARKED" {
		t.Fatalf("answer %v", err)
	}
	rows := mustKeyRows(t, e.store, runID, "1")
	if len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].Attempt != 0 || rows[0].ParkCause != "credentials.expired" ||
		rows[0].ParkTarget != "crm" || rows[0].ParkScope != string(credential.ScopeToolset) || rows[0].PinnedDigest != "" {
		t.Fatalf("rows %+v, want one PARKED at attempt 0, credentials.expired of crm in the toolset scope", rows)
	}
	if calls.Load() != 0 {
		t.Fatal("the tool ran")
	}
}
