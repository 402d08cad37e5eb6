package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

const runID = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev-refunds:r1"

var t0 = time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)

// fixture is a table of the test's own on the shared dynalite, a park
// store and a ledger on it, both on one clock.
type fixture struct {
	db     *dynamodb.Client
	table  string
	store  *dynamo.Store
	ledger *ledger.Store
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "parks")
	f := &fixture{db: db, table: name, now: t0}
	f.store = dynamo.New(db, name, func() time.Time { return f.now })
	f.ledger = ledger.New(db, name).WithClock(func() time.Time { return f.now })
	return f
}

// raw is the park item of id as DynamoDB holds it.
func (f *fixture) raw(t *testing.T, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(f.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "PARK#" + id}, "sk": &types.AttributeValueMemberS{Value: "PARK"}}})
	if err != nil || out.Item == nil {
		t.Fatalf("park item %s: %v (found %v)", id, err, out != nil && out.Item != nil)
	}
	return out.Item
}

func schemaPark(rowSK, token string) *park.Park {
	return &park.Park{
		ID: park.ID(table.Row.Key(runID), rowSK), RunID: runID, Step: "lookup", Seq: "2", IdempotencyKey: runID + "/2",
		Tool: "crm-lookup", ToolsetID: "ts_1", Cause: park.SchemaChanged, PinnedDigest: "sha256:aa", CurrentDigest: "sha256:bb",
		ChangedPointers: []string{"/inputSchema/properties/id"}, RowSK: rowSK, TaskToken: token,
	}
}

func credentialPark(rowSK, token string) *park.Park {
	return &park.Park{
		ID: park.ID(table.Row.Key(runID), rowSK), RunID: runID, Step: "fetch", Seq: "3", IdempotencyKey: runID + "/3",
		Tool: "http", ToolsetID: "ts_1", Cause: park.CredentialsExpired, Target: "tickets", Scope: "toolset", RowSK: rowSK,
		TaskToken: token, Gated: true,
	}
}

// The item types map onto their kinds as declared.
func TestItemTypesConformToTheirKinds(t *testing.T) {
	if err := table.Conform(table.Row, dynamo.Row{}); err != nil {
		t.Error(err)
	}
	if err := table.Conform(table.Park, dynamo.Item{}); err != nil {
		t.Error(err)
	}
}

// A park is recorded once: a retried park Task for the same row finds it
// and makes its own token the one that waits, while the park is PARKED
// only; a decided park keeps the token it was decided under.
func TestRecordIsOncePerRowAndTheLatestTaskTokenWaits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := schemaPark("CALL#0000000000000000002#1764741600000000000#0a1b2c3d", "token-1")
	created, cur, err := f.store.Record(ctx, p, 3600)
	if err != nil || !created {
		t.Fatalf("Record: created %v, %v", created, err)
	}
	if cur.Status != park.StatusParked || !cur.Deadline.Equal(t0.Add(time.Hour)) {
		t.Fatalf("recorded %+v", cur)
	}
	it := f.raw(t, p.ID)
	if got := it["park_list_pk"].(*types.AttributeValueMemberS).Value; got != "PARKS#PARKED" {
		t.Errorf("park_list_pk %q", got)
	}
	if _, ok := it["park_scope_key"]; ok {
		t.Error("a schema park carries park_scope_key")
	}

	f.now = t0.Add(time.Minute)
	again := schemaPark(p.RowSK, "token-1")
	created, cur, err = f.store.Record(ctx, again, 3600)
	if err != nil || created || cur.TaskToken != "token-1" || !cur.CreatedAt.Equal(t0) {
		t.Fatalf("the same Task again: created %v, %+v, %v", created, cur, err)
	}
	retried := schemaPark(p.RowSK, "token-2")
	created, cur, err = f.store.Record(ctx, retried, 3600)
	if err != nil || created || cur.TaskToken != "token-2" {
		t.Fatalf("a retried Task: created %v, token %q, %v", created, cur.TaskToken, err)
	}
	if got, _ := f.store.Get(ctx, p.ID); got.TaskToken != "token-2" || !got.CreatedAt.Equal(t0) {
		t.Fatalf("stored %+v", got)
	}

	if _, err := f.store.Decide(ctx, p.ID, park.StatusApproved, "arn:aws:iam::123456789012:user/rev", ""); err != nil {
		t.Fatal(err)
	}
	created, cur, err = f.store.Record(ctx, schemaPark(p.RowSK, "token-3"), 3600)
	if err != nil || created || cur.TaskToken != "token-2" || cur.Status != park.StatusApproved {
		t.Fatalf("a Task after the decision: created %v, %+v, %v", created, cur, err)
	}
}

