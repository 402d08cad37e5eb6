package stack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
)

// reviewedForHooks is a Solution whose send-email step waits for a
// review: the recipient, in the run's input, is what the review shows,
// and carries a canary no event may carry.
const reviewedForHooks = `solution: NAME
version: 1
policy: {fetch_hosts: ["DATA"]}
input: {type: object, required: [recipient]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/PATH"}
    next: approve
  - id: approve
    review: {of: send, timeout_seconds: 600}
    on_approve: send
    on_reject: end
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: "Digest", text: "${steps.fetch.output.data.title}"}
`

// subscribed reads subscribe --json's output (hookreceiver.ReadSubscription)
// and, on the shared stack, disables the subscription when t ends (a
// stack of t's own stops with t's context, before its cleanups run).
func (e *env) subscribed(t *testing.T, code int, out, errOut string) hookreceiver.Subscription {
	t.Helper()
	if code != cli.ExitOK {
		t.Fatalf("subscribe as %s: exit %d: %s", stack.WebhookAdmin, code, errOut)
	}
	sub, err := hookreceiver.ReadSubscription([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if e.st != shared.st {
		return sub
	}
	t.Cleanup(func() {
		if out, code := e.toolgate(t, "webhooks", "disable", "--subscription", sub.ID, "--function-endpoint", e.st.Endpoints["webhooks"], "--as", stack.WebhookAdmin); code != cli.ExitOK {
			t.Errorf("disable %s: %s", sub.ID, out)
		}
	})
	return sub
}

// hookEvent is a delivered event's body.
type hookEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// awaitEvent waits on h for the event of type typ to path whose data
// match says is the one awaited, checks that it is signed with sub's key
// (checked against the moment it arrived), that its webhook-id is id,
// and that neither it nor its headers carry canary, and returns its data.
func awaitEvent(t *testing.T, h *hookreceiver.Receiver, path string, sub hookreceiver.Subscription, typ webhook.Type, id, canary string, match func(json.RawMessage) bool) json.RawMessage {
	t.Helper()
	var got hookreceiver.Request
	var data json.RawMessage
	awaitHooks(t, h, path, 90*time.Second, func(reqs []hookreceiver.Request) bool {
		for _, r := range reqs {
			var ev hookEvent
			if json.Unmarshal(r.Body, &ev) == nil && ev.Type == string(typ) && match(ev.Data) {
				got, data = r, ev.Data
				return true
			}
		}
		return false
	})
	hd := got.Header
	if err := hookreceiver.Verify(got, sub.Key); err != nil {
		t.Errorf("%s: the signature does not verify with subscription %s's secret: %v", typ, sub.ID, err)
	}
	if hd.Get("webhook-id") != id {
		t.Errorf("%s: webhook-id %q, want %q", typ, hd.Get("webhook-id"), id)
	}
	if strings.Contains(string(got.Body), canary) || strings.Contains(fmt.Sprint(hd), canary) {
		t.Errorf("%s carries the run's input: %s", typ, got.Body)
	}
	return data
}

// A subscriber of review.decided gets the event of an approval, signed,
// once review-decision has sent the decision to the waiting Task: the
// review, the Solution, the run, step, tool and decision, never the
// payload (the recipient, which holds a canary) nor the reason. So does
// a subscription filtered to the run's Solution (--solution). On the
// local stack: review-decision records the event and hands it to the
// events queue at once.
func TestWebhookSubscriberGetsASignedReviewDecidedAfterAnApproval(t *testing.T) {
	e := sharedEnv(t)
	name := fresh("hooks-decided")
	data := "/" + name + ".json"
	e.route(t, data, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"title":"fetched"}`) }))
	e.publish(t, name, strings.NewReplacer("NAME", name, "PATH", strings.TrimPrefix(data, "/")).Replace(reviewedForHooks))

	all, only := "/"+fresh("hook-decided"), "/"+fresh("hook-decided-solution")
	subAll := e.subscribeHook(t, hookURL(all), "review.decided")
	subOnly := e.subscribeHook(t, hookURL(only), "review.*", "--solution", name)

	canary := fresh("canary-5b8e01")
	run := e.start(t, name, map[string]any{"recipient": canary + "@example.com"})
	id := e.pending(t, run, nil)
	e.decide(t, "approve", id)
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
	}

	execution := run[strings.LastIndexByte(run, ':')+1:]
	want := webhook.ReviewDecidedData{ReviewID: id, Solution: name, Run: execution, Step: "approve", Tool: "send-email", Decision: "approved"}
	ofReview := func(d json.RawMessage) bool {
		var v webhook.ReviewDecidedData
		return json.Unmarshal(d, &v) == nil && v.ReviewID == id
	}
	for path, sub := range map[string]hookreceiver.Subscription{all: subAll, only: subOnly} {
		raw := awaitEvent(t, shared.hooks, path, sub, webhook.ReviewDecided, webhook.EventID(webhook.ReviewDecided, id), canary, ofReview)
		var got webhook.ReviewDecidedData
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		decided, err := time.Parse(time.RFC3339, got.DecidedAt)
		got.DecidedAt = ""
		if got != want || err != nil || time.Since(decided) > 5*time.Minute {
			t.Errorf("%s got %+v (decided at %v, %v), want %+v", path, got, decided, err, want)
		}
		if strings.Contains(string(raw), "e2e approve") || strings.Contains(string(raw), "tester") {
			t.Errorf("%s: the event names the reason or the approver: %s", path, raw)
		}
	}
}

// parkedHooksLookup is a Solution of the crm toolset's lookup_customer
// whose input carries a note the step never reads, a canary.
const parkedHooksLookup = `solution: NAME
version: 1
toolset: TOOLSET
input:
  type: object
  required: [customer_id, note]
  properties:
    customer_id: {type: string, pattern: "^C-[0-9]+$"}
    note: {type: string}
steps:
  - id: lookup
    tool: crm.lookup_customer
    with: {customer_id: "${input.customer_id}"}
`

// A subscriber of tool.schema_changed gets the event of a call parked
// because its MCP tool changed on its server since registration, signed:
// its webhook-id derives from the PARKED row's key, and it names the run,
// the call's key, the tool, the cause, the park the run waits in and the
// commands that decide it, never the run's input. review-request's park
// route records it when the run enters the park (docs/parking.md); the
// local stack's relay or review-request sends it. On a stack of its own, whose MCP server's
// change no other test sees and whose mcp-call lists the server before
// every call, as TestMCPToolsOnTheLocalStack's.
func TestWebhookSubscriberGetsASignedToolSchemaChangedWhenAnMCPCallParks(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	hooks, err := hookreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hooks.Close() })
	e := startEnv(t, stack.StackOptions{WebhookAllow: []string{hooks.Host()}, Env: map[string]string{"TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "0"}})
	srv := e.st.MCP

	dir := t.TempDir()
	write := writerIn(t, dir)
	crm := e.registerToolset(t, write("crm-local.yaml", strings.ReplaceAll(crmLocal, "URL", srv.URL())))
	name := "hooks-parked"
	e.publishOn(t, dir, write(name+".yaml", string(stack.OnToolset([]byte(strings.Replace(parkedHooksLookup, "NAME", name, 1)), crm))))

	path := "/hook-parked"
	code, stdout, stderr := e.subscribe(stack.WebhookAdmin, hooks.URL(path), "tool.schema_changed")
	sub := e.subscribed(t, code, stdout, stderr)

	changed := json.RawMessage(`{"type": "object", "properties": {"customer_id": {"type": "string", "pattern": "^C-[0-9]+$", "maxLength": 12}},
		"required": ["customer_id"], "additionalProperties": false}`)
	if err := srv.SetInputSchema(mcpserver.LookupCustomer, changed); err != nil {
		t.Fatal(err)
	}
	canary := fresh("canary-parked-3c91")
	customer := fmt.Sprintf("C-%d", time.Now().UnixNano())
	run := e.start(t, name, map[string]string{"customer_id": customer, "note": canary})
	// The run waits in its park (docs/parking.md), whose route records
	// the event under the id the dispatcher gives the PARKED row's.
	p, _ := e.awaitParked(t, run, "lookup")
	defer e.stopParked(t, run, p)
	rows := e.toolRows(t, run, "crm.lookup_customer")
	if len(rows) != 1 || rows[0].Status != ledger.StatusParked {
		t.Fatalf("rows %+v, want one PARKED", rows)
	}

	id := webhook.EventID(webhook.ToolSchemaChanged, e.parkedRowKey(t, run))
	raw := awaitEvent(t, hooks, path, sub, webhook.ToolSchemaChanged, id, canary, func(d json.RawMessage) bool {
		var v webhook.CallData
		return json.Unmarshal(d, &v) == nil && v.Key == run+"/1"
	})
	var got webhook.CallData
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := webhook.CallData{Run: run[strings.LastIndexByte(run, ':')+1:], Key: run + "/1", Tool: "crm.lookup_customer", Cause: "tool.schema_changed",
		Detail: "MCP tool crm.lookup_customer", ParkID: p.ID,
		DecideCommand: "toolgate parked approve " + p.ID + " | toolgate parked reject " + p.ID + " --reason TEXT"}
	if got != want {
		t.Errorf("data %+v, want %+v", got, want)
	}
	if strings.Contains(string(raw), customer) {
		t.Errorf("the event carries the call's input: %s", raw)
	}
}

// parkedRowKey is the key of run's one PARKED row item in the stack's
// table, its partition key, a newline and its sort key: the source of its
// event's id (docs/webhooks.md).
func (e *env) parkedRowKey(t *testing.T, run string) string {
	t.Helper()
	key, ok := e.parkedRowKeyIf(t, run)
	if !ok {
		t.Fatalf("run %s has no PARKED row", run)
	}
	return key
}

// parkedRowKeyIf is parkedRowKey, or false when run has no PARKED row.
func (e *env) parkedRowKeyIf(t *testing.T, run string) (string, bool) {
	t.Helper()
	out, err := local.DynamoDB(e.st.Dynamo.Endpoint()).Query(t.Context(), &dynamodb.QueryInput{
		TableName: aws.String(stack.Table), KeyConditionExpression: aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#status = :parked"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: table.Row.Key(run)}, ":parked": &types.AttributeValueMemberS{Value: string(ledger.StatusParked)},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(out.Items) > 1 {
		t.Fatalf("PARKED rows of %s: %v (%v)", run, out, err)
	}
	if len(out.Items) == 0 {
		return "", false
	}
	sk, _ := out.Items[0][table.SK].(*types.AttributeValueMemberS)
	if sk == nil {
		t.Fatalf("the PARKED row of %s has no sort key", run)
	}
	return table.Row.Key(run) + "\n" + sk.Value, true
}

// A subscriber of credentials.expired gets the event of a call parked
// because its credential expired, signed: its webhook-id derives from the
// PARKED row's key, and it names the run, the call's key, the tool, the
// cause, the park the run waits in and how to resume it, never the run's
// input nor the credential. review-request's park route records it when
// the run enters the park (docs/parking.md). On a stack of its own, whose
// webhook allow-list names the receiver.
func TestWebhookSubscriberGetsASignedCredentialsExpiredWhenACallParksOnItsCredential(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	hooks, err := hookreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hooks.Close() })
	e := startEnv(t, stack.StackOptions{WebhookAllow: []string{hooks.Host()}})
	c := &credEnv{env: e, dir: t.TempDir()}
	expired := token(t)
	name, lookup := c.mcpLookup(t, expired, expired)
	c.setExpiring(t, stack.CredentialAdmin, name, expired)

	path := "/hook-expired"
	code, stdout, stderr := e.subscribe(stack.WebhookAdmin, hooks.URL(path), "credentials.expired")
	sub := e.subscribed(t, code, stdout, stderr)

	customer := fmt.Sprintf("C-%d", time.Now().UnixNano())
	run, _ := c.runAs(t, lookup, `{"customer_id": "`+customer+`"}`, starter, "", "")
	p, _ := e.awaitParked(t, run, "lookup")
	defer e.stopParked(t, run, p)
	if p.Cause != park.CredentialsExpired {
		t.Fatalf("park %+v, want %s", p, park.CredentialsExpired)
	}
	id := webhook.EventID(webhook.CredentialsExpired, e.parkedRowKey(t, run))
	raw := awaitEvent(t, hooks, path, sub, webhook.CredentialsExpired, id, customer, func(d json.RawMessage) bool {
		var v webhook.CallData
		return json.Unmarshal(d, &v) == nil && v.Key == run+"/1"
	})
	var got webhook.CallData
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Run != run[strings.LastIndexByte(run, ':')+1:] || got.Tool != "crm.lookup_customer" || got.Cause != string(webhook.CredentialsExpired) ||
		got.ParkID != p.ID || !strings.Contains(got.DecideCommand, "toolgate parked resume "+p.ID) {
		t.Errorf("data %+v, want the run, its key, crm.lookup_customer, %s, park %s and how to resume it", got, webhook.CredentialsExpired, p.ID)
	}
	if strings.Contains(string(raw), expired) {
		t.Errorf("the event carries the credential: %s", raw)
	}
}
