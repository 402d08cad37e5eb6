package table

import (
	"fmt"
	"strconv"
	"strings"
)

// Sort keys of a run's items: a call's item and its row items share the
// run's partition (Call.Prefix) and sort in call order (docs/ledger.md,
// "Sort keys in call order").
const (
	// CallSKPrefix starts the sort key of every call item and row item:
	// a Query of a run's rows is begins_with(sk, CallSKPrefix).
	CallSKPrefix = "CALL#"
	// SeqDigits is the width of each seq component in a sort key, padded
	// with zeros: the digits of the largest int64, so that keys sort as
	// the numbers do (tool.Seq SortKey).
	SeqDigits = 19
)

// CallSK is the sort key of a call's item: CallSKPrefix and seqSortKey,
// the seq's tool.Seq SortKey (each component SeqDigits digits, joined by
// "."). Call.SKShape writes it "CALL#<seq's sort key>".
func CallSK(seqSortKey string) string { return CallSKPrefix + seqSortKey }

// CallSKBytes is the length in bytes of the sort key of a call whose seq
// has components components: CallSKPrefix, then SeqDigits per component
// and a "." between two.
func CallSKBytes(components int) int {
	return len(CallSKPrefix) + (SeqDigits+1)*components - 1
}

// RowSK is the sort key of a row item: its call's (CallSK), "#", the
// invocation's start in unix ns (19 digits, as any positive int64), "#"
// and 4 random bytes in 8 hex digits, so that a call's rows sort after
// its item in time order and two rows never share a key. Row.SKShape
// writes it "CALL#<seq's sort key>#<started_at, unix ns, 19 digits>#<8
// random hex>".
func RowSK(seqSortKey string, startedAtUnixNano int64, random [4]byte) string {
	return fmt.Sprintf("%s#%019d#%x", CallSK(seqSortKey), startedAtUnixNano, random[:])
}

// RowSKTailBytes is what a row item's sort key adds to its call's, in
// bytes: "#", 19 digits, "#", 8 hex digits.
const RowSKTailBytes = 1 + 19 + 1 + 8

// RowSKStart is the invocation's start a row item's sort key sk holds
// (RowSK), in unix ns; false when sk is not a row item's sort key of that
// shape.
func RowSKStart(sk string) (int64, bool) {
	if len(sk) < len(CallSKPrefix)+RowSKTailBytes || sk[:len(CallSKPrefix)] != CallSKPrefix {
		return 0, false
	}
	tail := sk[len(sk)-RowSKTailBytes:]
	if tail[0] != '#' || tail[20] != '#' {
		return 0, false
	}
	ns, err := strconv.ParseInt(tail[1:20], 10, 64)
	if err != nil || ns < 0 {
		return 0, false
	}
	return ns, true
}

// CoverSKPrefix starts the sort key of a cover item (Cover), in its
// run's partition: never CallSKPrefix, so that a Query of the run's calls
// and rows (begins_with(sk, CallSKPrefix)) reads none.
const CoverSKPrefix = "COVER#"

// CoverSK is the sort key of the cover of tool's definition digest (the
// approved current digest, "sha256:<hex>") in its run:
// "COVER#<tool>#<digest>". A digest holds no "#", so the tool is what
// comes before the last one.
func CoverSK(tool, digest string) string { return CoverSKPrefix + tool + "#" + digest }

// ReuseSKPrefix starts the sort key of a reuse claim (ReuseClaim), in its
// fork's partition: never CallSKPrefix, so that a Query of the run's
// calls and rows reads none.
const ReuseSKPrefix = "REUSE#"

// ReuseSK is the sort key of the reuse claim on the parent call whose
// item's sort key is parentCallSK (CallSK): "REUSE#CALL#<seq's sort
// key>".
func ReuseSK(parentCallSK string) string { return ReuseSKPrefix + parentCallSK }

// ToolsetBody is the toolset item's attribute holding the toolset's RFC
// 8785 form without its id (Toolset): what every load reads and checks,
// and what a writer around registration sets (infra/local/insider).
const ToolsetBody = "body"

// Keys of credential items (Credential, CredentialToolset): one partition
// per toolset name, sort keys starting "<target>#<origin>#", so that one
// Query with begins_with reads a target's items (docs/ledger.md).
const (
	// CredentialPrefix starts the partition key of both credential kinds:
	// "CRED#<toolset name>".
	CredentialPrefix = "CRED#"
	// CredentialScopeInfix and CredentialToolsetInfix come after
	// "<target>#<origin>" in a credential's and a credential toolset
	// marker's sort key.
	CredentialScopeInfix   = "#SCOPE#"
	CredentialToolsetInfix = "#TOOLSET#"
)

