package ledger

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// Layout is the layout of a call's item (docs/ledger.md, "The call item
// on the wire"). Its zero value is the layout written today.
type Layout int

const (
	// LayoutCompact is the call item every claim writes: the call in one
	// map attribute under short names, nothing the key implies, nothing
	// twice (table.Call: c, r, i, ls).
	LayoutCompact Layout = iota
	// LayoutNamed is the call item as written before, each field an
	// attribute of its own named in full (run_id, state, attempt_log...):
	// still read, and carried on in that layout, for the runs that started
	// before the upgrade.
	LayoutNamed
)

// String names the layout as docs/ledger.md does.
func (l Layout) String() string {
	if l == LayoutNamed {
		return "named"
	}
	return "compact"
}

// The compact call item's attributes (table.Call): the call (attrCall),
// its result (attrResult, COMPLETED only) and its invocations, beside the
// TTL. The members of attrCall are compactCall's tags. None is a DynamoDB
// reserved word, so the requests name them without placeholders.
const (
	attrCall        = "c"
	attrResult      = "r"
	attrInvocations = "i"
)

// compactItem is a call's item in LayoutCompact, mapped with the SDK's
// attributevalue (a mistyped attribute is an error, never a zero value);
// its result (attrResult, a string or NULL whose presence says COMPLETED)
// is read apart.
type compactItem struct {
	PK          string      `dynamodbav:"pk"`
	SK          string      `dynamodbav:"sk"`
	Call        compactCall `dynamodbav:"c"`
	Invocations int64       `dynamodbav:"i"`
	// ExpiresAt is the TTL (epoch seconds), which every claim request
	// renews: the last invocation plus the retention.
	ExpiresAt int64 `dynamodbav:"expires_at"`
}

// compactCall is the call item's c: what the call's first claim writes
// with if_not_exists, and the state later writes change.
type compactCall struct {
	Step string `dynamodbav:"s"`
	Tool string `dynamodbav:"t"`
	// Toolset is the toolset id's 16 bytes ("ts_" and their hex,
	// tool.ToolsetIDPattern); Digest the input digest's 32 ("sha256:" and
	// their hex).
	Toolset []byte `dynamodbav:"ts"`
	Digest  []byte `dynamodbav:"d"`
	// External is the external key's opaque run id (externalkey.RunID):
	// the key is it, "/" and the seq.
	External   string `dynamodbav:"k"`
	InputBytes int    `dynamodbav:"ib"`
	LeaseUntil int64  `dynamodbav:"l"` // unix ms
	// Attempts are the call's attempts in order: attempt n is Attempts[n-1],
	// and the last holds or held the claim.
	Attempts []compactAttempt `dynamodbav:"a"`
	// Options is the options digest's 16 bytes (Record.Options), only on
	// a call with keep, output_limit_bytes or a credential.
	Options []byte `dynamodbav:"o,omitempty"`
	// State is absent while an attempt holds the claim (IN_PROGRESS), and
	// once COMPLETED, which the last attempt's SUCCEEDED outcome says (and
	// the result's presence, for conditions).
	State State `dynamodbav:"st,omitempty"`
	// Code is an UNKNOWN record's error code when no attempt's outcome
	// holds it (MarkUnknown); otherwise a FAILED or UNKNOWN record's code
	// is its last attempt's.
	Code string `dynamodbav:"x,omitempty"`
	MAC  string `dynamodbav:"m,omitempty"` // the seal (seal.go)
	// Reconciled is the reconciliation that finished an UNKNOWN (or
	// lease-expired) record (Store.FinishReconciled); nil for a record no
	// reconciliation finished. A re-claim after a not_applied one keeps it.
	Reconciled *compactReconciled `dynamodbav:"rc,omitempty"`
}

// compactReconciled is a call's c.rc: the outcome of the reconciliation
// that finished it, who reconciled it and when (unix ms).
type compactReconciled struct {
	Outcome string `dynamodbav:"o"`
	By      string `dynamodbav:"b"`
	At      int64  `dynamodbav:"t"`
}

