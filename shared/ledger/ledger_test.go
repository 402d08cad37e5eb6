package ledger

// Tests of the ledger table on dynalite: rows, sort keys, toolsets, and
// the conditional writes of a call's item (records_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/shared/tool"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

func newStore(t *testing.T) (*Store, *dynamodb.Client) {
	t.Helper()
	p := localtest.Dynalite(t)
	client := local.DynamoDB(p.Endpoint())
	if err := CreateTable(context.Background(), client, "ledger-test"); err != nil {
		t.Fatal(err)
	}
	return New(client, "ledger-test"), client
}

// Two rows of one key that start in the same nanosecond (two containers, a
// coarse clock, or WithClock in tests) never overwrite each other: a row's
// sort key ends in a random suffix (docs/ledger.md: rows of one key "never
// overwrite each other").
func TestRowsWithSameStartAreNotOverwritten(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	start := time.Now()
	for i, st := range []Status{StatusSucceeded, StatusDeduplicated} {
		r := &Row{RunID: "run", Seq: "1", Attempt: 1, Step: "s", Tool: "t", ToolsetID: "ts", IdempotencyKey: "run/1", Status: st, StartedAt: start, EndedAt: start.Add(time.Duration(i) * time.Millisecond)}
		if err := s.PutRow(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.KeyRows(ctx, "run", "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Errorf("two invocations, %d rows: %+v", len(rows), rows)
	}
}

// A run's rows come back in call order past ten-digit seqs and through a
// for_each: the sort key pads each of the seq's components to 19 digits,
// enough for any positive int64 the envelope accepts. A call's rows are
// its own, not those of the calls inside a loop that took its seq.
func TestRowOrderPastTenDigitSeq(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, seq := range []tool.Seq{"9999999999", "10000000000", "3.10.1", "2", "3.1.1", "3.0.2", "3.0.1", "3.2.1", "4", "3.0.10"} {
		r := &Row{RunID: "run", Seq: seq, Attempt: 1, Status: StatusSucceeded, StartedAt: time.Now(), EndedAt: time.Now()}
		if err := s.PutRow(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.RunRows(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	var got []tool.Seq
	for _, r := range rows {
		got = append(got, r.Seq)
	}
	if fmt.Sprint(got) != "[2 3.0.1 3.0.2 3.0.10 3.1.1 3.2.1 3.10.1 4 9999999999 10000000000]" {
		t.Errorf("run rows in order %v, not call order", got)
	}
	if rows, err := s.KeyRows(ctx, "run", "3.0.1"); err != nil || len(rows) != 1 || rows[0].Seq != "3.0.1" {
		t.Errorf("key rows of 3.0.1: %v, %v", rows, err)
	}
	if rows, err := s.KeyRows(ctx, "run", "3"); err != nil || len(rows) != 0 {
		t.Errorf("key rows of 3, the loop's seq: %v, %v", rows, err)
	}
}

// A toolset item without a body, or with a body that is not a string, is
// an error from Store.Toolset, never a panic.
func TestToolsetWithoutBodyDoesNotPanic(t *testing.T) {
	s, client := newStore(t)
	id := "ts_0123456789abcdef0123456789abcdef"
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(s.Table()),
		Item: map[string]types.AttributeValue{
			AttrPK: &types.AttributeValueMemberS{Value: "TOOLSET#" + id},
			AttrSK: &types.AttributeValueMemberS{Value: "TOOLSET"},
			"body": &types.AttributeValueMemberN{Value: "1"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("Store.Toolset panicked: %v", p)
		}
	}()
	if _, err := s.Toolset(context.Background(), id); err == nil {
		t.Error("a toolset without a body loaded")
	}
}

// Regression: the record's conditional writes only succeed for the holder
// of the claim / an unchanged read.
func TestRecordGuards(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	rec := &Record{Key: "run/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", RunID: "run", Seq: "1", Step: "s", Tool: "t", ToolsetID: "ts_0123456789abcdef0123456789abcdef", InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(-time.Second)}
	if ok, _, err := s.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	other := *rec
	other.Token = "" // another attempt: its own token
	ok, old, err := s.Claim(ctx, &other)
	if ok || err != nil || old.State != StateInProgress || old.Attempts != 1 {
		t.Fatalf("second claim: %v %+v %v", ok, old, err)
	}
	stale := *old
	if ok, err := s.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal("reclaim", ok, err)
	}
	if ok, err := s.Reclaim(ctx, &stale, time.Now().Add(time.Minute)); ok || err != nil {
		t.Errorf("reclaim from a stale read succeeded: %v %v", ok, err)
	}
	if ok, err := s.MarkUnknown(ctx, &stale, "X"); ok || err != nil {
		t.Errorf("mark unknown from a stale read succeeded: %v %v", ok, err)
	}
	row := &Row{RunID: "run", Seq: "1", Attempt: 1, Status: StatusSucceeded, StartedAt: time.Now(), EndedAt: time.Now()}
	if ok, err := s.Finish(ctx, "run/1", rec.Token, StateCompleted, json.RawMessage(`{}`), row); ok || err != nil {
		t.Errorf("finish by the attempt that lost the claim succeeded: %v %v", ok, err)
	}
	row.Attempt = 2
	if ok, err := s.Finish(ctx, "run/1", old.Token, StateCompleted, json.RawMessage(`{"a":1}`), row); !ok || err != nil {
		t.Errorf("finish by the holder: %v %v", ok, err)
	}
	// The same finish sent again (the SDK, after a lost response) finds its
	// own outcome recorded: reported as done, and nothing changes.
	row.Status, row.ErrorCode = StatusFailed, "X"
	if ok, err := s.Finish(ctx, "run/1", old.Token, StateFailed, nil, row); !ok || err != nil {
		t.Errorf("a finish sent again: %v %v", ok, err)
	}
	got := mustRecord(t, s, "run/1")
	if got.State != StateCompleted || string(got.Result) != `{"a":1}` || got.Attempts != 2 {
		t.Errorf("record %+v", got)
	}
}

// Regression: a toolset item written with a plain PutItem, its id
// the correct digest of a send-email pinned without review_required, is
// refused on load for that rule; RegisterToolset refuses the same toolset
// and writes nothing.
func TestToolsetLoadRunsTheRegistrationCheck(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := ts.Tools["send-email"]
	tl.ReviewRequired = false
	ts.Tools["send-email"] = tl
	ts.ID, _ = ts.ComputeID()
	if _, err := s.RegisterToolset(ctx, ts); err == nil {
		t.Fatal("registration took an ungated send-email")
	}
	if _, err := s.Toolset(ctx, ts.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after a refused registration: %v, want ErrNotFound", err)
	}
	body, _ := ts.Canonical()
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table()),
		Item: map[string]types.AttributeValue{
			AttrPK: &types.AttributeValueMemberS{Value: "TOOLSET#" + ts.ID},
			AttrSK: &types.AttributeValueMemberS{Value: "TOOLSET"},
			"body": &types.AttributeValueMemberS{Value: string(body)},
		},
	}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Toolset(ctx, ts.ID)
	var ref *toolset.Refusal
	if !errors.As(err, &ref) || ref.Rule != toolset.RuleReviewRequired || ref.ToolsetID != ts.ID {
		t.Fatalf("load of the hand-written item: %v, want a refusal for %s", err, toolset.RuleReviewRequired)
	}
	if _, err := s.Toolset(ctx, "not-an-id"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a malformed id: %v", err)
	}
}

// One item per call: the first attempt's claim, its finish, the replays'
// count and the rows of invocations that claimed nothing come back from
// one Query as the call's rows, attempts by number, replays last as one
// DEDUPLICATED row with their count. The worst case stays under
// DynamoDB's 400 KB item limit, which dynalite enforces.
func TestOneItemPerCall(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	rec := &Record{Key: "run/3", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/3", Step: "s", Tool: "t", ToolsetID: "ts_0123456789abcdef0123456789abcdef", InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute)}
	if ok, _, err := s.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Another invocation while the first holds the claim: in flight.
	other := *rec
	other.Token = ""
	if ok, _, err := s.Claim(ctx, &other); ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	if err := s.PutRow(ctx, &Row{RunID: "run", Seq: "3", Status: StatusRefused, ErrorCode: "TOOL_UPSTREAM_UNAVAILABLE", StartedAt: now, EndedAt: now, AfterClaimRequest: true}); err != nil {
		t.Fatal(err)
	}
	// The worst case: the largest inline result (200 KiB) and ten attempts.
	big := json.RawMessage(`"` + strings.Repeat("x", 200<<10) + `"`)
	old := mustRecord(t, s, "run/3")
	for i := 2; i <= 10; i++ {
		if ok, err := s.Finish(ctx, "run/3", old.Token, StateFailed, nil, &Row{Attempt: i - 1, Status: StatusFailed, ErrorCode: "TOOL_TIMEOUT", StartedAt: now, EndedAt: now}); !ok || err != nil {
			t.Fatal("finish", i, ok, err)
		}
		// As the dispatcher does: a claim request reads the FAILED record,
		// and a conditional update re-claims it.
		retry := *rec
		retry.Token = ""
		_, old, _ = s.Claim(ctx, &retry)
		if ok, err := s.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
			t.Fatal("reclaim", i, ok, err)
		}
	}
	if ok, err := s.Finish(ctx, "run/3", old.Token, StateCompleted, big, &Row{Attempt: 10, Status: StatusSucceeded, OutputBytes: len(big), StartedAt: now, EndedAt: now}); !ok || err != nil {
		t.Fatal("finish with the largest result", ok, err)
	}
	for range 3 { // replays
		replay := *rec
		replay.Token = ""
		if ok, got, err := s.Claim(ctx, &replay); ok || err != nil || got.State != StateCompleted || len(got.Result) != len(big) {
			t.Fatal("replay", ok, err)
		}
	}
	rows, err := s.KeyRows(ctx, "run", "3")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d:%s:%d", r.Attempt, r.Status, r.Invocations()))
	}
	// In time order: the refusal came while attempt 1 held the claim, each
	// attempt starts at its claim.
	want := "[1:FAILED:1 0:REFUSED:1 2:FAILED:1 3:FAILED:1 4:FAILED:1 5:FAILED:1 6:FAILED:1 7:FAILED:1 8:FAILED:1 9:FAILED:1 10:SUCCEEDED:1 0:DEDUPLICATED:3]"
	if fmt.Sprint(got) != want {
		t.Fatalf("rows %v\nwant %s", got, want)
	}
}

// RunRows reads with ReadAttributes: a crashed attempt that still holds
// the claim reads IN_PROGRESS (the projection carries the claim token),
// and what the query sends asks for no recorded result, although the
// call's item holds one.
func TestRowsReadWithoutResults(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	rec := &Record{Key: "run/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", Step: "s", Tool: "t", ToolsetID: "ts_0123456789abcdef0123456789abcdef", InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute)}
	if ok, _, err := s.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rows, err := s.RunRows(ctx, "run")
	if err != nil || len(rows) != 1 || rows[0].Status != StatusInProgress {
		t.Fatalf("rows %+v %v, want the attempt IN_PROGRESS", rows, err)
	}
	if ok, err := s.Finish(ctx, "run/1", rec.Token, StateCompleted, json.RawMessage(`{"secret":"result"}`), &Row{Attempt: 1, Status: StatusSucceeded}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rec2 := &recordingQueries{API: client}
	if _, err := New(rec2, s.Table()).RunRows(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	if len(rec2.items) == 0 {
		t.Fatal("the query returned no item")
	}
	for _, it := range rec2.items {
		if _, ok := it["result"]; ok {
			t.Fatalf("the readers' query returned the recorded result: %v", it)
		}
		for k := range it {
			if !slices.Contains(ReadAttributes, k) {
				t.Errorf("the query returned %q, which ReadAttributes does not list", k)
			}
		}
	}
}

// recordingQueries keeps the items the Query requests returned.
type recordingQueries struct {
	API
	items []map[string]types.AttributeValue
}

func (r *recordingQueries) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := r.API.Query(ctx, in, o...)
	if err == nil {
		r.items = append(r.items, out.Items...)
	}
	return out, err
}

// A call's item with a mistyped attribute (attempts as a string) is an
// error on every read, never a zero value: the record, the claim's answer
// and the run's rows.
func TestMistypedAttributeIsAnError(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table()),
		Item: map[string]types.AttributeValue{
			AttrPK: &types.AttributeValueMemberS{Value: "RUN#run-bad"}, AttrSK: &types.AttributeValueMemberS{Value: "CALL#0000000000000000001"},
			"state": &types.AttributeValueMemberS{Value: "COMPLETED"}, "attempts": &types.AttributeValueMemberS{Value: "one"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, "run-bad/1"); err == nil {
		t.Error("Record read a mistyped attempts")
	}
	if _, _, err := s.Claim(ctx, &Record{Key: "run-bad/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", LeaseUntil: time.Now()}); err == nil {
		t.Error("Claim read a mistyped attempts")
	}
	if _, err := s.RunRows(ctx, "run-bad"); err == nil {
		t.Error("RunRows read a mistyped attempts")
	}
}
