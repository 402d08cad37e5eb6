package request_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// parkRun is a run of the dev stage's refunds Solution.
const parkRun = "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_refunds:run-1"

// parkEnv is review-request on a ledger table of its own on the shared
// dynalite: a registered toolset holding send-email, the park store and
// the webhook events store. The events queue is not named: events are
// recorded and left to the relay.
type parkEnv struct {
	h       *request.Handler
	db      *dynamodb.Client
	table   string
	ledger  *ledger.Store
	reviews *dynamo.Store
	parks   *parkdynamo.Store
	events  *store.Store
	toolset string
	now     time.Time
}

func newParkEnv(t *testing.T) *parkEnv {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "parks")
	e := &parkEnv{db: db, table: name, ledger: ledger.New(db, name), reviews: dynamo.NewStore(db, name),
		parks: parkdynamo.New(db, name, nil), events: store.New(db, name, nil), now: time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)}
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ledger.RegisterToolset(t.Context(), ts); err != nil {
		t.Fatal(err)
	}
	e.toolset = ts.ID
	e.h = request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.reviews, Ledger: e.ledger, Parks: e.parks, Webhooks: &store.Emitter{Store: e.events}})
	return e
}

// parkRow writes a PARKED row of seq's call as the dispatcher does: the
// ledger's row writer (ledger.Store.PutRow), then the row's park
// attributes (table.Row's park_cause ...), which shared/ledger's Row does
// not map yet, set on the same item. It returns the row's sort key.
func (e *parkEnv) parkRow(t *testing.T, seq tool.Seq, cause park.Cause) string {
	t.Helper()
	e.now = e.now.Add(time.Second)
	r := &ledger.Row{RunID: parkRun, Seq: seq, Step: "notify", Tool: "send-email", ToolsetID: e.toolset, IdempotencyKey: parkRun + "/" + string(seq),
		Status: ledger.StatusParked, ErrorCode: "CALL_PARKED", StartedAt: e.now, EndedAt: e.now}
	if err := e.ledger.PutRow(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	set := "SET park_cause = :c, pinned_digest = :p, current_digest = :d, changed_pointers = :ptr, additive_pointers = :add"
	values := map[string]types.AttributeValue{
		":c": &types.AttributeValueMemberS{Value: string(cause)}, ":p": &types.AttributeValueMemberS{Value: "sha256:aa"},
		":d": &types.AttributeValueMemberS{Value: "sha256:bb"},
		":ptr": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "/inputSchema/properties/cc"},
			&types.AttributeValueMemberS{Value: "/inputSchema/properties/to"}}},
		":add": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "/inputSchema/properties/cc"}}},
	}
	if cause == park.CredentialsExpired {
		set = "SET park_cause = :c, park_target = :t, park_scope = :s"
		values = map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: string(cause)},
			":t": &types.AttributeValueMemberS{Value: "mail"}, ":s": &types.AttributeValueMemberS{Value: "toolset"}}
	}
	_, err := e.db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(e.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: table.Row.Key(parkRun)}, "sk": &types.AttributeValueMemberS{Value: r.ItemSK}},
		UpdateExpression: aws.String(set), ExpressionAttributeValues: values})
	if err != nil {
		t.Fatal(err)
	}
	return r.ItemSK
}

// parkPayload is the park Task's payload for seq's call, as the compiled
// state machine builds it (docs/parking.md).
func (e *parkEnv) parkPayload(t *testing.T, seq tool.Seq, gated bool, token string) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"park": park.Request{RunID: parkRun, Step: "notify", Seq: string(seq), IdempotencyKey: parkRun + "/" + string(seq), Tool: "send-email",
			ToolsetID: e.toolset, RunStartedAt: "2026-12-03T06:59:00Z", TimeoutSeconds: 3600, Gated: gated},
		"task_token": token,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errorType is the Lambda errorType of err, "" for nil.
func errorType(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ie messages.InvokeResponse_Error
	if !errors.As(err, &ie) {
		t.Fatalf("%v is not a Lambda error", err)
	}
	return ie.Type
}

