package ledger_test

// The ledger's items as stored: testdata/ledger-items holds items of every
// kind the ledger owns, as its code wrote them (README.md there). The
// tests here check that today's code writes exactly those items
// (TestItemsAsWritten; -update rewrites the fixtures of today's code) and
// reads every one of them, those earlier code wrote included, through its
// public reads (TestItemsAsStoredRead).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

var update = flag.Bool("update", false, "rewrite testdata/ledger-items/<kind>.json from the items today's code writes")

// The values the fixtures are written with.
const (
	fxRun       = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-digest:run-1"
	fxToolsetID = "ts_0123456789abcdef0123456789abcdef"
	fxDigest    = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	fxOutDigest = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	fxApprover  = "arn:aws:iam::123456789012:user/reviewer"
	fxParentRun = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-parent:run-0"
	fxProofID   = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
)

// fxSecret is the stage secret the fixtures' external keys are made with.
var fxSecret = []byte("toolgate fixtures' external key secret, 32+ bytes")

// fxExternal is the external key of fxRun/seq under fxSecret.
func fxExternal(seq string) string {
	k, err := externalkey.New(fxSecret, fxRun, tool.Seq(seq))
	if err != nil {
		panic(err)
	}
	return k
}

// fxNow is the clock the fixtures are written at (unix ms 1772359200123).
var fxNow = time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)

// A writer writes one item of its kind on s (at fxNow) and db.
type writer func(ctx context.Context, s *ledger.Store, db *dynamodb.Client) error

// claim is a first attempt's claim of fxRun/seq with token tok.
func claim(ctx context.Context, s *ledger.Store, seq, tok string) (*ledger.Record, error) {
	r := &ledger.Record{Key: fxRun + "/" + seq, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest, InputBytes: 120,
		LeaseUntil: fxNow.Add(15 * time.Minute), Token: tok, ExternalKey: fxExternal(seq)}
	ok, _, err := s.Claim(ctx, r)
	if err == nil && !ok {
		err = fmt.Errorf("claim %s: not claimed", r.Key)
	}
	return r, err
}

// attemptRow is the row of attempt n of fxRun/seq, run from fxNow for 1.5 s.
func attemptRow(seq string, n int, st ledger.Status, code string) *ledger.Row {
	r := &ledger.Row{RunID: fxRun, Seq: tool.Seq(seq), Attempt: n, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID,
		IdempotencyKey: fxRun + "/" + seq, Status: st, ErrorCode: code, StartedAt: fxNow, EndedAt: fxNow.Add(1500 * time.Millisecond),
		DurationMS: 1500, InputDigest: fxDigest, InputBytes: 120, MemoryMB: 256}
	if st == ledger.StatusSucceeded {
		r.OutputDigest, r.OutputBytes = fxOutDigest, 24
	}
	return r
}

func finish(ctx context.Context, s *ledger.Store, r *ledger.Record, st ledger.State, result string, row *ledger.Row) error {
	var res json.RawMessage
	if result != "" {
		res = json.RawMessage(result)
	}
	ok, err := s.Finish(ctx, r.Key, r.Token, st, res, row)
	if err == nil && !ok {
		err = fmt.Errorf("finish %s: lost the claim", r.Key)
	}
	return err
}

