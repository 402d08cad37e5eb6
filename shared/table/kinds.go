package table

// attr is an Attribute of one type (the first written).
func attr(name string, t Type, doc string) Attribute {
	return Attribute{Name: name, Types: []Type{t}, Doc: doc}
}

// ttl is ExpiresAt, the item's end.
var ttl = attr(ExpiresAt, Number, "epoch seconds: DynamoDB's TTL ends the item after it")

// Call is a tool call's item: its idempotency record and every attempt's
// row (shared/ledger records.go, compact.go; docs/ledger.md, "One item
// per call", "The call item on the wire"). Claims write the compact
// layout (c, r, i); the attributes documented "named layout" are
// those of items written before it, still read. Only the dispatcher of a
// tool function writes it.
var Call = &Kind{
	Name: "call", Prefix: "RUN#", PKShape: "RUN#<run_id>", SKShape: "CALL#<seq's sort key>", SKPrefix: CallSKPrefix,
	Doc: "a tool call's idempotency record and its attempts' rows",
	Attributes: []Attribute{
		attr("c", Map, "the call, written once by its first claim (compact layout): s step, t tool, ts toolset id's 16 bytes (B), "+
			"d input digest's 32 bytes (B), k the external key's opaque run id, ib input bytes, l lease (unix ms), "+
			"a its attempts in order (L of M: tk claim token, t start (unix ns), ap the approver its claim ran under (a gated call), o the outcome once it ended: "+
			"s status (none: SUCCEEDED), c error code, du ms, ob output bytes, od output digest's 32 bytes (B), mm memory MB, rv review, ap approver, pr parent run, "+
			"pk the park it was sent under, sc additive when sent under an additive schema change its toolset allows, "+
			"pd and cd the pinned and the approved or listed definition's digests' 32 bytes (B), "+
			"rk the parent call's idempotency key whose result a fork's call reused (s REUSED), "+
			"ed and eb the edited input's digest's 32 bytes (B) and its editor, under an approval with edits (docs/reviews.md)), "+
			"o the options digest's 16 bytes (B; only when the call has keep, output_limit_bytes, a credential or edits), "+
			"st FAILED or UNKNOWN (none: IN_PROGRESS, or COMPLETED with r; COMPLETED with r when a reconciliation finished it), "+
			"x an UNKNOWN record's code no attempt holds, m the seal, "+
			"rc the reconciliation that finished an UNKNOWN record (M: o applied or not_applied, b who, t unix ms; docs/fork.md)"),
		{Name: "r", Types: []Type{String, Null}, Doc: "the recorded result's JSON: the call is COMPLETED (compact layout)"},
		attr("i", Number, "invocations that reached the call, replays included (compact layout; its last one is expires_at less the retention)"),
		attr("run_id", String, "named layout: the run's id: an execution ARN, or a direct-lane run id"),
		{Name: "seq", Types: []Type{String, Number}, Doc: "named layout: the call's tool.Seq (\"3\", \"3.1\"); a number in items written before for_each"},
		attr("step", String, "named layout: the Solution step's id"),
		attr("tool", String, "named layout: the tool's name"),
		attr("toolset_id", String, "named layout: the pinned toolset's id"),
		attr("input_digest", String, "named layout: sha256:<hex> of the RFC 8785 input"),
		attr("idempotency_key", String, "named layout: <run_id>/<seq>"),
		attr("state", String, "named layout: IN_PROGRESS, COMPLETED, FAILED or UNKNOWN"),
		attr("attempts", Number, "named layout: attempts claimed"),
		attr("lease_until", Number, "named layout: unix ms: the claim's lease"),
		attr("token", String, "named layout: the current claim's token"),
		{Name: "result", Types: []Type{String, Null}, Doc: "named layout: the recorded result's JSON, COMPLETED only"},
		attr("error_code", String, "named layout: the typed error of a FAILED or UNKNOWN call"),
		attr("updated_at", Number, "named layout: unix ms"),
		attr("attempt_log", Map, "named layout: the attempts' entries by claim token"),
		attr("invocations", Number, "named layout: invocations that reached the call, replays included"),
		attr("last_seen_at", Number, "named layout: unix ms: the last invocation"),
		attr("mac", String, "named layout: the writing function's seal over the record (shared/seal); absent in items written before seals"),
		attr("external_key", String, "named layout: <opaque run id>/<seq>: the key sent to third parties; absent in items claimed before it"),
		attr("external_key_token", String, "named layout: the token of the claim that wrote external_key: the key holds when that claim is attempt 1"),
		ttl,
	},
}

// Cover is an approved definition change that covers the later calls of
// its tool in its run: once a call is sent under an APPROVED
// tool.schema_changed park, a later call of the same tool in the same run
// whose server holds the same approved definition goes on as under that
// approval instead of parking again (shared/ledger covers.go;
// docs/parking.md, "Approvals that cover later calls"). Its sort key
// names the tool and the approved definition's digest, not the step:
// every step of the run that calls the tool is covered. Only the
// dispatcher of a function whose calls can park writes one, sealed with
// its own key, after reading the approval itself; a reader accepts only
// its own seal.
var Cover = &Kind{
	Name: "cover", Prefix: "RUN#", PKShape: "RUN#<run_id>", SKShape: CoverSKPrefix + "<tool>#<current digest>", SKPrefix: CoverSKPrefix,
	Doc: "an approved tool definition that covers the run's later calls of the tool",
	Attributes: []Attribute{
		attr("tool", String, "the tool's name"),
		attr("park_id", String, "the APPROVED tool.schema_changed park whose call recorded the cover"),
		attr("pinned_digest", String, "sha256:<hex> of the tool definition the run's toolset pinned"),
		attr("current_digest", String, "sha256:<hex> of the definition the park's approval approved"),
		attr("decided_by", String, "who approved the park"),
		attr("mac", String, "the writing function's seal over the run, tool, digests, park and decider (shared/seal)"),
		ttl,
	},
}