// compactAttempt is one attempt: its claim's token and start, and its row
// once it ended.
type compactAttempt struct {
	Token string `dynamodbav:"tk"`
	Start int64  `dynamodbav:"t"` // unix ns
	// Approver is the approver of the approval the attempt's claim ran
	// under (Record.Approver; a gated call only), written with the claim,
	// so that an attempt that never ended still names who approved it.
	Approver string          `dynamodbav:"ap,omitempty"`
	Outcome  *compactOutcome `dynamodbav:"o,omitempty"`
}

// compactOutcome is an ended attempt's row, less what the call holds: no
// status for SUCCEEDED; retryable is its code's (tool.Code.Retryable);
// ended is the start and the duration.
type compactOutcome struct {
	Status       Status `dynamodbav:"s,omitempty"`
	Code         string `dynamodbav:"c,omitempty"`
	DurationMS   int64  `dynamodbav:"du"`
	OutputBytes  int    `dynamodbav:"ob"`
	OutputDigest []byte `dynamodbav:"od,omitempty"`
	MemoryMB     int    `dynamodbav:"mm"`
	ReviewID     string `dynamodbav:"rv,omitempty"`
	Approver     string `dynamodbav:"ap,omitempty"`
	ParentRunID  string `dynamodbav:"pr,omitempty"`
	// ParkID, PinnedDigest and CurrentDigest: an attempt sent under an
	// approved or resumed park (Row.ParkID), and the digests' 32 bytes.
	ParkID        string `dynamodbav:"pk,omitempty"`
	PinnedDigest  []byte `dynamodbav:"pd,omitempty"`
	CurrentDigest []byte `dynamodbav:"cd,omitempty"`
	// SchemaChange: an attempt sent under a changed definition its
	// toolset allows (Row.SchemaChange), with the digests in pd and cd.
	SchemaChange string `dynamodbav:"sc,omitempty"`
	// ReusedFrom: a REUSED attempt's parent call key (Row.ReusedFrom).
	ReusedFrom string `dynamodbav:"rk,omitempty"`
	// EditedDigest (its 32 bytes) and Editor: an attempt run under an
	// approval with edits (Row.EditedDigest, Row.Editor).
	EditedDigest []byte `dynamodbav:"ed,omitempty"`
	Editor       string `dynamodbav:"eb,omitempty"`
}

// Hex digests and ids as the compact item holds them: their bytes.
const (
	digestPrefix  = "sha256:"
	toolsetPrefix = "ts_"
)

// hexBytes is s less prefix, hex-decoded into want bytes.
func hexBytes(s, prefix string, want int) ([]byte, error) {
	h, ok := strings.CutPrefix(s, prefix)
	b, err := hex.DecodeString(h)
	if !ok || err != nil || len(b) != want {
		return nil, fmt.Errorf("%q is not %s and %d hex digits", s, prefix, 2*want)
	}
	return b, nil
}