// callWriters write call items (call.json), one state each.
var callWriters = map[string]writer{
	"in-progress": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		_, err := claim(ctx, s, "1", "00000000000000000000000000000001")
		return err
	},
	// Completed, under an approval, and replayed once a minute later.
	"completed": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r, err := claim(ctx, s, "2", "00000000000000000000000000000002")
		if err != nil {
			return err
		}
		row := attemptRow("2", 1, ledger.StatusSucceeded, "")
		row.ReviewID, row.Approver = "rv_0123456789abcdef0123456789abcdef", fxApprover
		if err := finish(ctx, s, r, ledger.StateCompleted, `{"message_id":"m-1"}`, row); err != nil {
			return err
		}
		replay := &ledger.Record{Key: r.Key, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest,
			LeaseUntil: fxNow.Add(16 * time.Minute), Token: "00000000000000000000000000000022", ExternalKey: fxExternal("2")}
		_, _, err = s.WithClock(func() time.Time { return fxNow.Add(time.Minute) }).Claim(ctx, replay)
		return err
	},
	"failed": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r, err := claim(ctx, s, "3", "00000000000000000000000000000003")
		if err != nil {
			return err
		}
		row := attemptRow("3", 1, ledger.StatusFailed, "TOOL_UPSTREAM_UNAVAILABLE")
		row.Retryable = true
		return finish(ctx, s, r, ledger.StateFailed, "", row)
	},
	// Marked UNKNOWN with its attempt's entry never finished (a crash).
	"unknown": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r, err := claim(ctx, s, "4", "00000000000000000000000000000004")
		if err != nil {
			return err
		}
		ok, err := s.MarkUnknown(ctx, r, "TOOL_RETRY_REQUIRES_IDEMPOTENCY")
		if err == nil && !ok {
			err = fmt.Errorf("mark %s unknown: not marked", r.Key)
		}
		return err
	},
	// Failed once, re-claimed (a random token) and completed with a NULL
	// result.
	"retried": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r, err := claim(ctx, s, "5", "00000000000000000000000000000005")
		if err != nil {
			return err
		}
		row := attemptRow("5", 1, ledger.StatusFailed, "TOOL_TIMEOUT")
		row.Retryable = true
		if err := finish(ctx, s, r, ledger.StateFailed, "", row); err != nil {
			return err
		}
		later := s.WithClock(func() time.Time { return fxNow.Add(2 * time.Second) })
		old, err := later.Record(ctx, r.Key)
		if err != nil {
			return err
		}
		if ok, err := later.Reclaim(ctx, old, fxNow.Add(17*time.Minute)); err != nil || !ok {
			return fmt.Errorf("reclaim %s: %v %v", r.Key, ok, err)
		}
		row = attemptRow("5", 2, ledger.StatusSucceeded, "")
		row.StartedAt, row.EndedAt = fxNow.Add(2*time.Second), fxNow.Add(3*time.Second)
		row.DurationMS = 1000
		return finish(ctx, later, old, ledger.StateCompleted, "", row)
	},
	// A call inside a for_each, of a child run.
	"in-for-each": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r, err := claim(ctx, s, "6.0.1", "00000000000000000000000000000006")
		if err != nil {
			return err
		}
		row := attemptRow("6.0.1", 1, ledger.StatusSucceeded, "")
		row.ParentRunID = fxParentRun
		return finish(ctx, s, r, ledger.StateCompleted, `{"items":[1,2]}`, row)
	},
}

// rowWriters write row items (row.json).
var rowWriters = map[string]writer{
	"refused-before-claim": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r := attemptRow("7", 0, ledger.StatusRefused, "TOOL_INPUT_INVALID")
		r.DurationMS, r.EndedAt, r.MemoryMB = 2, fxNow.Add(2*time.Millisecond), 128
		return s.PutRow(ctx, r)
	},
	// In flight: the claim request reached the in-progress call's item.
	"refused-after-claim-request": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r := attemptRow("1", 1, ledger.StatusRefused, "TOOL_UPSTREAM_UNAVAILABLE")
		r.Retryable, r.AfterClaimRequest = true, true
		r.StartedAt, r.EndedAt, r.DurationMS = fxNow.Add(time.Second), fxNow.Add(time.Second+3*time.Millisecond), 3
		return s.PutRow(ctx, r)
	},
	"parked": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		r := attemptRow("8", 0, ledger.StatusParked, "CALL_PARKED")
		r.DurationMS, r.EndedAt = 40, fxNow.Add(40*time.Millisecond)
		return s.PutRow(ctx, r)
	},
}

// fxToolset is the toolset toolset.json holds: send-email from the catalog.
func fxToolset() (*toolset.Toolset, error) {
	return toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
}

var toolsetWriters = map[string]writer{
	"send-email": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		ts, err := fxToolset()
		if err != nil {
			return err
		}
		_, err = s.RegisterToolset(ctx, ts)
		return err
	},
}

// fxPublished is the published version published.json holds.
var fxPublished = ledger.Published{Solution: "digest",
	VersionARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev_digest:3", Version: 3, ToolsetID: fxToolsetID,
	OutputBoundBytes: 262144, InputLimitBytes: 65536, RunTimeoutSeconds: 900, SourceDigest: fxDigest, Publisher: fxApprover}

var publishedWriters = map[string]writer{
	"digest": func(ctx context.Context, s *ledger.Store, _ *dynamodb.Client) error {
		return s.RecordPublished(ctx, fxPublished)
	},
}