// ReuseClaim is a fork's claim on one call of its parent run: the call of
// the fork (its idempotency key) that takes the parent call's recorded
// result instead of running the tool (shared/ledger reuse.go;
// docs/fork.md, "Matching"). It lives in the fork's partition, its sort
// key naming the parent call's: two identical calls of the fork cannot
// both take one parent call. Only the dispatcher of a tool function
// writes one, with a conditional PutItem.
var ReuseClaim = &Kind{
	Name: "reuse claim", Prefix: "RUN#", PKShape: "RUN#<fork run id>", SKShape: ReuseSKPrefix + "<parent call's sort key>", SKPrefix: ReuseSKPrefix,
	Doc: "a fork's call that took a parent call's recorded result",
	Attributes: []Attribute{
		attr("claimed_by", String, "the fork call's idempotency key"),
		attr("mac", String, "the claiming function's seal over the fork run, the parent call's sort key and claimed_by (shared/seal)"),
		ttl,
	},
}

// Key points from an opaque run id (the first half of the external keys
// third parties receive) to its run, for an operator (shared/ledger
// keys.go; docs/ledger.md, "The key pointer"). Only the dispatcher of a
// tool function writes one, with the claim of a run's first call.
var Key = &Kind{
	Name: "key", Prefix: "KEY#", PKShape: "KEY#<opaque run id>", SKShape: "KEY", SKValue: "KEY",
	Doc: "the run an external key's opaque run id stands for",
	Attributes: []Attribute{
		attr("run_id", String, "the run's id"),
		ttl,
	},
}

// Row is a ToolInvocation row item of its own: an invocation that claimed
// nothing, or the PARKED row of an attempt whose server refused its
// credential (shared/ledger rows.go, PutRow; docs/parking.md). Its
// attributes are the Row's.
var Row = &Kind{
	Name: "row", Prefix: "RUN#", PKShape: "RUN#<run_id>", SKPrefix: CallSKPrefix,
	SKShape: "CALL#<seq's sort key>#<started_at, unix ns, 19 digits>#<8 random hex>",
	Doc:     "a ToolInvocation row of an invocation that claimed nothing, or the PARKED row of an attempt whose credential its server refused",
	Attributes: []Attribute{
		attr("run_id", String, "the run's id"),
		{Name: "seq", Types: []Type{String, Number}, Doc: "the call's tool.Seq; a number before for_each"},
		attr("attempt", Number, "the ledger's attempt count, 0 when refused before a claim"),
		attr("step", String, "the Solution step's id"),
		attr("tool", String, "the tool's name"),
		attr("toolset_id", String, "the pinned toolset's id"),
		attr("idempotency_key", String, "<run_id>/<seq>"),
		attr("status", String, "the row's status"),
		attr("error_code", String, "the typed error"),
		attr("retryable", Bool, "whether Step Functions may retry"),
		attr("started_at", String, "RFC 3339 with ns, UTC"),
		attr("ended_at", String, "RFC 3339 with ns, UTC"),
		attr("duration_ms", Number, "ms"),
		attr("input_digest", String, "sha256:<hex> of the RFC 8785 input"),
		attr("input_bytes", Number, "bytes of the input"),
		attr("output_digest", String, "sha256:<hex> of the output"),
		attr("output_bytes", Number, "bytes of the output"),
		attr("memory_mb", Number, "the function's memory, MB"),
		attr("review_id", String, "the approval's review"),
		attr("approver", String, "the approval's approver"),
		attr("parent_run_id", String, "a child run's parent"),
		attr("edited_digest", String, "an approval with edits: sha256:<hex> of the input the tool ran with (docs/reviews.md)"),
		attr("editor", String, "an approval with edits: who edited the input (the approver)"),
		attr("after_claim_request", Bool, "a refusal after the claim's request was sent"),
		attr("refusal_reason", String, "why a refusal was made, where its code does not tell (record-forged, binding-forged)"),
		attr("park_cause", String, "a PARKED row's cause: tool.schema_changed or credentials.expired (docs/parking.md)"),
		attr("pinned_digest", String, "tool.schema_changed: sha256:<hex> of the tool definition the toolset pinned"),
		attr("current_digest", String, "tool.schema_changed: sha256:<hex> of the definition the server holds now"),
		attr("changed_pointers", List, "tool.schema_changed: JSON Pointers (RFC 6901, strings) into the definition that differ, at most 32"),
		attr("additive_pointers", List, "tool.schema_changed: those of changed_pointers whose change is additive; the others are breaking (docs/parking.md, \"Classifying a change\")"),
		attr("park_target", String, "credentials.expired: the credential's target, as the vault names it; never a secret"),
		attr("park_scope", String, "credentials.expired: the credential's scope, as the vault names it"),
		attr("park_id", String, "the park a call was sent again under, once approved or resumed (docs/parking.md, \"The dispatcher\")"),
		attr("schema_change", String, "additive: the call was sent under a changed tool definition its toolset allows, with pinned_digest and current_digest (docs/parking.md, \"allow_additive_input\")"),
		ttl,
	},
}

