package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/ledger"
)

// credentialToolset is the demo's toolset whose MCP server crm is the
// stack's MCP server that requires a bearer token (Stack.MCPAuth), even
// to list its tools: its auth declares the Authorization header with the
// Bearer scheme (docs/toolsets.md, §7).
func credentialToolset(url string) []byte {
	return fmt.Appendf(nil, `# The demo's toolset on an MCP server that needs a bearer token.
toolset: crm-auth-demo
tools:
  crm:
    mcp: %s
    admit: [lookup_customer]
    auth: {header: Authorization, scheme: Bearer}
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
`, url)
}

// credentialsDemo shows a toolset-scope credential: the credential admin
// sets it from a file (sealed with a data key from local-kms), the
// toolset is registered by listing the server with it, a run's call
// presents it, and nothing but ciphertext is stored
// (docs/credentials.md).
func credentialsDemo(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	dir := filepath.Join(st.Dir, "credentials")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	token := hex.EncodeToString(raw)
	st.MCPAuth.SetBearerTokens(token)
	file := filepath.Join(dir, "crm-auth-demo.yaml")
	if err := os.WriteFile(file, credentialToolset(st.MCPAuth.URL()), 0o644); err != nil {
		return err
	}
	secret := filepath.Join(dir, "token")
	if err := os.WriteFile(secret, []byte(token+"\n"), 0o600); err != nil {
		return err
	}

	step("credentials: the MCP server %s answers 401 without a bearer token, even to list its tools; %s, the credential admin, sets the toolset's credential from a file (never argv), envelope-encrypted under a local-kms data key", st.MCPAuth.URL(), stack.CredentialAdmin)
	if _, err := toolgate("credentials", "set", "--toolset", "crm-auth-demo", "--target", "crm", "--draft", file, "--from-file", secret,
		"--function-endpoint", st.Endpoints["publish"], "--as", stack.CredentialAdmin); err != nil {
		return err
	}
	step("registering crm-auth-demo: the publish function lists the server presenting that credential")
	if _, err := toolgate("toolset", "register", file, "--function-endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	var lock struct{ ID string }
	if b, err := os.ReadFile(filepath.Join(dir, "crm-auth-demo.lock.json")); err != nil || json.Unmarshal(b, &lock) != nil || lock.ID == "" {
		return fmt.Errorf("the registration wrote no lock with an id: %v", err)
	}
	step("%s allows %s, registered after the credential was set, to use it (toolgate credentials allow; a toolset registered later under the name gets nothing until then)", stack.CredentialAdmin, lock.ID)
	if _, err := toolgate("credentials", "allow", "--toolset", lock.ID, "--function-endpoint", st.Endpoints["publish"], "--as", stack.CredentialAdmin); err != nil {
		return err
	}
	if _, err := toolgate("credentials", "list", "--toolset", "crm-auth-demo", "--function-endpoint", st.Endpoints["publish"], "--as", stack.CredentialAdmin); err != nil {
		return err
	}

	step("a run on %s: mcp-call resolves the credential (run, end user, toolset: the toolset's here) before the claim and adds it below everything that records", lock.ID)
	solution := filepath.Join(dir, "crm-lookup.yaml")
	if err := os.WriteFile(solution, stack.LookupSolution("crm-lookup", lock.ID), 0o644); err != nil {
		return err
	}
	if _, err := toolgate("publish", solution, "--toolsets", dir, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	input := filepath.Join(dir, "input.json")
	if err := os.WriteFile(input, []byte(`{"customer_id": "C-2"}`+"\n"), 0o644); err != nil {
		return err
	}
	seen := len(st.MCPAuth.Requests())
	arn, err := startRun(st, "crm-lookup", input, fmt.Sprintf("cred-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, false)
	if err != nil {
		return err
	}
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return err
	}
	carried := 0
	for _, r := range st.MCPAuth.Requests()[seen:] {
		if r.Header.Get("Authorization") == "Bearer "+token {
			carried++
		}
	}
	fmt.Printf("  the server received %d requests carrying the credential (Authorization: Bearer …)\n", carried)
	for _, r := range rows {
		fmt.Printf("  seq %s  %-19s  %s\n", r.Seq, r.Tool, r.Status)
	}
	if outcome.Status != "SUCCEEDED" || len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || carried == 0 {
		return fmt.Errorf("the credential run ended %s with %d rows and %d requests carrying the credential; want SUCCEEDED, one SUCCEEDED row, the credential presented", outcome.Status, len(rows), carried)
	}
	if out, err := toolgate("ledger", arn, "--json", "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil || strings.Contains(out, token) {
		return fmt.Errorf("the run's ledger rows hold the credential, or cannot be read: %v", err)
	}
	return nil
}
