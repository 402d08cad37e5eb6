package ledger

import (
	"encoding/json"
	"fmt"
	"github.com/toolgate/toolgate/shared/tool"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
)

// callItem is a call's item as stored (docs/ledger.md, "Items", "One item
// per call"), mapped with the SDK's attributevalue: an attribute of
// another type than its field is an error, never a zero value.
type callItem struct {
	RunID          string                  `dynamodbav:"run_id"`
	Seq            tool.Seq                `dynamodbav:"seq"`
	Step           string                  `dynamodbav:"step"`
	Tool           string                  `dynamodbav:"tool"`
	ToolsetID      string                  `dynamodbav:"toolset_id"`
	InputDigest    string                  `dynamodbav:"input_digest"`
	IdempotencyKey string                  `dynamodbav:"idempotency_key"`
	State          State                   `dynamodbav:"state"`
	Attempts       int                     `dynamodbav:"attempts"`
	LeaseUntil     int64                   `dynamodbav:"lease_until"` // unix ms
	Token          string                  `dynamodbav:"token"`
	Result         *string                 `dynamodbav:"result"` // COMPLETED; NULL or absent otherwise
	ErrorCode      string                  `dynamodbav:"error_code"`
	UpdatedAt      int64                   `dynamodbav:"updated_at"` // unix ms
	AttemptLog     map[string]attemptEntry `dynamodbav:"attempt_log"`
	Invocations    int64                   `dynamodbav:"invocations"`
	// Touched counts the invocations Touch counted once the compact
	// layout came (its i, on either layout), read with Invocations.
	Touched    int64  `dynamodbav:"i,omitempty"`
	LastSeenAt int64  `dynamodbav:"last_seen_at"` // unix ms
	ExpiresAt  int64  `dynamodbav:"expires_at"`   // epoch seconds
	MAC        string `dynamodbav:"mac"`          // the seal; "" in the previous layout
	// ExternalKey and ExternalKeyToken: the external key and the token of
	// the claim that wrote it (externalKey); absent in items claimed
	// before external keys.
	ExternalKey      string `dynamodbav:"external_key,omitempty"`
	ExternalKeyToken string `dynamodbav:"external_key_token,omitempty"`
}

// The external key's attributes (table.Call).
const (
	attrExternalKey      = "external_key"
	attrExternalKeyToken = "external_key_token"
)

// externalKey is the key third parties were sent for this call
// (docs/ledger.md, "The external key"): the stored external_key when the
// claim that wrote it was the call's first attempt, else the readable
// idempotency key. Every claim sets external_key with if_not_exists, so
// the first claim after the upgrade of a call claimed before it writes
// one too; that claim is not attempt 1 of the call's attempt_log, so the
// call keeps the key its first attempt sent.
func (c *callItem) externalKey(key string) string {
	if e, ok := c.AttemptLog[c.ExternalKeyToken]; ok && e.N == 1 && c.ExternalKey != "" {
		return c.ExternalKey
	}
	return key
}

// attemptEntry is one attempt in a call's attempt_log, keyed by its claim
// token: its number and start from the claim, the rest (its row) from its
// finish.
type attemptEntry struct {
	N            int       `dynamodbav:"n"`
	Status       Status    `dynamodbav:"status,omitempty"`
	ErrorCode    string    `dynamodbav:"error_code,omitempty"`
	Retryable    bool      `dynamodbav:"retryable"`
	StartedAt    time.Time `dynamodbav:"started_at"` // RFC 3339 with ns, UTC
	EndedAt      time.Time `dynamodbav:"ended_at"`
	DurationMS   int64     `dynamodbav:"duration_ms"`
	InputBytes   int       `dynamodbav:"input_bytes"`
	OutputDigest string    `dynamodbav:"output_digest,omitempty"`
	OutputBytes  int       `dynamodbav:"output_bytes"`
	MemoryMB     int       `dynamodbav:"memory_mb"`
	ReviewID     string    `dynamodbav:"review_id,omitempty"`
	Approver     string    `dynamodbav:"approver,omitempty"`
	ParentRunID  string    `dynamodbav:"parent_run_id,omitempty"`
	EditedDigest string    `dynamodbav:"edited_digest,omitempty"`
	Editor       string    `dynamodbav:"editor,omitempty"`
}