// Toolset is a registered toolset (shared/ledger toolsets.go; docs/ledger.md,
// "Toolsets are checked on every load"). Only the publish function
// writes one, after the registration check.
var Toolset = &Kind{
	Name: "toolset", Prefix: "TOOLSET#", PKShape: "TOOLSET#<toolset id>", SKShape: "TOOLSET", SKValue: "TOOLSET",
	Doc: "a registered toolset",
	Attributes: []Attribute{
		attr(ToolsetBody, String, "the toolset's RFC 8785 form without its id"),
		attr("registered_at", String, "RFC 3339 UTC ms"),
	},
}

// Published is a Solution's last published version in the stage
// (shared/ledger solutions.go; docs/solutions.md, "Workflow steps").
var Published = &Kind{
	Name: "published", Prefix: "SOLUTION#", PKShape: "SOLUTION#<solution>", SKShape: "PUBLISHED", SKValue: "PUBLISHED",
	Doc: "a Solution's last published version and the bounds a parent is checked against",
	Attributes: []Attribute{
		attr("version_arn", String, "the state machine version a parent starts"),
		attr("version", Number, "the Solution's version"),
		attr("toolset_id", String, "the pinned toolset's id"),
		attr("output_bound_bytes", Number, "bytes of JSON a run's output may reach"),
		attr("run_timeout_seconds", Number, "the version's run timeout, s; absent in records written before"),
		attr("input_limit_bytes", Number, "policy.input_limit_bytes"),
		attr("source_digest", String, "sha256:<hex> of the source"),
		attr("publisher", String, "who published it"),
		attr("published_at", String, "RFC 3339 UTC ms"),
	},
}

// ReviewsByStatus lists reviews by status without a Scan (docs/reviews.md).
// Only review items carry its keys; it projects what a listing shows,
// never a review's inputs, reason or task token.
var ReviewsByStatus = &Index{
	Name: "reviews-by-status", PK: "review_list_pk", SK: "review_list_sk", PKPrefix: "REVIEWS#",
	Doc: "review_list_pk \"REVIEWS#<status>\", review_list_sk \"<created_at, RFC 3339 UTC ms>#<review_id>\"",
	Projects: []string{
		"review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers", "input_digest",
		"status", "created_at", ExpiresAt, "approver", "authenticated", "decided_at", "bound_key",
	},
}

// Review is a review of one tool call (shared/review/dynamo; docs/reviews.md).
var Review = &Kind{
	Name: "review", Prefix: "REVIEW#", PKShape: "REVIEW#<review id>", SKShape: "REVIEW", SKValue: "REVIEW",
	Indexes: []*Index{ReviewsByStatus},
	Doc:     "a review: what was asked (review-request) and its decision (review-decision)",
	Attributes: []Attribute{
		attr("review_id", String, "the review's id"),
		attr("run_id", String, "the run's id"),
		attr("step", String, "the review step's id"),
		attr("of", String, "the reviewed tool step's id"),
		attr("tool", String, "the reviewed tool"),
		attr("toolset_id", String, "the run's toolset"),
		attr("reviewers", List, "reviewer ARN patterns (strings)"),
		attr("input", String, "the reviewed input's JSON"),
		attr("input_digest", String, "sha256:<hex> of the RFC 8785 input"),
		attr("input_bytes", Number, "bytes of the input"),
		attr("timeout_seconds", Number, "s"),
		attr("requester", String, "who started the run"),
		attr("task_token", String, "the review Task's token"),
		attr("status", String, "PENDING, APPROVED, REJECTED or EXPIRED"),
		attr("created_at", String, "RFC 3339 UTC ms"),
		attr("deadline", Number, "epoch seconds: the review's own end"),
		ttl,
		attr(ReviewsByStatus.PK, String, "REVIEWS#<status>"),
		attr(ReviewsByStatus.SK, String, "<created_at>#<review_id>"),
		attr("approver", String, "who decided"),
		attr("authenticated", Bool, "whether the decision was proven"),
		attr("decided_at", String, "RFC 3339 UTC ms"),
		attr("reason", String, "the reviewer's reason"),
		attr("decision_token", String, "the decision's idempotency token"),
		attr("delivery", String, "the decision's delivery to the Task"),
		attr("delivery_lease_until", Number, "unix ms"),
		attr("delivered_at", String, "RFC 3339 UTC ms"),
		attr("delivery_error", String, "why the delivery failed"),
		attr("self_approval_refusals", Number, "refused self-approvals (the requester's and the origin holders')"),
		attr("origin_holders", List, "an inbound or scheduled run's origin holders (strings: principal ARNs who held a secret of its source, "+
			"or added its schedule), who may not approve it (docs/identity.md, \"Four eyes\"); absent for any other run"),
		attr("bound_key", String, "legacy: the call an approval was bound to before binding items"),
		attr("bound_at", String, "legacy: RFC 3339 UTC ms"),
		attr("traceparent", String, "W3C traceparent: the review's place in its run's trace"),
		attr("kind", String, "call or show; absent: call (docs/reviews.md, \"Kinds of review\")"),
		attr("ask", String, "the question's JSON Schema, compact JSON"),
		attr("editable", List, "the input members the reviewer may replace (strings)"),
		attr("answer", String, "the approval's answer, JSON"),
		attr("edits", String, "the approval's edits, an RFC 8785 JSON object"),
		attr("approved_digest", String, "sha256:<hex> of the input with the edits merged"),
	},
}

// Binding records which call an approval authorised (shared/review/dynamo
// Bind, BoundKey). Only a tool function writes one.
var Binding = &Kind{
	Name: "binding", Prefix: "BIND#", PKShape: "BIND#<review id>", SKShape: "BIND", SKValue: "BIND",
	Doc: "the call an approval was used for",
	Attributes: []Attribute{
		attr("bound_key", String, "the call's idempotency key"),
		attr("bound_at", String, "RFC 3339 UTC ms"),
		attr("mac", String, "the binding function's seal over review id and bound key (shared/seal); absent in the previous layout"),
		ttl,
	},
}