func bytesAttr(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// newCompactToken is a claim token of the compact layout: 6 random bytes
// in base64url (8 characters). It tells apart only the claims of one call
// made at once (the first claim's if_not_exists, a re-claim's condition
// on the attempts), which two claimers would have to draw alike: a chance
// of one in 2^48.
func newCompactToken() string {
	var b [6]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// The compact layout's requests, written as constant expressions over the
// declared short names (docs/ledger.md, "The call item on the wire").
const (
	// compactClaimUpdate sets the call once, renews the TTL (which dates
	// the last invocation: Store.lastSeen) and counts the invocation.
	compactClaimUpdate    = "SET c=if_not_exists(c,:c),expires_at=:e ADD i :i"
	compactClaimCondition = "attribute_not_exists(pk) OR attribute_exists(c)"
	// compactFinishCondition holds while attempt :n holds the claim: no
	// state set, no result, no later attempt.
	compactFinishCondition = "attribute_not_exists(c.st) AND attribute_not_exists(r) AND size(c.a)=:n"
)

// compactClaim is Claim on the compact layout; it reports done false when
// the item is not one (its condition failed).
func (s *Store) compactClaim(ctx context.Context, r *Record, now time.Time) (claimed bool, existing *Record, done bool, err error) {
	ts, err := hexBytes(r.ToolsetID, toolsetPrefix, 16)
	if err != nil {
		return false, nil, true, fmt.Errorf("claim %s: toolset id: %w", r.Key, err)
	}
	digest, err := hexBytes(r.InputDigest, digestPrefix, 32)
	if err != nil {
		return false, nil, true, fmt.Errorf("claim %s: input digest: %w", r.Key, err)
	}
	opaque, ok := strings.CutSuffix(r.ExternalKey, "/"+string(r.Seq))
	if !ok {
		return false, nil, true, fmt.Errorf("claim %s: the external key does not end in its seq", r.Key)
	}
	r.Attempts = 1
	call := map[string]types.AttributeValue{
		"s": str(r.Step), "t": str(r.Tool), "ts": bytesAttr(ts), "d": bytesAttr(digest), "k": str(opaque),
		"ib": tabledef.N(r.InputBytes), "l": tabledef.N(r.LeaseUntil.UnixMilli()),
		"a": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: newAttemptEntry(r.Token, r.StartedAt, r.Approver)}}},
	}
	if len(r.Options) > 0 {
		if len(r.Options) != OptionsDigestBytes {
			return false, nil, true, fmt.Errorf("claim %s: the options digest is %d bytes, not %d", r.Key, len(r.Options), OptionsDigestBytes)
		}
		call["o"] = bytesAttr(r.Options)
	}
	mac, err := s.sealOf(r, StateInProgress, "", nil)
	if err != nil {
		return false, nil, true, err
	}
	if mac != nil {
		call["m"] = str(*mac)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: callKey(r.RunID, r.Seq),
		UpdateExpression: aws.String(compactClaimUpdate), ConditionExpression: aws.String(compactClaimCondition),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberM{Value: call}, ":e": s.expires(), ":i": tabledef.N(1),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if IsConditionFailed(err) {
		return false, nil, false, nil
	}
	if err != nil {
		return false, nil, true, fmt.Errorf("claim %s: %w", r.Key, err)
	}
	it := out.Attributes
	if compactOurs(it, r.Token) {
		r.State, r.FirstStartedAt = StateInProgress, r.StartedAt
		return true, nil, true, nil
	}
	if existing, err = s.recordFromItem(r.Key, it); err != nil {
		// An item whose call is no record (a forger's c): never claimed
		// afresh, nothing to replay.
		return false, &Record{Key: r.Key, RunID: r.RunID, Seq: r.Seq, Seal: seal.Forged}, true, nil
	}
	return false, existing, true, nil
}

// newAttemptEntry is a new attempt's entry in c.a as its claim writes it:
// the claim's token, its start (unix ns) and, for a gated call, the
// approver of the approval it runs under (ap).
func newAttemptEntry(token string, start time.Time, approver string) map[string]types.AttributeValue {
	e := map[string]types.AttributeValue{"tk": str(token), "t": tabledef.N(start.UnixNano())}
	if approver != "" {
		e["ap"] = str(approver)
	}
	return e
}

