package ledger

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// CallState is what a reader of a run's calls that may not see results
// learns of one call (RunCalls): its idempotency key, seq, step, tool,
// state and, while IN_PROGRESS, its claim's lease.
type CallState struct {
	Key        string
	Seq        tool.Seq
	Step, Tool string
	State      State
	// InputDigest is the call's input digest, sha256:<hex> of its RFC
	// 8785 input, for a call of the compact layout; "" for one of the
	// named layout, whose input_digest RunCalls does not project.
	InputDigest string
	// LeaseUntil is the claim's lease end (unix ms precision); an
	// IN_PROGRESS call whose lease has passed may have had its effect and
	// is as unknown as an UNKNOWN one (docs/ledger.md).
	LeaseUntil time.Time
}

// forkProjection is table.ForkCallAttributes as a ProjectionExpression.
var forkProjection, forkProjectionNames = projectionOf(table.ForkCallAttributes)

// RunCalls returns the call items of runID in seq order (never its row
// items, nor any call's recorded result): one consistent Query of the
// run's partition, begins_with(sk, CALL#), projecting
// table.ForkCallAttributes (access ReadForkedCalls), paged. Both layouts
// are read (docs/ledger.md, "The call item on the wire").
func (s *Store) RunCalls(ctx context.Context, runID string) ([]CallState, error) {
	pk := table.Call.Key(runID)
	var out []CallState
	var start map[string]types.AttributeValue
	for {
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			KeyConditionExpression:    aws.String("#p0 = :pk AND begins_with(#p1, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":prefix": str(table.Call.SKPrefix)},
			ProjectionExpression:      forkProjection,
			ExpressionAttributeNames:  forkProjectionNames,
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("query the calls of %s: %w", runID, err)
		}
		for _, it := range page.Items {
			c, ok, err := callStateOf(runID, it)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", pk, getS(it, AttrSK), err)
			}
			if ok {
				out = append(out, c)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}

// callStateOf reads one item of RunCalls' Query: false for a row item.
func callStateOf(runID string, it map[string]types.AttributeValue) (CallState, bool, error) {
	if isCompact(it) {
		c, _, _, err := decodeCompact(it)
		if err != nil {
			return CallState{}, false, err
		}
		seq, err := seqOfItem(it)
		if err != nil {
			return CallState{}, false, err
		}
		return CallState{Key: seq.KeyIn(runID), Seq: seq, Step: c.Call.Step, Tool: c.Call.Tool, State: c.Call.state(),
			LeaseUntil: time.UnixMilli(c.Call.LeaseUntil), InputDigest: digestPrefix + hex.EncodeToString(c.Call.Digest)}, true, nil
	}
	st := getS(it, "state")
	if st == "" {
		return CallState{}, false, nil // a row item
	}
	seq := seqAttr(it)
	c := CallState{Key: getS(it, "idempotency_key"), Seq: seq, Step: getS(it, "step"), Tool: getS(it, "tool"), State: State(st)}
	if c.Key == "" {
		c.Key = seq.KeyIn(runID)
	}
	if n, ok := it["lease_until"].(*types.AttributeValueMemberN); ok {
		ms, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil {
			return CallState{}, false, fmt.Errorf("lease_until %q is not unix ms", n.Value)
		}
		c.LeaseUntil = time.UnixMilli(ms)
	}
	return c, true, nil
}
