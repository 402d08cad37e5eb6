package table

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The rules of who may write what in the ledger (docs/reviews.md,
// docs/infra.md "Least privilege"), written apart from the declaration so
// that widening an access in accesses.go fails here: the declaration
// says what each principal does; these say what none may ever do. A kind
// not named here is not constrained by them.
var (
	// What a review asks: only review-request writes it, when it creates
	// the review.
	reviewAskedNames = []string{"review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers", "input",
		"input_digest", "input_bytes", "timeout_seconds", "requester", "task_token", "created_at", "review_list_sk",
		"kind", "ask", "editable"}
	// A review's decision and its delivery: only review-decision writes
	// them.
	reviewDecisionNames = []string{"approver", "authenticated", "decided_at", "reason", "decision_token",
		"delivery", "delivery_lease_until", "delivered_at", "delivery_error", "self_approval_refusals",
		"answer", "edits", "approved_digest"}
	// Which call an approval was used for: only a tool function writes it,
	// and only in a binding item.
	bindingNames = []string{"bound_key", "bound_at"}
	// A park's decision: only review-decision writes it
	// (docs/parking.md).
	parkDecisionNames = []string{"decided_by", "decided_at", "reason"}
	// What parked a call: only review-request writes it, when it records
	// the park; a retried park Task moves its task token, nothing else.
	parkAskedNames = []string{"run_id", "step", "seq", "idempotency_key", "tool", "toolset_id", "cause", "gated",
		"pinned_digest", "current_digest", "changed_pointers", "park_target", "park_scope", "row_sk", "task_token", "created_at",
		"deadline", "park_list_sk"}
)

// writeRule is who may make a write on a kind, and the attributes it may
// never name (forbid) or the only ones it may (allow).
type writeRule struct {
	kind          *Kind
	by            []Principal
	action        Action
	allow, forbid []string
}

var writeRules = []writeRule{
	{kind: Call, by: []Principal{ToolFunctions}, action: PutItem},
	{kind: Call, by: []Principal{ToolFunctions}, action: UpdateItem},
	{kind: Row, by: []Principal{ToolFunctions}, action: PutItem},
	{kind: Row, by: []Principal{ToolFunctions}, action: UpdateItem},
	{kind: Review, by: []Principal{ReviewRequest}, action: PutItem, forbid: slices.Concat(reviewDecisionNames, bindingNames)},
	{kind: Review, by: []Principal{ReviewDecision}, action: UpdateItem, forbid: slices.Concat(reviewAskedNames, bindingNames)},
	{kind: Park, by: []Principal{ReviewRequest}, action: PutItem, forbid: parkDecisionNames},
	{kind: Park, by: []Principal{ReviewRequest}, action: UpdateItem, allow: []string{PK, SK, "task_token", "status"}},
	{kind: Park, by: []Principal{ReviewDecision}, action: UpdateItem, forbid: parkAskedNames},
	// A cover: only a function whose calls can park records one, whole
	// and sealed, and names nothing of a call or a row.
	{kind: Cover, by: []Principal{ParkingToolFunctions}, action: PutItem,
		allow: []string{PK, SK, "tool", "park_id", "pinned_digest", "current_digest", "decided_by", "mac", ExpiresAt}},
	{kind: Key, by: []Principal{ToolFunctions}, action: PutItem, allow: []string{PK, SK, "run_id", ExpiresAt}},
	// A learned shape: only a learning tool function updates it, with
	// names and types, never a value (docs/declarations.md, "Observed
	// shapes").
	{kind: Shape, by: []Principal{LearningToolFunctions}, action: UpdateItem,
		allow: []string{PK, SK, "shape", "version", "tool", "from_host", "learned_from", "updated_at", ExpiresAt}},
	// A fork's claim on a parent call: the dispatcher's own item, as its
	// calls are.
	{kind: ReuseClaim, by: []Principal{ToolFunctions}, action: PutItem},
	{kind: ReuseClaim, by: []Principal{ToolFunctions}, action: UpdateItem},
	{kind: Binding, by: []Principal{ToolFunctions}, action: PutItem, allow: []string{PK, SK, "bound_key", "bound_at", "mac", ExpiresAt}},
	{kind: Toolset, by: []Principal{Publish}, action: PutItem, allow: []string{PK, SK, "body", "registered_at"}},
	{kind: Published, by: []Principal{Publish}, action: PutItem},
	{kind: Start, by: []Principal{ReviewRequest}, action: PutItem},
	// A child pointer: only review-request records one, whole, in the
	// run's start partition, which no tool role writes (docs/fork.md,
	// "Child runs").
	{kind: ChildPointer, by: []Principal{ReviewRequest}, action: PutItem, allow: []string{PK, SK, "child_run_id", "child_attempt", ExpiresAt}},
	// review-request's updates of a start record: a child record's
	// child_started_at or released_at, and a run start record's deadline
	// when the same start comes again (its condition the deadline a
	// consistent read found); never who started the run or what.
	{kind: Start, by: []Principal{ReviewRequest}, action: UpdateItem, forbid: []string{"starter", "input_digest", "state_machine_arn", "end_user",
		"end_user_scope", "forked_from", "origin"}},
	{kind: Proof, by: Functions, action: PutItem, allow: []string{PK, SK, "binding", "arn", ExpiresAt}},
	// Credentials and their markers: only publish writes them (credentials
	// set, revoke, allow; registration); a tool function only reads them.
	{kind: Credential, by: []Principal{Publish}, action: PutItem},
	{kind: Credential, by: []Principal{Publish}, action: UpdateItem},
	{kind: Credential, by: []Principal{Publish}, action: DeleteItem},
	{kind: CredentialToolset, by: []Principal{Publish}, action: PutItem},
	{kind: CredentialToolset, by: []Principal{Publish}, action: UpdateItem},
	{kind: CredentialToolset, by: []Principal{Publish}, action: DeleteItem},
	// Webhook events: recorded once by their producers, marked sent only
	// by those that send (a tool function only records); neither ever
	// rewrites what an event is once it was recorded.
	{kind: WebhookEvent, by: []Principal{ReviewRequest, ReviewDecision, WebhookDelivery}, action: PutItem,
		allow: []string{PK, SK, "type", "solution", "data", "produced_at", "unsent", ExpiresAt}},
	{kind: WebhookEvent, by: []Principal{ReviewRequest, ReviewDecision, WebhookDelivery}, action: UpdateItem, allow: []string{PK, SK, "unsent", "sent_at"}},
	// A tool function records its calls' events under a prefix of their
	// own, and no other producer's: it could otherwise record a
	// review.requested or run.succeeded no run produced.
	{kind: WebhookCallEvent, by: []Principal{ToolFunctions}, action: PutItem,
		allow: []string{PK, SK, "type", "source", "solution", "data", "produced_at", "unsent", ExpiresAt}},
	{kind: WebhookCallEvent, by: []Principal{WebhookDelivery}, action: UpdateItem, allow: []string{PK, SK, "unsent", "sent_at"}},
	// Subscriptions: only the webhooks function writes their URLs, patterns
	// and secrets; webhook-delivery may only disable one.
	{kind: WebhookSubscription, by: []Principal{Webhooks}, action: PutItem},
	{kind: WebhookSubscription, by: []Principal{Webhooks}, action: UpdateItem},
	{kind: WebhookSubscription, by: []Principal{WebhookDelivery}, action: UpdateItem,
		allow: []string{PK, SK, "status", "disabled_reason", "updated_at", "version"}},
	// A reconciliation: only review-decision records one, once, whole
	// (docs/fork.md, "Reconciling"); a tool function only reads it, so it
	// needs no seal.
	{kind: Reconciliation, by: []Principal{ReviewDecision}, action: PutItem,
		allow: []string{PK, SK, "outcome", "result", "reason", "reconciled_by", "reconciled_at", "state_before", "attempts", ExpiresAt}},
	{kind: WebhookAttempt, by: []Principal{WebhookDelivery}, action: PutItem,
		allow: []string{PK, SK, "status_code", "latency_ms", "outcome", "error_class", "at", ExpiresAt}}, // A fork item: only review-decision's run.fork writes it, after it
	// authorised the forker (docs/fork.md); the start lane only reads it.
	{kind: Fork, by: []Principal{ReviewDecision}, action: PutItem,
		allow: []string{PK, SK, "fork_run_id", "forked_by", "forked_at", "rerun_reads", "parent_status", ExpiresAt}},
	// A review's notice: only review-request claims it, once, and records
	// what SES answered: counts and SES's answer, never an address
	// (docs/reviews.md, "Review notices").
	{kind: Notice, by: []Principal{ReviewRequest}, action: PutItem,
		allow: []string{PK, SK, "status", "recipients", "skipped", "claimed_at", ExpiresAt}},
	{kind: Notice, by: []Principal{ReviewRequest}, action: UpdateItem, allow: []string{PK, SK, "status", "message_id", "sent_at", "error_code"}},
	// Inbound sources and schedules: only the sources function writes
	// them (docs/webhooks.md, "Receiving events").
	{kind: InboundSource, by: []Principal{Sources}, action: PutItem},
	{kind: InboundSource, by: []Principal{Sources}, action: UpdateItem},
	{kind: InboundSource, by: []Principal{Sources}, action: DeleteItem},
	{kind: Schedule, by: []Principal{Sources}, action: PutItem},
	{kind: Schedule, by: []Principal{Sources}, action: UpdateItem},
	{kind: Schedule, by: []Principal{Sources}, action: DeleteItem},
	// An inbound event: webhook-receiver records a delivery and marks it
	// queued, never a run's outcome; inbound-start records a firing and
	// the outcome, never a body.
	{kind: InboundEvent, by: []Principal{WebhookReceiver}, action: PutItem, allow: inboundReceivedNames},
	{kind: InboundEvent, by: []Principal{WebhookReceiver}, action: UpdateItem, allow: inboundReceivedNames},
	{kind: InboundEvent, by: []Principal{InboundStart}, action: PutItem, allow: inboundStartedNames},
	{kind: InboundEvent, by: []Principal{InboundStart}, action: UpdateItem, allow: inboundStartedNames},
}

var (
	inboundReceivedNames = []string{PK, SK, "status", "event_type", "body", "body_sha256", "received_at", "unqueued", "queued_at", ExpiresAt}
	inboundStartedNames  = []string{PK, SK, "status", "received_at", "queued_at", "execution_arn", "started_at", "problems", "failed_at", "body", "unqueued", ExpiresAt}
)

// checkWrites reports every write access of accesses that no rule of
// rules covers: a principal writing a kind it may not, or naming an
// attribute it may not (or naming none, when the rule bounds them).
func checkWrites(accesses []Access, rules []writeRule) []string {
	var bad []string
	for _, a := range accesses {
		for _, act := range a.Actions {
			if act != PutItem && act != UpdateItem && act != DeleteItem {
				continue
			}
			for _, k := range a.On {
				for _, p := range a.By {
					if !slices.ContainsFunc(rules, func(r writeRule) bool { return r.covers(k, p, act, a.Attributes) }) {
						bad = append(bad, fmt.Sprintf("%s: %s may make %s on %s items naming %v", a.Sid, p, act, k.Name, a.Attributes))
					}
				}
			}
		}
	}
	return bad
}

func (r writeRule) covers(k *Kind, p Principal, act Action, attrs []string) bool {
	if r.kind != k || r.action != act || !slices.Contains(r.by, p) {
		return false
	}
	switch {
	case r.allow != nil:
		return attrs != nil && !slices.ContainsFunc(attrs, func(n string) bool { return !slices.Contains(r.allow, n) })
	case r.forbid != nil:
		return attrs != nil && !slices.ContainsFunc(attrs, func(n string) bool { return slices.Contains(r.forbid, n) })
	}
	return true
}

// Every write the declaration allows keeps the rules: only review-request
// creates reviews and never with a decision, only review-decision decides
// and never rewrites what was asked, only tool functions bind approvals
// and write calls, only publish registers toolsets, and the operator
// writes nothing.
func TestDeclaredWritesKeepTheRules(t *testing.T) {
	for _, b := range checkWrites(Accesses, writeRules) {
		t.Error(b)
	}
}

// The rules catch a widened declaration: each break below fails them.
func TestWriteRulesCatchWidenedAccesses(t *testing.T) {
	widen := func(sid string, f func(a *Access)) []Access {
		out := slices.Clone(Accesses)
		for i := range out {
			if out[i].Sid == sid {
				out[i].Attributes = slices.Clone(out[i].Attributes)
				f(&out[i])
			}
		}
		return out
	}
	for name, accesses := range map[string][]Access{
		"review-decision rewrites the reviewers":             widen("DecideReviews", func(a *Access) { a.Attributes = append(a.Attributes, "reviewers") }),
		"review-decision binds":                              widen("DecideReviews", func(a *Access) { a.Attributes = append(a.Attributes, "bound_key") }),
		"review-request decides":                             widen("CreateReviews", func(a *Access) { a.Attributes = append(a.Attributes, "approver") }),
		"a tool writes a review":                             widen("BindApprovals", func(a *Access) { a.On = []*Kind{Binding, Review} }),
		"a binding names any attribute":                      widen("BindApprovals", func(a *Access) { a.Attributes = nil }),
		"the operator writes calls":                          widen("LedgerReads", func(a *Access) { a.Actions = append(slices.Clone(a.Actions), PutItem) }),
		"a key pointer names any attribute":                  widen("RecordKeyPointers", func(a *Access) { a.Attributes = nil }),
		"review-request registers toolsets":                  widen("Toolsets", func(a *Access) { a.Actions = []Action{GetItem, PutItem} }),
		"a tool writes credentials":                          widen("ReadCredentials", func(a *Access) { a.Actions = []Action{BatchGetItem, PutItem} }),
		"a tool revokes credentials":                         widen("ReadCredentials", func(a *Access) { a.Actions = []Action{BatchGetItem, DeleteItem} }),
		"a tool marks webhook events sent":                   widen("RecordCallWebhookEvents", func(a *Access) { a.Actions = []Action{PutItem, UpdateItem} }),
		"a webhook event records its sending":                widen("RecordWebhookEvents", func(a *Access) { a.Attributes = append(a.Attributes, "sent_at") }),
		"a tool records another producer's events":           widen("RecordCallWebhookEvents", func(a *Access) { a.On = []*Kind{WebhookCallEvent, WebhookEvent} }),
		"webhook-delivery rewrites a subscription's URL":     widen("DisableWebhookSubscriptions", func(a *Access) { a.Attributes = append(a.Attributes, "url") }),
		"webhook-delivery rewrites a subscription's secrets": widen("DisableWebhookSubscriptions", func(a *Access) { a.Attributes = nil }),
		"webhook-delivery subscribes":                        widen("ReadWebhookSubscriptions", func(a *Access) { a.Actions = []Action{GetItem, Query, PutItem} }),
		"a tool writes subscriptions":                        widen("RecordCallWebhookEvents", func(a *Access) { a.On = []*Kind{WebhookCallEvent, WebhookSubscription} }),
		"an attempt records a body":                          widen("RecordWebhookAttempts", func(a *Access) { a.Attributes = append(a.Attributes, "data") }),
		"review-request decides a park":                      widen("UpdateParkTokens", func(a *Access) { a.Attributes = append(a.Attributes, "decided_by") }),
		"review-decision moves a park's task token":          widen("DecideParks", func(a *Access) { a.Attributes = append(a.Attributes, "task_token") }),
		"a tool writes a child pointer":                      widen("Calls", func(a *Access) { a.On = []*Kind{Call, Row, ReuseClaim, ChildPointer} }),
		"a child pointer names any attribute":                widen("RecordChildPointers", func(a *Access) { a.Attributes = nil }),
		"review-decision releases a child's start record":    widen("ReadParkStarters", func(a *Access) { a.Actions = []Action{GetItem, UpdateItem} }),
		"review-request's renewal rewrites a starter":        widen("UpdateStarts", func(a *Access) { a.Attributes = append(a.Attributes, "starter") }),
	} {
		if len(checkWrites(accesses, writeRules)) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}

// A tool function reads of a review only what an approval check compares:
// never the reviewed input, the task token, the reason or the requester.
func TestToolsReadNoReviewPayload(t *testing.T) {
	for _, a := range Of(ToolFunctions) {
		if !slices.Contains(a.On, Review) || !slices.Contains(a.Actions, GetItem) {
			continue
		}
		if a.Attributes == nil {
			t.Errorf("%s: tool functions read whole reviews", a.Sid)
		}
		for _, n := range []string{"input", "task_token", "reason", "requester"} {
			if slices.Contains(a.Attributes, n) {
				t.Errorf("%s: tool functions read a review's %s", a.Sid, n)
			}
		}
	}
}

// A tool function reads credential items only with a projection, and
// never writes, deletes or lists them.
func TestToolsReadCredentialsOnlyByKeyWithAProjection(t *testing.T) {
	for _, a := range Of(ToolFunctions) {
		if !slices.Contains(a.On, Credential) && !slices.Contains(a.On, CredentialToolset) {
			continue
		}
		if !slices.Equal(a.Actions, []Action{BatchGetItem}) {
			t.Errorf("%s: tool functions make %v on credential items", a.Sid, a.Actions)
		}
		if a.Attributes == nil || !a.SpecificAttributes || slices.Contains(a.Attributes, "created_at") {
			t.Errorf("%s: tool functions read credential items without CredentialReadAttributes' projection", a.Sid)
		}
	}
}

// A tool function reads of a park only what its approval check compares,
// with a projection: never the park Task's token or a reason.
func TestToolsReadNoParkTaskToken(t *testing.T) {
	for _, a := range Of(ToolFunctions) {
		if !slices.Contains(a.On, Park) {
			continue
		}
		if !slices.Equal(a.Actions, []Action{GetItem}) || a.Attributes == nil || !a.SpecificAttributes {
			t.Errorf("%s: tool functions make %v on park items without a projection", a.Sid, a.Actions)
		}
		for _, n := range []string{"task_token", "reason"} {
			if slices.Contains(a.Attributes, n) {
				t.Errorf("%s: tool functions read a park's %s", a.Sid, n)
			}
		}
	}
}

// startWriters are the principals with a write access to an item whose
// partition key prefix is START#'s.
func startWriters(accesses []Access) []string {
	var out []string
	for _, a := range accesses {
		for _, act := range a.Actions {
			if act != PutItem && act != UpdateItem && act != DeleteItem {
				continue
			}
			for _, pre := range a.Prefixes() {
				if !strings.HasPrefix(Start.Prefix, pre) && !strings.HasPrefix(pre, Start.Prefix) {
					continue
				}
				for _, p := range a.By {
					if p != ReviewRequest {
						out = append(out, fmt.Sprintf("%s: %s may make %s on %s* items", a.Sid, p, act, pre))
					}
				}
			}
		}
	}
	return out
}

// Only review-request writes anything in a run's start partition. IAM's
// dynamodb:LeadingKeys bounds a partition key prefix, never a sort key,
// so a write access to any kind under START# (a start record, a child
// pointer) would let its principal write child pointers too, and choose
// whose results a fork's child reuses (docs/fork.md, "Child runs").
func TestOnlyReviewRequestWritesTheStartPartition(t *testing.T) {
	for _, b := range startWriters(Accesses) {
		t.Error(b)
	}
	widened := slices.Clone(Accesses)
	for i := range widened {
		if widened[i].Sid == "ReadParkStarters" {
			widened[i].Actions = []Action{GetItem, UpdateItem}
		}
	}
	if len(startWriters(widened)) == 0 {
		t.Error("review-decision updating start records is not caught")
	}
}
