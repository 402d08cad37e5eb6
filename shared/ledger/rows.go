package ledger

import (
	"context"
	"crypto/rand"
	"fmt"
	"github.com/toolgate/toolgate/shared/tool"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// Status of a ToolInvocation row: a row item's status attribute
// (table.Row), or its attempt entry's in a call's item. Its values are
// named Status*; a record's State values are named State*.
type Status string

const (
	StatusSucceeded    Status = "SUCCEEDED"    // the tool ran and its output was accepted
	StatusFailed       Status = "FAILED"       // the tool ran, or was refused after the claim, and failed with ErrorCode
	StatusDeduplicated Status = "DEDUPLICATED" // a replay of a COMPLETED key: the recorded result, the tool not run
	StatusRefused      Status = "REFUSED"      // refused before the tool ran (input, toolset, in flight, cap)
	StatusUnknown      Status = "UNKNOWN"      // the side effect may have happened; a person reconciles it
	// StatusParked: the call was not sent and its key not claimed, because
	// the MCP tool changed on its server since the toolset pinned it
	// (tool.CallParked, dispatch.Config.Check); a later call under the
	// same key is a first attempt.
	StatusParked Status = "PARKED"
	// StatusInProgress: an attempt that holds the claim and has not finished.
	StatusInProgress Status = "IN_PROGRESS"
	// StatusReused: a call of a fork that took its parent run's recorded
	// result (Row.ReusedFrom names the parent call's key) instead of
	// running the tool; the call is COMPLETED with that result
	// (docs/fork.md, "Matching").
	StatusReused Status = "REUSED"
)

// Row is one ToolInvocation ledger row, as RunRows reads them
// (docs/ledger.md, "One item per call"): an attempt's entry in its call's
// item (table.Call: pk RUN#<run_id>, sk "CALL#<seq's sort key>",
// tool.Seq SortKey: each component padded to 19 digits); a row item of
// its own (table.Row), written by PutRow, for an invocation that claimed
// nothing (sk "CALL#<seq's sort key>#<started_at, unix ns, 19
// digits>#<8 random hex>", so that a run's rows come back in call order
// and then in time order, and two rows never share a key); or one
// DEDUPLICATED row counting a call's replays.
// Rows hold digests and sizes, never inputs, outputs, secrets or message
// bodies.
// Its dynamodbav tags are a row item's attributes (PutRow).
type Row struct {
	RunID          string   `json:"run_id" dynamodbav:"run_id"`
	Seq            tool.Seq `json:"seq" dynamodbav:"seq"`
	Attempt        int      `json:"attempt" dynamodbav:"attempt"` // the ledger's attempt count, 0 when refused before a claim
	Step           string   `json:"step" dynamodbav:"step"`
	Tool           string   `json:"tool" dynamodbav:"tool"`
	ToolsetID      string   `json:"toolset_id" dynamodbav:"toolset_id"`
	IdempotencyKey string   `json:"idempotency_key" dynamodbav:"idempotency_key"`
	// ExternalKey is the key the call's third party was sent
	// (Record.ExternalKey), on the rows of a call's item; a row item of
	// its own (nothing was sent) has none and never stores one. The row a
	// sealing store's Finish or Release is given must carry it: the seal
	// covers it (docs/ledger.md, "Records are sealed by the function that
	// writes them").
	ExternalKey string `json:"external_key,omitempty" dynamodbav:"-"`
	// Layout is the layout of the call's item the row's attempt holds
	// (Record.Layout), which Finish and Release write in; never stored.
	Layout Layout `json:"-" dynamodbav:"-"`
	// FirstStartedAt is the start of the call's first attempt
	// (Record.FirstStartedAt), which the seal a Finish or Release writes
	// covers; never stored or shown as a row's (a call item's rows read it
	// as zero). Zero on attempt 1 stands for StartedAt.
	FirstStartedAt time.Time `json:"-" dynamodbav:"-"`
	Status         Status    `json:"status" dynamodbav:"status"`
	ErrorCode      string    `json:"error_code,omitempty" dynamodbav:"error_code,omitempty"`
	Retryable      bool      `json:"retryable" dynamodbav:"retryable"`
	StartedAt      time.Time `json:"started_at" dynamodbav:"started_at"`
	EndedAt        time.Time `json:"ended_at" dynamodbav:"ended_at"`
	DurationMS     int64     `json:"duration_ms" dynamodbav:"duration_ms"`
	InputDigest    string    `json:"input_digest,omitempty" dynamodbav:"input_digest,omitempty"` // "sha256:<hex>" of the RFC 8785 input
	InputBytes     int       `json:"input_bytes" dynamodbav:"input_bytes"`
	OutputDigest   string    `json:"output_digest,omitempty" dynamodbav:"output_digest,omitempty"`
	OutputBytes    int       `json:"output_bytes" dynamodbav:"output_bytes"`
	// MemoryMB is the function's configured memory: with DurationMS it
	// estimates cost in GB-seconds.
	MemoryMB  int   `json:"memory_mb" dynamodbav:"memory_mb"`
	ExpiresAt int64 `json:"expires_at" dynamodbav:"expires_at"`
	// ReviewID and Approver name the approval a gated call ran under
	// (docs/reviews.md); empty for an ungated call or one refused before
	// its approval was checked.
	ReviewID string `json:"review_id,omitempty" dynamodbav:"review_id,omitempty"`
	Approver string `json:"approver,omitempty" dynamodbav:"approver,omitempty"`
	// ParentRunID is, for a call of a child run, the execution ARN of the
	// run whose workflow step started it (docs/solutions.md, "Workflow
	// steps"); empty otherwise.
	ParentRunID string `json:"parent_run_id,omitempty" dynamodbav:"parent_run_id,omitempty"`
	// Count is how many invocations the row stands for: a call's replays
	// are one DEDUPLICATED row with their count (docs/ledger.md); 0 means 1.
	Count int `json:"count,omitempty" dynamodbav:"-"`
	// AfterClaimRequest marks a row item of an invocation whose claim
	// request reached the call's item (counted in its invocations) and that
	// did not claim it: in flight, another call, the attempt cap. RunRows
	// counts a call's replays as its invocations less its attempts and
	// these rows.
	AfterClaimRequest bool `json:"-" dynamodbav:"after_claim_request,omitempty"`
	// Reason is a stable word saying why a refused call was refused where
	// its code alone does not tell: seal.ReasonRecordForged,
	// seal.ReasonBindingForged (docs/ledger.md, "Records are sealed by the
	// function that writes them"); empty otherwise.
	Reason string `json:"refusal_reason,omitempty" dynamodbav:"refusal_reason,omitempty"`
	// ParkCause, PinnedDigest, CurrentDigest, ChangedPointers, ParkTarget
	// and ParkScope say why a PARKED row's call parked (docs/parking.md,
	// "The PARKED row"; shared/park, Detail): its cause (tool.schema_changed
	// or credentials.expired); for a changed tool the digests ("sha256:"
	// and hex) of its pinned and its server's current definition (none
	// when the server lists it no more) and the JSON Pointers (RFC 6901)
	// where they differ, sorted, at most park.MaxChangedPointers; for an
	// expired credential its target and scope as the vault names them,
	// never a secret. Empty on every other row.
	ParkCause       string   `json:"park_cause,omitempty" dynamodbav:"park_cause,omitempty"`
	PinnedDigest    string   `json:"pinned_digest,omitempty" dynamodbav:"pinned_digest,omitempty"`
	CurrentDigest   string   `json:"current_digest,omitempty" dynamodbav:"current_digest,omitempty"`
	ChangedPointers []string `json:"changed_pointers,omitempty" dynamodbav:"changed_pointers,omitempty"`
	// AdditivePointers are those of ChangedPointers whose change is
	// additive (shared/mcptool, Classify; docs/parking.md, "Classifying a
	// change"), in their order; the others are breaking. Absent when none
	// is, and on rows written before changes were classified, whose
	// pointers read as breaking.
	AdditivePointers []string `json:"additive_pointers,omitempty" dynamodbav:"additive_pointers,omitempty"`
	ParkTarget       string   `json:"park_target,omitempty" dynamodbav:"park_target,omitempty"`
	ParkScope        string   `json:"park_scope,omitempty" dynamodbav:"park_scope,omitempty"`
	// ParkID is the park a call was sent again under, once a person
	// approved or resumed it (tool.Envelope.ParkID; docs/parking.md, "The
	// dispatcher"), with PinnedDigest and CurrentDigest the pinned and the
	// approved definition's digests when it was approved; empty on every
	// other row.
	ParkID string `json:"park_id,omitempty" dynamodbav:"park_id,omitempty"`
	// SchemaChange is "additive" on the row of a call its toolset sent
	// although its MCP tool's definition changed, every change additive
	// (on_schema_change allow_additive_input; docs/parking.md,
	// "allow_additive_input"), with PinnedDigest and CurrentDigest the
	// pinned and the server's definition's digests; empty on every other
	// row.
	SchemaChange string `json:"schema_change,omitempty" dynamodbav:"schema_change,omitempty"`
	// ReusedFrom is, on a REUSED row, the idempotency key of the parent
	// run's call whose recorded result the fork's call took (docs/fork.md,
	// "Matching"); empty on every other row. Only an attempt of a call's
	// item is REUSED: a row item of its own never holds one.
	ReusedFrom string `json:"reused_from,omitempty" dynamodbav:"-"`
	// EditedDigest and Editor are, on the row of a call run under an
	// approval with edits (docs/reviews.md, "Approve with edits"), the
	// digest (sha256:<hex> of the RFC 8785 form) of the input the tool ran
	// with, the reviewed input with the edits merged, and who edited it
	// (the approver); InputDigest stays the reviewed input's, which the
	// call was sent with. Empty on every other row.
	EditedDigest string `json:"edited_digest,omitempty" dynamodbav:"edited_digest,omitempty"`
	Editor       string `json:"editor,omitempty" dynamodbav:"editor,omitempty"`
	// Options is the call's options digest (Record.Options), which the
	// seal a Finish or Release writes covers; never stored with the row.
	Options []byte `json:"-" dynamodbav:"-"`
	// ItemSK is the sort key of the row's item of its own, set by PutRow
	// before its request (table.Row.SKShape; its partition key is
	// table.Row.Key(RunID)): what names this row, such as the source of a
	// parked call's webhook event id (docs/webhooks.md). Never stored as
	// an attribute, and empty on rows read back.
	ItemSK string `json:"-" dynamodbav:"-"`
}

// Invocations is how many invocations r stands for (Count, at least 1).
func (r *Row) Invocations() int { return max(r.Count, 1) }

// rowSK is a row item's sort key (table.Row.SKShape): after its call's
// item (callSK), in time order; 19 digits hold any positive int64.
func rowSK(seq tool.Seq, startedAt time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return table.RowSK(seq.SortKey(), startedAt.UnixNano(), b)
}

// PutRow writes one row. Its sort key includes the start time in
// nanoseconds and 4 random bytes, so rows of one key never overwrite each
// other; PutRow sets r.ItemSK to it (and r.ExpiresAt) before the request.
func (s *Store) PutRow(ctx context.Context, r *Row) error {
	r.ExpiresAt = s.now().Add(s.retention).Unix()
	r.ItemSK = rowSK(r.Seq, r.StartedAt)
	item, err := encodeRow(r, table.Row.Key(r.RunID), r.ItemSK)
	if err != nil {
		return fmt.Errorf("encode ledger row %s/%s: %w", r.RunID, r.Seq, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("put ledger row %s/%s: %w", r.RunID, r.Seq, err)
	}
	return nil
}

// RunRows returns a run's rows in call order, and within a call in time
// order, its replays last as one DEDUPLICATED row with their count: one
// Query of the run's partition (table.Call and table.Row share its key and
// their sort keys' prefix).
func (s *Store) RunRows(ctx context.Context, runID string) ([]Row, error) {
	return s.query(ctx, table.Call.Key(runID), table.Call.SKPrefix, "")
}

// KeyRows returns the rows of one call (one idempotency key) in time order,
// its replays last. Only that call's: the sort keys of the calls inside a
// loop that took seq begin with seq's too.
func (s *Store) KeyRows(ctx context.Context, runID string, seq tool.Seq) ([]Row, error) {
	return s.query(ctx, table.Call.Key(runID), callSK(seq), callSK(seq))
}

// ReadAttributes are the only attributes a reader of the ledger (an
// operator's toolgate ledger and toolgate invoke) gets: the rows' and the
// calls' digests, sizes, times and states, and toolset bodies — never a
// recorded result, which only the dispatcher reads. Every read for people
// sends them as its ProjectionExpression, and the Operator policy allows
// no other attribute (dynamodb:Attributes, docs/infra.md). They are the
// declaration's, table.ReadAttributes (access LedgerReads).
var ReadAttributes = table.ReadAttributes

// projection is table.RunRowAttributes (ReadAttributes less a toolset's
// body, which no call or row item holds) as a ProjectionExpression and
// its names, built once; requests only read them.
var projection, projectionNames = projectionOf(table.RunRowAttributes)

// projectionOf is attrs as a ProjectionExpression ("#p0, #p1, ...") and
// its names.
func projectionOf(attrs []string) (*string, map[string]string) {
	names := make(map[string]string, len(attrs))
	parts := make([]string, len(attrs))
	for i, a := range attrs {
		n := fmt.Sprintf("#p%d", i)
		names[n], parts[i] = a, n
	}
	return aws.String(strings.Join(parts, ", ")), names
}

// query reads the rows of the items of pk whose sort key begins with
// prefix, and, when only is set, is only or only + "#...".
func (s *Store) query(ctx context.Context, pk, prefix, only string) ([]Row, error) {
	var items []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.table),
			KeyConditionExpression: aws.String("#p0 = :pk AND begins_with(#p1, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(pk), ":prefix": str(prefix),
			},
			ProjectionExpression:     projection,
			ExpressionAttributeNames: projectionNames,
			ConsistentRead:           aws.Bool(true),
			ExclusiveStartKey:        start,
		})
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", pk, err)
		}
		for _, it := range out.Items {
			if sk := getS(it, AttrSK); only == "" || sk == only || strings.HasPrefix(sk, only+"#") {
				items = append(items, it)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	// Items come in sort-key order: a call's item, then its row items.
	var rows []Row
	var call []Row   // the current call's rows
	var dedup *Row   // the current call's replays
	var claims int64 // the current call's invocations less its replays so far
	flush := func() {
		sort.SliceStable(call, func(i, j int) bool { return call[i].StartedAt.Before(call[j].StartedAt) })
		rows = append(rows, call...)
		// A count the SDK's retries inflated is never shown on a call that
		// has no result: callRows gives no DEDUPLICATED row then.
		if dedup != nil && dedup.Count-int(claims) > 0 {
			dedup.Count -= int(claims)
			rows = append(rows, *dedup)
		}
		call, dedup, claims = nil, nil, 0
	}
	curSeq := tool.Seq("-")
	for _, it := range items {
		seq := seqAttr(it)
		if isCompact(it) { // the key alone names a compact call's seq
			var err error
			if seq, err = seqOfItem(it); err != nil {
				return nil, fmt.Errorf("%s %s: %w", pk, getS(it, AttrSK), err)
			}
		}
		if seq != curSeq {
			flush()
			curSeq = seq
		}
		if !isCompact(it) && getS(it, "state") == "" { // a row item
			r, err := decodeRow(it)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", pk, getS(it, AttrSK), err)
			}
			if r.AfterClaimRequest {
				claims++
			}
			call = append(call, r)
			continue
		}
		attempts, d, err := s.callRows(it)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", pk, getS(it, AttrSK), err)
		}
		call = append(call, attempts...)
		claims += int64(len(attempts))
		dedup = d
	}
	flush()
	return rows, nil
}

