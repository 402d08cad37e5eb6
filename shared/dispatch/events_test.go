package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// solutionRun is a run of Solution refunds in stage dev, as Step Functions
// names its execution: the events of its calls name the Solution and the
// execution's name.
func solutionRun() (arn, name string) {
	name = fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), runSeq.Add(1))
	return "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_refunds:" + name, name
}

// canary is planted in every input these tests send: no event may hold it.
const canary = "canary-input-0c4f"

// withWebhooks records d's events in e's table, as a tool function's main
// wires it (outbox.Recorder: record only).
func withWebhooks(e *env) func(*Deps) {
	return func(d *Deps) { d.Webhooks = &outbox.Recorder{DB: e.db, Table: e.store.Table()} }
}

// eventsOf returns every event recorded and not sent in e's table (the
// webhook-unsent index; nothing sends them here).
func eventsOf(t *testing.T, e *env) []webhook.Event {
	t.Helper()
	st := store.New(e.db, e.store.Table(), nil)
	ids, err := st.Unsent(t.Context(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []webhook.Event
	for _, id := range ids {
		ev, ok, err := st.Event(t.Context(), id)
		if err != nil || !ok {
			t.Fatalf("event %s listed, not read: %v", id, err)
		}
		if strings.Contains(string(ev.Data), canary) {
			t.Fatalf("event %s holds the call's input", id)
		}
		out = append(out, ev)
	}
	return out
}

// parkedRowKey is the key of run's one PARKED row item, pk "\n" sk, read
// from the table.
func parkedRowKey(t *testing.T, e *env, runID string) string {
	t.Helper()
	out, err := e.db.Query(t.Context(), &dynamodb.QueryInput{
		TableName: aws.String(e.store.Table()), KeyConditionExpression: aws.String("#pk = :pk"),
		FilterExpression:         aws.String("#status = :parked"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: table.Row.Key(runID)}, ":parked": &types.AttributeValueMemberS{Value: string(ledger.StatusParked)},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("parked rows of %s: %d (%v)", runID, len(out.Items), err)
	}
	sk := out.Items[0][table.SK].(*types.AttributeValueMemberS).Value
	return table.Row.Key(runID) + "\n" + sk
}

// A call parked because its MCP tool changed records one
// tool.schema_changed event whose id derives from its PARKED row, with
// the run, the key, the tool, the cause and the tool's name, and the
// Solution; recording the same row's event again records none. A later
// call of the same key that succeeds, and its replay, record nothing.
func TestAParkedCallRecordsOneEventDerivedFromItsRow(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	p.changed.Store(true)
	var calls atomic.Int64
	d := e.dispatcher(t, "", echoSend(&calls), func(c *Config) { c.Mode, c.Check = MCPTools, p.check }, withWebhooks(e))
	arn, name := solutionRun()
	payload := envelopeFor("crm.create_ticket", ts.ID, arn, 1, `{"text":"`+canary+`"}`)
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	events := eventsOf(t, e)
	rowKey := parkedRowKey(t, e, arn)
	if len(events) != 1 || events[0].ID != webhook.EventID(webhook.ToolSchemaChanged, rowKey) || events[0].Type != webhook.ToolSchemaChanged ||
		events[0].Solution != "refunds" {
		t.Fatalf("events %+v; want one tool.schema_changed of the PARKED row %q", events, rowKey)
	}
	var data webhook.CallData
	if err := json.Unmarshal(events[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	want := webhook.CallData{Run: name, Key: arn + "/1", Tool: "crm.create_ticket", Cause: "tool.schema_changed", Detail: "MCP tool crm.create_ticket"}
	if data != want {
		t.Fatalf("data %+v, want %+v", data, want)
	}
	if err := webhook.Validate(events[0]); err != nil {
		t.Fatal(err)
	}

	// The same row's event again: the conditional put finds it.
	env, err := tool.DecodeEnvelope(payload)
	if err != nil {
		t.Fatal(err)
	}
	inv := &invocation{d: d, env: env, ts: ts, pinned: ts.Tools["crm.create_ticket"]}
	_, sk, _ := strings.Cut(rowKey, "\n")
	e.db.reset()
	inv.emit(ctx, parked(&tool.Error{Code: tool.CallParked, Message: "tool.schema_changed: x"}, webhook.ToolSchemaChanged), &ledger.Row{ItemSK: sk})
	if got := eventsOf(t, e); len(got) != 1 || e.db.puts.Load() != 1 || e.db.failedConds.Load() != 1 {
		t.Fatalf("a second park of the same row: %d events, %d puts (%d failed conditions)", len(got), e.db.puts.Load(), e.db.failedConds.Load())
	}

	// Once the tool is as pinned, the call succeeds and then replays:
	// neither records an event, nor makes a request for one.
	p.changed.Store(false)
	e.db.reset()
	for range 2 {
		if _, err := d.Handle(ctx, payload); err != nil {
			t.Fatal(err)
		}
	}
	// Their one PutItem is the run's key pointer, which its first call
	// writes (pointKey).
	if got := eventsOf(t, e); len(got) != 1 || e.db.puts.Load() != 1 {
		t.Fatalf("a success and a replay: %d events, %d puts", len(got), e.db.puts.Load())
	}
}

// A call parked because its credential expired, before the claim or when
// its server refuses it after, records one credentials.expired event each,
// whose id derives from its PARKED row, naming the target and the
// toolset, never the credential.
func TestAnExpiredCredentialRecordsCredentialsExpired(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := credToolset(t, e)
	r := &resolver{err: expired("the toolset scope's credential of target crm (https://mcp.crm.example.com:8443) of toolset crm-tools expired")}
	d := credDispatcher(t, e, r, nil, echoSend(new(atomic.Int64)))
	d.webhooks = &outbox.Recorder{DB: e.db, Table: e.store.Table()}
	arn, name := solutionRun()
	payload := envelopeFor("crm.create_ticket", ts.ID, arn, 1, `{"text":"`+canary+`"}`)
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	events := eventsOf(t, e)
	if len(events) != 1 || events[0].ID != webhook.EventID(webhook.CredentialsExpired, parkedRowKey(t, e, arn)) {
		t.Fatalf("events %+v", events)
	}
	want := webhook.CallData{Run: name, Key: arn + "/1", Tool: "crm.create_ticket", Cause: "credentials.expired", Detail: "target crm of toolset crm-tools"}
	var data webhook.CallData
	if err := json.Unmarshal(events[0].Data, &data); err != nil || data != want {
		t.Fatalf("data %+v (%v), want %+v", data, err, want)
	}

	// After the claim: the server refuses the credential.
	secret := "secret-token-5a1e"
	cred := credential.Opened(credential.Target{Name: "crm", ToolsetName: "crm-tools", Origin: "https://mcp.crm.example.com:8443"},
		credential.ScopeToolset, 1, time.Time{}, []byte(secret))
	r.set(cred, nil)
	refusing := credDispatcher(t, e, r, nil, func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) { return nil, cred.Refused() })
	refusing.webhooks = d.webhooks
	arn2, _ := solutionRun()
	if _, err := refusing.Handle(ctx, envelopeFor("crm.create_ticket", ts.ID, arn2, 1, `{"text":"`+canary+`"}`)); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	events = eventsOf(t, e)
	// Its event derives from the PARKED row of its attempt, as a park
	// before the claim's from its row.
	id := webhook.EventID(webhook.CredentialsExpired, parkedRowKey(t, e, arn2))
	var found bool
	for _, ev := range events {
		found = found || ev.ID == id
		if strings.Contains(string(ev.Data), secret) {
			t.Fatal("an event holds the credential")
		}
	}
	if len(events) != 2 || !found {
		t.Fatalf("events %+v; want a second, %s", events, id)
	}
}

// An at_most_once call whose outcome is unknown records one call.unknown
// event, derived from the call's item, and every later attempt refused
// for it (TOOL_RETRY_REQUIRES_IDEMPOTENCY) records none more; an
// at_least_once call whose outcome is unknown records none, since it runs
// again.
func TestAnUnknownAtMostOnceCallRecordsOneCallUnknown(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return nil, errors.New("connection reset after the request was written")
	}, withWebhooks(e))
	arn, name := solutionRun()
	payload := envelopeFor("test-send", e.ts.ID, arn, 1, `{"text":"`+canary+`"}`)
	if _, err := send.Handle(ctx, payload); codeOf(t, err) != string(tool.Internal) {
		t.Fatalf("first attempt: %v", err)
	}
	for range 2 {
		if _, err := send.Handle(ctx, payload); codeOf(t, err) != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("a later attempt: %v", err)
		}
	}
	events := eventsOf(t, e)
	callKey := table.Call.Key(arn) + "\n" + table.CallSK(tool.Seq("1").SortKey())
	if len(events) != 1 || events[0].ID != webhook.EventID(webhook.CallUnknown, callKey) || events[0].Solution != "refunds" {
		t.Fatalf("events %+v", events)
	}
	want := webhook.CallData{Run: name, Key: arn + "/1", Tool: "test-send", Cause: string(tool.Internal), Detail: "step s"}
	var data webhook.CallData
	if err := json.Unmarshal(events[0].Data, &data); err != nil || data != want {
		t.Fatalf("data %+v (%v), want %+v", data, err, want)
	}

	echoD := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return nil, tool.Errorf(tool.Timeout, "timed out").Applied()
	}, withWebhooks(e))
	arn2, _ := solutionRun()
	if _, err := echoD.Handle(ctx, envelopeFor("test-echo", e.ts.ID, arn2, 1, `{"text":"x"}`)); codeOf(t, err) != string(tool.Timeout) {
		t.Fatalf("at_least_once: %v", err)
	}
	if got := eventsOf(t, e); len(got) != 1 {
		t.Fatalf("an at_least_once call recorded an event: %+v", got)
	}
}