// Start records who started an execution: toolgate run's start record,
// written before the execution starts, or, for a child run, which parent
// recorded it (shared/review/dynamo RecordRunStart, RecordChildStart;
// RecordStart for executions published before start records;
// docs/identity.md).
var Start = &Kind{
	Name: "start", Prefix: "START#", PKShape: "START#<execution ARN>", SKShape: "START", SKValue: "START",
	Doc: "an execution's proven starter",
	Attributes: []Attribute{
		attr("starter", String, "the starter's ARN"),
		attr("parent_run_id", String, "a child run's parent"),
		attr("input_digest", String, "sha256:<hex> of the RFC 8785 whole execution input {input, meta} (a run's or a child's)"),
		attr("deadline", Number, "epoch seconds: a run's latest $$.Execution.StartTime (toolgate run's record)"),
		attr("state_machine_arn", String, "the child's state machine version"),
		attr("child_started_at", String, "when the child took the record"),
		attr("released_at", String, "when the parent released a record no child took"),
		attr("end_user", String, "the end-user id toolgate run --end-user named, when the end-user mapping lets the starter act for it (docs/identity.md, \"End users\")"),
		attr("end_user_scope", String, "end_user:<hex HMAC-SHA256 of the id> (shared/enduser Scope); a child's is its parent's"),
		attr("end_user_skipped", String, "why the end user asked for was not recorded (the mapping does not let the starter act for it)"),
		attr("forked_from", String, "a fork's parent run, its execution ARN: recorded only when the parent's fork item names this execution and the starter may fork it (docs/fork.md)"),
		attr("rerun_reads", Bool, "a fork's --rerun-reads: its reads run again rather than reuse the parent's results"),
		attr("origin", Map, "an inbound or scheduled start: what started it (M: kind source or schedule, name, added_by, event, "+
			"holders L of S: who held a secret of the source or added the schedule) "+
			"(docs/identity.md, \"Four eyes\")"),
		ttl,
	},
}

// ChildPointer points from a run to a child run one of its workflow steps
// started: the step, the loop index path and the seq it started it at,
// and the child's execution ARN (shared/review/dynamo children.go;
// docs/fork.md, "Child runs"). A fork of the run finds there the child
// its own workflow step's child is forked from: the parent's k-th child
// at the same step and loop index path, in seq order. It lives in the
// run's start partition, beside its start record, not in its ledger
// partition: only review-request may write there (IAM leading keys
// START#*), whereas every tool role writes whole items under RUN#, and a
// pointer a tool role could write would choose whose results a fork's
// child reuses. Only review-request writes one, when it records the
// child's start, with a conditional PutItem that never moves it back to
// an earlier attempt's child.
var ChildPointer = &Kind{
	Name: "child pointer", Prefix: "START#", PKShape: "START#<run's execution ARN>",
	SKShape: ChildPointerSKPrefix + "<step id>#<loop index path>#<seq's sort key>", SKPrefix: ChildPointerSKPrefix,
	Doc: "a child run a workflow step of the run started, by step, loop index path and seq",
	Attributes: []Attribute{
		attr("child_run_id", String, "the child's execution ARN"),
		attr("child_attempt", Number, "the attempt whose name the child's execution has (tool.ChildAttemptName): 0, then one more for each name held by another execution"),
		ttl,
	},
}

// Fork records that a run was forked, and as which execution: written
// once per parent by review-decision's run.fork, after it authorised the
// forker and stopped the parent (conditional PutItem
// attribute_not_exists(pk) OR fork_run_id = :f AND forked_by = :b AND
// rerun_reads = :r: the same forker asking again for the same fork is
// idempotent; another fork, forker or rerun_reads is refused), and read by review-request's
// start lane before it records forked_from on the fork's start record
// (docs/fork.md, "Forking a run").
var Fork = &Kind{
	Name: "fork", Prefix: ForkPrefix, PKShape: ForkPrefix + "<parent run id>", SKShape: ForkSK, SKValue: ForkSK,
	Doc: "the one fork of a run: which execution it is, who forked it and what became of the parent",
	Attributes: []Attribute{
		attr("fork_run_id", String, "the fork's execution ARN"),
		attr("forked_by", String, "the verified forker's ARN"),
		attr("forked_at", String, "RFC 3339 UTC ms"),
		attr("rerun_reads", Bool, "whether the fork's reads run again rather than reuse the parent's results"),
		attr("parent_status", String, "RUNNING or PENDING_REDRIVE when run.fork stopped the parent, else its terminal status (SUCCEEDED, FAILED, TIMED_OUT, ABORTED)"),
		ttl,
	},
}

// Proof records an accepted caller proof, so it is accepted once
// (shared/caller; docs/identity.md).
var Proof = &Kind{
	Name: "proof", Prefix: "PROOF#", PKShape: "PROOF#<proof id>", SKShape: "PROOF", SKValue: "PROOF",
	Doc: "an accepted caller proof",
	Attributes: []Attribute{
		attr("binding", String, "the proof's binding digest"),
		attr("arn", String, "the proven principal"),
		ttl,
	},
}

