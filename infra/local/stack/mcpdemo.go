package stack

import (
	"fmt"
	"regexp"
)

// MCPDemoToolset is the toolset file of testdata/toolsets/mcp-demo.lock.json
// with the MCP server crm at url: registered against the local MCP server
// (url its MCP.URL()), it pins what that lock pins but for the URL, and so
// for the id. The lock names https://mcp.crm.example.com/mcp, a golden for
// compiling; the local server's port is chosen when the stack starts, and
// the pin includes the URL, so `make run` and the tests register this file
// and publish testdata/toolsets/solutions/customer-ticket.yaml on the id
// registered (OnToolset).
func MCPDemoToolset(url string) []byte {
	return fmt.Appendf(nil, `# testdata/toolsets/mcp-demo.lock.json's toolset, on the MCP server at %[1]s.
toolset: mcp-demo
tools:
  crm:
    mcp: %[1]s
    admit: [create_ticket, lookup_customer, send_sms]
    policy:
      create_ticket: {policy: at_most_once, idempotent: true, review_required: true, timeout_seconds: 30}
      lookup_customer: {policy: at_least_once, idempotent: true, retry: {max_attempts: 3, interval_seconds: 1, backoff_rate: 2}}
`, url)
}

// toolsetLine is a Solution's top-level toolset: line.
var toolsetLine = regexp.MustCompile(`(?m)^toolset: .*$`)

// OnToolset returns a Solution's source with its toolset: line naming id,
// a toolset registered at run time.
func OnToolset(src []byte, id string) []byte {
	return toolsetLine.ReplaceAll(src, []byte("toolset: "+id))
}

// LookupSolution is a Solution named name on toolset id (a registered
// toolset's id, or a placeholder a test replaces) with one step, lookup,
// that looks the input's customer_id up with crm.lookup_customer: the
// smallest Solution whose call can park (docs/parking.md), which the demo
// and the stack's tests publish on toolsets of the local MCP servers.
func LookupSolution(name, id string) []byte {
	return fmt.Appendf(nil, `solution: %s
version: 1
toolset: %s
input:
  type: object
  required: [customer_id]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
`, name, id)
}