// A call of a run whose state machine is no Solution's parks with an
// event that names no Solution; a failure to record the event changes
// nothing in the call's answer.
func TestEventsOfRunsWithoutASolution(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	p.changed.Store(true)
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check }, withWebhooks(e))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`) // toolgate-test: no Solution
	if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	if got := eventsOf(t, e); len(got) != 1 || got[0].Solution != "" {
		t.Fatalf("events %+v", got)
	}
	failing := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check }, func(d *Deps) { d.Webhooks = failingEmitter{} })
	_, err := failing.Handle(ctx, envelopeFor("crm.create_ticket", ts.ID, "", 2, `{"text":"x"}`))
	if codeOf(t, err) != string(tool.CallParked) || !strings.Contains(err.Error(), "tool.schema_changed: crm.create_ticket") {
		t.Fatalf("answer with the emitter failing: %v", err)
	}
}

// failingEmitter fails every Emit, as a DynamoDB that cannot be reached
// would; a stand-in for the failure only.
type failingEmitter struct{}

func (failingEmitter) Emit(context.Context, webhook.Event) error {
	return errors.New("dial tcp: connection refused")
}

// panickingEmitter panics in Emit; a stand-in for a defect only.
type panickingEmitter struct{}

func (panickingEmitter) Emit(context.Context, webhook.Event) error { panic("emitter defect") }

// A panic while recording the event leaves the call's answer as it was.
func TestAPanickingEmitterLeavesTheAnswer(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	p.changed.Store(true)
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check }, func(d *Deps) { d.Webhooks = panickingEmitter{} })
	if _, err := d.Handle(context.Background(), envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
}

// A call whose envelope has park_id, even null, parks without an event of
// its own: its state machine's park Task records the park and the event
// (docs/parking.md, "The dispatcher"). The PARKED row is written as
// before, and an envelope without the member still records its event.
func TestAParkableCallRecordsNoParkEvent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	p.changed.Store(true)
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check }, withWebhooks(e))
	arn, _ := solutionRun()
	if _, err := d.Handle(ctx, withParkID(envelopeFor("crm.create_ticket", ts.ID, arn, 1, `{"text":"x"}`), "null")); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	parkedRowKey(t, e, arn) // exactly one PARKED row
	if got := eventsOf(t, e); len(got) != 0 {
		t.Fatalf("a parkable call recorded %+v", got)
	}

	r := &resolver{err: expired("the toolset-scope credential of target crm (https://mcp.crm.example.com:8443) of toolset crm-tools expired")}
	cd := credDispatcher(t, e, r, nil, echoSend(new(atomic.Int64)))
	cd.webhooks = &outbox.Recorder{DB: e.db, Table: e.store.Table()}
	arn2, _ := solutionRun()
	if _, err := cd.Handle(ctx, withParkID(envelopeFor("crm.create_ticket", credToolset(t, e).ID, arn2, 1, `{"text":"x"}`), "null")); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	parkedRowKey(t, e, arn2)
	if got := eventsOf(t, e); len(got) != 0 {
		t.Fatalf("a parkable call with an expired credential recorded %+v", got)
	}

	arn3, _ := solutionRun()
	if _, err := d.Handle(ctx, envelopeFor("crm.create_ticket", ts.ID, arn3, 1, `{"text":"x"}`)); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	if got := eventsOf(t, e); len(got) != 1 || got[0].ID != webhook.EventID(webhook.ToolSchemaChanged, parkedRowKey(t, e, arn3)) {
		t.Fatalf("a call without park_id: events %+v", got)
	}
}
