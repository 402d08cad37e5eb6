package cost

import (
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/table"
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
// together. Item sizes follow the item kinds of shared/table: an attribute
// added there fails this package's tests until callValues or rowValues
// sizes it. Left out: a run's key pointer (docs/ledger.md, "The key
// pointer"), one PutItem of under 1 KB (1 write unit) with the run's first
// call, once per run.
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

// Sizes of values the rows do not carry: bytes for a string or a map,
// digits for a number.
const (
	digestBytes = len("sha256:") + 64
	// macBytes is a call item's seal (seal.Key.Sum): an HMAC-SHA256,
	// 32 bytes, in padded base64.
	macBytes     = 44
	timeBytes    = len("2006-01-02T15:04:05.999999999Z")
	stateBytes   = len("IN_PROGRESS")
	toolsetBytes = len("ts_") + 32
	countDigits  = 2  // attempts, invocations, a row's attempt
	unixMSDigits = 13 // a time in unix ms
	epochDigits  = 10 // expires_at, in epoch seconds
	// reviewFixedBytes covers a review item's attributes other than its
	// run id and input: keys, names, ids, times, reviewers, the task token
	// and the decision; and, for a review of an inbound or scheduled run,
	// its origin_holders, typically one or two principal ARNs (at most 16:
	// a source rotated by many principals counts more than this).
	reviewFixedBytes = 1024
)

// itemBytes estimates the size of an item of call c as DynamoDB counts it
// (the UTF-8 bytes of every attribute name and value; a number about one
// byte per two significant digits, plus one; a boolean one byte: the
// DynamoDB Developer Guide, "Item sizes and formats"), for the items of
// docs/ledger.md, "Items": the sum, over the attributes the item's kind
// declares (shared/table), of those it holds, each counted as its
// declared type says (itemSize).
func itemBytes(it Item, c Call) int {
	switch it {
	case ClaimItem, RecordItem:
		return itemSize(table.Call, callValues(it, c))
	case RowItem:
		return itemSize(table.Row, rowValues(c))
	case ReviewItem:
		return reviewFixedBytes + itemSize(table.Review, map[string]int{
			"run_id": len(c.RunID), "input": c.InputBytes, "input_digest": digestBytes,
		})
	}
	panic("cost: unknown item " + string(it))
}

// callValues estimates the values of the call's item (table.Call) in the
// compact layout every claim writes (docs/ledger.md, "The call item on the
// wire") as claimed, or with its outcome (RecordItem): the result when the
// row has an output, else the error code. The call's map c is sized as
// DynamoDB counts a map: 3 bytes, and each member's name, value and one
// byte more (compactCallBytes, compactAttemptBytes).
func callValues(it Item, c Call) map[string]int {
	attempts := max(c.Attempt, 1)
	call := compactCallBytes + len(c.Step) + len(c.Tool) + attempts*compactAttemptBytes
	v := map[string]int{
		table.PK: len(table.Call.Prefix) + len(c.RunID), table.SK: table.CallSKBytes(components(c.Seq)),
		"i": countDigits, table.ExpiresAt: epochDigits,
	}
	if it == RecordItem {
		if c.OutputBytes > 0 {
			v["r"] = c.OutputBytes
		} else if c.ErrorCode != "" {
			call += len("st") + stateBytes + 1 + len("c") + len(c.ErrorCode) + 1
		}
	}
	v["c"] = call
	return v
}

// Sizes of the compact call's map (c) as DynamoDB counts it, less its
// step's and tool's names: the map's 3 bytes; s and t (names and a byte
// each); ts (16 bytes), d (32), k (the opaque run id), ib and l (numbers),
// m (the seal), a (a list of 3 bytes), each with its name and a byte.
// compactAttemptBytes is one attempt in a: a map with its token (tk), start
// (t, 19 digits) and outcome (o: duration, output size and digest,
// memory), each with its name and a byte.
const (
	compactCallBytes = 3 + (1 + 1) + (1 + 1) + (2 + 16 + 1) + (1 + 32 + 1) + (1 + externalkey.RunIDLength + 1) +
		(2 + 4 + 1) + (1 + 8 + 1) + (1 + macBytes + 1) + (1 + 3 + 1)
	compactAttemptBytes = 3 + (2 + 8 + 1) + (1 + 11 + 1) + (1 + 3 + (2 + 3 + 1) + (2 + 3 + 1) + (2 + 32 + 1) + (2 + 3 + 1) + 1) + 1
)

// callsPrevious are the call item's attributes of the layout before the
// compact one, which no claim writes any more: the estimate sizes the
// compact layout.
var callsPrevious = table.Call.Names("run_id", "seq", "step", "tool", "toolset_id", "input_digest", "idempotency_key", "state",
	"attempts", "lease_until", "token", "result", "error_code", "updated_at", "attempt_log", "invocations", "last_seen_at", "mac",
	"external_key", "external_key_token")

// rowValues estimates the values of a row item (table.Row). rowsUnsized
// are the attributes it leaves out.
func rowValues(c Call) map[string]int {
	v := map[string]int{
		table.PK: len(table.Row.Prefix) + len(c.RunID), table.SK: table.CallSKBytes(components(c.Seq)) + table.RowSKTailBytes,
		"run_id": len(c.RunID), "seq": len(c.Seq), "attempt": countDigits, "step": len(c.Step), "tool": len(c.Tool),
		"toolset_id": toolsetBytes, "idempotency_key": keyBytes(c), "status": len(c.Status), "retryable": 1,
		"started_at": timeBytes, "ended_at": timeBytes, "duration_ms": digits(c.DurationMS),
		"input_bytes": digits(int64(c.InputBytes)), "output_bytes": digits(int64(c.OutputBytes)),
		"memory_mb": digits(int64(c.MemoryMB)), table.ExpiresAt: epochDigits,
	}
	if c.ErrorCode != "" {
		v["error_code"] = len(c.ErrorCode)
	}
	if c.InputBytes > 0 {
		v["input_digest"] = digestBytes
	}
	if c.OutputBytes > 0 {
		v["output_digest"] = digestBytes
	}
	return v
}

// rowsUnsized are the row item's attributes the estimate does not count:
// they are absent from most rows and short where present. The park
// attributes are on PARKED rows only, park_id on the rows of a call
// sent again under its park and schema_change on those of a call sent
// under an additive change (docs/parking.md): a run's estimate counts
// calls whose tools did not change. edited_digest and editor are on the
// rows of a call whose reviewer approved it with edits only
// (docs/reviews.md, "Approve with edits"), as approver is on gated rows.
var rowsUnsized = table.Row.Names("review_id", "approver", "parent_run_id", "after_claim_request", "refusal_reason",
	"park_cause", "pinned_digest", "current_digest", "changed_pointers", "additive_pointers", "park_target", "park_scope", "park_id",
	"schema_change", "edited_digest", "editor")

// itemSize is the size in bytes of an item of kind k holding the values
// given (bytes for a string, map or list; significant digits for a
// number; a boolean is one byte whatever its value): for each attribute,
// its name and its value as its first declared type counts. A value for
// an attribute k does not declare is a programming error: itemSize
// panics, and the package's tests find it.
func itemSize(k *table.Kind, values map[string]int) int {
	n, counted := 0, 0
	for _, name := range k.AllNames() {
		v, ok := values[name]
		if !ok {
			continue
		}
		counted++
		t := table.String
		if a := k.Attribute(name); a != nil {
			t = a.Types[0]
		}
		switch t {
		case table.Number:
			n += len(name) + (v+1)/2 + 1
		case table.Bool, table.Null:
			n += len(name) + 1
		default:
			n += len(name) + v
		}
	}
	if counted != len(values) {
		for name := range values {
			k.Names(name) // panics on the one k does not declare
		}
	}
	return n
}

// components is the number of the seq's components ("4.17.2": 3).
func components(seq string) int { return strings.Count(seq, ".") + 1 }

// keyBytes is the length of the call's idempotency key, "<run_id>/<seq>".
func keyBytes(c Call) int { return len(c.RunID) + 1 + len(c.Seq) }

func digits(n int64) int { return len(strconv.FormatInt(max(n, 0), 10)) }