// rowItem is a row item of its own (PutRow): an invocation that claimed
// nothing; its attributes are the Row's dynamodbav tags.
type rowItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
	Row
}

// toolsetItem is a toolset's item as stored (table.Toolset), mapped with
// attributevalue.
type toolsetItem struct {
	PK   string `dynamodbav:"pk"`
	SK   string `dynamodbav:"sk"`
	Body string `dynamodbav:"body"` // the toolset's RFC 8785 form without its id
	// RegisteredAt is RFC 3339 in UTC with milliseconds (registeredAt);
	// absent from the item a load reads (it projects body only).
	RegisteredAt string `dynamodbav:"registered_at,omitempty"`
}

// publishedItem is a Solution's published item as stored
// (table.Published), mapped with attributevalue: every attribute is
// written, zero or not, as RecordPublished always has.
type publishedItem struct {
	PK               string `dynamodbav:"pk"`
	SK               string `dynamodbav:"sk"`
	VersionARN       string `dynamodbav:"version_arn"`
	Version          int    `dynamodbav:"version"`
	ToolsetID        string `dynamodbav:"toolset_id"`
	OutputBoundBytes int    `dynamodbav:"output_bound_bytes"` // bytes
	// RunTimeoutSeconds is absent, read as 0, in items written before it
	// was recorded (docs/solutions.md).
	RunTimeoutSeconds int    `dynamodbav:"run_timeout_seconds"`
	InputLimitBytes   int    `dynamodbav:"input_limit_bytes"` // bytes
	SourceDigest      string `dynamodbav:"source_digest"`
	Publisher         string `dynamodbav:"publisher"`
	PublishedAt       string `dynamodbav:"published_at"` // RFC 3339, UTC, ms
}

// proofItem is an accepted caller proof's item as stored (table.Proof),
// mapped with attributevalue.
type proofItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Binding   string `dynamodbav:"binding"`    // caller.Binding's Value
	ARN       string `dynamodbav:"arn"`        // the proven principal, as STS answered
	ExpiresAt int64  `dynamodbav:"expires_at"` // epoch seconds
}

// registeredAt is t as the registered_at and published_at attributes hold
// it: RFC 3339 in UTC with milliseconds.
func registeredAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// seqAttr is an item's seq: a string attribute, or a number one as the
// ledger wrote it before for_each (docs/ledger.md); "" when neither.
func seqAttr(it map[string]types.AttributeValue) tool.Seq {
	switch v := it["seq"].(type) {
	case *types.AttributeValueMemberS:
		return tool.Seq(v.Value)
	case *types.AttributeValueMemberN:
		return tool.Seq(v.Value)
	}
	return ""
}

// seqAsString is it with a number seq (written before for_each) as the
// string it names, so that the item maps onto tool.Seq.
func seqAsString(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	n, ok := it["seq"].(*types.AttributeValueMemberN)
	if !ok {
		return it
	}
	out := make(map[string]types.AttributeValue, len(it))
	for k, v := range it {
		out[k] = v
	}
	out["seq"] = &types.AttributeValueMemberS{Value: n.Value}
	return out
}

