package table

import (
	"fmt"
	"slices"
)

// Principal is who makes an access: a function (by its name in
// infra/functions.go), every tool function, or a managed policy for
// people (docs/infra.md, "Least privilege").
type Principal string

// The principals of the ledger table's accesses.
const (
	ToolFunctions  Principal = "tool functions" // every tool function's dispatcher
	ReviewRequest  Principal = "review-request"
	ReviewDecision Principal = "review-decision"
	Publish        Principal = "publish"
	Operator       Principal = "operator" // the operator managed policy: toolgate ledger
	// Webhooks is the webhooks function: toolgate webhooks' subscribe,
	// list, rotate-secret, disable and deliveries (docs/webhooks.md).
	Webhooks Principal = "webhooks"
	// WebhookDelivery is the webhook-delivery function: fan-out of events
	// to subscriptions, delivery, and the relay of unsent events.
	WebhookDelivery Principal = "webhook-delivery"
	// Sources is the sources function: toolgate sources' and toolgate
	// schedules' add, list, rotate-secret, retire-secrets, pause, resume
	// and remove (docs/webhooks.md, "Receiving events").
	Sources Principal = "sources"
	// WebhookReceiver is the webhook-receiver function: the public
	// Function URL that verifies and records inbound deliveries, and the
	// relay of events recorded but not queued.
	WebhookReceiver Principal = "webhook-receiver"
	// InboundStart is the inbound-start function: the consumer of the
	// inbound queue, which starts each event's run.
	InboundStart Principal = "inbound-start"
)

// ParkingToolFunctions are the tool functions whose calls can park
// (mcp-call, http: an MCP tool, an http host entry that declares auth),
// which read the park a call is sent again under, besides every tool
// function's accesses (docs/parking.md, "The dispatcher"). The other tool
// roles do without: send-email's inline policy keeps its room for the
// recipients condition (docs/infra.md).
const ParkingToolFunctions Principal = "parking tool functions"

// LearningToolFunctions are the tool functions whose tools can return
// results of an undeclared shape (structured-data-fetch, http: the data
// member; lambda-tool, mcp-call: a tool without an output schema), whose
// dispatchers learn them (shared/observed; docs/declarations.md,
// "Observed shapes"). send-email and workflow-validator declare their
// whole output and learn nothing, so their roles do without.
const LearningToolFunctions Principal = "learning tool functions"

// ShapeRead are the attributes a dispatcher reads of a shape item
// (observed/dynamo Store.Get, a consistent GetItem projecting them).
var ShapeRead = Shape.Names(PK, SK, "shape", "version", "learned_from")

// ShapeListed are the attributes the publish function reads of a
// tool's shape items for `toolgate shapes` (dynamo.Store.List, a Query of
// the tool's partition): the shape, its count, its host and its tool.
var ShapeListed = Shape.Names(PK, SK, "shape", "learned_from", "from_host", "tool")

// ShapeUpdated are the attributes of a dispatcher's conditional
// UpdateItem of a shape item (observed/dynamo Store.Put: SET shape,
// version, tool, from_host, updated_at, expires_at, ADD learned_from;
// condition attribute_not_exists(pk) or version = the version read).
var ShapeUpdated = Shape.Names(PK, SK, "shape", "version", "tool", "from_host", "learned_from", "updated_at", ExpiresAt)

// Functions are the principals whose functions verify caller proofs, so
// each records them. webhook-delivery, webhook-receiver and inbound-start
// verify none: only queues, schedules and (webhook-receiver) signed
// deliveries invoke them.
var Functions = []Principal{ToolFunctions, ReviewRequest, ReviewDecision, Publish, Webhooks, Sources}

// Action is a DynamoDB action on the table's items, as IAM names it.
type Action string

// The actions of the accesses.
const (
	GetItem      Action = "dynamodb:GetItem"
	BatchGetItem Action = "dynamodb:BatchGetItem"
	PutItem      Action = "dynamodb:PutItem"
	UpdateItem   Action = "dynamodb:UpdateItem"
	DeleteItem   Action = "dynamodb:DeleteItem"
	Query        Action = "dynamodb:Query"
)

// Access is one kind of request a principal makes: one statement of its
// role or managed policy.
type Access struct {
	// Sid names the statement.
	Sid string
	By  []Principal
	// On are the item kinds it reaches (dynamodb:LeadingKeys, from their
	// prefixes), or Index the index a Query reads.
	On      []*Kind
	Index   *Index
	Actions []Action
	// Attributes, when set, are the only attributes a request may name
	// (dynamodb:Attributes): the keys, what it writes, what its condition
	// reads, what it projects. nil: whole items (a read without a
	// projection names none, so the key would bound nothing).
	Attributes []string
	// ReturnValues, when set, is the only ReturnValues an UpdateItem may
	// ask for (dynamodb:ReturnValues).
	ReturnValues string
	// SpecificAttributes requires a request carrying dynamodb:Select to
	// ask for SPECIFIC_ATTRIBUTES (StringEqualsIfExists).
	SpecificAttributes bool
	// Code names the code that makes the requests, and Doc what they are.
	Code, Doc string
}

// Prefixes are the partition key prefixes of the kinds it reaches, in
// order, each once.
func (a Access) Prefixes() []string {
	var out []string
	for _, k := range a.On {
		if !slices.Contains(out, k.Prefix) {
			out = append(out, k.Prefix)
		}
	}
	return out
}

// Allows reports whether the access lets principal p make action on the
// items of kind k (nil with an index: a Query of it).
func (a Access) Allows(p Principal, action Action, k *Kind, ix *Index) bool {
	if !slices.Contains(a.By, p) || !slices.Contains(a.Actions, action) {
		return false
	}
	if ix != nil {
		return a.Index == ix
	}
	return slices.Contains(a.Prefixes(), k.Prefix)
}

// Of returns the accesses of principal p, in Accesses order.
func Of(p Principal) []Access {
	var out []Access
	for _, a := range Accesses {
		if slices.Contains(a.By, p) {
			out = append(out, a)
		}
	}
	return out
}

