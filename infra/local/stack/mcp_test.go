package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/mcptool"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
)

// The local stack runs its MCP server, and mcp-call under the RIE on both
// lanes, where publishing (its parameter) and Step Functions (the
// functions file) find its sfn lane, each lane running the dispatcher.
func TestLocalStackRunsMCPCall(t *testing.T) {
	e := sharedEnv(t)
	st := e.st

	client := mcp.NewClient(&mcp.Implementation{Name: "stack-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: st.MCP.URL()}, nil)
	if err != nil {
		t.Fatalf("connect to the local MCP server: %v", err)
	}
	defer cs.Close()
	var names []string
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{mcpserver.CreateTicket, mcpserver.LookupCustomer, mcpserver.SendSMS}; !slices.Equal(names, want) {
		t.Fatalf("the local MCP server lists %v, want %v", names, want)
	}

	var params, functions map[string]string
	readJSON(t, st.ParamsFile, &params)
	readJSON(t, filepath.Join(st.Dir, "functions.json"), &functions)
	if got, want := params["/toolgate/"+stack.Stage+"/function/mcp-call/arn"], stack.FunctionARN("mcp-call")+":sfn"; got != want {
		t.Errorf("mcp-call's parameter %q, want its sfn alias %q", got, want)
	}
	if functions["mcp-call"] != st.SFNEndpoints["mcp-call"]+local.InvokePath {
		t.Errorf("Step Functions invokes mcp-call at %q, not its sfn lane %q", functions["mcp-call"], st.SFNEndpoints["mcp-call"])
	}

	run := "arn:aws:states:" + local.Region + ":" + stack.AccountID + ":execution:toolgate-local_x:mcp-1"
	envelope := fmt.Sprintf(`{"tool":"crm.lookup_customer","toolset_id":"ts_00000000000000000000000000000000","run_id":%q,"seq":1,"step":"lookup",`+
		`"idempotency_key":"%s/1","attempt":1,"tolerate_duplicates":false,"input":{"customer_id":"C-1"}}`, run, run)
	for _, c := range []struct {
		name, endpoint, payload string
		want                    tool.Code
	}{
		{"direct lane, no envelope", st.Endpoints["mcp-call"], `{}`, tool.InputInvalid},
		{"sfn lane, no envelope", st.SFNEndpoints["mcp-call"], `{}`, tool.InputInvalid},
		// An execution's run id on the direct lane: refused before any read.
		{"direct lane, an execution's call", st.Endpoints["mcp-call"], envelope, tool.PermissionDenied},
		{"sfn lane, a toolset not registered", st.SFNEndpoints["mcp-call"], envelope, tool.PermissionDenied},
	} {
		if got := invokeErrorType(t, c.endpoint, c.payload); got != string(c.want) {
			t.Errorf("%s: errorType %q, want %s", c.name, got, c.want)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// invokeErrorType invokes a function's endpoint and returns the errorType
// it answered ("" for a result).
func invokeErrorType(t *testing.T, endpoint, payload string) string {
	t.Helper()
	resp, err := http.Post(endpoint+local.InvokePath, "application/json", bytes.NewReader([]byte(payload)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var fe struct {
		ErrorType string `json:"errorType"`
	}
	json.Unmarshal(body, &fe)
	return fe.ErrorType
}

// crmLocal is a toolset of the local MCP server's three tools with the
// policies the tests below need: create_ticket retried under its key
// (idempotent: the server honours the key), lookup_customer without a
// retry, and send_sms at the safe defaults (at_most_once, not idempotent)
// within 2 s.
const crmLocal = `toolset: crm-local
tools:
  crm:
    mcp: URL
    admit: [create_ticket, lookup_customer, send_sms]
    policy:
      create_ticket: {policy: at_least_once, idempotent: true, retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 1}}
      lookup_customer: {policy: at_least_once, idempotent: true}
      send_sms: {timeout_seconds: 2}
`

// lookupOnly is a toolset of one server's lookup_customer.
const lookupOnly = `toolset: NAME
tools:
  crm:
    mcp: URL
    admit: [lookup_customer]
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
`

const mcpTicket = `solution: mcp-e2e-ticket
version: 1
toolset: TOOLSET
input:
  type: object
  required: [title]
  properties:
    title: {type: string, minLength: 1, maxLength: 200}
steps:
  - id: ticket
    tool: crm.create_ticket
    with: {title: "${input.title}", priority: normal}
`

const mcpSMS = `solution: mcp-e2e-sms
version: 1
toolset: TOOLSET
input:
  type: object
  required: [text]
  properties:
    text: {type: string, minLength: 1, maxLength: 160}
steps:
  - id: sms
    tool: crm.send_sms
    with: {to: "+15550100", text: "${input.text}"}
`

// mcpLookup is stack.LookupSolution with the placeholders NAME and
// TOOLSET, which each test replaces.
var mcpLookup = string(stack.LookupSolution("NAME", "TOOLSET"))

// MCP servers end to end on the local stack: toolsets naming MCP servers are
// registered through the publish function, and Solutions on them call the
// local MCP server through mcp-call, with the idempotency key in _meta.
// The waits are polls with deadlines (follow, pending) and the server's
// own channels; nothing sleeps.
func TestMCPToolsOnTheLocalStack(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	// A second server, with sessions and limited to 2025-11-25, which
	// publish and mcp-call may reach too.
	older, err := mcpserver.Start(mcpserver.Options{ProtocolVersions: []string{"2025-11-25"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { older.Stop(context.Background()) })
	olderURL, _ := url.Parse(older.URL())
	e := startEnv(t, stack.StackOptions{MCPAllow: []string{olderURL.Host},
		// mcp-call lists the server's tools before every call (its
		// default keeps a listing 5 s): one subtest changes a tool and
		// puts it back, and the next must not see the listing of either.
		Env: map[string]string{"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0"}})
	srv := e.st.MCP
	// parkedLookup runs mcp-e2e-lookup once its tool changed on the server:
	// the Task fails with CALL_PARKED and the run waits in lookup-park, its
	// park recorded; its one row is PARKED, attempt 0, under <run>/1, and
	// the server receives no tools/call. It returns the Task's cause, the
	// row and the park, then ends the wait (stopParked).
	parkedLookup := func(t *testing.T) (string, ledger.Row, *park.Park) {
		t.Helper()
		calls := len(srv.Calls())
		run := e.start(t, "mcp-e2e-lookup", map[string]string{"customer_id": "C-1"})
		p, events := e.awaitParked(t, run, "lookup")
		rows := e.toolRows(t, run, "crm.lookup_customer")
		if len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].ErrorCode != string(tool.CallParked) || rows[0].Attempt != 0 || rows[0].IdempotencyKey != run+"/1" {
			t.Fatalf("rows %+v, want one PARKED %s, attempt 0, under %s/1", rows, tool.CallParked, run)
		}
		if p.Cause != park.SchemaChanged || p.Tool != "crm.lookup_customer" || p.IdempotencyKey != run+"/1" || p.Seq != "1" || p.Gated {
			t.Fatalf("park %+v, want an ungated %s of crm.lookup_customer under %s/1", p, park.SchemaChanged, run)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 0 {
			t.Fatalf("the server received %+v, want no tools/call", sent)
		}
		e.stopParked(t, run, p)
		if sent := srv.Calls()[calls:]; len(sent) != 0 {
			t.Fatalf("the server received %+v after the run stopped, want no tools/call", sent)
		}
		return parkedCause(events), rows[0], p
	}

	dir := t.TempDir()
	write := writerIn(t, dir)
	solution := func(name, src, toolset string) {
		t.Helper()
		e.publishOn(t, dir, write(name+".yaml", string(stack.OnToolset([]byte(src), toolset))))
	}
	demoFile := write("mcp-demo.yaml", string(stack.MCPDemoToolset(srv.URL())))
	demo := e.registerToolset(t, demoFile)
	crm := e.registerToolset(t, write("crm-local.yaml", strings.ReplaceAll(crmLocal, "URL", srv.URL())))

	customerTicket, err := os.ReadFile(filepath.Join(root, "testdata", "toolsets", "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	solution("customer-ticket", string(customerTicket), demo)
	solution("mcp-e2e-ticket", mcpTicket, crm)
	solution("mcp-e2e-sms", mcpSMS, crm)
	solution("mcp-e2e-lookup", strings.Replace(mcpLookup, "NAME", "mcp-e2e-lookup", 1), crm)

	t.Run("registration pins the server's tools at 2026-07-28, and the same file registers to the same id", func(t *testing.T) {
		out, code := e.toolgate(t, "toolset", "register", demoFile, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher)
		if code != cli.ExitOK || !strings.Contains(out, "already registered "+demo) {
			t.Fatalf("the second registration: exit %d\n%s", code, out)
		}
		// The lock is testdata/toolsets/mcp-demo.lock.json but for the
		// server's URL, and so the id.
		var got, want map[string]any
		readJSON(t, strings.TrimSuffix(demoFile, ".yaml")+".lock.json", &got)
		committed, err := os.ReadFile(filepath.Join(root, "testdata", "toolsets", "mcp-demo.lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(committed), "https://mcp.crm.example.com/mcp", srv.URL())), &want); err != nil {
			t.Fatal(err)
		}
		delete(got, "id")
		delete(want, "id")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the registered lock differs from mcp-demo.lock.json but for the URL (-committed +registered):\n%s", diff)
		}
		for name, tl := range got["tools"].(map[string]any) {
			if p := tl.(map[string]any)["mcp"].(map[string]any)["protocol"]; p != "2026-07-28" {
				t.Errorf("%s pinned at revision %v, want 2026-07-28 (the stack's server is stateless)", name, p)
			}
		}
	})

	t.Run("a customer looked up and a reviewed ticket: the server sees each call's key in _meta, as its row does", func(t *testing.T) {
		calls, tickets := len(srv.Calls()), len(srv.Tickets())
		run := e.start(t, "customer-ticket", map[string]string{"customer_id": "C-2", "title": "MCP: printer on fire"})
		id := e.pending(t, run, nil)
		if code, out := e.decideAs(t, starter, "approve", id); code == cli.ExitOK || !strings.Contains(out, "REVIEW_SELF_APPROVAL") {
			t.Fatalf("the run's starter approved its own review: exit %d\n%s", code, out)
		}
		if code, out := e.decideAs(t, ticketReviewer, "approve", id); code != cli.ExitOK {
			t.Fatalf("approve %s: exit %d\n%s", id, code, out)
		}
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		lookup, ticket := e.toolRows(t, run, "crm.lookup_customer"), e.toolRows(t, run, "crm.create_ticket")
		if len(lookup) != 1 || len(ticket) != 1 {
			t.Fatalf("rows: lookup %+v, ticket %+v; want one each", lookup, ticket)
		}
		sent := srv.Calls()[calls:]
		if len(sent) != 2 || sent[0].Tool != mcpserver.LookupCustomer || sent[1].Tool != mcpserver.CreateTicket {
			t.Fatalf("the server received %+v, want lookup_customer then create_ticket", sent)
		}
		for i, r := range []ledger.Row{lookup[0], ticket[0]} {
			if want := fmt.Sprintf("%s/%s", run, r.Seq); r.Status != ledger.StatusSucceeded || r.IdempotencyKey != want || r.ToolsetID != demo || r.Attempt != 1 {
				t.Errorf("row %+v, want SUCCEEDED, attempt 1, key %s, toolset %s", r, want, demo)
			}
			if got := metaKey(sent[i]); got != r.ExternalKey || got != e.externalKey(t, "mcp-call", run, string(r.Seq)) {
				t.Errorf("%s: the server received _meta key %q, its row has %q", sent[i].Tool, got, r.ExternalKey)
			}
		}
		if lookup[0].IdempotencyKey == ticket[0].IdempotencyKey {
			t.Errorf("both calls under key %s", lookup[0].IdempotencyKey)
		}
		if r := ticket[0]; r.ReviewID != id || r.Approver != local.LocalPrincipal(ticketReviewer) {
			t.Errorf("create_ticket row %+v, want approved in %s by %s", r, id, local.LocalPrincipal(ticketReviewer))
		}
		if got := srv.Tickets()[tickets:]; len(got) != 1 || got[0].IdempotencyKey != ticket[0].ExternalKey || got[0].Priority != "high" {
			t.Fatalf("tickets %+v, want one under key %s", got, ticket[0].ExternalKey)
		}
	})

	t.Run("a retried create_ticket: 503, 503, then one ticket, every attempt under the same key", func(t *testing.T) {
		calls, tickets := len(srv.Calls()), len(srv.Tickets())
		srv.RefuseCalls(2, mcpserver.Unavailable)
		run := e.start(t, "mcp-e2e-ticket", map[string]string{"title": "MCP: retried"})
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if failed := taskFailures(events); !slices.Equal(failed, []string{string(tool.UpstreamUnavailable), string(tool.UpstreamUnavailable)}) {
			t.Fatalf("Task failures %v, want two %s retried", failed, tool.UpstreamUnavailable)
		}
		key := e.externalKey(t, "mcp-call", run, "1")
		sent := srv.Calls()[calls:]
		if len(sent) != 3 {
			t.Fatalf("the server received %d calls, want 3: %+v", len(sent), sent)
		}
		for i, c := range sent {
			if c.Tool != mcpserver.CreateTicket || metaKey(c) != key || c.Refused != []int{503, 503, 0}[i] {
				t.Errorf("call %d: %s, _meta key %q, refused %d; want create_ticket under %s", i+1, c.Tool, metaKey(c), c.Refused, key)
			}
		}
		rows := e.toolRows(t, run, "crm.create_ticket")
		if len(rows) != 3 {
			t.Fatalf("rows %+v, want attempts 1..3", rows)
		}
		for i, r := range rows {
			want := ledger.StatusUnknown // a 503 after the request was written: maybe applied
			if i == 2 {
				want = ledger.StatusSucceeded
			}
			if r.Attempt != i+1 || r.ExternalKey != key || r.IdempotencyKey != run+"/1" || r.Status != want || (i < 2) != (r.ErrorCode == string(tool.UpstreamUnavailable)) {
				t.Errorf("row %d: %+v, want attempt %d %s under %s", i, r, i+1, want, key)
			}
		}
		if got := srv.Tickets()[tickets:]; len(got) != 1 || got[0].IdempotencyKey != key {
			t.Fatalf("tickets %+v, want one under %s", got, key)
		}
	})

	t.Run("send_sms timed out is UNKNOWN, and a second attempt under its key is TOOL_RETRY_REQUIRES_IDEMPOTENCY, never a second SMS", func(t *testing.T) {
		calls, sms := len(srv.Calls()), len(srv.SMSSent())
		// The SMS is sent, and its answer held back past the pinned 2 s.
		ended, err := srv.Delay(mcpserver.SendSMS, 30*time.Second, 1)
		if err != nil {
			t.Fatal(err)
		}
		run := e.start(t, "mcp-e2e-sms", map[string]string{"text": "your ticket is open"})
		if out, _ := e.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.Timeout) {
			t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, tool.Timeout)
		}
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("the server's delay ran its full 30 s: mcp-call did not give up at its timeout")
			}
		case <-time.After(30 * time.Second): // a bound, never reached when the test passes
			t.Fatal("the server's delay did not end")
		}
		rows := e.toolRows(t, run, "crm.send_sms")
		if len(rows) != 1 || rows[0].Status != ledger.StatusUnknown || rows[0].ErrorCode != string(tool.Timeout) || rows[0].Attempt != 1 {
			t.Fatalf("rows %+v, want one UNKNOWN %s, attempt 1", rows, tool.Timeout)
		}
		// A second attempt, as a retry or a redrive would send it: the
		// Task's payload, on the sfn lane.
		if got := invokeErrorType(t, e.st.SFNEndpoints["mcp-call"], e.taskPayload(t, run, "crm.send_sms")); got != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("a second attempt under %s/1: errorType %q, want %s", run, got, tool.RetryRequiresIdempotency)
		}
		if got := len(srv.SMSSent()) - sms; got != 1 {
			t.Fatalf("%d SMS sent, want 1", got)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 1 || metaKey(sent[0]) != e.externalKey(t, "mcp-call", run, "1") {
			t.Fatalf("the server received %+v, want one send_sms under the external key of %s/1", sent, run)
		}
		rows = e.toolRows(t, run, "crm.send_sms")
		if len(rows) != 2 || rows[1].Status != ledger.StatusUnknown || rows[1].ErrorCode != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("rows %+v, want the second attempt UNKNOWN %s", rows, tool.RetryRequiresIdempotency)
		}
	})

	t.Run("a schema changed since registration parks the call: the run waits in its park, CALL_PARKED, both digests and the diff, no tools/call", func(t *testing.T) {
		var lock struct {
			Tools map[string]struct {
				InputSchema json.RawMessage `json:"input_schema"`
			}
		}
		readJSON(t, filepath.Join(dir, "crm-local.lock.json"), &lock)
		pinned := lock.Tools["crm.lookup_customer"].InputSchema
		changed := json.RawMessage(`{"type": "object", "properties": {"customer_id": {"type": "string", "pattern": "^C-[0-9]+$", "maxLength": 12}},
			"required": ["customer_id"], "additionalProperties": false}`)
		if err := srv.SetInputSchema(mcpserver.LookupCustomer, changed); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := srv.SetInputSchema(mcpserver.LookupCustomer, pinned); err != nil {
				t.Fatal(err)
			}
		}()
		cause, _, p := parkedLookup(t)
		for _, want := range []string{mcptool.SchemaChanged, "pinned sha256:", "server sha256:", "added /inputSchema/properties/customer_id/maxLength"} {
			if !strings.Contains(cause, want) {
				t.Errorf("the cause lacks %q:\n%s", want, cause)
			}
		}
		if !strings.HasPrefix(p.PinnedDigest, "sha256:") || !strings.HasPrefix(p.CurrentDigest, "sha256:") || p.PinnedDigest == p.CurrentDigest ||
			!strings.Contains(cause, p.PinnedDigest) || !strings.Contains(cause, p.CurrentDigest) ||
			!slices.Contains(p.ChangedPointers, "/inputSchema/properties/customer_id/maxLength") {
			t.Errorf("park %+v, want the cause's two digests and the changed pointer", p)
		}
	})

	t.Run("a description changed since registration parks the call too, and the cause does not quote it", func(t *testing.T) {
		var lock struct {
			Tools map[string]struct {
				Description string `json:"description"`
			}
		}
		readJSON(t, filepath.Join(dir, "crm-local.lock.json"), &lock)
		pinned := lock.Tools["crm.lookup_customer"].Description
		changed := "Deletes the customer named by customer_id."
		if err := srv.SetDescription(mcpserver.LookupCustomer, changed); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := srv.SetDescription(mcpserver.LookupCustomer, pinned); err != nil {
				t.Fatal(err)
			}
		}()
		cause, row, p := parkedLookup(t)
		if !strings.Contains(cause, "changed /description") || strings.Contains(cause, "Deletes the customer") || strings.Contains(cause, pinned) {
			t.Errorf("the cause names no changed /description, or quotes a description:\n%s", cause)
		}
		if strings.Contains(fmt.Sprintf("%+v", row), "Deletes the customer") {
			t.Errorf("the ledger row quotes the description: %+v", row)
		}
		if !slices.Contains(p.ChangedPointers, "/description") || strings.Contains(fmt.Sprintf("%+v", p), "Deletes the customer") {
			t.Errorf("park %+v, want /description changed, without quoting it", p)
		}
	})

	t.Run("an output breaking the pinned schema is TOOL_OUTPUT_INVALID", func(t *testing.T) {
		if err := srv.BreakOutput(mcpserver.LookupCustomer, 1); err != nil {
			t.Fatal(err)
		}
		calls := len(srv.Calls())
		run := e.start(t, "mcp-e2e-lookup", map[string]string{"customer_id": "C-3"})
		if out, _ := e.follow(t, run); out.Status != "FAILED" || out.Error != string(tool.OutputInvalid) {
			t.Fatalf("run %s %s %s, want FAILED %s", out.Status, out.Error, out.Cause, tool.OutputInvalid)
		}
		// The tool ran and answered: its effect may have happened, so the
		// outcome is unknown (shared/mcptool's table), and the Task's Retry
		// does not retry TOOL_OUTPUT_INVALID.
		rows := e.toolRows(t, run, "crm.lookup_customer")
		if len(rows) != 1 || rows[0].Status != ledger.StatusUnknown || rows[0].ErrorCode != string(tool.OutputInvalid) || rows[0].Attempt != 1 {
			t.Fatalf("rows %+v, want one UNKNOWN %s, attempt 1", rows, tool.OutputInvalid)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 1 || metaKey(sent[0]) != e.externalKey(t, "mcp-call", run, "1") {
			t.Fatalf("the server received %+v, want one call under the external key of %s/1", sent, run)
		}
	})

	t.Run("a server whose name resolves to a metadata or private address is not registered", func(t *testing.T) {
		defer func() {
			if err := e.st.ResolveMCPTestHost("127.0.0.1"); err != nil {
				t.Fatal(err)
			}
		}()
		file := write("crm-refused.yaml", strings.NewReplacer("NAME", "crm-refused", "URL", e.st.MCPTestURL()).Replace(lookupOnly))
		for _, c := range []struct{ addr, why string }{
			{"169.254.169.254", "169.254.169.254 is the instance metadata service"},
			{"10.0.0.1", "10.0.0.1 is private-use (RFC 1918)"},
		} {
			if err := e.st.ResolveMCPTestHost(c.addr); err != nil {
				t.Fatal(err)
			}
			listed := srv.ToolsListed()
			var stdout, stderr bytes.Buffer
			code := e.cliRun([]string{"toolset", "register", file, "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher}, &stdout, &stderr)
			if out := stdout.String() + stderr.String(); code == cli.ExitOK || !strings.Contains(out, publishapi.CodeRefused) ||
				!strings.Contains(out, stack.MCPTestHost+" resolves to "+c.addr+": "+c.why) || !strings.Contains(out, "nothing was registered") {
				t.Fatalf("%s resolving to %s: exit %d\n%s", stack.MCPTestHost, c.addr, code, out)
			}
			if srv.ToolsListed() != listed {
				t.Errorf("%s resolving to %s: the server was listed", stack.MCPTestHost, c.addr)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "crm-refused.lock.json")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a lock was written: %v", err)
		}
	})

	t.Run("a server whose name comes to resolve to a private address after registration is not called", func(t *testing.T) {
		internal := e.registerToolset(t, write("crm-internal.yaml", strings.NewReplacer("NAME", "crm-internal", "URL", e.st.MCPTestURL()).Replace(lookupOnly)))
		solution("mcp-e2e-internal", strings.Replace(mcpLookup, "NAME", "mcp-e2e-internal", 1), internal)
		if err := e.st.ResolveMCPTestHost("10.0.0.1"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.st.ResolveMCPTestHost("127.0.0.1"); err != nil {
				t.Fatal(err)
			}
		}()
		calls, listed := len(srv.Calls()), srv.ToolsListed()
		run := e.start(t, "mcp-e2e-internal", map[string]string{"customer_id": "C-1"})
		out, _ := e.follow(t, run)
		if out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || !strings.Contains(out.Cause, stack.MCPTestHost+" resolves to 10.0.0.1") {
			t.Fatalf("run %s %s %s, want FAILED %s, %s resolving to 10.0.0.1", out.Status, out.Error, out.Cause, tool.PermissionDenied, stack.MCPTestHost)
		}
		rows := e.toolRows(t, run, "crm.lookup_customer")
		if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(tool.PermissionDenied) || rows[0].Attempt != 0 {
			t.Fatalf("rows %+v, want one REFUSED %s, attempt 0", rows, tool.PermissionDenied)
		}
		if len(srv.Calls()) != calls || srv.ToolsListed() != listed {
			t.Fatal("the server was listed or called")
		}
	})

	t.Run("a server limited to 2025-11-25 is registered at that revision and called with a session", func(t *testing.T) {
		file := write("crm-sessions.yaml", strings.NewReplacer("NAME", "crm-sessions", "URL", older.URL()).Replace(lookupOnly))
		id := e.registerToolset(t, file)
		var lock struct {
			Tools map[string]struct{ MCP struct{ Protocol string } }
		}
		readJSON(t, strings.TrimSuffix(file, ".yaml")+".lock.json", &lock)
		if p := lock.Tools["crm.lookup_customer"].MCP.Protocol; p != "2025-11-25" {
			t.Fatalf("pinned at revision %q, want 2025-11-25", p)
		}
		solution("mcp-e2e-sessions", strings.Replace(mcpLookup, "NAME", "mcp-e2e-sessions", 1), id)
		run := e.start(t, "mcp-e2e-sessions", map[string]string{"customer_id": "C-1"})
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		rows := e.toolRows(t, run, "crm.lookup_customer")
		sent := older.Calls()
		if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || len(sent) != 1 || metaKey(sent[0]) != rows[0].ExternalKey ||
			sent[0].ProtocolVersion != "2025-11-25" || sent[0].SessionID == "" {
			t.Fatalf("rows %+v; the server received %+v; want one call at 2025-11-25 in a session, under the row's key", rows, sent)
		}
	})
}

// toolRows are the run's ledger rows of one tool.
func (e *env) toolRows(t *testing.T, run, name string) []ledger.Row {
	t.Helper()
	var rows []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == name {
			rows = append(rows, r)
		}
	}
	return rows
}

// externalKey is the external key function sends for the call run/seq on
// the stack: under the stage's external key secret as function loads it
// from the stack's SSM stand-in (secrets.Load); it must tell nothing of
// the run.
func (e *env) externalKey(t *testing.T, function, run, seq string) string {
	t.Helper()
	sec, err := e.st.LedgerSecrets(t.Context(), function)
	if err != nil {
		t.Fatal(err)
	}
	k, err := externalkey.New(sec.ExternalKey, run, tool.Seq(seq))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(k, local.LocalAccountID) || strings.Contains(k, "execution") {
		t.Fatalf("the external key %q tells of the run", k)
	}
	return k
}

// metaKey is the idempotency key a call carried in its _meta.
func metaKey(c mcpserver.Call) string {
	k, _ := c.Meta[mcpmeta.IdempotencyKey].(string)
	return k
}

// taskFailures are the errors of the run's failed Tasks, in order.
func taskFailures(events []runner.Event) []string {
	var failed []string
	for _, ev := range events {
		if ev.Type == "TaskFailed" {
			failed = append(failed, ev.Error)
		}
	}
	return failed
}

// taskPayload is the payload Step Functions sent the run's Task of a tool
// (its last).
func (e *env) taskPayload(t *testing.T, run, name string) string {
	t.Helper()
	h, err := e.sf.GetExecutionHistory(t.Context(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	if err != nil {
		t.Fatal(err)
	}
	var payload string
	for _, ev := range h.Events {
		if d := ev.TaskScheduledEventDetails; d != nil && strings.Contains(aws.ToString(d.Parameters), `"tool":"`+name+`"`) {
			var p struct{ Payload json.RawMessage }
			if err := json.Unmarshal([]byte(aws.ToString(d.Parameters)), &p); err != nil {
				t.Fatal(err)
			}
			payload = string(p.Payload)
		}
	}
	if payload == "" {
		t.Fatalf("no %s Task in the history of %s", name, run)
	}
	return payload
}