// A decision moves a park from PARKED once: a second one is
// ErrNotParked; the decided park leaves the PARKED listing and the scope
// index, and keeps the decision's reason.
func TestDecideMovesAParkOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := credentialPark("CALL#0000000000000000003#1764741600000000000#0a1b2c3d", "token-1")
	if _, _, err := f.store.Record(ctx, p, 600); err != nil {
		t.Fatal(err)
	}
	if got := f.raw(t, p.ID)["park_scope_key"].(*types.AttributeValueMemberS).Value; got != "tickets#toolset" {
		t.Fatalf("park_scope_key %q", got)
	}
	listed, err := f.store.ListByStatus(ctx, park.StatusParked, nil)
	if err != nil || len(listed) != 1 || listed[0].ID != p.ID || listed[0].TaskToken != "" || listed[0].Target != "tickets" {
		t.Fatalf("PARKED listing %+v, %v", listed, err)
	}
	f.now = t0.Add(2 * time.Minute)
	cur, err := f.store.Decide(ctx, p.ID, park.StatusRejected, "arn:aws:iam::123456789012:user/rev", "the server's new schema drops id")
	if err != nil || cur.Status != park.StatusRejected || cur.Reason != "the server's new schema drops id" || !cur.DecidedAt.Equal(f.now) {
		t.Fatalf("Decide: %+v, %v", cur, err)
	}
	if _, ok := f.raw(t, p.ID)["park_scope_key"]; ok {
		t.Error("a decided park still carries park_scope_key")
	}
	cur, err = f.store.Decide(ctx, p.ID, park.StatusApproved, "arn:aws:iam::123456789012:user/other", "")
	if !errors.Is(err, dynamo.ErrNotParked) || cur.Status != park.StatusRejected {
		t.Fatalf("a second decision: %+v, %v", cur, err)
	}
	if listed, _ := f.store.ListByStatus(ctx, park.StatusParked, nil); len(listed) != 0 {
		t.Errorf("still listed as PARKED: %+v", listed)
	}
	if listed, _ := f.store.ListByStatus(ctx, park.StatusRejected, nil); len(listed) != 1 {
		t.Errorf("REJECTED listing %+v", listed)
	}
	if _, err := f.store.Decide(ctx, "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", park.StatusApproved, "x", ""); !errors.Is(err, dynamo.ErrNotFound) {
		t.Errorf("deciding no park: %v", err)
	}
}