// Check reports the first inconsistency of the declaration: an access
// naming an attribute no kind it reaches declares, an index projecting one
// its kind lacks, or two accesses of one Sid for one principal.
func Check() error {
	for _, ix := range Indexes {
		var owners []*Kind
		for _, k := range Kinds {
			if k.Carries(ix) {
				owners = append(owners, k)
			}
		}
		if len(owners) == 0 {
			return fmt.Errorf("table: index %s has no item kind", ix.Name)
		}
		pkType, skType := ix.KeyTypes()
		for _, k := range owners {
			for _, n := range slices.Concat([]string{ix.PK, ix.SK}, ix.Projects) {
				if n != "" && k.Attribute(n) == nil {
					return fmt.Errorf("table: index %s names %s, which item kind %s does not declare", ix.Name, n, k.Name)
				}
			}
			for _, key := range []struct {
				name string
				t    Type
			}{{ix.PK, pkType}, {ix.SK, skType}} {
				if key.name != "" && !slices.Equal(k.Attribute(key.name).Types, []Type{key.t}) {
					return fmt.Errorf("table: index %s keys on %s as %s, which item kind %s declares as %v", ix.Name, key.name, key.t, k.Name, k.Attribute(key.name).Types)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, a := range Accesses {
		if (a.Index == nil) == (len(a.On) == 0) {
			return fmt.Errorf("table: access %s must reach item kinds or one index", a.Sid)
		}
		for _, p := range a.By {
			if seen[string(p)+"/"+a.Sid] {
				return fmt.Errorf("table: two accesses %s of %s", a.Sid, p)
			}
			seen[string(p)+"/"+a.Sid] = true
		}
		for _, n := range a.Attributes {
			declared := false
			if a.Index != nil {
				declared = slices.Contains(a.Index.Attributes(), n)
			}
			for _, k := range a.On {
				declared = declared || n == PK || n == SK || k.Attribute(n) != nil
			}
			if !declared {
				return fmt.Errorf("table: access %s names %s, which no item kind it reaches declares", a.Sid, n)
			}
		}
	}
	return nil
}

// init refuses an inconsistent declaration (Check): every package that
// imports this one, every function and every test, stops at start with
// the inconsistency rather than generating grants from it.
func init() {
	if err := Check(); err != nil {
		panic(err)
	}
}

// reviewAsked are the attributes of what a review asks, which only
// review-request writes (Create): never a decision nor a binding.
var reviewAsked = Review.Names(PK, SK, "review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers",
	"input", "input_digest", "input_bytes", "timeout_seconds", "requester", "task_token", "status", "created_at",
	"deadline", ExpiresAt, ReviewsByStatus.PK, ReviewsByStatus.SK, "traceparent", "kind", "ask", "editable", "origin_holders")

// reviewDecided are the attributes review-decision's UpdateItems name:
// Decide (SET status, review_list_pk, approver, authenticated, decided_at,
// reason, delivery, delivery_lease_until, decision_token, expires_at, and
// an approval's answer, edits and approved_digest; condition on status,
// deadline and expires_at), ClaimDelivery,
// FinishDelivery and NoteSelfApproval. Never what was asked nor a binding.
var reviewDecided = Review.Names(PK, SK, "status", "deadline", ExpiresAt, ReviewsByStatus.PK, "approver", "authenticated",
	"decided_at", "reason", "decision_token", "delivery", "delivery_lease_until", "delivered_at", "delivery_error",
	"self_approval_refusals", "answer", "edits", "approved_digest")

// ApprovalAttributes are the only attributes of a review a tool
// function's dispatcher reads (GetApproval): what CheckApproval compares,
// never the inputs, the task token, the reason, the answer or the
// requester. bound_key holds the binding of an approval bound before
// bindings had items; kind tells a review that shows values (it approves
// no call), and edits and approved_digest are what an approval with edits
// changed of the reviewed input, which the dispatcher merges into the
// call's (docs/reviews.md, "Approve with edits").
var ApprovalAttributes = Review.Names(PK, SK, "review_id", "run_id", "step", "of", "tool", "toolset_id", "input_digest", "status",
	"deadline", ExpiresAt, "approver", "authenticated", "decided_at", "delivery", "delivery_error", "bound_key",
	"kind", "edits", "approved_digest")

// ParkDecisionAttributes are what a tool function whose calls can park
// reads of a park item (ledger.Store.Park): its status, the call it
// parked, the definitions' digests and who decided. Never its task token
// or reason.
var ParkDecisionAttributes = Park.Names(PK, SK, "status", "run_id", "idempotency_key", "tool", "pinned_digest", "current_digest", "decided_by")

// CoverRecorded are the attributes of a cover item's PutItem (ledger
// Store.PutCover): the item whole, never an attribute of a call or a row.
var CoverRecorded = Cover.Names(PK, SK, "tool", "park_id", "pinned_digest", "current_digest", "decided_by", "mac", ExpiresAt)

// CoverReadAttributes are what a dispatcher reads of a cover item (ledger
// Store.Cover, a GetItem projecting them): what its seal covers.
var CoverReadAttributes = Cover.Names(PK, SK, "tool", "park_id", "pinned_digest", "current_digest", "decided_by", "mac")

// ReadAttributes are the only attributes of calls, rows and toolsets the
// operator's reads name (toolgate ledger): digests, sizes, states and
// toolset bodies, never a recorded result (r, result). A compact call's c
// holds its seal, which proves nothing to a reader without the key.
var ReadAttributes = []string{
	PK, SK, "c", "i", "run_id", "seq", "step", "tool", "toolset_id", "input_digest", "idempotency_key",
	"state", "attempts", "lease_until", "token", "error_code", "updated_at", "attempt_log", "invocations", "last_seen_at",
	ExpiresAt, "attempt", "status", "retryable", "started_at", "ended_at", "duration_ms", "input_bytes",
	"output_bytes", "output_digest", "memory_mb", "after_claim_request", "body", "review_id", "approver", "parent_run_id", "refusal_reason",
	"edited_digest", "editor", "external_key", "external_key_token",
	// A PARKED row's why, and the park a call was sent again under.
	"park_cause", "pinned_digest", "current_digest", "changed_pointers", "additive_pointers", "park_target", "park_scope", "park_id",
	"schema_change",
}

// RunRowAttributes are ReadAttributes less a toolset's body, which no
// call or row item holds: what a read of a run's calls and rows projects
// (ledger.Store RunRows and KeyRows, a Query of begins_with(sk, CALL#)).
// Never a recorded result (r, result), an input or a secret: digests,
// sizes, states and times. review-decision's show reads them (access
// ReadRunRows; docs/reviews.md, "What a review's show answer carries").
var RunRowAttributes = slices.DeleteFunc(slices.Clone(ReadAttributes), func(n string) bool { return n == "body" })

// ReconciliationRecorded are the attributes of a reconciliation
// (table.Reconciliation): review-decision's PutItem writes them, and the
// reads project them.
var ReconciliationRecorded = Reconciliation.Names(PK, SK, "outcome", "result", "reason", "reconciled_by", "reconciled_at",
	"state_before", "attempts", ExpiresAt)

// ReconcileCallAttributes are what review-decision reads of the call a
// reconciliation names (ledger.Store.ReconcileTarget): the compact call c
// (its state, lease, attempts and their approvers), or a named-layout
// record's state, lease, attempts and attempt_log. Never its result (r,
// result).
var ReconcileCallAttributes = Call.Names(PK, SK, "c", "state", "attempts", "lease_until", "attempt_log", "tool", "toolset_id")

// CredentialReadAttributes are the only attributes of credential items a
// tool function's call-time read names (vault.Store.Lookup, one
// BatchGetItem with a projection): what the resolver needs to choose,
// check and open a credential, and a marker's allowed_by. Never
// created_at, nor anything of another kind.
var CredentialReadAttributes = append(Credential.Names(PK, SK, "ct", "nonce", "edk", "key_id", "version", "set_by",
	"credential_expires_at", "execution_arn"), CredentialToolset.Names("allowed_by")...)

// WebhookEventRecorded are the attributes of a webhook event's conditional
// PutItem (webhook store RecordEvent: the item, unsent set, and the
// condition attribute_not_exists(pk)): what the event is, never when it
// was sent.
var WebhookEventRecorded = WebhookEvent.Names(PK, SK, "type", "solution", "data", "produced_at", "unsent", ExpiresAt)

// WebhookEventSent are the attributes of marking a webhook event sent
// (webhook store MarkSent: REMOVE unsent, SET sent_at, condition
// attribute_exists(pk)).
var WebhookEventSent = WebhookEvent.Names(PK, SK, "unsent", "sent_at")

// WebhookEventRead are the attributes webhook-delivery reads of an event
// (webhook store Event, a GetItem projecting them).
var WebhookEventRead = WebhookEvent.Names(PK, SK, "type", "solution", "data", "produced_at")

// WebhookCallEventRecorded are the attributes of a tool function's
// conditional PutItem of a call's event (webhook outbox Recorder):
// WebhookEventRecorded and the source its id derives from.
var WebhookCallEventRecorded = WebhookCallEvent.Names(PK, SK, "type", "source", "solution", "data", "produced_at", "unsent", ExpiresAt)

// WebhookCallEventRead are the attributes webhook-delivery and the
// webhooks function read of a call's event (webhook store Event):
// WebhookEventRead and the source, to check its id.
var WebhookCallEventRead = WebhookCallEvent.Names(PK, SK, "type", "source", "solution", "data", "produced_at")

// WebhookAttemptRecorded are the attributes of a delivery attempt's
// PutItem (webhook store RecordAttempt).
var WebhookAttemptRecorded = WebhookAttempt.Names(PK, SK, "status_code", "latency_ms", "outcome", "error_class", "at", ExpiresAt)

// WebhookSubscriptionDisabled are the attributes of disabling a
// subscription (webhook store Disable: SET status, disabled_reason,
// updated_at, ADD version, condition attribute_exists(pk)): never its
// URL, its patterns nor its secrets.
var WebhookSubscriptionDisabled = WebhookSubscription.Names(PK, SK, "status", "disabled_reason", "updated_at", "version")

// WebhookDeliveriesRead are the attributes toolgate webhooks deliveries
// reads of an event's partition (webhook store Attempts, a Query
// projecting them): the attempts, never the event's data.
var WebhookDeliveriesRead = WebhookAttempt.Names(PK, SK, "status_code", "latency_ms", "outcome", "error_class", "at")

// ParkRecorded are the attributes of review-request's conditional PutItem
// of a park (park store Record): what parked the call and the park Task
// that waits, never a decision.
var ParkRecorded = Park.Names(PK, SK, "run_id", "step", "seq", "idempotency_key", "tool", "toolset_id", "cause",
	"gated", "pinned_digest", "current_digest", "changed_pointers", "additive_pointers", "park_target", "park_scope", "row_sk", "task_token", "status",
	"created_at", "deadline", ParksByStatus.PK, ParksByStatus.SK, ParkScopeKey, ExpiresAt)

// ParkTokenUpdated are the attributes of review-request's UpdateItem of a
// park's task token (park store Record, a retried park Task): SET
// task_token, condition on status.
var ParkTokenUpdated = Park.Names(PK, SK, "task_token", "status")

// ParkDecided are the attributes of review-decision's UpdateItem of a
// decision (park store Decide): SET status, decided_by, decided_at,
// reason, park_list_pk, expires_at, REMOVE park_scope_key, condition on
// status; and of a timeout it records (park store TimeOut: SET status,
// decided_at, park_list_pk, REMOVE park_scope_key, condition on status;
// docs/parking.md, "Timed out"). Never what parked the call, its
// deadline nor the task token.
var ParkDecided = Park.Names(PK, SK, "status", "decided_by", "decided_at", "reason", ParksByStatus.PK, ParkScopeKey, ExpiresAt)

// ParkedRowAttributes are the only attributes of a call's rows
// review-request reads (park store ParkedRows, a Query projecting them):
// what a park is recorded from, never a digest of an input or output.
var ParkedRowAttributes = Row.Names(PK, SK, "status", "idempotency_key", "tool", "step", "park_cause", "pinned_digest",
	"current_digest", "changed_pointers", "additive_pointers", "park_target", "park_scope", "started_at")

// ChildPointerRecorded are the attributes of review-request's
// conditional PutItem of a child pointer (ChildPointer; dynamo
// Store.RecordChildPointer): the item whole. Its first four, the keys,
// the child and its attempt, are what a Query of the pointers projects
// (dynamo Store.ChildPointers).
var ChildPointerRecorded = ChildPointer.Names(PK, SK, "child_run_id", "child_attempt", ExpiresAt)

// ForkRecorded are the attributes of run.fork's conditional PutItem of a
// fork item (shared/review/dynamo Store.RecordFork): the item whole.
var ForkRecorded = Fork.Names(PK, SK, "fork_run_id", "forked_by", "forked_at", "rerun_reads", "parent_status", ExpiresAt)

// NoticeClaimed are the attributes of review-request's conditional
// PutItem claiming a review's notice (dynamo Store.ClaimNotice): the item
// whole, before the message is sent.
var NoticeClaimed = Notice.Names(PK, SK, "status", "recipients", "skipped", "claimed_at", ExpiresAt)

// NoticeFinished are the attributes of review-request's UpdateItem of
// what SES answered (dynamo Store.FinishNotice: SET status and
// message_id and sent_at, or error_code; condition status = CLAIMED).
var NoticeFinished = Notice.Names(PK, SK, "status", "message_id", "sent_at", "error_code")

// ForkCallAttributes are the only attributes of a parent run's calls and
// rows run.fork reads (ledger.Store.RunCalls, a Query of begins_with(sk,
// CALL#) projecting them): what its answer lists and what tells a call in
// progress, unknown or finished. Never a recorded result (r, result).
var ForkCallAttributes = Call.Names(PK, SK, "c", "seq", "step", "tool", "idempotency_key", "state", "lease_until")

// StartRefreshed are the attributes of review-request's UpdateItem giving
// a run start record a fresh deadline (SET deadline, condition deadline =
// the deadline a consistent read found on the record of the same starter,
// input digest, end user, fork and origin): never who started it nor
// what, which IAM could not tell from a condition naming them.
var StartRefreshed = Start.Names(PK, SK, "deadline")

// InboundSourceVerifyAttributes are the only attributes of an inbound
// source webhook-receiver reads (store.Store.Source, a GetItem projecting
// them): how to verify a delivery and how large it may be.
var InboundSourceVerifyAttributes = InboundSource.Names(PK, SK, "scheme", "secrets", "max_body_bytes")

// InboundSourceRunAttributes are the only attributes of an inbound source
// inbound-start reads (store.Store.SourceRun, a GetItem projecting them):
// what an event's run is, who added the source and when (an event
// received before then was one of a removed source of the same name), and
// who held its secrets (secret_holders, which its start request names).
// Never its secrets.
var InboundSourceRunAttributes = InboundSource.Names(PK, SK, "solution", "end_user", "added_by", "added_at", "scheme", "secret_holders")

// InboundEventReceived are the attributes webhook-receiver's requests on
// an inbound event name: Receive's conditional PutItem (the item whole,
// RECEIVED, unqueued set), the GetItem after its condition failed, and
// MarkQueued's UpdateItem (SET status, queued_at, REMOVE unqueued,
// condition on status). Never a run's execution ARN nor problems.
var InboundEventReceived = InboundEvent.Names(PK, SK, "status", "event_type", "body", "body_sha256", "received_at", "unqueued", "queued_at", ExpiresAt)

// InboundEventStarted are the attributes inbound-start's writes of an
// inbound event name: PutFiring's conditional PutItem (a firing, QUEUED,
// no body), MarkStarted's and MarkFailed's UpdateItem (SET status,
// execution_arn and started_at, or problems and failed_at, REMOVE body and
// unqueued, condition on status). body and unqueued are named only to
// REMOVE them: IAM cannot tell a REMOVE from a SET, the code does.
var InboundEventStarted = InboundEvent.Names(PK, SK, "status", "received_at", "queued_at", "execution_arn", "started_at",
	"problems", "failed_at", "body", "unqueued", ExpiresAt)

// Accesses is every access to the table. infra generates each role's and
// managed policy's ledger statements from it, in this order per principal;
// docs/infra.md tabulates them.
var Accesses = []Access{
	{Sid: "Calls", By: []Principal{ToolFunctions}, On: []*Kind{Call, Row, ReuseClaim}, Actions: []Action{GetItem, PutItem, UpdateItem, Query},
		Code: "shared/ledger (the dispatcher)",
		Doc: "the claim (UpdateItem, ReturnValues ALL_NEW), re-claim, MarkUnknown, finish and release, Touch (ALL_NEW), " +
			"Record and the read after a finish's failed condition (GetItem), PutRow (PutItem of a row item); a fork's call: " +
			"ParentCalls (the Query of its parent run's calls, begins_with(sk, CALL#), FilterExpression on c.s and c.d, projecting the keys) " +
			"and ClaimReuse (the conditional PutItem of a reuse claim): whole items, which the dispatcher owns. " +
			"The Query reads nothing a GetItem of the same items could not, so it takes no statement of its own (send-email's inline policy keeps its room for the recipients condition)"},
	{Sid: "RecordKeyPointers", By: []Principal{ToolFunctions}, On: []*Kind{Key}, Actions: []Action{PutItem},
		Attributes: Key.Names(PK, SK, "run_id", ExpiresAt), Code: "ledger.Store.PutKeyPointer",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) of a run's key pointer, with the claim of its first call"},
	{Sid: "Toolsets", By: []Principal{ToolFunctions, ReviewRequest, ReviewDecision, Publish}, On: []*Kind{Toolset}, Actions: []Action{GetItem},
		Attributes: Toolset.Names(PK, SK, "body"), Code: "ledger.Store.Toolset",
		Doc: "loading a toolset (GetItem projecting body); in review-decision, the reviewed tool's pinned input schema an approval's edits must pass; in publish, RegisterToolset's read of the toolset already there"},
	{Sid: "RegisterToolsets", By: []Principal{Publish}, On: []*Kind{Toolset}, Actions: []Action{PutItem},
		Attributes: Toolset.Names(PK, SK, "body", "registered_at"), Code: "ledger.Store.RegisterToolset",
		Doc: "the conditional PutItem (attribute_not_exists(pk)), after the registration check: no other role writes a toolset"},
	{Sid: "RecordPublishedSolutions", By: []Principal{Publish}, On: []*Kind{Published}, Actions: []Action{PutItem},
		Attributes: Published.Names(PK, SK, "version_arn", "version", "toolset_id", "output_bound_bytes", "run_timeout_seconds",
			"input_limit_bytes", "source_digest", "publisher", "published_at"),
		Code: "ledger.Store.RecordPublished", Doc: "the PutItem of a Solution's last published version and its bounds"},
	{Sid: "ReadPublishedSolutions", By: []Principal{Publish, Webhooks, Sources}, On: []*Kind{Published}, Actions: []Action{GetItem},
		Code: "ledger.Store.PublishedSolution", Doc: "its GetItem: publish's checks, subscribe --solution (webhooks), and the Solution a source or schedule names (sources)"},
	{Sid: "ReadReviews", By: []Principal{ReviewRequest, ReviewDecision}, On: []*Kind{Review}, Actions: []Action{GetItem},
		Code: "dynamo.Store.Get", Doc: "a consistent GetItem of the whole review"},
	{Sid: "ReadApprovals", By: []Principal{ToolFunctions}, On: []*Kind{Review}, Actions: []Action{GetItem},
		Attributes: ApprovalAttributes, SpecificAttributes: true, Code: "dynamo.Store.GetApproval",
		Doc: "a consistent GetItem projecting ApprovalAttributes"},
	{Sid: "ReadParkDecisions", By: []Principal{ParkingToolFunctions}, On: []*Kind{Park}, Actions: []Action{GetItem},
		Attributes: ParkDecisionAttributes, SpecificAttributes: true, Code: "ledger.Store.Park",
		Doc: "a consistent GetItem of the park a call is sent again under, projecting ParkDecisionAttributes: never its task token or reason"},
	{Sid: "RecordCovers", By: []Principal{ParkingToolFunctions}, On: []*Kind{Cover}, Actions: []Action{PutItem},
		Attributes: CoverRecorded, Code: "ledger.Store.PutCover",
		Doc: "the PutItem of a cover, sealed, once a call is sent under an APPROVED tool.schema_changed park it read itself"},
	{Sid: "ReadCovers", By: []Principal{ParkingToolFunctions}, On: []*Kind{Cover}, Actions: []Action{GetItem},
		Attributes: CoverReadAttributes, SpecificAttributes: true, Code: "ledger.Store.Cover",
		Doc: "a consistent GetItem of the cover of the tool and definition a call's check would park it for, projecting CoverReadAttributes: only then"},
	{Sid: "BindApprovals", By: []Principal{ToolFunctions}, On: []*Kind{Binding}, Actions: []Action{PutItem},
		Attributes: Binding.Names(PK, SK, "bound_key", "bound_at", "mac", ExpiresAt), Code: "dynamo.Store.Bind",
		Doc: "the binding item's conditional PutItem: a tool role writes no review item"},
	// One statement for both kinds: send-email's inline policy keeps its
	// room for the recipients condition (docs/infra.md).
	{Sid: "ReadBindRecons", By: []Principal{ToolFunctions, ReviewDecision}, On: []*Kind{Binding, Reconciliation}, Actions: []Action{GetItem},
		Code: "dynamo.Store.Bind, BoundKey; ledger.Store.Reconciliation",
		Doc: "the binding item after a failed condition; the binding a show reports; a consistent GetItem of a call's reconciliation " +
			"(a dispatcher's only for a record whose outcome is unknown; review-decision's after its put's condition failed, to say who reconciled it first)"},
	{Sid: "CreateReviews", By: []Principal{ReviewRequest}, On: []*Kind{Review}, Actions: []Action{PutItem},
		Attributes: reviewAsked, Code: "dynamo.Store.Create", Doc: "the pending review's conditional PutItem: no other role puts a review"},
	{Sid: "DecideReviews", By: []Principal{ReviewDecision}, On: []*Kind{Review}, Actions: []Action{UpdateItem},
		Attributes: reviewDecided, ReturnValues: "NONE",
		Code: "dynamo.Store Decide, ClaimDelivery, FinishDelivery, NoteSelfApproval", Doc: "no other role writes a decision"},
	{Sid: "ListReviews", By: []Principal{ReviewDecision}, Index: ReviewsByStatus, Actions: []Action{Query},
		Attributes: ReviewsByStatus.Attributes(), Code: "dynamo.Store.List", Doc: "Query on the index, with its own projection"},
	{Sid: "RecordStarts", By: []Principal{ReviewRequest}, On: []*Kind{Start}, Actions: []Action{PutItem},
		Attributes: Start.Names(PK, SK, "starter", "parent_run_id", "input_digest", "deadline", "state_machine_arn", "child_started_at", "released_at",
			"end_user", "end_user_scope", "end_user_skipped", "forked_from", "rerun_reads", "origin", ExpiresAt),
		Code: "dynamo.Store RecordRunStart, RecordChildStart, RecordStart", Doc: "the conditional PutItem of an execution's starter " +
			"(an inbound or scheduled start's with its origin)"},
	{Sid: "UpdateStarts", By: []Principal{ReviewRequest}, On: []*Kind{Start}, Actions: []Action{UpdateItem},
		Attributes: append(Start.Names(PK, SK, "child_started_at", "parent_run_id", "released_at"), StartRefreshed[2:]...), ReturnValues: "NONE",
		Code: "dynamo.Store TakeChildStart, ReleaseChildStart, RecordOrRefreshRunStart",
		Doc: "the conditional UpdateItem of a child record's child_started_at or released_at, and the one (deadline = the deadline read) " +
			"giving a run start record of the same starter, input, end user, fork and origin a fresh deadline: a retried start " +
			"(docs/identity.md, \"Four eyes\"); one statement, so that review-request's policy keeps room for the notice recipients"},
	{Sid: "RecordChildPointers", By: []Principal{ReviewRequest}, On: []*Kind{ChildPointer}, Actions: []Action{PutItem},
		Attributes: ChildPointerRecorded, Code: "dynamo.Store.RecordChildPointer",
		Doc: "the conditional PutItem of a workflow step's child pointer in its run's start partition, with the child's start record " +
			"(attribute_not_exists(pk) OR an earlier attempt's OR the same): no other role writes one"},
	{Sid: "ReadChildPointers", By: []Principal{ReviewRequest}, On: []*Kind{ChildPointer}, Actions: []Action{Query},
		Attributes: ChildPointerRecorded[:4], SpecificAttributes: true, Code: "dynamo.Store.ChildPointers",
		Doc: "a fork's child start: the consistent Query of a run's child pointers of one step and loop index path " +
			"(begins_with(sk, CHILD#<step>#<path>#)), the parent's and the fork's own, projecting the child and its attempt"},
	{Sid: "ReadStarts", By: []Principal{ReviewRequest}, On: []*Kind{Start}, Actions: []Action{GetItem},
		Code: "dynamo.Store Starter, StarterAndOrigin, RootOrigin, RunStart, ChildStart", Doc: "GetItem of the whole start item"},
	{Sid: "ReadParkStarters", By: []Principal{ReviewDecision}, On: []*Kind{Start}, Actions: []Action{GetItem},
		Attributes: Start.Names(PK, SK, "starter", "forked_from"), SpecificAttributes: true, Code: "parkdynamo.Decisions.Starter, ForkedFrom",
		Doc: "GetItem of a park's run's start item projecting starter: who may decide or cancel it (docs/parking.md, \"Deciding\"), " +
			"who may not reconcile its calls (docs/fork.md, \"Reconciling\"), and run.fork's read of the parent's starter, who may fork it (docs/fork.md); " +
			"projecting forked_from: the parent a review of a fork's call shows the reusable calls of, by key only to who may fork that parent, " +
			"whose starter it reads (docs/fork.md, \"Reviews in a fork\")"},
	{Sid: "RecordForks", By: []Principal{ReviewDecision}, On: []*Kind{Fork}, Actions: []Action{PutItem},
		Attributes: ForkRecorded, Code: "dynamo.Store.RecordFork (shared/review/dynamo)",
		Doc: "run.fork's conditional PutItem (attribute_not_exists(pk) OR fork_run_id = :f AND forked_by = :b AND rerun_reads = :r): a parent is forked once, by one forker; no other role writes a fork"},
	{Sid: "ReadForks", By: []Principal{ReviewDecision, ReviewRequest}, On: []*Kind{Fork}, Actions: []Action{GetItem},
		Code: "dynamo.Store.Fork (shared/review/dynamo)",
		Doc:  "a consistent GetItem of the whole fork item: run.fork's after its failed condition, and the start lane's before it records forked_from"},
	{Sid: "ReadForkedCalls", By: []Principal{ReviewDecision}, On: []*Kind{Call, Row}, Actions: []Action{Query},
		Attributes: ForkCallAttributes, SpecificAttributes: true, Code: "ledger.Store.RunCalls",
		Doc: "run.fork's consistent Query of the parent's calls (begins_with(sk, CALL#)), projecting ForkCallAttributes: never a recorded result"},
	{Sid: "ReadRunRows", By: []Principal{ReviewDecision}, On: []*Kind{Call, Row}, Actions: []Action{Query},
		Attributes: RunRowAttributes, SpecificAttributes: true, Code: "ledger.Store.RunRows",
		Doc: "a show's consistent Query of the review's own run's calls and rows (begins_with(sk, CALL#)), projecting RunRowAttributes: " +
			"the answer's run calls are their seq, step, tool, status and start only, never a recorded result; no other run is read (docs/reviews.md)"},
	{Sid: "ReadParkedRowReviews", By: []Principal{ReviewDecision}, On: []*Kind{Row}, Actions: []Action{GetItem},
		Attributes: Row.Names(PK, SK, "review_id"), SpecificAttributes: true, Code: "parkdynamo.Decisions.RowReview",
		Doc: "GetItem of a park's PARKED row projecting review_id: whose reviewers decide a gated park"},
	{Sid: "ReadCredentials", By: []Principal{ToolFunctions}, On: []*Kind{Credential, CredentialToolset}, Actions: []Action{BatchGetItem},
		Attributes: CredentialReadAttributes, SpecificAttributes: true, Code: "vault.Store.Lookup",
		Doc: "one consistent BatchGetItem, before the claim, of a target's run, end-user and toolset credentials and the toolset id's marker, projecting CredentialReadAttributes"},
	{Sid: "ManageCredentials", By: []Principal{Publish}, On: []*Kind{Credential, CredentialToolset},
		Actions: []Action{GetItem, PutItem, UpdateItem, DeleteItem, Query}, Code: "vault.Store",
		Doc: "credentials set (UpdateItem, version incremented), revoke (DeleteItem), list (Query projecting no ciphertext), " +
			"a target's origins (Query), the markers of toolset ids at registration (PutItem) and their allowing (UpdateItem): " +
			"publish holds no kms:Decrypt but for the toolset scope"},
	{Sid: "CheckRunStarts", By: []Principal{Publish}, On: []*Kind{Start}, Actions: []Action{GetItem},
		Attributes: Start.Names(PK, SK, "starter"), SpecificAttributes: true, Code: "vault.Store.RunStart (credentials set --run)",
		Doc: "whether a run's start record exists, which seals its run scope, and its starter: a GetItem projecting its keys and starter"},
	{Sid: "RecordCallerProofs", By: Functions, On: []*Kind{Proof}, Actions: []Action{PutItem},
		Attributes: Proof.Names(PK, SK, "binding", "arn", ExpiresAt), Code: "ledger.ProofTable.Record",
		Doc: "the conditional PutItem of an accepted proof (ReturnValuesOnConditionCheckFailure ALL_OLD)"},
	{Sid: "ReadCallerProofs", By: Functions, On: []*Kind{Proof}, Actions: []Action{GetItem},
		Code: "ledger.ProofTable.Record", Doc: "the proof record after its condition failed without the old item (dynalite)"},
	{Sid: "RecordWebhookEvents", By: []Principal{ReviewRequest, ReviewDecision, WebhookDelivery}, On: []*Kind{WebhookEvent}, Actions: []Action{PutItem},
		Attributes: WebhookEventRecorded, Code: "outbox.Record (shared/webhook/outbox; store.Store.RecordEvent)",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) of an event, once: review-request's review.requested, " +
			"review-decision's review.decided, webhook-delivery's run events; unsent set, so the relay finds it"},
	{Sid: "RecordCallWebhookEvents", By: []Principal{ToolFunctions}, On: []*Kind{WebhookCallEvent}, Actions: []Action{PutItem},
		Attributes: WebhookCallEventRecorded, Code: "outbox.Recorder.Emit (shared/webhook/outbox)",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) of a parked or unknown call's event, once, under WHCALL#: " +
			"never an item of another producer's events"},
	{Sid: "MarkWebhookEventsSent", By: []Principal{ReviewRequest, ReviewDecision, WebhookDelivery}, On: []*Kind{WebhookEvent}, Actions: []Action{UpdateItem},
		Attributes: WebhookEventSent, ReturnValues: "NONE", Code: "store.Store.MarkSent",
		Doc: "the UpdateItem removing unsent once SendMessage took the event: a tool function sends nothing and marks nothing"},
	{Sid: "MarkCallWebhookEventsSent", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookCallEvent}, Actions: []Action{UpdateItem},
		Attributes: WebhookEventSent, ReturnValues: "NONE", Code: "store.Relay",
		Doc: "the relay's UpdateItem removing unsent once SendMessage took a call's event"},
	{Sid: "ReadWebhookEvents", By: []Principal{WebhookDelivery, Webhooks}, On: []*Kind{WebhookEvent, WebhookCallEvent}, Actions: []Action{GetItem},
		Attributes: WebhookCallEventRead, SpecificAttributes: true, Code: "store.Store.Event",
		Doc: "a consistent GetItem of the event (then of the call's event of the id, when there is none) to fan out or deliver (webhook-delivery) " +
			"or to list its deliveries (webhooks), projecting WebhookEventRead (WebhookCallEventRead)"},
	{Sid: "ListUnsentWebhookEvents", By: []Principal{WebhookDelivery}, Index: WebhookUnsent, Actions: []Action{Query},
		Attributes: WebhookUnsent.Attributes(), Code: "store.Store.Unsent (store.Relay)",
		Doc: "the relay's Query of the sparse index, oldest first: the keys only"},
	{Sid: "ReadWebhookSubscriptions", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookSubscription}, Actions: []Action{GetItem, Query},
		Code: "store.Store Subscriptions, Subscription",
		Doc:  "the fan-out's Query of every subscription, a delivery's GetItem of its subscription (with its sealed secrets)"},
	{Sid: "DisableWebhookSubscriptions", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookSubscription}, Actions: []Action{UpdateItem},
		Attributes: WebhookSubscriptionDisabled, ReturnValues: "NONE", Code: "store.Store.Disable",
		Doc: "disabling a subscription whose endpoint answered 410 Gone: never its URL, patterns or secrets"},
	{Sid: "RecordWebhookAttempts", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookAttempt}, Actions: []Action{PutItem},
		Attributes: WebhookAttemptRecorded, Code: "store.Store.RecordAttempt",
		Doc: "the PutItem of one attempt's status, latency and outcome: never a body"},
	{Sid: "ManageWebhookSubscriptions", By: []Principal{Webhooks}, On: []*Kind{WebhookSubscription},
		Actions: []Action{GetItem, PutItem, UpdateItem, Query}, Code: "store.Store Subscribe, Subscriptions, Subscription, Rotate, Disable",
		Doc: "subscribe (conditional PutItem), list (Query), rotate-secret (GetItem, then UpdateItem conditional on version), disable (UpdateItem): " +
			"the webhooks function holds kms:GenerateDataKey for webhook secrets, never kms:Decrypt"},
	{Sid: "ReadWebhookDeliveries", By: []Principal{Webhooks}, On: []*Kind{WebhookAttempt}, Actions: []Action{Query},
		Attributes: WebhookDeliveriesRead, SpecificAttributes: true, Code: "store.Store.Attempts",
		Doc: "toolgate webhooks deliveries: the Query of an event's attempts, projecting WebhookDeliveriesRead, never the event's data"},
	{Sid: "ReadParkedRows", By: []Principal{ReviewRequest}, On: []*Kind{Row}, Actions: []Action{Query},
		Attributes: ParkedRowAttributes, SpecificAttributes: true, Code: "dynamo.Store.ParkedRows (shared/park/dynamo)",
		Doc: "the park route's Query of one call's rows (begins_with(sk, CALL#<seq's sort key>#), newest first), projecting ParkedRowAttributes"},
	{Sid: "RecordParks", By: []Principal{ReviewRequest}, On: []*Kind{Park}, Actions: []Action{PutItem},
		Attributes: ParkRecorded, Code: "dynamo.Store.Record (shared/park/dynamo)",
		Doc: "the park's conditional PutItem (attribute_not_exists(pk)): no other role puts a park"},
	{Sid: "UpdateParkTokens", By: []Principal{ReviewRequest}, On: []*Kind{Park}, Actions: []Action{UpdateItem},
		Attributes: ParkTokenUpdated, ReturnValues: "NONE", Code: "dynamo.Store.Record (shared/park/dynamo)",
		Doc: "a retried park Task's token, only while the park is PARKED"},
	{Sid: "ReadParks", By: []Principal{ReviewRequest, ReviewDecision}, On: []*Kind{Park}, Actions: []Action{GetItem},
		Code: "dynamo.Store.Get (shared/park/dynamo)", Doc: "a consistent GetItem of the whole park: after Record's failed condition, and before a decision"},
	{Sid: "DecideParks", By: []Principal{ReviewDecision}, On: []*Kind{Park}, Actions: []Action{UpdateItem},
		Attributes: ParkDecided, ReturnValues: "NONE", Code: "dynamo.Store Decide, TimeOut (shared/park/dynamo)",
		Doc: "the conditional UpdateItem PARKED to a decision, or to TIMED_OUT past the deadline: no other role writes one"},
	{Sid: "ListParks", By: []Principal{ReviewDecision, Publish}, Index: ParksByStatus, Actions: []Action{Query},
		Attributes: ParksByStatus.Attributes(), Code: "dynamo.Store.ListByStatus (shared/park/dynamo)",
		Doc: "Query on the index, with its own projection: never a task token or a reason; in publish, whether a started run waits " +
			"for a run-scope credential, which its starter may then set again"},
	{Sid: "RecordReconciliations", By: []Principal{ReviewDecision}, On: []*Kind{Reconciliation}, Actions: []Action{PutItem},
		Attributes: ReconciliationRecorded, Code: "ledger.Store.PutReconciliation",
		Doc: "toolgate ledger reconcile: the conditional PutItem (attribute_not_exists(pk)) of a call's reconciliation, once: no other role writes one"},
	{Sid: "ReadReconciledCalls", By: []Principal{ReviewDecision}, On: []*Kind{Call}, Actions: []Action{GetItem},
		Attributes: ReconcileCallAttributes, SpecificAttributes: true, Code: "ledger.Store.ReconcileTarget",
		Doc: "a consistent GetItem of the call a reconciliation names, projecting ReconcileCallAttributes: its state, lease and approvers, never its result"},
	{Sid: "ClaimNotices", By: []Principal{ReviewRequest}, On: []*Kind{Notice}, Actions: []Action{PutItem},
		Attributes: NoticeClaimed, Code: "dynamo.Store.ClaimNotice",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) claiming a new review's e-mail notice before SES sends it: one notice per review; no other role writes one"},
	{Sid: "FinishNotices", By: []Principal{ReviewRequest}, On: []*Kind{Notice}, Actions: []Action{UpdateItem},
		Attributes: NoticeFinished, ReturnValues: "NONE", Code: "dynamo.Store.FinishNotice",
		Doc: "the UpdateItem recording SENT (message id) or FAILED (SES's error code), only while CLAIMED"},
	{Sid: "ManageInboundSources", By: []Principal{Sources}, On: []*Kind{InboundSource, Schedule},
		Actions: []Action{GetItem, PutItem, UpdateItem, DeleteItem, Query},
		Code:    "store.Store (shared/inbound/store) PutSource, Source, Sources, UpdateSecrets, DeleteSource, PutSchedule, Schedule, Schedules, SetScheduleState, DeleteSchedule",
		Doc: "add (conditional PutItem), list (Query), show (GetItem), rotate-secret and retire-secrets (UpdateItem conditional on version), " +
			"pause and resume (UpdateItem conditional on version), remove (conditional DeleteItem) of sources and schedules: " +
			"the sources function holds kms:GenerateDataKey for source secrets, never kms:Decrypt"},
	{Sid: "ReadInboundSourceSecrets", By: []Principal{WebhookReceiver}, On: []*Kind{InboundSource}, Actions: []Action{GetItem},
		Attributes: InboundSourceVerifyAttributes, SpecificAttributes: true, Code: "store.Store.SourceSecrets (shared/inbound/store)",
		Doc: "a delivery's GetItem of its source, projecting InboundSourceVerifyAttributes: how to verify it, never its Solution nor its end user"},
	{Sid: "ReceiveInboundEvents", By: []Principal{WebhookReceiver}, On: []*Kind{InboundEvent}, Actions: []Action{PutItem, UpdateItem},
		Attributes: InboundEventReceived, ReturnValues: "NONE", Code: "store.Store Receive, MarkQueued (shared/inbound/store)",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) of a delivery, RECEIVED with its body, once; the UpdateItem marking it QUEUED " +
			"once SendMessage took it: never a run's outcome"},
	// A GetItem carries no ReturnValues, which a StringEquals on
	// dynamodb:ReturnValues would deny: the read is an access of its own.
	{Sid: "ReadReceivedInboundEvents", By: []Principal{WebhookReceiver}, On: []*Kind{InboundEvent}, Actions: []Action{GetItem},
		Attributes: InboundEvent.Names(PK, SK, "status", "event_type", "body_sha256", "received_at", "queued_at"), SpecificAttributes: true,
		Code: "store.Store Receive, MarkQueued (shared/inbound/store)",
		Doc:  "the consistent GetItem of the event after a condition failed, projecting its status, never its body"},
	{Sid: "ListUnqueuedInboundEvents", By: []Principal{WebhookReceiver}, Index: InboundUnqueued, Actions: []Action{Query},
		Attributes: InboundUnqueued.Attributes(), Code: "store.Store.Unqueued (shared/inbound/store)",
		Doc: "the relay's Query of the sparse index, oldest first: the keys only"},
	{Sid: "ReadInboundSourceRuns", By: []Principal{InboundStart}, On: []*Kind{InboundSource}, Actions: []Action{GetItem},
		Attributes: InboundSourceRunAttributes, SpecificAttributes: true, Code: "store.Store.SourceRun (shared/inbound/store, inbound-start)",
		Doc: "an event's GetItem of its source, projecting InboundSourceRunAttributes: what its run is, never its secrets"},
	{Sid: "ReadSchedules", By: []Principal{InboundStart}, On: []*Kind{Schedule}, Actions: []Action{GetItem},
		Code: "store.Store.Schedule (shared/inbound/store)", Doc: "a firing's consistent GetItem of its whole schedule: its Solution, input, end user and state"},
	{Sid: "ReadInboundEvents", By: []Principal{InboundStart}, On: []*Kind{InboundEvent}, Actions: []Action{GetItem},
		Code: "store.Store Event, PutFiring (shared/inbound/store)",
		Doc:  "the consistent GetItem of a whole event, its body with it: the event a message names, or a firing after its put's condition failed"},
	{Sid: "StartInboundEvents", By: []Principal{InboundStart}, On: []*Kind{InboundEvent}, Actions: []Action{PutItem, UpdateItem},
		Attributes: InboundEventStarted, ReturnValues: "NONE", Code: "store.Store PutFiring, MarkStarted, MarkFailed (shared/inbound/store)",
		Doc: "the conditional PutItem (attribute_not_exists(pk)) of a schedule's firing, QUEUED without a body, and the UpdateItem " +
			"marking an event STARTED or FAILED, removing its body (body named only to REMOVE it)"},
	{Sid: "ReadShapes", By: []Principal{LearningToolFunctions}, On: []*Kind{Shape}, Actions: []Action{GetItem},
		Attributes: ShapeRead, SpecificAttributes: true, Code: "dynamo.Store.Get (shared/observed/dynamo)",
		Doc: "a consistent GetItem of the shape learned under a result's identity, once per identity per container, projecting ShapeRead"},
	{Sid: "LearnShapes", By: []Principal{LearningToolFunctions}, On: []*Kind{Shape}, Actions: []Action{UpdateItem},
		Attributes: ShapeUpdated, ReturnValues: "NONE", Code: "dynamo.Store.Put (shared/observed/dynamo)",
		Doc: "the UpdateItem of a shape a result added something to, conditional on the version read (or on no item): names and types, never a value"},
	{Sid: "ListShapes", By: []Principal{Publish}, On: []*Kind{Shape}, Actions: []Action{GetItem, Query},
		Attributes: ShapeListed, SpecificAttributes: true, Code: "dynamo.Store.List (shared/observed/dynamo, publish)",
		Doc: "a Query of a pinned tool's shape partition (every host it learned from), projecting ShapeListed, for toolgate shapes and toolset show --shapes"},
	{Sid: "LedgerReads", By: []Principal{Operator}, On: []*Kind{Call, Row, Toolset}, Actions: []Action{GetItem, Query},
		Attributes: ReadAttributes, SpecificAttributes: true, Code: "toolgate ledger (ledger.Store reads)",
		Doc: "calls, rows and toolsets with a projection, never a review item nor a recorded result"},
	{Sid: "ReadKeyPointers", By: []Principal{Operator}, On: []*Kind{Key}, Actions: []Action{GetItem},
		Attributes: Key.Names(PK, SK, "run_id", ExpiresAt), SpecificAttributes: true, Code: "toolgate ledger --key (ledger.Store.KeyPointer)",
		Doc: "the run an external key names (GetItem projecting run_id)"},
	{Sid: "LedgerIndexReads", By: []Principal{Operator}, Index: ReviewsByStatus, Actions: []Action{Query},
		Code: "toolgate ledger", Doc: "the index projects no review inputs, reasons or task tokens"},
}
