package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/localtest/mcptest"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// publishInProcess serves h at the Lambda API's Invoke of the function
// "function", as the RIE serves a function (--function-endpoint): the
// answer as the handler gave it, or its error as the RIE's
// {"errorType", "errorMessage"} payload. The publish function's binary
// builds no MCP lister yet (functions/publish), so the function with one
// runs in process here.
func publishInProcess(t *testing.T, h *publish.Handler) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/2015-03-31/functions/"+rieFunctionName+"/invocations" {
			http.NotFound(w, r)
			return
		}
		payload, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := h.Handle(r.Context(), payload)
		var ie messages.InvokeResponse_Error
		switch {
		case errors.As(err, &ie):
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			json.NewEncoder(w).Encode(map[string]string{"errorType": ie.Type, "errorMessage": ie.Message})
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.Write(out)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// crmFile is a toolset file naming the MCP server at url as crm.
func crmFile(url string, admit ...string) string {
	return `toolset: crm
tools:
  crm:
    mcp: ` + url + `
    admit: [` + strings.Join(admit, ", ") + `]
    policy:
      create_ticket: {review_required: true}
      lookup_customer: {policy: at_least_once, idempotent: true}
`
}

// toolgate toolset register of a file naming an MCP server: the publish
// function (its handler, with the go-sdk client as its lister) lists the
// local MCP server and registers the admitted tools; the CLI checks the
// answer and writes the lock, which check and show then read offline.
// Without the publish function, the id is not known: toolgate toolset
// FILE and the table's route say so. A draft the server does not serve
// writes no lock.
func TestToolsetRegisterDraft(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	callers := localtest.StartCallers(t)
	cliEnv := localAWS().with(callers.CLIEnv())
	verifier, err := caller.NewVerifier(caller.Config{Endpoint: callers.STS.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, ledger.ProofTable{DB: local.DynamoDB(flags[1]), Table: flags[3]})
	if err != nil {
		t.Fatal(err)
	}
	endpoint := publishInProcess(t, publish.NewHandler(&publish.Service{Callers: verifier, Stage: "test", Store: store,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MCP: mcptest.ListMCP}))
	srv := mcptest.MCPServer(t, mcpserver.Options{Stateless: true})

	dir := t.TempDir()
	file, lock := filepath.Join(dir, "crm.yaml"), filepath.Join(dir, "crm.lock.json")
	if err := os.WriteFile(file, []byte(crmFile(srv.URL(), "create_ticket", "lookup_customer")), 0o644); err != nil {
		t.Fatal(err)
	}
	as := []string{"--function-endpoint", endpoint, "--as", "alice", "--toolsets", t.TempDir()}
	unknownID := "toolset crm names MCP servers (crm): its id is known only after registration lists their tools and pins the admitted ones"
	for _, c := range []toolsetCase{
		{name: "the id of a draft", args: []string{"toolset", file}, code: ExitErrors,
			stderr: []string{file + ": " + unknownID + ": toolgate toolset register " + file + " prints it and writes it to " + lock}},
		{name: "register a draft in the table", args: append([]string{"toolset", "register", file}, flags...), code: ExitMisuse,
			stderr: []string{file + ": " + unknownID + "; register it through the publish function"}},
	} {
		c.env = cliEnv
		t.Run(c.name, c.run)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("a lock was written before registration")
	}

	code, out, errs := cliEnv.run(append([]string{"toolset", "register", file}, as...)...)
	if code != ExitOK || errs != "" {
		t.Fatalf("register: exit %d\n%s%s", code, out, errs)
	}
	ts, err := toolset.Parse([]byte(readFile(t, lock)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	if want := "registered " + ts.ID + " (" + file + ") by arn:aws:iam::000000000000:user/alice\nwrote " + lock + "\n"; out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if got := ts.Tools["crm.create_ticket"]; got.MCP == nil || got.MCP.Name != "create_ticket" || got.MCP.URL != srv.URL() || got.MCP.Protocol != "2026-07-28" || !got.ReviewRequired || got.Policy != catalog.AtMostOnce {
		t.Fatalf("crm.create_ticket %+v", got)
	}
	if len(ts.Tools) != 2 {
		t.Fatalf("tools %v", ts.Tools)
	}
	for _, c := range []toolsetCase{
		{name: "register again", args: append([]string{"toolset", "register", file}, as...),
			stdout: "already registered " + ts.ID + " (" + file + ")\nwrote " + lock + "\n"},
		{name: "show the lock", args: []string{"toolset", "show", ts.ID, "--toolsets", dir}, stdout: readFile(t, lock)},
		{name: "show the registered toolset", args: append([]string{"toolset", "show", ts.ID}, as...), stdout: readFile(t, lock)},
	} {
		c.env = cliEnv
		t.Run(c.name, c.run)
	}

	// A tool the server does not list: refused, nothing written.
	other := t.TempDir()
	refused := filepath.Join(other, "crm.yaml")
	if err := os.WriteFile(refused, []byte(crmFile(srv.URL(), "create_ticket", "lookup_customer", "close_ticket")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("a tool the server does not list", toolsetCase{env: cliEnv, args: append([]string{"toolset", "register", refused}, as...), code: ExitErrors,
		stderr: []string{refused + `: PUBLISH_REFUSED: toolset crm: server crm does not list tool "close_ticket" (it lists create_ticket, lookup_customer, send_sms); nothing was registered`}}.run)
	if _, err := os.Stat(filepath.Join(other, "crm.lock.json")); err == nil {
		t.Fatal("a refused draft wrote a lock")
	}
}

// The CLI believes a draft's registration only as far as it checks: the
// registered toolset must be the draft resolved with the tools it says
// the server listed, under the draft's policies.
func TestDraftAnswerIsChecked(t *testing.T) {
	t.Parallel()
	draft, err := toolset.ParseDraft([]byte(`{"id": "", "name": "crm", "tools": {}, "fetch_hosts": [], "mcp_servers": {"crm": {"url": "https://mcp.example.com/mcp", "admit": ["create_ticket"], "policies": {"create_ticket": {"policy": "at_most_once", "review_required": true}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	listed := toolset.Listed{Protocol: "2025-11-25", Tools: []toolset.ListedTool{{Name: "create_ticket", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "send_sms", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	resolved, err := draft.ResolveMCP(t.Context(), func(_ context.Context, _ string) (toolset.Listed, error) { return listed, nil })
	if err != nil {
		t.Fatal(err)
	}
	answer := func(ts *toolset.Toolset) publishapi.RegisterResult {
		body, err := ts.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		return publishapi.RegisterResult{ToolsetID: ts.ID, Body: string(body)}
	}
	if got, err := draftAnswer(t.Context(), draft, answer(resolved)); err != nil || got.ID != resolved.ID {
		t.Fatalf("the draft resolved: %v", err)
	}
	change := func(edit func(*toolset.Toolset)) *toolset.Toolset {
		ts, _ := toolset.ParseStored(resolved.ID, []byte(answer(resolved).Body))
		edit(ts)
		ts.ID, _ = ts.ComputeID()
		return ts
	}
	for name, c := range map[string]struct {
		res  publishapi.RegisterResult
		says string
	}{
		"review dropped": {answer(change(func(ts *toolset.Toolset) {
			tool := ts.Tools["crm.create_ticket"]
			tool.ReviewRequired = false
			ts.Tools["crm.create_ticket"] = tool
		})), "is not the draft with the tools it says its servers listed"},
		"a tool not admitted": {answer(change(func(ts *toolset.Toolset) {
			tool := ts.Tools["crm.create_ticket"]
			tool.MCP = &toolset.MCP{Server: "crm", URL: tool.MCP.URL, Name: "send_sms", Protocol: tool.MCP.Protocol}
			ts.Tools["crm.send_sms"] = tool
		})), "is not the draft"},
		"another URL": {answer(change(func(ts *toolset.Toolset) {
			tool := ts.Tools["crm.create_ticket"]
			m := *tool.MCP
			m.URL = "https://mcp.other.example.com/mcp"
			tool.MCP = &m
			ts.Tools["crm.create_ticket"] = tool
		})), "does not pin the draft's MCP tools: MCP server crm (https://mcp.example.com/mcp): it pins no tool of https://mcp.example.com/mcp"},
		"another id": {publishapi.RegisterResult{ToolsetID: "ts_00000000000000000000000000000000", Body: answer(resolved).Body}, "[toolset-digest]"},
		"no body":    {publishapi.RegisterResult{ToolsetID: resolved.ID}, "[toolset-format]"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := draftAnswer(t.Context(), draft, c.res); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want it to say %q", err, c.says)
			}
		})
	}
}
