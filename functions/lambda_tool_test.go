package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/examples/create-ticket/ticketservice"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// sentTo is what the proxy sent the function name through the router,
// each payload decoded as the documented request.
func sentTo(t *testing.T, r *local.LambdaRouter, name string) []platformtool.Request {
	t.Helper()
	var out []platformtool.Request
	for _, b := range r.Sent(name) {
		var req platformtool.Request
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("the proxy sent %s a request that is not JSON: %v", name, err)
		}
		out = append(out, req)
	}
	return out
}

// platformToolset pins the test platform tools: create-ticket (the
// example, idempotent, at_least_once, by ARN), ticket (the same function
// by placeholder), close-ticket (a placeholder with no parameter), answer
// (testdata/answer), and reviewed-ticket and untagged-ticket, pinned as
// create-ticket is but whose functions' floors refuse that pin.
func platformToolset(t *testing.T) *toolset.Toolset {
	t.Helper()
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{
		"create-ticket": {Description: "Create a ticket.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "arn:aws:lambda:us-east-1:000000000000:function:create-ticket",
			InputSchema:  json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title"],"properties":{"title":{"type":"string","minLength":1,"maxLength":200},"body":{"type":"string"},"priority":{"enum":["low","normal","high"]}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","required":["ticket_id","created"],"properties":{"ticket_id":{"type":"string"},"created":{"type":"boolean"}}}`)},
		// The same function, pinned as a toolset file usually names it: a
		// placeholder the proxy resolves from SSM (the local.SSM stand-in).
		"ticket": {Description: "Create a ticket.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "${FunctionCreateTicket}",
			InputSchema:  json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title"],"properties":{"title":{"type":"string","minLength":1,"maxLength":200}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","required":["ticket_id","created"],"properties":{"ticket_id":{"type":"string"},"created":{"type":"boolean"}}}`)},
		// A placeholder no parameter binds in the stage.
		"close-ticket": {Description: "Close a ticket.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "${FunctionCloseTicket}",
			InputSchema:  json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)},
		"answer": {Description: "Answer the given answer.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "arn:aws:lambda:us-east-1:000000000000:function:answer",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"answer":{"type":"object"},"fail":{"type":"boolean"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)},
		// The example again, as functions whose owners' floor is stricter
		// than the pin (reviewed-ticket) or that are not tagged for the
		// stage (untagged-ticket): the proxy never invokes them.
		"reviewed-ticket": {Description: "Create a ticket.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "arn:aws:lambda:us-east-1:000000000000:function:reviewed-ticket",
			InputSchema:  json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)},
		"untagged-ticket": {Description: "Create a ticket.", Idempotent: true, Policy: catalog.AtLeastOnce, TimeoutSeconds: 10,
			Function:     "arn:aws:lambda:us-east-1:000000000000:function:untagged-ticket",
			InputSchema:  json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`)},
	}}
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	return ts
}

var platformRun int

// runIDOf is an envelope's run_id.
func runIDOf(t *testing.T, payload []byte) string {
	t.Helper()
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		t.Fatal(err)
	}
	return v.RunID
}

// platformEnvelope is a call of toolName in a fresh run (or runID's), seq 1.
func platformEnvelope(toolName, toolsetID, runID string, attempt int, input string) []byte {
	if runID == "" {
		platformRun++
		runID = fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:toolgate-test_tickets:run-%d-%d", time.Now().UnixNano(), platformRun)
	}
	return []byte(fmt.Sprintf(`{"tool":%q,"toolset_id":%q,"run_id":%q,"seq":1,"step":"file","idempotency_key":"%s/1","attempt":%d,"tolerate_duplicates":false,"input":%s}`,
		toolName, toolsetID, runID, runID, attempt, input))
}

// withFunction is envelope with its "function" member set to fn, as a
// compiled Task sends it.
func withFunction(t *testing.T, envelope []byte, fn string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(envelope, &m); err != nil {
		t.Fatal(err)
	}
	m["function"], _ = json.Marshal(fn)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The platform tools' proxy (functions/lambda-tool) under the RIE, in
// front of the create-ticket example and the answer test function, each
// under its own RIE, with dynalite and the ticket service.
func TestLambdaToolProxy(t *testing.T) {
	ctx := context.Background()
	p, db, table := localtest.SharedTable(t, "toolgate-proxy")
	store := ledger.New(db, table)
	ts := platformToolset(t)
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RegisterToolset(ctx, ts); err != nil {
		t.Fatal(err)
	}

	tickets := ticketservice.New()
	ticketSrv := httptest.NewServer(tickets)
	t.Cleanup(ticketSrv.Close)
	// The Lambda API and SSM have no local emulator: infra/local's
	// stand-ins route Invoke to each function's RIE and answer
	// GetParameter from a map.
	createTicket := localtest.RIE(t, "create-ticket", localtest.Bootstrap(t, "../examples/create-ticket"), 10*time.Second,
		map[string]string{"TICKETS_URL": ticketSrv.URL}).InvokeURL()
	router, err := local.StartLambdaRouter(map[string]string{
		"create-ticket":   createTicket,
		"answer":          localtest.RIE(t, "answer", localtest.Bootstrap(t, "./testdata/answer"), 10*time.Second, nil).InvokeURL(),
		"reviewed-ticket": createTicket,
		"untagged-ticket": createTicket,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	// The owners' floors, as the functions' tags: the proxy may read the
	// tags of functions tagged for its stage only, as its role on AWS.
	router.RequireTag(platformtool.TagTool, "test")
	floorTags := func(f platformtool.Floor) map[string]string {
		tags := f.Tags()
		tags[platformtool.TagTool] = "test"
		return tags
	}
	loose := platformtool.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}
	router.SetTags("create-ticket", floorTags(loose))
	router.SetTags("answer", floorTags(loose))
	router.SetTags("reviewed-ticket", floorTags(platformtool.Floor{AtLeastOnce: true, Idempotent: true}))
	router.SetTags("untagged-ticket", loose.Tags())
	createTicketARN := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	params, err := local.StartSSM(map[string]string{toolset.ToolFunctionParam("test", "FunctionCreateTicket"): createTicketARN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { params.Close() })
	proxy := localtest.RIE(t, "lambda-tool", localtest.Bootstrap(t, "./lambda-tool"), 30*time.Second, map[string]string{
		dispatch.EnvTable:           store.Table(),
		tool.EnvStage:               "test",
		"AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(),
		"AWS_ENDPOINT_URL_LAMBDA":   router.Endpoint(),
		"AWS_ENDPOINT_URL_SSM":      params.Endpoint(),
	})
	invoke := func(payload []byte) (json.RawMessage, string) {
		out, code, _ := localtest.Invoke(t, proxy, payload)
		return out, code
	}

	t.Run("a pin looser than its function's floor is refused before its claim, and nothing is invoked", func(t *testing.T) {
		sentBefore := len(sentTo(t, router, "create-ticket"))
		for _, c := range []struct{ tool, says string }{
			{"reviewed-ticket", "tag toolgate:review=required"},
			{"untagged-ticket", "is not tagged toolgate:tool for this stage"},
		} {
			payload := platformEnvelope(c.tool, ts.ID, "", 1, `{"title":"over the floor"}`)
			_, code, msg := localtest.Invoke(t, proxy, payload)
			if code != string(tool.PermissionDenied) || !strings.Contains(msg, c.says) {
				t.Errorf("%s: %s %q, want %s saying %q", c.tool, code, msg, tool.PermissionDenied, c.says)
			}
			runID := runIDOf(t, payload)
			rows := ledgertest.RunRows(t, store, runID)
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != string(tool.PermissionDenied) || rows[0].Attempt != 0 {
				t.Errorf("%s: rows %+v, want one REFUSED %s, attempt 0", c.tool, rows, tool.PermissionDenied)
			}
			if rec := ledgertest.RecordOrNil(t, store, runID+"/1"); rec != nil {
				t.Errorf("%s: the key was claimed: %+v", c.tool, rec)
			}
			if n := len(sentTo(t, router, c.tool)); n != 0 {
				t.Errorf("%s was invoked %d times", c.tool, n)
			}
		}
		if n := len(sentTo(t, router, "create-ticket")) - sentBefore; n != 0 {
			t.Fatalf("create-ticket was invoked %d times", n)
		}
	})

	t.Run("a function's floor is read once within its TTL", func(t *testing.T) {
		listed := router.TagsListed("answer")
		for i := range 3 {
			if _, code := invoke(platformEnvelope("answer", ts.ID, "", 1, `{"answer":{"n":1}}`)); code != "" {
				t.Fatalf("call %d: %s", i, code)
			}
		}
		if n := router.TagsListed("answer") - listed; n > 1 {
			t.Fatalf("the tags were listed %d times for three calls", n)
		}
	})

	t.Run("ungated call succeeds and writes its row", func(t *testing.T) {
		payload := platformEnvelope("create-ticket", ts.ID, "", 1, `{"title":"printer on fire","priority":"high"}`)
		out, code := invoke(payload)
		if code != "" {
			t.Fatalf("failed: %s", code)
		}
		var res struct {
			TicketID string `json:"ticket_id"`
			Created  bool   `json:"created"`
		}
		if json.Unmarshal(out, &res) != nil || res.TicketID == "" || !res.Created {
			t.Fatalf("result %s", out)
		}
		rows, err := store.RunRows(ctx, runIDOf(t, payload))
		if err != nil || len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].Tool != "create-ticket" {
			t.Fatalf("rows %+v %v", rows, err)
		}
	})

	t.Run("a retry under one key reaches the function with that key and creates one ticket", func(t *testing.T) {
		before := len(tickets.Tickets())
		sentBefore := len(sentTo(t, router, "create-ticket"))
		tickets.LoseNextAnswer() // stored, its answer lost: 503, which create-ticket answers as TOOL_UPSTREAM_UNAVAILABLE, maybe applied (UNKNOWN)
		payload := platformEnvelope("create-ticket", ts.ID, "", 1, `{"title":"disk full"}`)
		if _, code := invoke(payload); code != string(tool.UpstreamUnavailable) {
			t.Fatalf("first attempt: %q, want %s", code, tool.UpstreamUnavailable)
		}
		runID := runIDOf(t, payload)
		retry := platformEnvelope("create-ticket", ts.ID, runID, 2, `{"title":"disk full"}`)
		out, code := invoke(retry)
		if code != "" || !strings.Contains(string(out), `"created":false`) {
			t.Fatalf("retry: %s %q", out, code)
		}
		sent := sentTo(t, router, "create-ticket")[sentBefore:]
		// The call's external key, opaque, on both attempts: never the
		// ledger's key, which names the account and the execution.
		// The stage's external key secret, as the proxy loaded it from SSM.
		// Its run_id is the key's run part, the opaque run id.
		secret := localtest.LoadLedgerSecrets(t, params.Endpoint(), "lambda-tool").ExternalKey
		want, err := externalkey.New(secret, runID, "1")
		if err != nil {
			t.Fatal(err)
		}
		opaque := externalkey.RunID(secret, runID)
		if len(sent) != 2 || sent[0].IdempotencyKey != want || sent[1].IdempotencyKey != sent[0].IdempotencyKey || strings.Contains(sent[0].IdempotencyKey, "000000000000") ||
			sent[0].Attempt != 1 || sent[1].Attempt != 2 || sent[0].RunID != opaque || sent[1].RunID != opaque || strings.Contains(sent[1].RunID, "000000000000") ||
			sent[1].Step != "file" || sent[1].Tool != "create-ticket" ||
			string(sent[1].Input) != `{"title":"disk full"}` {
			t.Fatalf("the function was sent %+v", sent)
		}
		if n := len(tickets.Tickets()) - before; n != 1 {
			t.Fatalf("%d tickets created, want 1", n)
		}
		rows := ledgertest.RunRows(t, store, runID)
		if len(rows) != 2 || rows[0].Status != ledger.StatusUnknown || rows[1].Status != ledger.StatusSucceeded {
			t.Fatalf("rows %+v", rows)
		}
	})

	t.Run("an input that fails the pinned schema never reaches the function", func(t *testing.T) {
		sentBefore := len(sentTo(t, router, "create-ticket"))
		for _, input := range []string{`{"title":42}`, `{"title":"x","assignee":"root"}`, `{}`} {
			if _, code := invoke(platformEnvelope("create-ticket", ts.ID, "", 1, input)); code != string(tool.InputInvalid) {
				t.Errorf("%s: %q", input, code)
			}
		}
		if n := len(sentTo(t, router, "create-ticket")) - sentBefore; n != 0 {
			t.Fatalf("the function was invoked %d times", n)
		}
	})

	t.Run("error shapes map to their codes", func(t *testing.T) {
		tickets.FailNext(http.StatusUnprocessableEntity)
		if _, code := invoke(platformEnvelope("create-ticket", ts.ID, "", 1, `{"title":"refused"}`)); code != string(tool.PermanentFailure) {
			t.Errorf("ticket service 422: %q", code)
		}
		for _, c := range tool.Codes() {
			input := fmt.Sprintf(`{"answer":{"error":{"code":%q,"message":"team says %s"}}}`, c, c)
			if _, code := invoke(platformEnvelope("answer", ts.ID, "", 1, input)); code != string(c) {
				t.Errorf("answered %s, caller saw %q", c, code)
			}
		}
	})

	t.Run("an unknown code is TOOL_INTERNAL", func(t *testing.T) {
		payload := platformEnvelope("answer", ts.ID, "", 1, `{"answer":{"error":{"code":"TICKETS_QUEUE_CLOSED","message":"x"}}}`)
		if _, code := invoke(payload); code != string(tool.Internal) {
			t.Fatalf("caller saw %q", code)
		}
		rows := ledgertest.RunRows(t, store, runIDOf(t, payload))
		if len(rows) != 1 || rows[0].ErrorCode != string(tool.Internal) {
			t.Fatalf("rows %+v", rows)
		}
	})

	t.Run("a result that fails the pinned output schema is TOOL_OUTPUT_INVALID", func(t *testing.T) {
		// No answer member: the function answers null.
		if _, code := invoke(platformEnvelope("answer", ts.ID, "", 1, `{}`)); code != string(tool.OutputInvalid) {
			t.Fatalf("caller saw %q", code)
		}
	})

	t.Run("a function error is TOOL_INTERNAL", func(t *testing.T) {
		if _, code := invoke(platformEnvelope("answer", ts.ID, "", 1, `{"fail":true}`)); code != string(tool.Internal) {
			t.Fatalf("caller saw %q", code)
		}
	})

	t.Run("a placeholder resolves from SSM and the function is invoked", func(t *testing.T) {
		sentBefore := len(sentTo(t, router, "create-ticket"))
		asked := len(params.Requests())
		for i := range 2 {
			payload := withFunction(t, platformEnvelope("ticket", ts.ID, "", 1, fmt.Sprintf(`{"title":"placeholder %d"}`, i)), createTicketARN)
			out, code := invoke(payload)
			if code != "" || !strings.Contains(string(out), `"created":true`) {
				t.Fatalf("call %d: %s %q", i, out, code)
			}
		}
		if sent := sentTo(t, router, "create-ticket")[sentBefore:]; len(sent) != 2 || sent[0].Tool != "ticket" {
			t.Fatalf("the function was sent %+v", sent)
		}
		// One container: the parameter is read once.
		if got := params.Requests()[asked:]; len(got) != 1 || got[0] != "/toolgate/test/tool-function/FunctionCreateTicket/arn" {
			t.Fatalf("SSM was asked %q", got)
		}
	})

	t.Run("a placeholder without a parameter is refused and nothing is invoked", func(t *testing.T) {
		payload := platformEnvelope("close-ticket", ts.ID, "", 1, `{}`)
		if _, code := invoke(payload); code != string(tool.PermissionDenied) {
			t.Fatalf("caller saw %q", code)
		}
		if got := params.Requests(); got[len(got)-1] != "/toolgate/test/tool-function/FunctionCloseTicket/arn" {
			t.Fatalf("SSM was asked %q", got)
		}
		if len(sentTo(t, router, "close-ticket")) != 0 {
			t.Fatal("invoked")
		}
		// Refused by the check before the claim.
		rows := ledgertest.RunRows(t, store, runIDOf(t, payload))
		if len(rows) != 1 || rows[0].ErrorCode != string(tool.PermissionDenied) || rows[0].Status != ledger.StatusRefused || rows[0].Attempt != 0 {
			t.Fatalf("rows %+v", rows)
		}
	})

	t.Run("an envelope naming another function is refused and nothing is invoked", func(t *testing.T) {
		sentBefore := map[string]int{"create-ticket": len(sentTo(t, router, "create-ticket")), "answer": len(sentTo(t, router, "answer"))}
		answerARN := "arn:aws:lambda:us-east-1:000000000000:function:answer"
		for _, c := range []struct{ tool, function, input string }{
			{"ticket", answerARN, `{"title":"x"}`},        // placeholder pinned, another tool's ARN sent
			{"create-ticket", answerARN, `{"title":"x"}`}, // ARN pinned, another tool's ARN sent
			{"ticket", "${FunctionCreateTicket}", `{"title":"x"}`},
			{"answer", createTicketARN, `{}`},
		} {
			if _, code := invoke(withFunction(t, platformEnvelope(c.tool, ts.ID, "", 1, c.input), c.function)); code != string(tool.PermissionDenied) {
				t.Errorf("%s with function %s: caller saw %q", c.tool, c.function, code)
			}
		}
		for name, n := range sentBefore {
			if got := len(sentTo(t, router, name)) - n; got != 0 {
				t.Errorf("%s was invoked %d times", name, got)
			}
		}
	})

	t.Run("a catalog tool is not the proxy's", func(t *testing.T) {
		sendTS, err := toolset.FromCatalog(catalog.Default(), []string{"workflow-validator"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.RegisterToolset(ctx, sendTS); err != nil {
			t.Fatal(err)
		}
		if _, code := invoke(platformEnvelope("workflow-validator", sendTS.ID, "", 1, `{"solution":"x"}`)); code != string(tool.PermissionDenied) {
			t.Fatalf("caller saw %q", code)
		}
	})
}
