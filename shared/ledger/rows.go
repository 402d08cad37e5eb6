package ledger

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Status of a ToolInvocation row.
type Status string

const (
	Succeeded    Status = "SUCCEEDED"    // the tool ran and its output was accepted
	FailedStatus Status = "FAILED"       // the tool ran, or was refused after the claim, and failed with ErrorCode
	Deduplicated Status = "DEDUPLICATED" // a replay of a COMPLETED key: the recorded result, the tool not run
	Refused      Status = "REFUSED"      // refused before the tool ran (input, toolset, in flight, cap)
	UnknownRow   Status = "UNKNOWN"      // the side effect may have happened; a person reconciles it
)

// Row is one ToolInvocation ledger row: pk "RUN#<run_id>", sk
// "CALL#<seq, 19 digits>#<started_at, unix ns, 19 digits>#<8 random hex>",
// so that a run's rows come back in call order and then in time order, and
// two rows never share a key. Rows hold digests
// and sizes, never inputs, outputs, secrets or message bodies.
type Row struct {
	RunID          string    `json:"run_id"`
	Seq            int64     `json:"seq"`
	Attempt        int       `json:"attempt"` // the ledger's attempt count, 0 when refused before a claim
	Step           string    `json:"step"`
	Tool           string    `json:"tool"`
	ToolsetID      string    `json:"toolset_id"`
	IdempotencyKey string    `json:"idempotency_key"`
	Status         Status    `json:"status"`
	ErrorCode      string    `json:"error_code,omitempty"`
	Retryable      bool      `json:"retryable"`
	StartedAt      time.Time `json:"started_at"`
	EndedAt        time.Time `json:"ended_at"`
	DurationMS     int64     `json:"duration_ms"`
	InputDigest    string    `json:"input_digest,omitempty"` // "sha256:<hex>" of the RFC 8785 input
	InputBytes     int       `json:"input_bytes"`
	OutputDigest   string    `json:"output_digest,omitempty"`
	OutputBytes    int       `json:"output_bytes"`
	// MemoryMB is the function's configured memory: with DurationMS it
	// estimates cost in GB-seconds.
	MemoryMB  int   `json:"memory_mb"`
	ExpiresAt int64 `json:"expires_at"`
	// Count is how many invocations the row stands for: a call's replays
	// are one DEDUPLICATED row with their count (docs/ledger.md); 0 means 1.
	Count int `json:"count,omitempty"`
}

// Invocations is how many invocations r stands for (Count, at least 1).
func (r *Row) Invocations() int { return max(r.Count, 1) }

func rowSK(seq int64, startedAt time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s%019d#%x", seqPrefix(seq), startedAt.UnixNano(), b)
}

// seqPrefix is the sort-key prefix of one call's rows; 19 digits hold any
// positive int64.
func seqPrefix(seq int64) string { return fmt.Sprintf("CALL#%019d#", seq) }

// PutRow writes one row. Its sort key includes the start time in
// nanoseconds, so rows of one key never overwrite each other.
func (s *Store) PutRow(ctx context.Context, r *Row) error {
	r.ExpiresAt = s.now().Add(s.retention).Unix()
	item := map[string]types.AttributeValue{
		AttrPK:            str("RUN#" + r.RunID),
		AttrSK:            str(rowSK(r.Seq, r.StartedAt)),
		"run_id":          str(r.RunID),
		"seq":             num(r.Seq),
		"attempt":         num(r.Attempt),
		"step":            str(r.Step),
		"tool":            str(r.Tool),
		"toolset_id":      str(r.ToolsetID),
		"idempotency_key": str(r.IdempotencyKey),
		"status":          str(string(r.Status)),
		"retryable":       boolean(r.Retryable),
		"started_at":      str(r.StartedAt.UTC().Format(time.RFC3339Nano)),
		"ended_at":        str(r.EndedAt.UTC().Format(time.RFC3339Nano)),
		"duration_ms":     num(r.DurationMS),
		"input_bytes":     num(r.InputBytes),
		"output_bytes":    num(r.OutputBytes),
		"memory_mb":       num(r.MemoryMB),
		AttrExpiresAt:     num(r.ExpiresAt),
	}
	for k, v := range map[string]string{"error_code": r.ErrorCode, "input_digest": r.InputDigest, "output_digest": r.OutputDigest} {
		if v != "" {
			item[k] = str(v)
		}
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("put ledger row %s/%d: %w", r.RunID, r.Seq, err)
	}
	return nil
}

// RunRows returns a run's rows in call order.
func (s *Store) RunRows(ctx context.Context, runID string) ([]Row, error) {
	return s.query(ctx, "RUN#"+runID, "CALL#")
}

// KeyRows returns the rows of one call (one idempotency key) in time order.
func (s *Store) KeyRows(ctx context.Context, runID string, seq int64) ([]Row, error) {
	return s.query(ctx, "RUN#"+runID, seqPrefix(seq))
}

func (s *Store) query(ctx context.Context, pk, prefix string) ([]Row, error) {
	var rows []Row
	var start map[string]types.AttributeValue
	for {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(s.table),
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(pk), ":prefix": str(prefix),
			},
			ConsistentRead:    aws.Bool(true),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", pk, err)
		}
		for _, it := range out.Items {
			rows = append(rows, rowFromItem(it))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return rows, nil
		}
		start = out.LastEvaluatedKey
	}
}

func rowFromItem(it map[string]types.AttributeValue) Row {
	started, _ := time.Parse(time.RFC3339Nano, getS(it, "started_at"))
	ended, _ := time.Parse(time.RFC3339Nano, getS(it, "ended_at"))
	return Row{
		RunID:          getS(it, "run_id"),
		Seq:            getN(it, "seq"),
		Attempt:        int(getN(it, "attempt")),
		Step:           getS(it, "step"),
		Tool:           getS(it, "tool"),
		ToolsetID:      getS(it, "toolset_id"),
		IdempotencyKey: getS(it, "idempotency_key"),
		Status:         Status(getS(it, "status")),
		ErrorCode:      getS(it, "error_code"),
		Retryable:      getBool(it, "retryable"),
		StartedAt:      started,
		EndedAt:        ended,
		DurationMS:     getN(it, "duration_ms"),
		InputDigest:    getS(it, "input_digest"),
		InputBytes:     int(getN(it, "input_bytes")),
		OutputDigest:   getS(it, "output_digest"),
		OutputBytes:    int(getN(it, "output_bytes")),
		MemoryMB:       int(getN(it, "memory_mb")),
		ExpiresAt:      getN(it, AttrExpiresAt),
	}
}