// fxProof is the accepted proof proof.json holds.
var fxProof = caller.ProofRecord{ID: fxProofID, Binding: "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
	ARN: "arn:aws:sts::123456789012:assumed-role/operator/alice", ExpiresAt: time.Unix(fxNow.Unix()+960, 0)}

var proofWriters = map[string]writer{
	"accepted": func(ctx context.Context, s *ledger.Store, db *dynamodb.Client) error {
		_, fresh, err := ledger.ProofTable{DB: db, Table: s.Table()}.Record(ctx, fxProof)
		if err == nil && !fresh {
			err = fmt.Errorf("proof %s recorded before", fxProof.ID)
		}
		return err
	},
}

// fixtureKinds are today's fixtures: file -> the writers of its items.
var fixtureKinds = []struct {
	file    string
	writers map[string]writer
}{
	{"call.json", callWriters}, {"row.json", rowWriters}, {"toolset.json", toolsetWriters},
	{"published.json", publishedWriters}, {"proof.json", proofWriters},
}

func dynalite(t *testing.T) *dynamodb.Client {
	t.Helper()
	return local.DynamoDB(localtest.Dynalite(t).Endpoint())
}

// createTable creates a ledger table named tab and waits until dynalite
// has it: a request right after CreateTable may find no table.
func createTable(t *testing.T, db *dynamodb.Client, tab string) {
	t.Helper()
	ctx := context.Background()
	if err := ledger.CreateTable(ctx, db, tab); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 10*time.Millisecond, 100*time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tab)}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// Today's code writes the items testdata/ledger-items holds, but for
// what varies by nature (normalise): a re-claim's random token and a row
// item's random sort key suffix. With -update, it rewrites them.
func TestItemsAsWritten(t *testing.T) {
	ctx := context.Background()
	db := dynalite(t)
	n := 0
	for _, k := range fixtureKinds {
		got := map[string]Item{}
		for name, write := range k.writers {
			n++
			tab := fmt.Sprintf("written-%d", n)
			createTable(t, db, tab)
			if err := write(ctx, ledger.New(db, tab).WithClock(func() time.Time { return fxNow }), db); err != nil {
				t.Fatalf("%s %s: %v", k.file, name, err)
			}
			out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tab)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Items) != 1 {
				t.Fatalf("%s %s wrote %d items, want 1", k.file, name, len(out.Items))
			}
			got[name] = out.Items[0]
		}
		if *update {
			if err := writeItems(k.file, got); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := readItems(k.file)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != len(got) {
			t.Errorf("%s holds %d items, the writers write %d", k.file, len(want), len(got))
		}
		for name, it := range got {
			g, w := normalise(it), normalise(want[name])
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.MarshalIndent(itemJSON(g), "", " ")
				wj, _ := json.MarshalIndent(itemJSON(w), "", " ")
				t.Errorf("%s %s: today's code writes\n%s\nwant\n%s", k.file, name, gj, wj)
			}
		}
	}
}

var rowSuffix = regexp.MustCompile(`#[0-9a-f]{8}$`)

// normalise is it with what varies by nature replaced: each attempt_log
// key, and the token naming it, by "attempt-<n>", and so each compact
// attempt's token; a row item's sort key's random suffix by "#xxxxxxxx".
func normalise(it Item) Item {
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = v
	}
	if sk, ok := it["sk"].(*types.AttributeValueMemberS); ok {
		out["sk"] = &types.AttributeValueMemberS{Value: rowSuffix.ReplaceAllString(sk.Value, "#xxxxxxxx")}
	}
	if c, ok := it["c"].(*types.AttributeValueMemberM); ok { // compact: the attempts' tokens
		cc := make(map[string]types.AttributeValue, len(c.Value))
		for k, v := range c.Value {
			cc[k] = v
		}
		if a, ok := c.Value["a"].(*types.AttributeValueMemberL); ok {
			var list []types.AttributeValue
			for i, e := range a.Value {
				if m, ok := e.(*types.AttributeValueMemberM); ok {
					mm := make(map[string]types.AttributeValue, len(m.Value))
					for k, v := range m.Value {
						mm[k] = v
					}
					mm["tk"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("attempt-%d", i+1)}
					e = &types.AttributeValueMemberM{Value: mm}
				}
				list = append(list, e)
			}
			cc["a"] = &types.AttributeValueMemberL{Value: list}
		}
		out["c"] = &types.AttributeValueMemberM{Value: cc}
		return out
	}
	log, ok := it["attempt_log"].(*types.AttributeValueMemberM)
	if !ok {
		return out
	}
	entries := map[string]types.AttributeValue{}
	for tok, e := range log.Value {
		name := "attempt-?"
		if m, ok := e.(*types.AttributeValueMemberM); ok {
			if n, ok := m.Value["n"].(*types.AttributeValueMemberN); ok {
				name = "attempt-" + n.Value
			}
		}
		entries[name] = e
		if cur, ok := it["token"].(*types.AttributeValueMemberS); ok && cur.Value == tok {
			out["token"] = &types.AttributeValueMemberS{Value: name}
		}
	}
	out["attempt_log"] = &types.AttributeValueMemberM{Value: entries}
	return out
}