// Credential is a credential of one toolset name's target, origin and
// scope: its ciphertext and metadata, never its plaintext (shared/credential/vault
// store.go; docs/credentials.md, "Storing"). Only the publish function
// writes one (credentials set; revoke deletes it); tool functions read it
// at call time. Only run-scope items have expires_at (the run's end and a
// day); credential_expires_at is the credential's own expiry, which no
// TTL acts on.
var Credential = &Kind{
	Name: "credential", Prefix: CredentialPrefix, PKShape: "CRED#<toolset name>",
	SKShape: "<target>#<origin>#SCOPE#<scope>", SKInfix: CredentialScopeInfix,
	Doc: "a credential of a toolset's target for one scope, envelope-encrypted",
	Attributes: []Attribute{
		attr("ct", Binary, "AES-256-GCM ciphertext of the credential, tag included"),
		attr("nonce", Binary, "the GCM nonce, 12 bytes"),
		attr("edk", Binary, "the data key, encrypted by KMS under the encryption context"),
		attr("key_id", String, "the KMS key's ARN"),
		attr("version", Number, "1, then one more at each set of the item's key"),
		attr("created_at", String, "RFC 3339 UTC: this version's set"),
		attr("set_by", String, "the verified setter's ARN"),
		attr("credential_expires_at", Number, "epoch seconds: the credential's own expiry; absent: none"),
		attr("execution_arn", String, "run scope: the run's execution ARN"),
		ttl,
	},
}

// CredentialToolset marks a toolset id registered under a toolset name
// whose target declares auth, and, once allowed, lets that id use the
// target's credentials for that origin (shared/credential/vault store.go;
// docs/credentials.md, "Which toolsets may use a credential"). The
// publish function writes it at registration (registered_at) and when a
// credential is set or an id allowed (allowed_by, allowed_at).
var CredentialToolset = &Kind{
	Name: "credential toolset", Prefix: CredentialPrefix, PKShape: "CRED#<toolset name>",
	SKShape: "<target>#<origin>#TOOLSET#<toolset id>", SKInfix: CredentialToolsetInfix,
	Doc: "a toolset id registered for a target's credentials, and whether it is allowed them",
	Attributes: []Attribute{
		attr("registered_at", String, "RFC 3339 UTC: the toolset's registration"),
		attr("allowed_by", String, "the ARN that allowed the id; absent: not allowed"),
		attr("allowed_at", String, "RFC 3339 UTC"),
	},
}

// WebhookSubscription is a webhook subscription: where to POST which
// events, and the secrets that sign them, sealed (shared/webhook/store;
// docs/webhooks.md). Every subscription sits in one partition,
// "WEBHOOK#SUBSCRIPTIONS", which one Query lists: there are tens, not
// millions. Only the webhooks function writes one (subscribe,
// rotate-secret, disable); webhook-delivery reads them and disables one
// whose endpoint answered 410 Gone.
var WebhookSubscription = &Kind{
	Name: "webhook subscription", Prefix: "WEBHOOK#", PKShape: "WEBHOOK#SUBSCRIPTIONS",
	SKShape: WebhookSubscriptionSKPrefix + "<subscription id>", SKPrefix: WebhookSubscriptionSKPrefix,
	Doc: "a webhook subscription: its endpoint, event patterns and sealed signing secrets",
	Attributes: []Attribute{
		attr("url", String, "the endpoint's https URL"),
		attr("events", List, "the event type patterns it receives (strings: a type, or <prefix>.*)"),
		attr("solution", String, "the Solution whose events it receives; absent: every Solution's"),
		attr("status", String, "active or disabled"),
		attr("disabled_reason", String, "why it was disabled (410 Gone, or the admin's reason)"),
		attr("created_at", String, "RFC 3339 UTC"),
		attr("created_by", String, "the verified subscriber's ARN"),
		attr("updated_at", String, "RFC 3339 UTC: the last rotate-secret or disable"),
		attr("version", Number, "1, then one more at each rotate-secret and disable"),
		attr("secrets", List, "the signing secrets, current last (L of M: ct, nonce, edk (B) the secret sealed under "+
			"{purpose: webhook-subscription, subscription: <id>}, key_id, created_at, retires_at (absent: current) RFC 3339 UTC)"),
	},
}

// WebhookUnsent is the sparse index of webhook events not yet handed to
// the events queue: only an event item whose unsent attribute is set
// (WebhookUnsentFlag) is in it, and marking the event sent removes the
// attribute, and with it the entry. The relay reads it, oldest first, to
// send what a producer recorded but did not send (docs/webhooks.md).
var WebhookUnsent = &Index{
	Name: "webhook-unsent", PK: "unsent", PKType: Number, SK: "produced_at",
	Doc: "unsent 1 while the event waits for the queue, produced_at RFC 3339 UTC, whole seconds",
}

// WebhookEvent is a webhook event as recorded once, its id the dedupe key
// (shared/webhook/store; docs/webhooks.md): review-request,
// review-decision or webhook-delivery puts it (conditionally) and marks it
// sent. A tool function's events are WebhookCallEvent items, under a
// prefix of their own.
var WebhookEvent = &Kind{
	Name: "webhook event", Prefix: "WHEVT#", PKShape: "WHEVT#<event id>", SKShape: "EVENT", SKValue: "EVENT",
	Indexes: []*Index{WebhookUnsent},
	Doc:     "a webhook event, recorded once, and whether it was handed to the events queue",
	Attributes: []Attribute{
		attr("type", String, "the event type (run.started, review.requested, ...)"),
		attr("solution", String, "the Solution's name; absent: none"),
		attr("data", String, "the type's payload's JSON: ids, digests and statuses only"),
		attr("produced_at", String, "RFC 3339 UTC, whole seconds: the event's timestamp"),
		attr("unsent", Number, "1 until the event is handed to the queue (the webhook-unsent index's key); absent: sent"),
		attr("sent_at", String, "RFC 3339 UTC: when it was handed to the queue"),
		ttl,
	},
}

