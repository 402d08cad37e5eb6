package publish

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/toolset"
)

// toolsetEnv is the publish function's handler in process, as
// functions/publish wires it for toolsets: the ledger table on dynalite,
// caller proofs verified by the real verifier against the STS stand-in
// (signed with local keys, arn:aws:iam::000000000000:user/NAME).
type toolsetEnv struct {
	h       *Handler
	db      *dynamodb.Client
	table   string
	callers *localtest.Callers
}

func newToolsetEnv(t *testing.T) *toolsetEnv {
	t.Helper()
	p := localtest.Dynalite(t)
	e := &toolsetEnv{db: local.DynamoDB(p.Endpoint()), table: "toolgate-publish", callers: localtest.StartCallers(t)}
	if err := dynamo.CreateTable(t.Context(), e.db, e.table); err != nil {
		t.Fatal(err)
	}
	v, err := caller.NewVerifier(caller.Config{Endpoint: e.callers.STS.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, ledger.ProofTable{DB: e.db, Table: e.table})
	if err != nil {
		t.Fatal(err)
	}
	e.h = NewHandler(&Service{Callers: v, Stage: "test", Store: ledger.New(e.db, e.table), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return e
}

// direct invokes the handler as a direct invocation and returns its
// answer, or its error code (the Lambda errorType) and message.
func (e *toolsetEnv) direct(t *testing.T, req publishapi.DirectRequest) (json.RawMessage, string, string) {
	t.Helper()
	payload, _ := json.Marshal(req)
	out, err := e.h.Handle(context.Background(), payload)
	var ie messages.InvokeResponse_Error
	if errors.As(err, &ie) {
		var eb publishapi.ErrorBody
		if err := json.Unmarshal([]byte(ie.Message), &eb); err != nil || eb.Error.Code != ie.Type {
			t.Fatalf("error body %q: %v", ie.Message, err)
		}
		return nil, ie.Type, eb.Error.Message
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, "", ""
}

// register registers doc as NAME, directly.
func (e *toolsetEnv) register(t *testing.T, name string, doc []byte) (json.RawMessage, string, string) {
	t.Helper()
	ts, err := toolset.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return e.direct(t, publishapi.DirectRequest{Action: "register", Toolset: string(doc), Proof: e.callers.Proof(t, name, publishapi.RegisterBinding(ts.ID, doc))})
}

// storedBody is the body attribute of toolset id's item.
func (e *toolsetEnv) storedBody(t *testing.T, id string) string {
	t.Helper()
	out, err := e.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{ledger.AttrPK: &types.AttributeValueMemberS{Value: "TOOLSET#" + id}, ledger.AttrSK: &types.AttributeValueMemberS{Value: "TOOLSET"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("toolset %s item: %v", id, err)
	}
	return out.Item["body"].(*types.AttributeValueMemberS).Value
}

const demoLock = "../../../testdata/toolsets/demo.lock.json"

// A registered toolset is shown exactly as stored, on both routes, to a
// caller whose proof is bound to its id; the body digests to the id and
// is the content of the lock it was registered from.
func TestShowToolset(t *testing.T) {
	e := newToolsetEnv(t)
	lock, err := os.ReadFile(demoLock)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Parse(lock)
	if err != nil {
		t.Fatal(err)
	}
	if _, code, msg := e.register(t, "alice", lock); code != "" {
		t.Fatalf("register: %s %s", code, msg)
	}
	check := func(t *testing.T, out []byte) {
		t.Helper()
		var res publishapi.ShowResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if res.ToolsetID != ts.ID || res.Body != e.storedBody(t, ts.ID) {
			t.Fatalf("shown %s %q, not the stored body", res.ToolsetID, res.Body)
		}
		got, err := toolset.ParseStored(ts.ID, []byte(res.Body))
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := got.ComputeID(); id != ts.ID {
			t.Fatalf("the body digests to %s", id)
		}
		want, _ := ts.Canonical()
		if string(want) != res.Body {
			t.Fatalf("the body is not the registered lock's content:\n%s", res.Body)
		}
	}
	t.Run("direct", func(t *testing.T) {
		out, code, msg := e.direct(t, publishapi.DirectRequest{Action: "show", ToolsetID: ts.ID, Proof: e.callers.Proof(t, "bob", publishapi.ShowBinding(ts.ID))})
		if code != "" {
			t.Fatalf("%s %s", code, msg)
		}
		check(t, out)
	})
	t.Run("Function URL", func(t *testing.T) {
		resp := e.url(t, http.MethodGet, "/toolsets/"+ts.ID, e.callers.Proof(t, "bob", publishapi.ShowBinding(ts.ID)))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HTTP %d %s", resp.StatusCode, resp.Body)
		}
		check(t, []byte(resp.Body))
	})

	other := "ts_00000000000000000000000000000000"
	for _, c := range []struct {
		name, id, proof, code, says string
	}{
		{"not registered", other, e.callers.Proof(t, "bob", publishapi.ShowBinding(other)), publishapi.CodeNotFound, "is not registered in stage test"},
		{"malformed id", "ts_x", e.callers.Proof(t, "bob", publishapi.ShowBinding("ts_x")), publishapi.CodeInvalid, `"ts_x" is not a toolset id`},
		{"proof bound to another id", ts.ID, e.callers.Proof(t, "bob", publishapi.ShowBinding(other)), publishapi.CodeUnauthenticated, "proof-refused"},
		{"proof for a registration", ts.ID, e.callers.Proof(t, "bob", publishapi.RegisterBinding(ts.ID, lock)), publishapi.CodeUnauthenticated, "proof-refused"},
		{"no proof", ts.ID, "", publishapi.CodeUnauthenticated, "proof-missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, code, msg := e.direct(t, publishapi.DirectRequest{Action: "show", ToolsetID: c.id, Proof: c.proof})
			if code != c.code || !strings.Contains(msg, c.says) {
				t.Fatalf("direct: %s %s; want %s saying %q", code, msg, c.code, c.says)
			}
		})
	}
	// The Function URL answers with the status of each code (a fresh
	// proof: each is accepted once for its binding).
	for _, c := range []struct {
		name, path, proof string
		status            int
	}{
		{"not registered", "/toolsets/" + other, e.callers.Proof(t, "bob", publishapi.ShowBinding(other)), http.StatusNotFound},
		{"no proof", "/toolsets/" + ts.ID, "", http.StatusUnauthorized},
		{"no id", "/toolsets/", e.callers.Proof(t, "bob", publishapi.ShowBinding("")), http.StatusBadRequest},
	} {
		t.Run("Function URL "+c.name, func(t *testing.T) {
			if resp := e.url(t, http.MethodGet, c.path, c.proof); resp.StatusCode != c.status {
				t.Fatalf("HTTP %d %s, want %d", resp.StatusCode, resp.Body, c.status)
			}
		})
	}
}

// url sends a Function URL request to the handler.
func (e *toolsetEnv) url(t *testing.T, method, path, proof string) events.LambdaFunctionURLResponse {
	t.Helper()
	var ev events.LambdaFunctionURLRequest
	ev.RawPath, ev.RequestContext.HTTP.Method = path, method
	ev.Headers = map[string]string{strings.ToLower(publishapi.ProofHeader): proof}
	payload, _ := json.Marshal(ev)
	out, err := e.h.Handle(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// atLeastOnceToolset is a toolset with a platform tool pinned
// at_least_once although it does not honour idempotency keys, without
// tolerate_duplicates: its id is the digest of its content.
func atLeastOnceToolset(t *testing.T) *toolset.Toolset {
	t.Helper()
	ts := &toolset.Toolset{Name: "at-least-once", FetchHosts: []string{}, Tools: map[string]toolset.Tool{
		"post-invoice": {InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`true`),
			Policy: catalog.AtLeastOnce, Function: "${FunctionPostInvoice}", TimeoutSeconds: 30},
	}}
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	return ts
}

// The publish function runs the registration check itself: a toolset
// whose platform tool is at_least_once without being idempotent or
// tolerating duplicates is refused for toolset-policy and not stored; an
// item holding one, written around registration, is refused when shown.
func TestToolsetPolicyCheckedByThePublishFunction(t *testing.T) {
	e := newToolsetEnv(t)
	ts := atLeastOnceToolset(t)
	doc, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if _, code, msg := e.register(t, "alice", doc); code != publishapi.CodeRefused || !strings.Contains(msg, "[toolset-policy]") || !strings.Contains(msg, "post-invoice") {
		t.Fatalf("register: %s %s", code, msg)
	}
	proof := e.callers.Proof(t, "bob", publishapi.ShowBinding(ts.ID))
	if _, code, msg := e.direct(t, publishapi.DirectRequest{Action: "show", ToolsetID: ts.ID, Proof: proof}); code != publishapi.CodeNotFound {
		t.Fatalf("show after the refusal: %s %s", code, msg)
	}
	body, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
		ledger.AttrPK: &types.AttributeValueMemberS{Value: "TOOLSET#" + ts.ID}, ledger.AttrSK: &types.AttributeValueMemberS{Value: "TOOLSET"},
		"body": &types.AttributeValueMemberS{Value: string(body)}}})
	if err != nil {
		t.Fatal(err)
	}
	proof = e.callers.Proof(t, "bob", publishapi.ShowBinding(ts.ID))
	if _, code, msg := e.direct(t, publishapi.DirectRequest{Action: "show", ToolsetID: ts.ID, Proof: proof}); code != publishapi.CodeRefused || !strings.Contains(msg, "[toolset-policy]") {
		t.Fatalf("show of an item written around registration: %s %s", code, msg)
	}
}

// A registered toolset whose targets declare auth is shown with each
// declaration (an MCP tool's, with its "{secret}" URL, and an http host
// entry's): how a credential is presented, never one, which a toolset
// never holds.
func TestShowToolsetShowsAuthDeclarations(t *testing.T) {
	e := newToolsetEnv(t)
	draft := &toolset.Toolset{Name: "crm", Tools: map[string]toolset.Tool{}, FetchHosts: []string{},
		MCPServers: map[string]toolset.MCPServer{"crm": {URL: "https://mcp.crm.example.com/s/{secret}/mcp", Admit: []string{"lookup_customer"}, Auth: &toolset.Auth{PathSegment: 2}}}}
	listed := toolset.Listed{Protocol: "2026-07-28", Tools: []toolset.ListedTool{{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	ts, err := draft.ResolveMCP(t.Context(), func(context.Context, string) (toolset.Listed, error) { return listed, nil })
	if err != nil {
		t.Fatal(err)
	}
	httpTS, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil,
		toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}})
	if err != nil {
		t.Fatal(err)
	}
	ts.Tools["http"], ts.HTTPHosts = httpTS.Tools["http"], httpTS.HTTPHosts
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.New(e.db, e.table).RegisterToolset(t.Context(), ts); err != nil {
		t.Fatal(err)
	}
	out, code, msg := e.direct(t, publishapi.DirectRequest{Action: "show", ToolsetID: ts.ID, Proof: e.callers.Proof(t, "bob", publishapi.ShowBinding(ts.ID))})
	if code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	var res publishapi.ShowResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	shown, err := toolset.ParseStored(ts.ID, []byte(res.Body))
	if err != nil {
		t.Fatal(err)
	}
	targets := shown.AuthTargets()
	if len(targets) != 2 || targets[0].Name != "api.example.com" || targets[0].Auth != (toolset.Auth{Header: "Authorization", Scheme: "Bearer"}) ||
		targets[1].Name != "crm" || targets[1].Auth != (toolset.Auth{PathSegment: 2}) || targets[1].Origin != "https://mcp.crm.example.com" {
		t.Fatalf("shown targets %+v", targets)
	}
	if !strings.Contains(res.Body, `"url":"https://mcp.crm.example.com/s/{secret}/mcp"`) {
		t.Errorf("the body does not show the pinned URL with {secret}: %s", res.Body)
	}
}