// putItems puts the items of the fixture files, as they are, in a new
// table on db, and returns a store on it.
func putItems(t *testing.T, db *dynamodb.Client, files ...string) *ledger.Store {
	t.Helper()
	ctx := context.Background()
	tab := fmt.Sprintf("stored-%d", time.Now().UnixNano())
	createTable(t, db, tab)
	for _, f := range files {
		items, err := readItems(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, it := range items {
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tab), Item: it}); err != nil {
				t.Fatalf("%s %s: %v", f, name, err)
			}
		}
	}
	return ledger.New(db, tab)
}

func ms(d time.Duration) time.Time { return time.UnixMilli(fxNow.Add(d).UnixMilli()) }

// Every stored item reads back, through the ledger's public reads, as the
// values its writer gave.
func TestItemsAsStoredRead(t *testing.T) {
	ctx := context.Background()
	db := dynalite(t)

	t.Run("calls", func(t *testing.T) { readCalls(t, db, "call.json", ledger.LayoutCompact) })
	// The items of the ledger before the compact layout (call.json then).
	t.Run("calls before the compact layout", func(t *testing.T) { readCalls(t, db, "call.before-compact.json", ledger.LayoutNamed) })

	// Calls claimed before external keys: each keeps the readable key it
	// was sent with, also after a claim of today's code (which writes
	// nothing on an item of the previous layout) and a re-claim.
	t.Run("calls before external keys", func(t *testing.T) {
		s := putItems(t, db, "call.before-external-key.json")
		for _, seq := range []string{"1", "2", "3", "4", "5", "6.0.1"} {
			key := fxRun + "/" + seq
			if r, err := s.Record(ctx, key); err != nil || r.ExternalKey != key {
				t.Fatalf("record %s: %+v %v; want the readable key as its external key", seq, r, err)
			}
		}
		rows, err := s.RunRows(ctx, fxRun)
		if err != nil || len(rows) == 0 {
			t.Fatalf("rows %v %v", rows, err)
		}
		for _, r := range rows {
			if r.ExternalKey != r.IdempotencyKey {
				t.Errorf("row %s/%d: external key %q, want the readable %q", r.Seq, r.Attempt, r.ExternalKey, r.IdempotencyKey)
			}
		}
		key := fxRun + "/3" // FAILED: a retry after the upgrade claims it again
		rec := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest,
			LeaseUntil: time.Now().Add(time.Minute), ExternalKey: fxExternal("3")}
		claimed, old, err := s.Claim(ctx, rec)
		if err != nil || claimed || old.ExternalKey != key {
			t.Fatalf("claim after the upgrade: %v %+v %v; want the record with the readable key", claimed, old, err)
		}
		if ok, err := s.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil || old.ExternalKey != key {
			t.Fatalf("re-claim: %v %v %q", ok, err, old.ExternalKey)
		}
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "RUN#" + fxRun}, "sk": &types.AttributeValueMemberS{Value: "CALL#" + tool.Seq("3").SortKey()}}})
		if err != nil || out.Item["external_key"] != nil || out.Item["c"] != nil {
			t.Fatalf("the claim after the upgrade wrote on the previous layout's item: %v %v", out.Item, err)
		}
		if r, err := s.Record(ctx, key); err != nil || r.ExternalKey != key || r.Attempts != 2 {
			t.Fatalf("record after the re-claim: %+v %v; want attempt 2 with the readable key", r, err)
		}
	})

	// Items with a number seq, as the ledger wrote them before for_each.
	t.Run("calls before for_each", func(t *testing.T) {
		s := putItems(t, db, "call.before-for-each.json", "row.before-for-each.json")
		run := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-digest:run-before-for-each"
		exp := fxNow.Add(ledger.DefaultRetention).Unix()
		r, err := s.Record(ctx, run+"/1")
		want := &ledger.Record{Key: run + "/1", RunID: run, Seq: "1", Step: "send", Tool: "send-email", InputDigest: fxDigest,
			State: ledger.StateCompleted, Attempts: 1, LeaseUntil: ms(15 * time.Minute), Result: json.RawMessage(`{"message_id":"m-1"}`),
			UpdatedAt: ms(0), ToolsetID: fxToolsetID, Token: "00000000000000000000000000000001", StartedAt: fxNow, FirstStartedAt: fxNow, Seal: seal.Absent,
			ExternalKey: run + "/1", Layout: ledger.LayoutNamed}
		if err != nil || !reflect.DeepEqual(r, want) {
			t.Errorf("record 1: %v\n got %+v\nwant %+v", err, r, want)
		}
		if r, err := s.Record(ctx, run+"/2"); err != nil || r.Seq != "2" || r.State != ledger.StateInProgress || r.Token != "00000000000000000000000000000002" {
			t.Errorf("record 2: %+v %v", r, err)
		}
		rows, err := s.RunRows(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		last := fxNow.Add(time.Minute).Truncate(time.Millisecond)
		base := ledger.Row{RunID: run, Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, InputDigest: fxDigest, ExpiresAt: exp}
		row := func(f func(r *ledger.Row)) ledger.Row { r := base; f(&r); return r }
		wantRows := []ledger.Row{
			row(func(r *ledger.Row) {
				r.Seq, r.Attempt, r.IdempotencyKey, r.Status, r.StartedAt, r.EndedAt = "1", 1, run+"/1", ledger.StatusSucceeded, fxNow, fxNow.Add(1500*time.Millisecond)
				r.ExternalKey = run + "/1"
				r.DurationMS, r.InputBytes, r.OutputDigest, r.OutputBytes, r.MemoryMB, r.ExpiresAt = 1500, 120, fxOutDigest, 24, 256, exp+60
			}),
			row(func(r *ledger.Row) {
				r.Seq, r.IdempotencyKey, r.Status, r.Count, r.StartedAt, r.EndedAt = "1", run+"/1", ledger.StatusDeduplicated, 1, last, last
				r.ExternalKey = run + "/1"
				r.OutputDigest, r.OutputBytes, r.ExpiresAt = fxOutDigest, 24, exp+60
			}),
			row(func(r *ledger.Row) {
				r.Seq, r.Attempt, r.IdempotencyKey, r.Status, r.StartedAt = "2", 1, run+"/2", ledger.StatusInProgress, fxNow
				r.ExternalKey = run + "/2"
			}),
			row(func(r *ledger.Row) {
				r.Seq, r.IdempotencyKey, r.Status, r.ErrorCode, r.StartedAt, r.EndedAt = "3", run+"/3", ledger.StatusRefused, "TOOL_INPUT_INVALID", fxNow, fxNow.Add(2*time.Millisecond)
				r.DurationMS, r.InputBytes, r.MemoryMB = 2, 120, 128
			}),
		}
		if !reflect.DeepEqual(rows, wantRows) {
			t.Errorf("run rows:\n got %+v\nwant %+v", rows, wantRows)
		}
		if rows, err := s.KeyRows(ctx, run, "3"); err != nil || len(rows) != 1 || rows[0].Seq != "3" {
			t.Errorf("key rows of 3: %+v %v", rows, err)
		}
	})

	t.Run("toolset", func(t *testing.T) {
		s := putItems(t, db, "toolset.json")
		want, err := fxToolset()
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Toolset(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := got.Canonical()
		wb, _ := want.Canonical()
		if got.ID != want.ID || string(gb) != string(wb) || !slices.Equal(slices.Sorted(maps.Keys(got.Tools)), []string{"send-email"}) {
			t.Errorf("toolset %s: %s", got.ID, gb)
		}
		// Registering it again finds the stored body the same.
		if created, err := s.RegisterToolset(ctx, want); err != nil || created {
			t.Errorf("register the stored toolset again: %v %v", created, err)
		}
	})

	t.Run("published", func(t *testing.T) {
		s := putItems(t, db, "published.json")
		got, err := s.PublishedSolution(ctx, "digest")
		if err != nil || got != fxPublished {
			t.Errorf("published: %+v %v\nwant %+v", got, err, fxPublished)
		}
	})

	// A published item written before run_timeout_seconds was: 0.
	t.Run("published before run timeout", func(t *testing.T) {
		s := putItems(t, db, "published.before-run-timeout.json")
		want := fxPublished
		want.VersionARN, want.Version, want.RunTimeoutSeconds = "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev_digest:2", 2, 0
		got, err := s.PublishedSolution(ctx, "digest")
		if err != nil || got != want {
			t.Errorf("published: %+v %v\nwant %+v", got, err, want)
		}
	})

	t.Run("proof", func(t *testing.T) {
		s := putItems(t, db, "proof.json")
		got, fresh, err := ledger.ProofTable{DB: db, Table: s.Table()}.Record(ctx, caller.ProofRecord{ID: fxProofID, Binding: "other",
			ARN: "arn:aws:iam::123456789012:user/mallory", ExpiresAt: fxNow.Add(time.Hour)})
		if err != nil || fresh || got.ID != fxProof.ID || got.Binding != fxProof.Binding || got.ARN != fxProof.ARN || !got.ExpiresAt.Equal(fxProof.ExpiresAt) {
			t.Errorf("proof: %+v %v %v\nwant %+v, recorded before", got, fresh, err, fxProof)
		}
	})
}

// readCalls checks that the call items of file (call.json, or
// call.before-compact.json in the previous layout), with row.json, read
// back as their writer gave them.
func readCalls(t *testing.T, db *dynamodb.Client, file string, layout ledger.Layout) {
	ctx := context.Background()
	named := layout == ledger.LayoutNamed
	{
		s := putItems(t, db, file, "row.json")
		exp := fxNow.Add(ledger.DefaultRetention).Unix()
		first := fxNow
		for _, c := range []struct {
			seq      string
			state    ledger.State
			attempts int
			token    string
			lease    time.Time
			updated  time.Time
			result   string
			code     string
			started  time.Time
		}{
			{"1", ledger.StateInProgress, 1, "00000000000000000000000000000001", ms(15 * time.Minute), ms(0), "", "", fxNow},
			{"2", ledger.StateCompleted, 1, "00000000000000000000000000000002", ms(15 * time.Minute), ms(0), `{"message_id":"m-1"}`, "", fxNow},
			{"3", ledger.StateFailed, 1, "00000000000000000000000000000003", ms(15 * time.Minute), ms(0), "", "TOOL_UPSTREAM_UNAVAILABLE", fxNow},
			{"4", ledger.StateUnknown, 1, "00000000000000000000000000000004", ms(15 * time.Minute), ms(0), "", "TOOL_RETRY_REQUIRES_IDEMPOTENCY", fxNow},
			{"5", ledger.StateCompleted, 2, "", ms(17 * time.Minute), ms(2 * time.Second), "", "", fxNow.Add(2 * time.Second)},
			{"6.0.1", ledger.StateCompleted, 1, "00000000000000000000000000000006", ms(15 * time.Minute), ms(0), `{"items":[1,2]}`, "", fxNow},
		} {
			key := fxRun + "/" + c.seq
			r, err := s.Record(ctx, key)
			if err != nil {
				t.Fatalf("record %s: %v", c.seq, err)
			}
			want := &ledger.Record{Key: key, RunID: fxRun, Seq: tool.Seq(c.seq), Step: "send", Tool: "send-email", InputDigest: fxDigest,
				State: c.state, Attempts: c.attempts, LeaseUntil: c.lease, ErrorCode: c.code, UpdatedAt: c.updated,
				ToolsetID: fxToolsetID, Token: c.token, StartedAt: c.started, FirstStartedAt: first, Seal: seal.Absent, ExternalKey: fxExternal(c.seq),
				Layout: layout, InputBytes: 120}
			if !named { // no updated_at; the input's size once per call
				want.UpdatedAt = time.Time{}
			} else {
				want.InputBytes = 0
			}
			if c.result != "" {
				want.Result = json.RawMessage(c.result)
			}
			if c.token == "" { // re-claimed: a random token
				want.Token = r.Token
			}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("record %s:\n got %+v\nwant %+v", c.seq, r, want)
			}
		}
		rows, err := s.RunRows(ctx, fxRun)
		if err != nil {
			t.Fatal(err)
		}
		row := func(seq string, n int, st ledger.Status, code string, f func(*ledger.Row)) ledger.Row {
			r := attemptRow(seq, n, st, code)
			// The TTL of a call renewed by its replay (2) or, in the previous
			// layout, re-claim (5).
			renewed := map[string]int64{"2": 60}
			if named {
				renewed["5"] = 2
			}
			r.StartedAt, r.EndedAt, r.ExpiresAt = r.StartedAt.UTC(), r.EndedAt.UTC(), exp+renewed[seq]
			if n > 0 { // an attempt of a call's item: its external key
				r.ExternalKey = fxExternal(seq)
			}
			if f != nil {
				f(r)
			}
			return *r
		}
		last := fxNow.Add(time.Minute).Truncate(time.Millisecond)
		if !named { // the TTL less the retention: to the second
			last = fxNow.Add(time.Minute).Truncate(time.Second)
		}
		want := []ledger.Row{
			row("1", 1, ledger.StatusInProgress, "", func(r *ledger.Row) {
				r.EndedAt, r.DurationMS, r.MemoryMB = time.Time{}, 0, 0
				if named {
					r.InputBytes = 0
				}
			}),
			row("1", 1, ledger.StatusRefused, "TOOL_UPSTREAM_UNAVAILABLE", func(r *ledger.Row) {
				r.Retryable, r.AfterClaimRequest, r.ExternalKey = true, true, "" // a row item of its own
				r.StartedAt, r.EndedAt, r.DurationMS = fxNow.Add(time.Second), fxNow.Add(time.Second+3*time.Millisecond), 3
			}),
			row("2", 1, ledger.StatusSucceeded, "", func(r *ledger.Row) {
				r.ReviewID, r.Approver = "rv_0123456789abcdef0123456789abcdef", fxApprover
			}),
			{RunID: fxRun, Seq: "2", Step: "send", Tool: "send-email", ToolsetID: fxToolsetID, IdempotencyKey: fxRun + "/2",
				ExternalKey: fxExternal("2"), InputDigest: fxDigest, ExpiresAt: exp + 60, Status: ledger.StatusDeduplicated, Count: 1, StartedAt: last, EndedAt: last,
				OutputDigest: fxOutDigest, OutputBytes: 24},
			row("3", 1, ledger.StatusFailed, "TOOL_UPSTREAM_UNAVAILABLE", func(r *ledger.Row) { r.Retryable = true }),
			row("4", 1, ledger.StatusUnknown, "", func(r *ledger.Row) {
				r.EndedAt, r.DurationMS, r.MemoryMB = time.Time{}, 0, 0
				if named {
					r.InputBytes = 0
				}
			}),
			row("5", 1, ledger.StatusFailed, "TOOL_TIMEOUT", func(r *ledger.Row) { r.Retryable = true }),
			row("5", 2, ledger.StatusSucceeded, "", func(r *ledger.Row) {
				r.StartedAt, r.EndedAt, r.DurationMS = fxNow.Add(2*time.Second), fxNow.Add(3*time.Second), 1000
			}),
			row("6.0.1", 1, ledger.StatusSucceeded, "", func(r *ledger.Row) { r.ParentRunID = fxParentRun }),
			row("7", 0, ledger.StatusRefused, "TOOL_INPUT_INVALID", func(r *ledger.Row) {
				r.DurationMS, r.EndedAt, r.MemoryMB = 2, fxNow.Add(2*time.Millisecond), 128
			}),
			row("8", 0, ledger.StatusParked, "CALL_PARKED", func(r *ledger.Row) {
				r.DurationMS, r.EndedAt = 40, fxNow.Add(40*time.Millisecond)
			}),
		}
		if len(rows) != len(want) {
			t.Errorf("%d run rows, want %d: %+v", len(rows), len(want), rows)
		}
		for i := range min(len(rows), len(want)) {
			if !reflect.DeepEqual(rows[i], want[i]) {
				t.Errorf("run row %d:\n got %+v\nwant %+v", i, rows[i], want[i])
			}
		}
		if rows, err := s.KeyRows(ctx, fxRun, "6.0.1"); err != nil || len(rows) != 1 || rows[0].ParentRunID != fxParentRun {
			t.Errorf("key rows of 6.0.1: %+v %v", rows, err)
		}
	}
}