// compactOurs reports whether the claim's answer it is our first claim:
// one attempt, ours, and no outcome yet (the three read as their types: a
// mistyped one is not ours, and the full read reports it).
func compactOurs(it map[string]types.AttributeValue, token string) bool {
	c, ok := it[attrCall].(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	if _, done := it[attrResult]; done {
		return false
	}
	if _, set := c.Value["st"]; set {
		return false
	}
	a, ok := c.Value["a"].(*types.AttributeValueMemberL)
	if !ok || len(a.Value) != 1 {
		return false
	}
	e, ok := a.Value[0].(*types.AttributeValueMemberM)
	if !ok {
		return false
	}
	tk, ok := e.Value["tk"].(*types.AttributeValueMemberS)
	return ok && tk.Value == token
}

// isCompact reports whether it is a call item in LayoutCompact.
func isCompact(it map[string]types.AttributeValue) bool {
	_, ok := it[attrCall]
	return ok
}

// decodeCompact maps a call's item in LayoutCompact, with its result (nil
// when it has none, or a NULL one; completed reports one is there).
func decodeCompact(it map[string]types.AttributeValue) (c *compactItem, result json.RawMessage, completed bool, err error) {
	c = &compactItem{}
	if err := attributevalue.UnmarshalMap(it, c); err != nil {
		return nil, nil, false, fmt.Errorf("a call's item: %w", err)
	}
	switch v := it[attrResult].(type) {
	case nil:
	case *types.AttributeValueMemberS:
		result, completed = json.RawMessage(v.Value), true
	case *types.AttributeValueMemberNULL:
		completed = true
	default:
		return nil, nil, false, fmt.Errorf("a call's item: its result is a %T", v)
	}
	return c, result, completed, nil
}

// seqOfItem is the seq a call's or row's sort key names.
func seqOfItem(it map[string]types.AttributeValue) (tool.Seq, error) {
	sk, ok := strings.CutPrefix(getS(it, AttrSK), table.CallSKPrefix)
	if !ok {
		return "", fmt.Errorf("sort key %q is no call's", getS(it, AttrSK))
	}
	sk, _, _ = strings.Cut(sk, "#")
	return tool.SeqOfSortKey(sk)
}

// state is the record's state: st when set; COMPLETED when the last
// attempt's outcome is SUCCEEDED or REUSED (written with the result in one request,
// so that a read without the result, as the operator's, tells it too);
// else IN_PROGRESS.
func (c *compactCall) state() State {
	if c.State != "" {
		return c.State
	}
	if len(c.Attempts) == 0 {
		return StateInProgress
	}
	if last := c.Attempts[len(c.Attempts)-1]; last.Outcome != nil && (last.Outcome.Status == "" || last.Outcome.Status == StatusReused) {
		return StateCompleted
	}
	return StateInProgress
}

// record is the idempotency record of key the compact item holds; nil
// when it holds no attempt (no claim of today's code writes one so: a
// forger's).
func (c *compactItem) record(key string, result json.RawMessage) *Record {
	if len(c.Call.Attempts) == 0 {
		return nil
	}
	runID, seq, _ := splitKey(key)
	cc := &c.Call
	last := cc.Attempts[len(cc.Attempts)-1]
	r := &Record{
		Key: key, RunID: runID, Seq: seq, Step: cc.Step, Tool: cc.Tool, ToolsetID: toolsetPrefix + hex.EncodeToString(cc.Toolset),
		InputDigest: digestPrefix + hex.EncodeToString(cc.Digest), InputBytes: cc.InputBytes, State: cc.state(),
		Attempts: len(cc.Attempts), LeaseUntil: time.UnixMilli(cc.LeaseUntil), Result: result, Token: last.Token,
		StartedAt: time.Unix(0, last.Start).UTC(), FirstStartedAt: time.Unix(0, cc.Attempts[0].Start).UTC(),
		ExternalKey: key, Layout: LayoutCompact, Options: cc.Options,
	}
	if cc.External != "" {
		r.ExternalKey = cc.External + "/" + string(seq)
	}
	if cc.Reconciled != nil {
		r.ReconciledBy = cc.Reconciled.By
	}
	if r.State == StateFailed || r.State == StateUnknown {
		r.ErrorCode = cc.Code
		if r.ErrorCode == "" && last.Outcome != nil {
			r.ErrorCode = last.Outcome.Code
		}
	}
	return r
}

// rows are the compact item's attempts as ToolInvocation rows, in order.
func (c *compactItem) rows(runID string, seq tool.Seq) []Row {
	cc := &c.Call
	key := seq.KeyIn(runID)
	ext := key
	if cc.External != "" {
		ext = cc.External + "/" + string(seq)
	}
	out := make([]Row, 0, len(cc.Attempts))
	for i, a := range cc.Attempts {
		start := time.Unix(0, a.Start).UTC()
		r := Row{RunID: runID, Seq: seq, Attempt: i + 1, Step: cc.Step, Tool: cc.Tool, ToolsetID: toolsetPrefix + hex.EncodeToString(cc.Toolset),
			IdempotencyKey: key, ExternalKey: ext, StartedAt: start,
			InputDigest: digestPrefix + hex.EncodeToString(cc.Digest), InputBytes: cc.InputBytes, ExpiresAt: c.ExpiresAt}
		if o := a.Outcome; o != nil {
			r.Status, r.ErrorCode, r.Retryable = o.Status, o.Code, tool.Code(o.Code).Retryable()
			if r.Status == "" {
				r.Status = StatusSucceeded
			}
			r.DurationMS, r.EndedAt = o.DurationMS, start.Add(time.Duration(o.DurationMS)*time.Millisecond)
			r.OutputBytes, r.MemoryMB = o.OutputBytes, o.MemoryMB
			if len(o.OutputDigest) > 0 {
				r.OutputDigest = digestPrefix + hex.EncodeToString(o.OutputDigest)
			}
			r.ReviewID, r.Approver, r.ParentRunID = o.ReviewID, o.Approver, o.ParentRunID
			r.ParkID, r.SchemaChange, r.ReusedFrom = o.ParkID, o.SchemaChange, o.ReusedFrom
			if len(o.EditedDigest) > 0 {
				r.EditedDigest, r.Editor = digestPrefix+hex.EncodeToString(o.EditedDigest), o.Editor
			}
			if len(o.PinnedDigest) > 0 {
				r.PinnedDigest = digestPrefix + hex.EncodeToString(o.PinnedDigest)
			}
			if len(o.CurrentDigest) > 0 {
				r.CurrentDigest = digestPrefix + hex.EncodeToString(o.CurrentDigest)
			}
		}
		out = append(out, r)
	}
	return out
}

// compactOutcomeOf is row's outcome as an attempt holds it: its status
// (none for SUCCEEDED), code, duration, output size and digest, memory,
// approval, parent run, the park or the additive schema change it was
// sent under with the definitions' digests, and the parent call a REUSED
// attempt took its result from.
func compactOutcomeOf(row *Row) types.AttributeValue {
	o := map[string]types.AttributeValue{
		"du": tabledef.N(row.DurationMS), "ob": tabledef.N(row.OutputBytes), "mm": tabledef.N(row.MemoryMB),
	}
	if row.Status != StatusSucceeded {
		o["s"] = str(string(row.Status))
	}
	if row.ErrorCode != "" {
		o["c"] = str(row.ErrorCode)
	}
	if b, err := hexBytes(row.OutputDigest, digestPrefix, 32); err == nil {
		o["od"] = bytesAttr(b)
	}
	if row.ReviewID != "" {
		o["rv"], o["ap"] = str(row.ReviewID), str(row.Approver)
	}
	if row.ParentRunID != "" {
		o["pr"] = str(row.ParentRunID)
	}
	if row.SchemaChange != "" {
		o["sc"] = str(row.SchemaChange)
	}
	if row.ReusedFrom != "" {
		o["rk"] = str(row.ReusedFrom)
	}
	if b, err := hexBytes(row.EditedDigest, digestPrefix, 32); err == nil {
		o["ed"], o["eb"] = bytesAttr(b), str(row.Editor)
	}
	if row.ParkID != "" || row.SchemaChange != "" {
		if row.ParkID != "" {
			o["pk"] = str(row.ParkID)
		}
		if b, err := hexBytes(row.PinnedDigest, digestPrefix, 32); err == nil {
			o["pd"] = bytesAttr(b)
		}
		if b, err := hexBytes(row.CurrentDigest, digestPrefix, 32); err == nil {
			o["cd"] = bytesAttr(b)
		}
	}
	return &types.AttributeValueMemberM{Value: o}
}

// attemptPath is the path of attempt n's member in the compact item
// ("c.a[0].o" for attempt 1's outcome).
func attemptPath(n int, member string) string {
	return "c.a[" + strconv.Itoa(n-1) + "]" + member
}

// stateIs is the condition that the compact record's state is still st
// (IN_PROGRESS: none set) and no result is there, and the values it uses.
func stateIs(st State, values map[string]types.AttributeValue) string {
	if st == StateInProgress {
		return "attribute_not_exists(c.st) AND attribute_not_exists(r)"
	}
	values[":os"] = str(string(st))
	return "c.st=:os"
}

// updateCompact sends one UpdateItem of the compact layout on key.
func (s *Store) updateCompact(ctx context.Context, key map[string]types.AttributeValue, update, cond string, values map[string]types.AttributeValue, ret types.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	in := &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key, UpdateExpression: aws.String(update),
		ExpressionAttributeValues: values, ReturnValues: ret}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	return s.db.UpdateItem(ctx, in)
}