// WebhookCallEvent is a webhook event a tool function's dispatcher
// records (tool.schema_changed, credentials.expired, call.unknown), under
// a prefix of its own so that a tool role's PutItem (dynamodb:LeadingKeys
// "WHCALL#*") reaches no event of another producer, and with the source
// its id derives from, so that its reader can check the id
// (shared/webhook/store; docs/webhooks.md, "Who may record an event").
// Only webhook-delivery's relay marks it sent.
var WebhookCallEvent = &Kind{
	Name: "webhook call event", Prefix: "WHCALL#", PKShape: "WHCALL#<event id>", SKShape: "EVENT", SKValue: "EVENT",
	Indexes: []*Index{WebhookUnsent},
	Doc:     "a webhook event of a call, as a tool function's dispatcher recorded it once",
	Attributes: []Attribute{
		attr("type", String, "the event type: tool.schema_changed, credentials.expired or call.unknown"),
		attr("source", String, "what the event id derives from (a PARKED row's key, a call's ledger key): the id is its digest"),
		attr("solution", String, "the Solution's name; absent: none"),
		attr("data", String, "the type's payload's JSON: ids, digests and statuses only"),
		attr("produced_at", String, "RFC 3339 UTC, whole seconds: the event's timestamp"),
		attr("unsent", Number, "1 until the event is handed to the queue (the webhook-unsent index's key); absent: sent"),
		attr("sent_at", String, "RFC 3339 UTC: when it was handed to the queue"),
		ttl,
	},
}

// WebhookAttempt is one attempt to deliver an event to one subscription,
// in the event's partition (shared/webhook/store; docs/webhooks.md): its
// status and latency, never a body. Only webhook-delivery writes one.
var WebhookAttempt = &Kind{
	Name: "webhook attempt", Prefix: "WHEVT#", PKShape: "WHEVT#<event id>",
	SKShape: WebhookAttemptSKPrefix + "<subscription id>#<attempt, 3 digits>", SKPrefix: WebhookAttemptSKPrefix,
	Doc: "one attempt to deliver a webhook event to one subscription",
	Attributes: []Attribute{
		attr("status_code", Number, "the endpoint's HTTP status; 0: no answer"),
		attr("latency_ms", Number, "ms from the request to the answer's status line, or to the failure"),
		attr("outcome", String, "delivered, retry or gone"),
		attr("error_class", String, "why no answer counted (timeout, connect, refused-address, redirect, ...); absent: none"),
		attr("at", String, "RFC 3339 UTC: the attempt's start"),
		ttl,
	},
}

// ParksByStatus lists parked calls by status without a Scan
// (docs/parking.md, "Recording a park"). Only park items carry its keys;
// it projects what a listing shows, never a park's task token or reason.
var ParksByStatus = &Index{
	Name: "parks-by-status", PK: "park_list_pk", SK: "park_list_sk", PKPrefix: "PARKS#",
	Doc: "park_list_pk \"PARKS#<status>\", park_list_sk \"<created_at, RFC 3339 UTC ms>#<park id>\"",
	Projects: []string{
		"run_id", "step", "seq", "idempotency_key", "tool", "toolset_id", "cause", "gated", "current_digest",
		"park_target", "park_scope", "status", "created_at", "deadline", ExpiresAt, "decided_by", "decided_at",
	},
}

// ParkScopeKey is the attribute of a park waiting for one credential:
// "<target>#<scope>", only on a park with cause credentials.expired and
// only while it is PARKED. No index is keyed on it: a stage's table gains
// one global secondary index per deployment (docs/infra.md), so the parks
// of one credential are the PARKED ones of parks-by-status that carry it.
const ParkScopeKey = "park_scope_key"

// Park is a parked call: what parked it, the park Task's token that waits
// for a decision, and the decision (shared/park/dynamo; docs/parking.md).
// review-request records it from the call's PARKED row; review-decision
// decides it; a tool function's dispatcher reads an approval.
var Park = &Kind{
	Name: "park", Prefix: "PARK#", PKShape: "PARK#<park id>", SKShape: "PARK", SKValue: "PARK",
	Indexes: []*Index{ParksByStatus},
	Doc:     "a parked call: what parked it, the park Task's token and the decision",
	Attributes: []Attribute{
		attr("run_id", String, "the run's id: its execution ARN"),
		attr("step", String, "the parked tool step's id"),
		attr("seq", String, "the call's tool.Seq"),
		attr("idempotency_key", String, "<run_id>/<seq>"),
		attr("tool", String, "the tool's name"),
		attr("toolset_id", String, "the run's pinned toolset"),
		attr("cause", String, "tool.schema_changed or credentials.expired"),
		attr("gated", Bool, "whether the step has a review: its reviewers decide"),
		attr("pinned_digest", String, "tool.schema_changed: sha256:<hex> of the pinned tool definition"),
		attr("current_digest", String, "tool.schema_changed: sha256:<hex> of the server's current definition"),
		attr("changed_pointers", List, "tool.schema_changed: JSON Pointers (strings) into the definition that differ"),
		attr("additive_pointers", List, "tool.schema_changed: those of changed_pointers whose change is additive; the others are breaking"),
		attr("park_target", String, "credentials.expired: the credential's target"),
		attr("park_scope", String, "credentials.expired: the credential's scope"),
		attr("row_sk", String, "the PARKED row's sort key (its partition key is RUN#<run_id>)"),
		attr("task_token", String, "the token of the park Task that waits: the latest one"),
		attr("status", String, "PARKED, APPROVED, REJECTED, RESUMED, CANCELLED or TIMED_OUT"),
		attr("created_at", String, "RFC 3339 UTC ms"),
		attr("deadline", Number, "epoch seconds: created_at and the park Task's timeout"),
		attr(ParksByStatus.PK, String, "PARKS#<status>"),
		attr(ParksByStatus.SK, String, "<created_at>#<park id>"),
		attr(ParkScopeKey, String, "<target>#<scope>: only while PARKED with cause credentials.expired"),
		attr("decided_by", String, "who decided, approved, resumed or cancelled"),
		attr("decided_at", String, "RFC 3339 UTC ms"),
		attr("reason", String, "a rejection's reason"),
		ttl,
	},
}

