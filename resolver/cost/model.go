package cost

import (
	"strconv"
	"strings"
)

// Outcome is what one invocation did, as far as its DynamoDB requests go.
// OutcomeOf reads it from a ledger row's status and attempt.
type Outcome string

const (
	// FirstClaim: the tool ran on the key's first claim (SUCCEEDED, FAILED
	// or UNKNOWN, attempt 1).
	FirstClaim Outcome = "first claim"
	// Reclaim: the tool ran after re-claiming a FAILED or expired record
	// (SUCCEEDED, FAILED or UNKNOWN, attempt 2 or more).
	Reclaim Outcome = "re-claim"
	// Replay: a replay of a COMPLETED key (DEDUPLICATED).
	Replay Outcome = "replay"
	// RefusedAfterRead: refused after the claim failed and the record was
	// read: key reuse, in flight, the attempt cap (REFUSED, attempt 1 or
	// more).
	RefusedAfterRead Outcome = "refusal after the record was read"
	// RefusedBeforeClaim: refused before any claim (REFUSED, attempt 0).
	RefusedBeforeClaim Outcome = "refusal before the claim"
	// Parked: an MCP tool's call parked before its claim (PARKED): the
	// conditional read of the call's record, which finds none on a first
	// call, and the row.
	Parked Outcome = "parked before the claim"
)

// Item is a table item a request touches; its estimated size (itemBytes)
// sets the request's units.
type Item string

const (
	// ClaimItem is the call's item (docs/ledger.md, "One item per call")
	// holding neither result nor error: as claimed, or as found FAILED or
	// expired.
	ClaimItem Item = "call"
	// RecordItem is the call's item as the call leaves or finds it: with
	// the result when the row has an output (SUCCEEDED, DEDUPLICATED), else
	// with the error code.
	RecordItem Item = "call with its result"
	// RowItem is a row item of its own: an invocation that claimed nothing.
	RowItem Item = "row"
	// ReviewItem is the review a gated call's approval names.
	ReviewItem Item = "review"
)

// Request is one DynamoDB request of an invocation.
type Request struct {
	Op   string // PutItem, UpdateItem or GetItem
	Item Item
	// Write is true for a write, which costs write request units whether
	// its condition holds or not (a failed conditional write is billed by
	// the size of the item already there); a read is a strongly consistent
	// GetItem.
	Write bool
}

// Requests are the requests of one outcome.
type Requests struct {
	Ledger []Request
	// Gated are added for a tool that needs an approved review: the review
	// read before the claim, and on the first claim the conditional write
	// binding the approval to the key.
	Gated []Request
}

// RequestsPerInvocation is the request model of the estimate: the
// dispatcher's DynamoDB requests for one invocation of each outcome. Its
// source is docs/ledger.md, "DynamoDB requests per invocation" (and "One
// invocation" for re-claims and refusals after a read): when the
// dispatcher's requests change, change this table and that section
// together, and itemBytes when the items change.
var RequestsPerInvocation = map[Outcome]Requests{
	FirstClaim: {
		// The claim; the finish, which writes the row as the attempt's entry.
		Ledger: []Request{claim(ClaimItem), {"UpdateItem", RecordItem, true}},
		Gated:  []Request{getReview, {"UpdateItem", ReviewItem, true}},
	},
	Reclaim: {
		// The claim request (answered with the record), the conditional
		// re-claim, the finish.
		Ledger: []Request{claim(ClaimItem), {"UpdateItem", ClaimItem, true}, {"UpdateItem", RecordItem, true}},
		Gated:  []Request{getReview},
	},
	Replay: {
		// The claim request alone: its answer holds the result.
		Ledger: []Request{claim(RecordItem)},
		Gated:  []Request{getReview},
	},
	RefusedAfterRead: {
		Ledger: []Request{claim(ClaimItem), putRow},
		Gated:  []Request{getReview},
	},
	Parked: {
		// The conditional UpdateItem that reads the record without claiming
		// it (a replay is answered whatever the check said), and the row.
		// On a first call there is no item: the failed condition is billed
		// the minimum, one unit, as a row's size gives.
		Ledger: []Request{{"UpdateItem", RowItem, true}, putRow},
		// The approval is checked, and bound, before the MCP tool is.
		Gated: []Request{getReview, {"UpdateItem", ReviewItem, true}},
	},
	RefusedBeforeClaim: {
		Ledger: []Request{putRow},
		// Counted for every refusal of a gated tool: the approval, read
		// before the claim, is what refuses most of them.
		Gated: []Request{getReview},
	},
}

var (
	putRow    = Request{"PutItem", RowItem, true}
	getReview = Request{"GetItem", ReviewItem, false}
)