// withMAC adds the seal mac (if any) to update's SET clause, as c.m.
func withMAC(update string, mac *string, values map[string]types.AttributeValue) string {
	if mac == nil {
		return update
	}
	values[":m"] = str(*mac)
	return strings.Replace(update, "SET ", "SET c.m=:m,", 1)
}

// compactReclaim is Reclaim on a compact record: one conditional
// UpdateItem on the state and the attempts read, appending the new
// attempt.
func (s *Store) compactReclaim(ctx context.Context, old *Record, lease time.Time) (bool, error) {
	token, now := newCompactToken(), s.now()
	next := *old
	next.Attempts, next.Token = old.Attempts+1, token
	mac, err := s.sealOf(&next, StateInProgress, "", nil)
	if err != nil {
		return false, err
	}
	values := map[string]types.AttributeValue{
		":n": tabledef.N(old.Attempts), ":l": tabledef.N(lease.UnixMilli()),
		":a": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: newAttemptEntry(token, now, old.Approver)}}},
	}
	cond := stateIs(old.State, values) + " AND size(c.a)=:n"
	update := withMAC("SET c.l=:l,c.a=list_append(c.a,:a) REMOVE c.st,c.x", mac, values)
	_, err = s.updateCompact(ctx, callKey(old.RunID, old.Seq), update, cond, values, types.ReturnValueNone)
	if IsConditionFailed(err) {
		// Our own update may have been applied and its response lost.
		cur, rerr := s.Record(ctx, old.Key)
		if rerr != nil || cur.Token != token {
			return false, nil
		}
	} else if err != nil {
		return false, fmt.Errorf("reclaim %s: %w", old.Key, err)
	}
	old.State, old.Attempts, old.LeaseUntil, old.Token, old.StartedAt = StateInProgress, old.Attempts+1, lease, token, now
	return true, nil
}