// Reconciliation records a person's word on a call whose outcome is
// unknown (an UNKNOWN record, or an IN_PROGRESS one whose lease has
// passed): whether its effect was applied, and, applied, optionally the
// result it had (shared/ledger reconciliations.go; docs/fork.md,
// "Reconciling"). Its partition key names the call's idempotency key.
// Only review-decision writes one, once (conditional PutItem), for a
// principal the reconcilers admit; a tool function's dispatcher reads it
// and finishes the call's record by it. Because no tool role may write
// the kind (its declared accesses, IAM leading keys), a dispatcher trusts
// it without a seal.
var Reconciliation = &Kind{
	Name: "reconciliation", Prefix: "RECON#", PKShape: "RECON#<idempotency key>", SKShape: "RECON", SKValue: "RECON",
	Doc: "a person's word on a call whose outcome was unknown: applied (with its result) or not applied",
	Attributes: []Attribute{
		attr("outcome", String, "applied or not_applied"),
		attr("result", String, "applied only, when given: the call's result's JSON, checked against the pinned output schema"),
		attr("reason", String, "why, in the reconciler's words (1 to 1000 characters; required with not_applied)"),
		attr("reconciled_by", String, "the verified reconciler's ARN"),
		attr("reconciled_at", String, "RFC 3339 UTC ms"),
		attr("state_before", String, "the record's state when reconciled: UNKNOWN, or IN_PROGRESS with its lease passed"),
		attr("attempts", Number, "the record's attempt count when reconciled: the reconciliation speaks for that attempt only"),
		ttl,
	},
}

// Notice records the platform's review notice of one review: the e-mail
// review-request sends, once, to the review's notify addresses the notices
// allow-list admits (shared/review/dynamo notices.go; docs/reviews.md,
// "Review notices"). Only review-request writes one: a conditional
// PutItem (attribute_not_exists(pk)) claims it before the one SES
// SendEmail, so that no review is noticed twice, then an UpdateItem
// records what SES answered. It holds counts and SES's answer, never an
// address nor anything of the review's input.
var Notice = &Kind{
	Name: "notice", Prefix: "NOTICE#", PKShape: "NOTICE#<review id>", SKShape: "NOTICE", SKValue: "NOTICE",
	Doc: "the platform's e-mail notice that a review waits: claimed once, then SENT or FAILED",
	Attributes: []Attribute{
		attr("status", String, "CLAIMED (before SES answered), SENT or FAILED"),
		attr("recipients", Number, "the notify addresses the notices allow-list admits, the message's recipients"),
		attr("skipped", Number, "the notify addresses it does not admit (or that are no addr-spec): not sent to"),
		attr("claimed_at", String, "RFC 3339 UTC ms"),
		attr("message_id", String, "SENT: the SES message id"),
		attr("sent_at", String, "SENT: RFC 3339 UTC ms"),
		attr("error_code", String, "FAILED: the SES error code only (or \"timeout\", \"unreachable\", \"error\"), never its message"),
		ttl,
	},
}

// InboundSource is a source of inbound webhook events: the scheme its
// deliveries are verified by, the Solution each event runs, and the
// secrets that verify them, sealed (shared/inbound/store;
// docs/webhooks.md). Every source sits in one
// partition (InboundSourcesPK), which one Query lists: there are tens,
// not millions. Only the sources function writes one; webhook-receiver
// reads its scheme, secrets and body bound, inbound-start its Solution,
// end user and adder.
var InboundSource = &Kind{
	Name: "inbound source", Prefix: "INSRC#", PKShape: "INSRC#" + InboundSourcesID,
	SKShape: InboundSourceSKPrefix + "<source name>", SKPrefix: InboundSourceSKPrefix,
	Doc: "a source of inbound webhook events: its scheme, Solution and sealed verification secrets",
	Attributes: []Attribute{
		attr("scheme", String, "how deliveries are verified: standard-webhooks, stripe or github (inbound.ParseScheme)"),
		attr("solution", String, "the Solution each event starts a run of"),
		attr("max_body_bytes", Number, "bytes a delivery's body may hold, 1 to 204800 (default 65536)"),
		attr("end_user", String, "the end-user id the runs act for; absent: none (docs/identity.md, \"End users\")"),
		attr("secrets", List, "the verification secrets, current last (L of M: ct, nonce, edk (B) the secret sealed under "+
			"{purpose: webhook-source, source: <name>}, key_id, created_at, retires_at (absent: current) RFC 3339 UTC)"),
		attr("added_by", String, "the verified adder's ARN"),
		attr("secret_holders", List, "the principal ARNs who held one of its secrets (L of S: the adder, then each rotator, "+
			"the newest 16, newest last; absent on items written before it: the adder alone), whom four eyes refuse as approvers "+
			"of its runs (docs/identity.md, \"Four eyes\")"),
		attr("added_at", String, "RFC 3339 UTC"),
		attr("updated_at", String, "RFC 3339 UTC: the last change of its secrets"),
		attr("version", Number, "1, then one more at each change of its secrets"),
	},
}