// CredentialTargetSKPrefix starts the sort key of every credential item of
// target (at any origin): "<target>#". Neither a target (an MCP server's
// key, an http host entry) nor an origin holds a "#".
func CredentialTargetSKPrefix(target string) string { return target + "#" }

// CredentialSK is the sort key of target's credential at origin in scope:
// "<target>#<origin>#SCOPE#<scope>".
func CredentialSK(target, origin, scope string) string {
	return target + "#" + origin + CredentialScopeInfix + scope
}

// CredentialToolsetSK is the sort key of the marker of toolsetID for
// target's credentials at origin: "<target>#<origin>#TOOLSET#<toolset id>".
func CredentialToolsetSK(target, origin, toolsetID string) string {
	return target + "#" + origin + CredentialToolsetInfix + toolsetID
}

// Keys of webhook items (WebhookSubscription, WebhookEvent,
// WebhookAttempt; docs/ledger.md, "Webhook items").
const (
	// WebhookSubscriptionsID is the id of the one partition that holds
	// every webhook subscription: WebhookSubscription.Key of it is
	// "WEBHOOK#SUBSCRIPTIONS", so that one Query lists them all.
	WebhookSubscriptionsID = "SUBSCRIPTIONS"
	// WebhookSubscriptionSKPrefix starts a subscription's sort key:
	// "SUB#<subscription id>".
	WebhookSubscriptionSKPrefix = "SUB#"
	// WebhookAttemptSKPrefix starts a delivery attempt's sort key, in its
	// event's partition: "ATTEMPT#<subscription id>#<attempt, 3 digits>".
	WebhookAttemptSKPrefix = "ATTEMPT#"
	// WebhookAttemptDigits is the width of the attempt number in an
	// attempt's sort key, padded with zeros so that a subscription's
	// attempts sort in order: 3, more than any retry schedule's attempts
	// (at most 21).
	WebhookAttemptDigits = 3
	// WebhookUnsentFlag is the value of a webhook event's unsent
	// attribute while the event waits to be handed to the queue: the
	// WebhookUnsent index's one partition key value.
	WebhookUnsentFlag = 1
)

// WebhookSubscriptionSK is the sort key of the subscription id names:
// "SUB#<id>".
func WebhookSubscriptionSK(id string) string { return WebhookSubscriptionSKPrefix + id }

// WebhookAttemptSK is the sort key of attempt n (1 or more, at most 999)
// of delivering an event to subscription subID: "ATTEMPT#<subID>#<n, 3
// digits>".
func WebhookAttemptSK(subID string, n int) string {
	return fmt.Sprintf("%s%s#%0*d", WebhookAttemptSKPrefix, subID, WebhookAttemptDigits, n)
}

// Keys of a fork item (Fork): "FORK#<parent run id>" / "FORK", one per
// parent run (docs/fork.md).
const (
	ForkPrefix = "FORK#"
	ForkSK     = "FORK"
)

// ReconciliationKey is the partition key of the reconciliation of the
// call whose idempotency key is key ("<run_id>/<seq>"):
// "RECON#<idempotency key>" (Reconciliation.PKShape); its sort key is
// Reconciliation.SKValue.
func ReconciliationKey(key string) string { return Reconciliation.Key(key) }

// ChildPointerSKPrefix starts the sort key of a child pointer
// (ChildPointer), in its run's start partition: never the start record's
// constant sort key (Start.SKValue).
const ChildPointerSKPrefix = "CHILD#"

// ChildPointerPlaceSK starts the sort keys of every child pointer of
// step at the loop index path path (tool.Seq LoopPath):
// "CHILD#<step id>#<path>#", the path's item indexes each SeqDigits
// digits, joined by "." (empty at the top level). A step id holds no "#"
// (docs/solutions.md, "Step ids"), so one Query with begins_with reads
// exactly the children of that step at that path, in seq order.
func ChildPointerPlaceSK(step string, path []int64) string {
	parts := make([]string, len(path))
	for i, n := range path {
		parts[i] = fmt.Sprintf("%0*d", SeqDigits, n)
	}
	return ChildPointerSKPrefix + step + "#" + strings.Join(parts, ".") + "#"
}

