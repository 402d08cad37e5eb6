package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/tool"
)

// The local stack runs its MCP server, and mcp-call under the RIE on both
// lanes, where publishing (its parameter) and Step Functions (the
// functions file) find its sfn lane, each lane running the dispatcher.
func TestLocalStackRunsMCPCall(t *testing.T) {
	e := startEnv(t, stack.StackOptions{})
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
