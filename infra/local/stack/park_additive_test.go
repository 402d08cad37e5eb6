package stack_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
)

// A toolset declaring on_schema_change: allow_additive_input
// (docs/parking.md, "allow_additive_input") on the local stack: a tool
// that only gained an optional input property is called without parking,
// its row recording schema_change additive and both digests; a tool that
// gained a required input parks as under the default, and toolgate
// parked show names each changed pointer additive or breaking. The waits
// are the helpers' polls with deadlines; nothing sleeps.
func TestAllowAdditiveInputOnTheLocalStack(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	// mcp-call lists the server's tools before every call: each subtest
	// changes the tool, and must not see the listing of another.
	e := startEnv(t, stack.StackOptions{Env: map[string]string{"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0"}})
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	file := strings.ReplaceAll(strings.Replace(lookupOnly, "NAME", "crm-additive", 1), "URL", srv.URL()) + "on_schema_change: allow_additive_input\n"
	ts := e.registerToolset(t, write("crm-additive.yaml", file))
	var lock struct {
		OnSchemaChange string `json:"on_schema_change"`
		Tools          map[string]struct {
			InputSchema json.RawMessage `json:"input_schema"`
		}
	}
	readJSON(t, filepath.Join(dir, "crm-additive.lock.json"), &lock)
	if lock.OnSchemaChange != "allow_additive_input" {
		t.Fatalf("the lock pins on_schema_change %q", lock.OnSchemaChange)
	}
	pinned := lock.Tools["crm.lookup_customer"].InputSchema
	const solution = "mcp-additive-lookup"
	e.publishOn(t, dir, write(solution+".yaml", string(stack.OnToolset([]byte(strings.Replace(mcpLookup, "NAME", solution, 1)), ts))))
	setInput := func(t *testing.T, schema string) {
		t.Helper()
		if err := srv.SetInputSchema(mcpserver.LookupCustomer, json.RawMessage(schema)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.SetInputSchema(mcpserver.LookupCustomer, pinned); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("a new optional input property: the call runs unparked, and its row records the additive change", func(t *testing.T) {
		setInput(t, `{"type":"object","properties":{"customer_id":{"type":"string","pattern":"^C-[0-9]+$"},"locale":{"type":"string"}},
			"required":["customer_id"],"additionalProperties":false}`)
		calls := len(srv.Calls())
		run := e.start(t, solution, map[string]string{"customer_id": "C-1"})
		if out, _ := e.follow(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s %s %s, want SUCCEEDED", out.Status, out.Error, out.Cause)
		}
		if sent := srv.Calls()[calls:]; len(sent) != 1 {
			t.Fatalf("the server received %d tools/call, want 1", len(sent))
		}
		rows := e.toolRows(t, run, "crm.lookup_customer")
		if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].SchemaChange != "additive" ||
			!strings.HasPrefix(rows[0].PinnedDigest, "sha256:") || !strings.HasPrefix(rows[0].CurrentDigest, "sha256:") ||
			rows[0].PinnedDigest == rows[0].CurrentDigest || rows[0].ParkID != "" {
			t.Fatalf("rows %+v, want one SUCCEEDED with schema_change additive and two digests", rows)
		}
	})

	t.Run("a new required input parks the call, and parked show names each pointer's class", func(t *testing.T) {
		setInput(t, `{"type":"object","properties":{"customer_id":{"type":"string","pattern":"^C-[0-9]+$"},"locale":{"type":"string"},"note":{"type":"string"}},
			"required":["customer_id","locale"],"additionalProperties":false}`)
		calls := len(srv.Calls())
		run := e.start(t, solution, map[string]string{"customer_id": "C-1"})
		p, _ := e.awaitParked(t, run, "lookup")
		if !slices.Equal(p.ChangedPointers, []string{"/inputSchema/properties/locale", "/inputSchema/properties/note", "/inputSchema/required/1"}) ||
			!slices.Equal(p.AdditivePointers, []string{"/inputSchema/properties/note"}) {
			t.Fatalf("park: changed %v, additive %v", p.ChangedPointers, p.AdditivePointers)
		}
		out, code := e.toolgate(t, "parked", "show", p.ID, "--endpoint", e.decisionEndpoint(), "--as", stack.CredentialAdmin)
		if code != cli.ExitOK {
			t.Fatalf("parked show: exit %d\n%s", code, out)
		}
		for _, want := range []string{"breaking /inputSchema/properties/locale", "additive /inputSchema/properties/note", "breaking /inputSchema/required/1"} {
			if !strings.Contains(out, want) {
				t.Errorf("parked show lacks %q:\n%s", want, out)
			}
		}
		e.stopParked(t, run, p)
		if sent := srv.Calls()[calls:]; len(sent) != 0 {
			t.Fatalf("the server received %d tools/call, want none", len(sent))
		}
	})
}