// ChildPointerSK is the sort key of the child pointer of step at path,
// started at the seq whose sort key is seqSortKey (tool.Seq SortKey):
// ChildPointerPlaceSK and the seq's sort key.
func ChildPointerSK(step string, path []int64, seqSortKey string) string {
	return ChildPointerPlaceSK(step, path) + seqSortKey
}

// ChildPointerSeqSortKey is the seq's sort key a child pointer's sort key
// sk ends with (ChildPointerSK): what follows its last "#"; false when sk
// is not a child pointer's.
func ChildPointerSeqSortKey(sk string) (string, bool) {
	if !strings.HasPrefix(sk, ChildPointerSKPrefix) || strings.Count(sk, "#") != 3 {
		return "", false
	}
	return sk[strings.LastIndexByte(sk, '#')+1:], true
}

// Keys of inbound items (InboundSource, Schedule, InboundEvent;
// docs/webhooks.md, "Receiving events").
const (
	// InboundSourcesID is the id of the one partition that holds every
	// inbound source: InboundSourcesPK.
	InboundSourcesID = "SOURCES"
	// InboundSourceSKPrefix starts a source's sort key: "SOURCE#<name>".
	InboundSourceSKPrefix = "SOURCE#"
	// SchedulesID is the id of the one partition that holds every
	// schedule: SchedulesPK.
	SchedulesID = "SCHEDULES"
	// ScheduleSKPrefix starts a schedule's sort key: "SCHEDULE#<name>".
	ScheduleSKPrefix = "SCHEDULE#"
	// InboundEventSK is the sort key of every inbound event item.
	InboundEventSK = "EVENT"
	// InboundUnqueuedFlag is the value of an inbound event's unqueued
	// attribute while it waits to be handed to the inbound queue: the
	// InboundUnqueued index's one partition key value.
	InboundUnqueuedFlag = 1
)

// InboundSourcesPK is the partition key of every inbound source:
// "INSRC#SOURCES", so that one Query lists them all.
func InboundSourcesPK() string { return InboundSource.Key(InboundSourcesID) }

// InboundSourceSK is the sort key of the source name names:
// "SOURCE#<name>".
func InboundSourceSK(name string) string { return InboundSourceSKPrefix + name }

// SchedulesPK is the partition key of every schedule: "SCHED#SCHEDULES".
func SchedulesPK() string { return Schedule.Key(SchedulesID) }

// ScheduleSK is the sort key of the schedule name names:
// "SCHEDULE#<name>".
func ScheduleSK(name string) string { return ScheduleSKPrefix + name }

// InboundEventPK is the partition key of the inbound event of origin
// ("source" or "schedule"), the source's or schedule's name and the event
// id (a provider's event id; a firing's scheduled time, RFC 3339 UTC):
// "INEVT#<origin>/<name>/<event id>". Neither an origin nor a name (1 to
// 48 of [a-z0-9-], inbound.CheckName) holds a "/", so the id is what
// follows the second one, whatever it holds (InboundEventKeyOf).
func InboundEventPK(origin, name, id string) string {
	return InboundEvent.Key(origin + "/" + name + "/" + id)
}

// InboundEventKeyOf is the origin, name and event id an inbound event's
// partition key pk names (InboundEventPK); false when pk is not one.
func InboundEventKeyOf(pk string) (origin, name, id string, ok bool) {
	rest, ok := InboundEvent.ID(pk)
	if !ok {
		return "", "", "", false
	}
	origin, rest, ok1 := strings.Cut(rest, "/")
	name, id, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 || origin == "" || name == "" || id == "" {
		return "", "", "", false
	}
	return origin, name, id, true
}

// Keys of a shape item (Shape): partition key "SHAPE#<identity digest>"
// (the tool, its source and its output schema's digest:
// observed.Identity.PartitionKey), sort key "SHAPE#<host>" for
// structured-data-fetch and http and "SHAPE#" for other tools, so that
// one Query of a tool's partition lists every host it learned from.
const (
	ShapePrefix   = "SHAPE#"
	ShapeSKPrefix = "SHAPE#"
)

// ShapeSK is the sort key of the shape learned from host, or of a whole
// result's shape when host is "": "SHAPE#<host>", "SHAPE#".
func ShapeSK(host string) string { return ShapeSKPrefix + host }

// ShapeHost is the host a shape item's sort key names ("" for a whole
// result's shape), and whether sk is a shape item's sort key at all.
func ShapeHost(sk string) (string, bool) { return strings.CutPrefix(sk, ShapeSKPrefix) }