// claim is the claim's UpdateItem (if_not_exists, ReturnValues ALL_NEW);
// its units follow the size of the item as it is after the request.
func claim(existing Item) Request { return Request{"UpdateItem", existing, true} }

// OutcomeOf classifies a call by its row's status and attempt. An unknown
// status counts as a first claim.
func OutcomeOf(c Call) Outcome {
	switch c.Status {
	case "DEDUPLICATED":
		return Replay
	case "PARKED":
		return Parked
	case "REFUSED":
		if c.Attempt > 0 {
			return RefusedAfterRead
		}
		return RefusedBeforeClaim
	}
	if c.Attempt > 1 {
		return Reclaim
	}
	return FirstClaim
}

// Sizes of values the rows do not carry, in bytes.
const (
	digestBytes = len("sha256:") + 64
	tokenBytes  = 32 // the claim token, 16 random bytes in hex
	// A sort key holds each of the seq's components in 19 digits
	// (docs/ledger.md): skBytes.
	rowSKTail = 1 + 19 + 1 + 8
	// attemptEntryBytes is one attempt's entry in the call's attempt_log:
	// its token, number, status, times, sizes and digest.
	attemptEntryBytes = tokenBytes + 260
	timeBytes         = len("2006-01-02T15:04:05.999999999Z")
	stateBytes        = len("IN_PROGRESS")
	toolsetBytes      = len("ts_") + 32
	// reviewFixedBytes covers a review item's attributes other than its
	// run id and input: names, ids, times, reviewers, the task token and
	// the decision.
	reviewFixedBytes = 1024
)

// itemBytes estimates the size of an item of call c as DynamoDB counts it
// (the UTF-8 bytes of every attribute name and value; a number about one
// byte per two significant digits, plus one), for the items of
// docs/ledger.md, "Items".
func itemBytes(it Item, c Call) int {
	key := len(c.RunID) + 1 + len(c.Seq)
	switch it {
	case ClaimItem, RecordItem:
		n := str("pk", len("RUN#")+len(c.RunID)) + str("sk", skBytes(c.Seq)) + str("toolset_id", toolsetBytes) +
			str("idempotency_key", key) + num("invocations", 2) + num("last_seen_at", 13) +
			len("attempt_log") + max(c.Attempt, 1)*attemptEntryBytes +
			str("token", tokenBytes) + str("run_id", len(c.RunID)) + str("seq", len(c.Seq)) +
			str("step", len(c.Step)) + str("tool", len(c.Tool)) + str("input_digest", digestBytes) +
			str("state", stateBytes) + num("attempts", 2) + num("lease_until", 13) +
			num("updated_at", 13) + num("expires_at", 10)
		if it == RecordItem {
			if c.OutputBytes > 0 {
				n += str("result", c.OutputBytes)
			} else if c.ErrorCode != "" {
				n += str("error_code", len(c.ErrorCode))
			}
		}
		return n
	case RowItem:
		n := str("pk", len("RUN#")+len(c.RunID)) + str("sk", skBytes(c.Seq)+rowSKTail) + str("run_id", len(c.RunID)) +
			str("seq", len(c.Seq)) + num("attempt", 2) + str("step", len(c.Step)) + str("tool", len(c.Tool)) +
			str("toolset_id", toolsetBytes) + str("idempotency_key", key) + str("status", len(c.Status)) +
			len("retryable") + 1 + str("started_at", timeBytes) + str("ended_at", timeBytes) +
			num("duration_ms", digits(c.DurationMS)) + num("input_bytes", digits(int64(c.InputBytes))) +
			num("output_bytes", digits(int64(c.OutputBytes))) + num("memory_mb", digits(int64(c.MemoryMB))) +
			num("expires_at", 10)
		if c.ErrorCode != "" {
			n += str("error_code", len(c.ErrorCode))
		}
		if c.InputBytes > 0 {
			n += str("input_digest", digestBytes)
		}
		if c.OutputBytes > 0 {
			n += str("output_digest", digestBytes)
		}
		return n
	case ReviewItem:
		return reviewFixedBytes + str("run_id", len(c.RunID)) + str("input", c.InputBytes) + str("input_digest", digestBytes)
	}
	panic("cost: unknown item " + string(it))
}

func str(name string, valueBytes int) int { return len(name) + valueBytes }

func num(name string, digits int) int { return len(name) + (digits+1)/2 + 1 }

// skBytes is the length of a call's sort key "CALL#" + the seq's
// components, 19 digits each, joined by ".".
func skBytes(seq string) int { return len("CALL#") + 20*(strings.Count(seq, ".")+1) - 1 }

func digits(n int64) int { return len(strconv.FormatInt(max(n, 0), 10)) }