// callRows reads a call's item: one row per attempt entry, and, for a
// COMPLETED call only (replays are of a result), the DEDUPLICATED row
// holding the call's invocations (less the attempts and the refusals after
// a claim request, which query subtracts).
func (s *Store) callRows(it map[string]types.AttributeValue) ([]Row, *Row, error) {
	if isCompact(it) {
		return s.compactCallRows(it)
	}
	c, err := decodeCall(it)
	if err != nil {
		return nil, nil, err
	}
	var rows []Row
	for token, e := range c.AttemptLog {
		r := c.row(e)
		if r.Status == "" {
			// An attempt that never recorded its outcome: it holds the
			// claim, or it ended without a word (a crash, a timeout), and
			// its effect may have happened.
			r.Status = StatusUnknown
			if token == c.Token && c.State == StateInProgress {
				r.Status = StatusInProgress
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Attempt < rows[j].Attempt })
	if c.State != StateCompleted {
		return rows, nil, nil
	}
	last := time.UnixMilli(c.LastSeenAt).UTC()
	d := Row{RunID: c.RunID, Seq: c.Seq, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID, IdempotencyKey: c.IdempotencyKey,
		ExternalKey: c.externalKey(c.IdempotencyKey), InputDigest: c.InputDigest, ExpiresAt: c.ExpiresAt, Status: StatusDeduplicated, Count: int(c.Invocations + c.Touched), StartedAt: last, EndedAt: last}
	for _, r := range rows { // a replay returns the successful attempt's output
		if r.Status == StatusSucceeded {
			d.OutputDigest, d.OutputBytes = r.OutputDigest, r.OutputBytes
		}
	}
	return rows, &d, nil
}

// compactCallRows is callRows of a call's item in LayoutCompact: its run
// and seq are its key's, its last invocation its TTL less the store's
// retention (every claim request renews the TTL; to the second).
func (s *Store) compactCallRows(it map[string]types.AttributeValue) ([]Row, *Row, error) {
	c, _, _, err := decodeCompact(it)
	if err != nil {
		return nil, nil, err
	}
	runID, ok := table.Call.ID(c.PK)
	if !ok {
		return nil, nil, fmt.Errorf("partition key %q is no run's", c.PK)
	}
	seq, err := seqOfItem(it)
	if err != nil {
		return nil, nil, err
	}
	rows := c.rows(runID, seq)
	state := c.Call.state()
	for i := range rows {
		if rows[i].Status == "" { // as callRows says
			rows[i].Status = StatusUnknown
			if i == len(rows)-1 && state == StateInProgress {
				rows[i].Status = StatusInProgress
			}
		}
	}
	if state != StateCompleted {
		return rows, nil, nil
	}
	last := time.Unix(c.ExpiresAt, 0).Add(-s.retention).UTC()
	d := Row{RunID: runID, Seq: seq, Step: c.Call.Step, Tool: c.Call.Tool, ToolsetID: rows[0].ToolsetID, IdempotencyKey: rows[0].IdempotencyKey,
		ExternalKey: rows[0].ExternalKey, InputDigest: rows[0].InputDigest, ExpiresAt: c.ExpiresAt, Status: StatusDeduplicated,
		Count: int(c.Invocations), StartedAt: last, EndedAt: last}
	for _, r := range rows {
		if r.Status == StatusSucceeded || r.Status == StatusReused {
			d.OutputDigest, d.OutputBytes = r.OutputDigest, r.OutputBytes
		}
	}
	return rows, &d, nil
}
