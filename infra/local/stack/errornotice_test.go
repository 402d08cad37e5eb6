package stack_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// noticeCRM pins the local MCP server's lookup_customer and send_sms, the
// notifier, without review (send_sms at the safe defaults: at_most_once,
// not idempotent, not retried).
const noticeCRM = `toolset: error-notice-crm
tools:
  crm:
    mcp: URL
    admit: [lookup_customer, send_sms]
    policy:
      lookup_customer: {policy: at_least_once, idempotent: true}
`

// errorNotice is an error notification (docs/solutions.md §4.2): the
// lookup's on_error texts the on-call with the unreviewed send_sms, and
// every path from the notice ends in the fail step, so the no-fallback
// check accepts it and the run still fails.
const errorNotice = `solution: e2e-error-notice
version: 1
toolset: TOOLSET
input: {type: object, required: [customer_id]}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
    on_error: notify
  - id: notify
    tool: crm.send_sms
    with: {to: "+15550100", text: "Run ${execution.name}: the lookup failed with ${steps.lookup.error.Error}"}
    next: failed
    on_error: failed
  - id: failed
    fail: {error: LookupFailed, cause: the lookup failed; the on-call was told}
`

// An error notification on the local stack: a lookup of a customer the
// MCP server does not know fails (an isError result,
// TOOL_PERMANENT_FAILURE), its on_error sends one SMS through the
// unreviewed notifier, and the run ends FAILED with the fail step's
// error: the failure is reported, never turned into a success.
func TestErrorNotificationReportsTheFailureAndTheRunStillFails(t *testing.T) {
	e := sharedEnv(t)
	srv := e.st.MCP
	dir := t.TempDir()
	write := writerIn(t, dir)
	id := e.ensureToolset(t, write("error-notice-crm.yaml", strings.ReplaceAll(noticeCRM, "URL", srv.URL())))
	e.publishOn(t, dir, write("e2e-error-notice.yaml", strings.ReplaceAll(errorNotice, "TOOLSET", id)))

	run := e.start(t, "e2e-error-notice", map[string]string{"customer_id": "C-404"})
	out, events := e.follow(t, run)
	if out.Status != "FAILED" || out.Error != "LookupFailed" || out.Cause != "the lookup failed; the on-call was told" {
		t.Fatalf("run %s %q %q, want FAILED LookupFailed from the fail step", out.Status, out.Error, out.Cause)
	}
	if got, want := entered(events), []string{"lookup", "notify", "failed"}; !containsInOrder(got, want) {
		t.Fatalf("the run entered %v, want %v in order", got, want)
	}
	lookup, notice := e.toolRows(t, run, "crm.lookup_customer"), e.toolRows(t, run, "crm.send_sms")
	if len(lookup) != 1 || lookup[0].Status != ledger.StatusFailed || lookup[0].ErrorCode != string(tool.PermanentFailure) {
		t.Fatalf("lookup rows %+v, want one FAILED %s", lookup, tool.PermanentFailure)
	}
	if len(notice) != 1 || notice[0].Status != ledger.StatusSucceeded || notice[0].ReviewID != "" {
		t.Fatalf("send_sms rows %+v, want one SUCCEEDED without a review", notice)
	}
	// The server recorded the notice under the call's external key, with
	// the run's name and the lookup's error in its text.
	key := e.externalKey(t, "mcp-call", run, string(notice[0].Seq))
	var sent []mcpserver.Call
	for _, c := range srv.Calls() {
		if metaKey(c) == key {
			sent = append(sent, c)
		}
	}
	if len(sent) != 1 || sent[0].Tool != mcpserver.SendSMS {
		t.Fatalf("the server received %+v under %s, want one send_sms", sent, key)
	}
	name := run[strings.LastIndex(run, ":")+1:]
	var texts []string
	for _, sms := range srv.SMSSent() {
		if strings.Contains(sms.Text, name) {
			texts = append(texts, sms.Text)
		}
	}
	if want := "Run " + name + ": the lookup failed with " + string(tool.PermanentFailure); len(texts) != 1 || texts[0] != want {
		t.Fatalf("SMS naming the run %v, want one %q", texts, want)
	}
}

// containsInOrder reports whether want's states appear in got in order.
func containsInOrder(got, want []string) bool {
	i := 0
	for _, s := range got {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}