// A park Task records its park once, from the call's PARKED row (its
// changed pointers and which of them are additive), and the
// cause's event once, under the id the dispatcher gives that row's
// event, with the park's id and the commands that decide it; the same
// Task retried records nothing more, and its new token is the one that
// waits.
func TestAParkIsRecordedOnceAndTheRetriedTasksTokenWaits(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	sk := e.parkRow(t, "2", park.SchemaChanged)
	id := park.ID(table.Row.Key(parkRun), sk)
	for _, token := range []string{"token-1", "token-2"} {
		out, err := e.h.Handle(ctx, e.parkPayload(t, "2", false, token))
		if err != nil {
			t.Fatalf("token %s: %v", token, err)
		}
		var a request.ParkAnswer
		if err := json.Unmarshal(out, &a); err != nil || a.ParkID != id || a.Status != park.StatusParked {
			t.Fatalf("answer %s (%v), want park %s PARKED", out, err, id)
		}
	}
	p, err := e.parks.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p.TaskToken != "token-2" || p.RowSK != sk || p.Cause != park.SchemaChanged || p.CurrentDigest != "sha256:bb" ||
		len(p.ChangedPointers) != 2 || !slices.Equal(p.AdditivePointers, []string{"/inputSchema/properties/cc"}) || p.IdempotencyKey != parkRun+"/2" || p.Gated {
		t.Fatalf("park %+v", p)
	}
	ev, ok, err := e.events.Event(ctx, webhook.EventID(webhook.ToolSchemaChanged, table.Row.Key(parkRun)+"\n"+sk))
	if err != nil || !ok {
		t.Fatalf("no tool.schema_changed event under the PARKED row's id: %v", err)
	}
	var data webhook.CallData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.ParkID != id || data.Run != "run-1" || data.Key != parkRun+"/2" || data.Cause != "tool.schema_changed" ||
		!strings.HasPrefix(data.DecideCommand, "toolgate parked approve "+id) || ev.Solution != "refunds" {
		t.Fatalf("event %s: %+v", ev.Data, data)
	}
}

// A credentials.expired park carries its credential's target and scope,
// is found by scope, and its event says how to resume it.
func TestACredentialParkRecordsItsTargetAndScope(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	sk := e.parkRow(t, "3", park.CredentialsExpired)
	id := park.ID(table.Row.Key(parkRun), sk)
	if _, err := e.h.Handle(ctx, e.parkPayload(t, "3", false, "token-1")); err != nil {
		t.Fatal(err)
	}
	p, err := e.parks.Get(ctx, id)
	if err != nil || p.Target != "mail" || p.Scope != "toolset" || p.Cause != park.CredentialsExpired {
		t.Fatalf("park %+v, %v", p, err)
	}
	ev, ok, err := e.events.Event(ctx, webhook.EventID(webhook.CredentialsExpired, table.Row.Key(parkRun)+"\n"+sk))
	if err != nil || !ok {
		t.Fatalf("no credentials.expired event: %v", err)
	}
	if !strings.Contains(string(ev.Data), `"decide_command":"toolgate credentials set ... then toolgate parked resume `+id+`"`) {
		t.Fatalf("event data %s", ev.Data)
	}
}

// A call parks at most park.MaxParks times: its sixth PARKED row is
// refused with PARK_LIMIT, the error type the park Task's Catch names,
// and no park is recorded for it.
func TestTheSixthParkOfACallIsRefusedWithParkLimit(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	if string(review.CodeParkLimit) != park.ErrorLimit {
		t.Fatalf("review.CodeParkLimit %s, park.ErrorLimit %s", review.CodeParkLimit, park.ErrorLimit)
	}
	var sk string
	for i := range park.MaxParks {
		sk = e.parkRow(t, "4", park.SchemaChanged)
		if _, err := e.h.Handle(ctx, e.parkPayload(t, "4", false, "token")); err != nil {
			t.Fatalf("park %d: %v", i+1, err)
		}
	}
	sk = e.parkRow(t, "4", park.SchemaChanged)
	_, err := e.h.Handle(ctx, e.parkPayload(t, "4", false, "token"))
	if got := errorType(t, err); got != park.ErrorLimit {
		t.Fatalf("sixth park: error type %q (%v), want %s", got, err, park.ErrorLimit)
	}
	if _, err := e.parks.Get(ctx, park.ID(table.Row.Key(parkRun), sk)); !errors.Is(err, parkdynamo.ErrNotFound) {
		t.Fatalf("the refused park was recorded: %v", err)
	}
}

// The park route refuses, as REVIEW_INVALID_REQUEST, a call with no
// PARKED row and a payload that is not exactly the park Task's; a gated
// step's run without a verified start is REVIEW_FORBIDDEN; and the direct
// alias takes no park Task.
func TestTheParkRouteRefusesWhatIsNotAParkedCall(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	e.parkRow(t, "5", park.SchemaChanged)
	valid := string(e.parkPayload(t, "5", false, "token"))
	for name, c := range map[string]struct {
		payload string
		want    review.Code
	}{
		"no parked row":                      {string(e.parkPayload(t, "6", false, "token")), review.CodeInvalid},
		"an unknown member":                  {strings.Replace(valid, `"task_token"`, `"extra":1,"task_token"`, 1), review.CodeInvalid},
		"an unknown park member":             {strings.Replace(valid, `"run_id"`, `"reviewers":[],"run_id"`, 1), review.CodeInvalid},
		"a member twice":                     {strings.Replace(valid, `"task_token"`, `"task_token":"x","task_token"`, 1), review.CodeInvalid},
		"no task token":                      {strings.Replace(valid, `"task_token":"token"`, `"task_token":""`, 1), review.CodeInvalid},
		"a null member":                      {strings.Replace(valid, `"gated":false`, `"gated":null`, 1), review.CodeInvalid},
		"another call's key":                 {strings.Replace(valid, `run-1/5"`, `run-1/7"`, 1), review.CodeInvalid},
		"a timeout of 0":                     {strings.Replace(valid, `"timeout_seconds":3600`, `"timeout_seconds":0`, 1), review.CodeInvalid},
		"a gated step's run without a start": {string(e.parkPayload(t, "5", true, "token")), review.CodeForbidden},
		"another stage's run":                {strings.ReplaceAll(valid, "toolgate-dev_refunds", "toolgate-prod_refunds"), review.CodeForbidden},
		"another account's run":              {strings.ReplaceAll(valid, ":000000000000:", ":111111111111:"), review.CodeForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.h.Handle(ctx, json.RawMessage(c.payload))
			if got := errorType(t, err); got != string(c.want) {
				t.Fatalf("error type %q (%v), want %s", got, err, c.want)
			}
		})
	}
	direct := request.NewHandler(request.Config{Lane: lane.Direct}, request.Deps{Parks: e.parks})
	if _, err := direct.Handle(ctx, json.RawMessage(valid)); errorType(t, err) != string(review.CodeForbidden) {
		t.Fatalf("the direct alias: %v", err)
	}
}