// Schedule is a Solution run on a schedule: the expression, the run's
// input and whether it fires (shared/inbound/store; docs/schedules.md).
// Every schedule sits in one partition (SchedulesPK).
// Only the sources function writes one; inbound-start reads it when a
// firing arrives, and the local stack's ticker to fire it.
var Schedule = &Kind{
	Name: "schedule", Prefix: "SCHED#", PKShape: "SCHED#" + SchedulesID,
	SKShape: ScheduleSKPrefix + "<schedule name>", SKPrefix: ScheduleSKPrefix,
	Doc: "a Solution run on a schedule: its expression, input and state",
	Attributes: []Attribute{
		attr("solution", String, "the Solution each firing starts a run of"),
		attr("expression", String, "rate(...) or cron(...), as EventBridge Scheduler reads them"),
		attr("input", String, "the run's input's JSON, at most 32 KiB"),
		attr("end_user", String, "the end-user id the runs act for; absent: none (docs/identity.md, \"End users\")"),
		attr("state", String, "ENABLED or PAUSED"),
		attr("added_by", String, "the verified adder's ARN"),
		attr("added_at", String, "RFC 3339 UTC"),
		attr("updated_at", String, "RFC 3339 UTC: the last pause or resume"),
		attr("version", Number, "1, then one more at each pause and resume"),
	},
}

// InboundUnqueued is the sparse index of inbound events recorded but not
// yet handed to the inbound queue: only an event item whose unqueued
// attribute is set (InboundUnqueuedFlag) is in it, and marking the event
// queued removes the attribute, and with it the entry. webhook-receiver's
// relay reads it, oldest first, to queue what a delivery recorded but
// could not send (docs/webhooks.md, "Receiving events").
var InboundUnqueued = &Index{
	Name: "inbound-unqueued", PK: "unqueued", PKType: Number, SK: "received_at",
	Doc: "unqueued 1 while the event waits for the inbound queue, received_at RFC 3339 UTC, whole seconds",
}

// InboundEvent is an inbound event, recorded once, its key the dedupe
// key: a source's delivery by the provider's event id, or a schedule's
// firing by its scheduled time (InboundEventPK; shared/inbound/store;
// docs/webhooks.md, "Receiving events"). webhook-receiver puts a
// delivery's (conditionally, RECEIVED, with its body) and marks it
// QUEUED; inbound-start puts a firing's (QUEUED, no body) and marks
// either STARTED or FAILED, removing the body.
var InboundEvent = &Kind{
	Name: "inbound event", Prefix: "INEVT#", PKShape: "INEVT#<origin>/<name>/<event id>", SKShape: InboundEventSK, SKValue: InboundEventSK,
	Indexes: []*Index{InboundUnqueued},
	Doc:     "an inbound event or schedule firing, recorded once, and how far its run got",
	Attributes: []Attribute{
		attr("status", String, "RECEIVED, QUEUED, STARTED or FAILED"),
		attr("event_type", String, "the provider's event type; absent: none given"),
		attr("body", Binary, "the delivery's exact raw body, held only until STARTED or FAILED"),
		attr("body_sha256", String, "sha256:<hex> of the body"),
		attr("received_at", String, "RFC 3339 UTC, whole seconds: when the delivery (or firing) arrived"),
		attr("unqueued", Number, "1 while RECEIVED (the inbound-unqueued index's key); absent: queued"),
		attr("queued_at", String, "RFC 3339 UTC: when it was handed to the inbound queue"),
		attr("execution_arn", String, "STARTED: the run's execution ARN"),
		attr("started_at", String, "STARTED: RFC 3339 UTC"),
		attr("problems", List, "FAILED: why the run was not started (strings), never a value of the body"),
		attr("failed_at", String, "FAILED: RFC 3339 UTC"),
		ttl,
	},
}

// Shape is the shape a tool function's dispatcher learned of one tool's
// successful results: JSON types per path, never a value
// (shared/observed, shared/observed/dynamo; docs/declarations.md,
// "Observed shapes"). Its key is the digest of the identity the results
// are learned under (observed.Identity.Key: the tool, its source, the
// pinned output schema's digest, and the host for structured-data-fetch
// and http). Only the dispatchers of tool functions whose tools can
// return results of an undeclared shape read and update it: one GetItem
// per identity per container, and a conditional UpdateItem (on version)
// when a result adds something.
var Shape = &Kind{
	Name: "shape", Prefix: ShapePrefix, PKShape: ShapePrefix + "<identity digest, 64 hex>", SKShape: ShapeSKPrefix + "<host, or nothing for a whole result>", SKPrefix: ShapeSKPrefix,
	Doc: "the shape learned of one tool's results (per host for structured-data-fetch and http): JSON types per path, never a value",
	Attributes: []Attribute{
		attr("shape", String, "the shape's compact JSON (observed.Shape Marshal): types, member names of plain identifiers and flags, never a value"),
		attr("version", Number, "1, then one more at each update: the condition of the next"),
		attr("tool", String, "the tool's name"),
		attr("from_host", String, "structured-data-fetch and http: the host the results came from; absent for other tools"),
		attr("learned_from", Number, "a lower bound of the results learned from: each update adds the results its container saw since its last update"),
		attr("updated_at", String, "RFC 3339 UTC: the last update"),
		attr(ExpiresAt, Number, "epoch seconds: a year after the last update (a shape still in use is learned again after it, one write)"),
	},
}