// compactMarkUnknown is MarkUnknown on a compact record.
func (s *Store) compactMarkUnknown(ctx context.Context, old *Record, code string) (bool, error) {
	mac, err := s.sealOf(old, StateUnknown, code, nil)
	if err != nil {
		return false, err
	}
	values := map[string]types.AttributeValue{":n": tabledef.N(old.Attempts), ":u": str(string(StateUnknown)), ":x": str(code)}
	cond := stateIs(old.State, values) + " AND size(c.a)=:n"
	_, err = s.updateCompact(ctx, callKey(old.RunID, old.Seq), withMAC("SET c.st=:u,c.x=:x", mac, values), cond, values, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark %s unknown: %w", old.Key, err)
	}
	old.State, old.ErrorCode = StateUnknown, code
	return true, nil
}

// compactFinish is Finish on a compact record: while attempt row.Attempt
// holds the claim (compactFinishCondition), its outcome, and the result
// (COMPLETED) or the state.
func (s *Store) compactFinish(ctx context.Context, key, token string, state State, result json.RawMessage, row *Row) (bool, error) {
	runID, seq, err := splitKey(key)
	if err != nil {
		return false, err
	}
	code := row.ErrorCode
	if state == StateCompleted {
		code = ""
	} else {
		result = nil
	}
	mac, err := s.sealOf(callOfRow(key, token, row), state, code, result)
	if err != nil {
		return false, err
	}
	values := map[string]types.AttributeValue{":n": tabledef.N(row.Attempt), ":o": compactOutcomeOf(row)}
	update := "SET " + attemptPath(row.Attempt, ".o") + "=:o,"
	if state == StateCompleted {
		update += "r=:r"
		values[":r"] = jsonAttr(result)
	} else {
		update += "c.st=:s"
		values[":s"] = str(string(state))
	}
	update = withMAC(update, mac, values)
	_, err = s.updateCompact(ctx, callKey(runID, seq), update, compactFinishCondition, values, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return s.compactFinishFailed(ctx, key, runID, seq, row)
	}
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", key, err)
	}
	return true, nil
}