// TimeOut records a PARKED park past its deadline TIMED_OUT, once, decided
// by nobody at its deadline, and moves it to the TIMED_OUT listing; it
// leaves a park before its deadline, and a decided one, as they are.
func TestTimeOutRecordsAParkPastItsDeadlineOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := credentialPark(table.RowSK("0000000000000000003", 1764741600000000000, [4]byte{0x0a, 0x1b, 0x2c, 0x3d}), "token-1")
	if _, _, err := f.store.Record(ctx, p, 600); err != nil {
		t.Fatal(err)
	}
	deadline := t0.Add(600 * time.Second)
	if !p.Deadline.Equal(deadline) {
		t.Fatalf("deadline %s, want %s", p.Deadline, deadline)
	}
	f.now = deadline.Add(-time.Second)
	if _, err := f.store.TimeOut(ctx, p); err == nil {
		t.Fatal("TimeOut before the deadline recorded it")
	}
	if cur, err := f.store.Get(ctx, p.ID); err != nil || cur.Status != park.StatusParked {
		t.Fatalf("the park after TimeOut before its deadline: %+v, %v; want it PARKED", cur, err)
	}
	f.now = deadline
	cur, err := f.store.TimeOut(ctx, p)
	if err != nil || cur.Status != park.StatusTimedOut || cur.DecidedBy != "" || !cur.DecidedAt.Equal(deadline) || cur.TaskToken != "token-1" {
		t.Fatalf("TimeOut at the deadline: %+v, %v; want TIMED_OUT, decided by nobody at %s", cur, err, deadline)
	}
	raw := f.raw(t, p.ID)
	if _, ok := raw["park_scope_key"]; ok {
		t.Error("a timed-out park still carries park_scope_key")
	}
	if _, ok := raw["decided_by"]; ok {
		t.Error("a timed-out park names a decider")
	}
	if got := raw["expires_at"].(*types.AttributeValueMemberN).Value; got != strconv.FormatInt(deadline.Add(ledger.DefaultRetention).Unix(), 10) {
		t.Errorf("expires_at %s, want the retention after the deadline", got)
	}
	f.now = deadline.Add(time.Hour)
	if again, err := f.store.TimeOut(ctx, p); err != nil || !again.DecidedAt.Equal(deadline) {
		t.Fatalf("TimeOut again: %+v, %v; want the same record", again, err)
	}
	if listed, _ := f.store.ListByStatus(ctx, park.StatusParked, nil); len(listed) != 0 {
		t.Errorf("still listed as PARKED: %+v", listed)
	}
	if listed, _ := f.store.ListByStatus(ctx, park.StatusTimedOut, nil); len(listed) != 1 || listed[0].ID != p.ID {
		t.Errorf("TIMED_OUT listing %+v", listed)
	}
	if cur, err := f.store.Decide(ctx, p.ID, park.StatusApproved, "arn:aws:iam::123456789012:user/rev", ""); !errors.Is(err, dynamo.ErrNotParked) || cur.Status != park.StatusTimedOut {
		t.Fatalf("a decision after the timeout: %+v, %v", cur, err)
	}

	// A decided park is not timed out.
	q := credentialPark(table.RowSK("0000000000000000004", 1764741600000000000, [4]byte{0x0a, 0x1b, 0x2c, 0x3d}), "token-2")
	f.now = t0
	if _, _, err := f.store.Record(ctx, q, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Decide(ctx, q.ID, park.StatusCancelled, "arn:aws:iam::123456789012:user/op", ""); err != nil {
		t.Fatal(err)
	}
	f.now = t0.Add(time.Hour)
	if cur, err := f.store.TimeOut(ctx, q); !errors.Is(err, dynamo.ErrNotParked) || cur.Status != park.StatusCancelled {
		t.Fatalf("TimeOut of a cancelled park: %+v, %v", cur, err)
	}
	if _, err := f.store.Decide(ctx, q.ID, park.StatusTimedOut, "x", ""); err == nil {
		t.Error("Decide recorded a timeout")
	}
}

// ParkedRows reads one call's row items, newest first, as the ledger's
// row writer wrote them: neither the call's item nor the rows of the
// calls of a loop inside it.
func TestParkedRowsAreOneCallsRowsNewestFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	put := func(seq tool.Seq, at time.Time, st ledger.Status) string {
		r := &ledger.Row{RunID: runID, Seq: seq, Step: "lookup", Tool: "crm-lookup", ToolsetID: "ts_1", IdempotencyKey: runID + "/" + string(seq),
			Status: st, ErrorCode: "CALL_PARKED", StartedAt: at, EndedAt: at}
		if err := f.ledger.PutRow(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r.ItemSK
	}
	first := put("2", t0, ledger.StatusParked)
	second := put("2", t0.Add(time.Second), ledger.StatusParked)
	put("2.1", t0.Add(2*time.Second), ledger.StatusParked)
	put("20", t0.Add(3*time.Second), ledger.StatusParked)
	rows, err := f.store.ParkedRows(ctx, runID, tool.Seq("2").SortKey())
	if err != nil {
		t.Fatal(err)
	}
	var sks []string
	for _, r := range rows {
		sks = append(sks, r.SK)
		if r.Status != "PARKED" || r.IdempotencyKey != runID+"/2" || r.Tool != "crm-lookup" || r.PK != table.Row.Key(runID) {
			t.Errorf("row %+v", r)
		}
	}
	if !slices.Equal(sks, []string{second, first}) {
		t.Fatalf("rows %v, want %v", sks, []string{second, first})
	}
}