// A gated step's park is recorded for a run whose start is verified.
func TestAGatedStepsParkNeedsItsRunsVerifiedStart(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	if err := e.reviews.RecordRunStart(ctx, parkRun, "arn:aws:iam::000000000000:user/starter", "sha256:00", review.EndUserRecord{}); err != nil {
		t.Fatal(err)
	}
	sk := e.parkRow(t, "2", park.SchemaChanged)
	if _, err := e.h.Handle(ctx, e.parkPayload(t, "2", true, "token")); err != nil {
		t.Fatal(err)
	}
	if p, err := e.parks.Get(ctx, park.ID(table.Row.Key(parkRun), sk)); err != nil || !p.Gated {
		t.Fatalf("park %+v, %v", p, err)
	}
}

// The park is the call's newest PARKED row, by its sort key's start
// time. Every tool role writes row items of the run's partition, and
// rows carry no seal review-request can check, so a row whose start lies
// in the future was not written by the call's invocation: such a row,
// however far ahead, is never the park's, and the park is recorded from
// the dispatcher's row.
func TestAParkIsNotRecordedFromARowStartedInTheFuture(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	sk := e.parkRow(t, "5", park.SchemaChanged)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	future := table.RowSK(tool.Seq("5").SortKey(), time.Now().Add(24*time.Hour).UnixNano(), [4]byte{0xff, 0xff, 0xff, 0xff})
	_, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
		"pk": s(table.Row.Key(parkRun)), "sk": s(future), "status": s(string(park.StatusParked)),
		"idempotency_key": s(parkRun + "/5"), "tool": s("send-email"), "step": s("notify"),
		"park_cause": s(string(park.SchemaChanged)), "pinned_digest": s("sha256:aa"), "current_digest": s("sha256:ee"),
		"changed_pointers":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("/inputSchema/properties/to")}},
		"additive_pointers": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("/inputSchema/properties/to")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.h.Handle(ctx, e.parkPayload(t, "5", false, "token-1"))
	if err != nil {
		t.Fatal(err)
	}
	var a request.ParkAnswer
	if err := json.Unmarshal(out, &a); err != nil || a.ParkID != park.ID(table.Row.Key(parkRun), sk) {
		t.Fatalf("answer %s (%v), want the park of the dispatcher's row %s", out, err, sk)
	}
	if _, err := e.parks.Get(ctx, park.ID(table.Row.Key(parkRun), future)); !errors.Is(err, parkdynamo.ErrNotFound) {
		t.Fatalf("a park was recorded from the row started in the future: %v", err)
	}
}

// Every tool role writes row items of the run's partition, so another
// function can write PARKED rows of a call it never ran: such rows, for
// which no park was recorded, do not count toward park.MaxParks
// (recordedParks), so six of them, dated before the call, leave the call's
// first park to be recorded (docs/parking.md, "Recording a park").
func TestPARKEDRowsAnotherFunctionWroteDoNotCountTowardTheBound(t *testing.T) {
	e := newParkEnv(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for i := range park.MaxParks + 1 {
		forged := table.RowSK(tool.Seq("6").SortKey(), e.now.Add(-time.Hour).UnixNano()+int64(i), [4]byte{0xee, 0, 0, byte(i)})
		_, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
			"pk": s(table.Row.Key(parkRun)), "sk": s(forged), "status": s(string(park.StatusParked)),
			"idempotency_key": s(parkRun + "/6"), "tool": s("send-email"), "park_cause": s(string(park.SchemaChanged)),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	sk := e.parkRow(t, "6", park.SchemaChanged)
	out, err := e.h.Handle(ctx, e.parkPayload(t, "6", false, "token-1"))
	if err != nil {
		t.Fatalf("the call's first park: %v (error type %s), want it recorded", err, errorType(t, err))
	}
	var a request.ParkAnswer
	if err := json.Unmarshal(out, &a); err != nil || a.ParkID != park.ID(table.Row.Key(parkRun), sk) {
		t.Fatalf("answer %s (%v), want the park of the dispatcher's row", out, err)
	}
}