func formatNano(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// decodeCall maps a call's item; a mistyped attribute is an error.
func decodeCall(it map[string]types.AttributeValue) (*callItem, error) {
	var c callItem
	if err := attributevalue.UnmarshalMap(seqAsString(it), &c); err != nil {
		return nil, fmt.Errorf("a call's item: %w", err)
	}
	return &c, nil
}

// record is the idempotency record the call's item holds, for key.
func (c *callItem) record(key string) *Record {
	r := &Record{
		Layout: LayoutNamed,
		Key:    key, RunID: c.RunID, Seq: c.Seq, Step: c.Step, Tool: c.Tool, InputDigest: c.InputDigest,
		State: c.State, Attempts: c.Attempts, LeaseUntil: time.UnixMilli(c.LeaseUntil), ErrorCode: c.ErrorCode,
		UpdatedAt: time.UnixMilli(c.UpdatedAt), ToolsetID: c.ToolsetID, Token: c.Token, ExternalKey: c.externalKey(key),
	}
	if c.Result != nil && *c.Result != "" {
		r.Result = json.RawMessage(*c.Result)
	}
	if e, ok := c.AttemptLog[c.Token]; ok {
		r.StartedAt = e.StartedAt
	}
	for _, e := range c.AttemptLog {
		if !e.StartedAt.IsZero() && (r.FirstStartedAt.IsZero() || e.StartedAt.Before(r.FirstStartedAt)) {
			r.FirstStartedAt = e.StartedAt
		}
	}
	return r
}

// entryFromRow is an attempt's entry for its row r: the attemptEntry
// fields, built directly (every invocation writes one; reads map them with
// attributevalue, which refuses a mistyped attribute).
func entryFromRow(r *Row) types.AttributeValue {
	e := map[string]types.AttributeValue{
		"n": tabledef.N(r.Attempt), "status": str(string(r.Status)),
		"retryable":  &types.AttributeValueMemberBOOL{Value: r.Retryable},
		"started_at": str(formatNano(r.StartedAt)), "ended_at": str(formatNano(r.EndedAt)),
		"duration_ms": tabledef.N(r.DurationMS), "input_bytes": tabledef.N(r.InputBytes),
		"output_bytes": tabledef.N(r.OutputBytes), "memory_mb": tabledef.N(r.MemoryMB),
	}
	if r.ErrorCode != "" {
		e["error_code"] = str(r.ErrorCode)
	}
	if r.OutputDigest != "" {
		e["output_digest"] = str(r.OutputDigest)
	}
	if r.ReviewID != "" {
		e["review_id"], e["approver"] = str(r.ReviewID), str(r.Approver)
	}
	if r.ParentRunID != "" {
		e["parent_run_id"] = str(r.ParentRunID)
	}
	if r.EditedDigest != "" {
		e["edited_digest"], e["editor"] = str(r.EditedDigest), str(r.Editor)
	}
	return &types.AttributeValueMemberM{Value: e}
}

// attemptStart is a claimed attempt's entry before its finish: the
// attemptEntry fields n and started_at (written on every claim, so built
// directly rather than by reflection).
func attemptStart(n int, started time.Time) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"n": tabledef.N(n), "started_at": str(formatNano(started)),
	}}
}

// row is the ToolInvocation row of an attempt entry of call c.
func (c *callItem) row(e attemptEntry) Row {
	return Row{
		RunID: c.RunID, Seq: c.Seq, Attempt: e.N, Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID,
		IdempotencyKey: c.IdempotencyKey, ExternalKey: c.externalKey(c.IdempotencyKey), Status: e.Status, ErrorCode: e.ErrorCode, Retryable: e.Retryable,
		StartedAt: e.StartedAt, EndedAt: e.EndedAt, DurationMS: e.DurationMS,
		InputDigest: c.InputDigest, InputBytes: e.InputBytes, OutputDigest: e.OutputDigest, OutputBytes: e.OutputBytes,
		MemoryMB: e.MemoryMB, ExpiresAt: c.ExpiresAt, ReviewID: e.ReviewID, Approver: e.Approver, ParentRunID: e.ParentRunID,
		EditedDigest: e.EditedDigest, Editor: e.Editor,
	}
}

// decodeRow maps a row item; a mistyped attribute is an error.
func decodeRow(it map[string]types.AttributeValue) (Row, error) {
	var i rowItem
	if err := attributevalue.UnmarshalMap(seqAsString(it), &i); err != nil {
		return Row{}, fmt.Errorf("a row item: %w", err)
	}
	return i.Row, nil
}

// encodeRow is r as a row item under pk and sk.
func encodeRow(r *Row, pk, sk string) (map[string]types.AttributeValue, error) {
	rr := *r
	rr.StartedAt, rr.EndedAt = r.StartedAt.UTC(), r.EndedAt.UTC()
	return attributevalue.MarshalMap(rowItem{PK: pk, SK: sk, Row: rr})
}