// compactFinishFailed is compactFinish after its condition failed: our
// finish applied before (true), or the claim lost, the attempt's outcome
// then written on its own entry (false).
func (s *Store) compactFinishFailed(ctx context.Context, key, runID string, seq tool.Seq, row *Row) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: callKey(runID, seq), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("read %s after its finish: %w", key, err)
	}
	c, _, _, err := decodeCompact(out.Item)
	if err != nil || len(c.Call.Attempts) < row.Attempt {
		return false, fmt.Errorf("read %s after its finish: not our claim's item", key)
	}
	if c.Call.Attempts[row.Attempt-1].Outcome != nil {
		if len(c.Call.Attempts) != row.Attempt {
			return false, nil
		}
		if s.Sealed() {
			if r, err := s.recordFromItem(key, out.Item); err != nil || r.Seal != seal.Valid {
				return true, fmt.Errorf("record %s after its finish: %w", key, ErrForged)
			}
		}
		return true, nil
	}
	values := map[string]types.AttributeValue{":o": compactOutcomeOf(row)}
	path := attemptPath(row.Attempt, "")
	if _, err := s.updateCompact(ctx, callKey(runID, seq), "SET "+path+".o=:o", "attribute_exists("+path+")", values, types.ReturnValueNone); err != nil {
		return false, fmt.Errorf("record the row of %s after its claim was lost: %w", key, err)
	}
	return false, nil
}

// compactRelease is Release on a compact record: our first claim, still
// IN_PROGRESS, becomes FAILED with its outcome.
func (s *Store) compactRelease(ctx context.Context, key, token, code string, row *Row) (bool, error) {
	runID, seq, err := splitKey(key)
	if err != nil {
		return false, err
	}
	mac, err := s.sealOf(callOfRow(key, token, row), StateFailed, code, nil)
	if err != nil {
		return false, err
	}
	rr := *row
	rr.ErrorCode = code
	values := map[string]types.AttributeValue{":f": str(string(StateFailed)), ":o": compactOutcomeOf(&rr), ":one": tabledef.N(1), ":tk": str(token)}
	cond := "attribute_not_exists(c.st) AND attribute_not_exists(r) AND size(c.a)=:one AND c.a[0].tk=:tk"
	_, err = s.updateCompact(ctx, callKey(runID, seq), withMAC("SET c.st=:f,c.a[0].o=:o", mac, values), cond, values, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("release %s: %w", key, err)
	}
	return true, nil
}

// touchUpdate counts an invocation that claims nothing, on an item of
// either layout (touchCondition): i + 1, and the TTL renewed, as a claim
// request does. A LayoutNamed record counts i beside its invocations.
const (
	touchUpdate    = "SET expires_at=:e ADD i :i"
	touchCondition = "attribute_exists(c) OR attribute_exists(#s)"
)
