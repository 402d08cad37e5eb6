package table

// For the CDK branch; the store branch's kinds replace this at merge.
//
// The webhook item kinds, their sparse index, the two webhook principals
// and their accesses (the webhooks spec), as far as the CDK app needs them
// to generate the webhook functions' ledger statements and the ledger
// table's index. The kinds are not in Kinds: docs/ledger.md is the store
// branch's.

// The webhook functions: the authenticated admin function and the
// delivering function (infra/platform functions.go).
const (
	Webhooks        Principal = "webhooks"
	WebhookDelivery Principal = "webhook-delivery"
)

// WebhookUnsent is the sparse index of events not yet handed to the
// events queue: only an event item with unsent (the constant 1) is in it,
// by produced_at.
var WebhookUnsent = &Index{
	Name: "webhook-unsent", PK: "unsent", SK: "produced_at", PKPrefix: "",
	Doc: "unsent 1 while an event is not yet on the events queue, produced_at RFC 3339",
}

// WebhookSubscription is one webhook subscription.
var WebhookSubscription = &Kind{
	Name: "webhook subscription", Prefix: "WEBHOOK#", PKShape: "WEBHOOK#SUBSCRIPTIONS", SKShape: "SUB#<subscription id>", SKPrefix: "SUB#",
	Doc: "a webhook subscription: its URL, event patterns and sealed secrets",
	Attributes: []Attribute{
		attr("url", String, "the endpoint"), attr("events", List, "event type patterns"), attr("solution", String, "the Solution filter"),
		attr("status", String, "active or disabled"), attr("disabled_reason", String, "why it was disabled"),
		attr("created_at", String, "RFC 3339 UTC"), attr("created_by", String, "the verified subscriber's ARN"),
		attr("updated_at", String, "RFC 3339 UTC"), attr("version", Number, "1, then one more at each change"),
		attr("secrets", List, "sealed signing secrets"),
	},
}

// WebhookEvent is one recorded event (the outbox item).
var WebhookEvent = &Kind{
	Name: "webhook event", Prefix: "WHEVT#", PKShape: "WHEVT#<event id>", SKShape: "EVENT", SKValue: "EVENT",
	Index: WebhookUnsent,
	Doc:   "a webhook event, recorded once",
	Attributes: []Attribute{
		attr("type", String, "the event type"), attr("solution", String, "the Solution"), attr("data", String, "the payload's JSON"),
		attr("produced_at", String, "RFC 3339 UTC"), attr("unsent", Number, "1 while not on the events queue"),
		attr("sent_at", String, "RFC 3339 UTC"), ttl,
	},
}

// WebhookAttempt is one delivery attempt of an event to a subscription.
var WebhookAttempt = &Kind{
	Name: "webhook attempt", Prefix: "WHEVT#", PKShape: "WHEVT#<event id>", SKShape: "ATTEMPT#<subscription id>#<attempt>", SKPrefix: "ATTEMPT#",
	Doc: "one delivery attempt: status, latency, outcome; never a body",
	Attributes: []Attribute{
		attr("status_code", Number, "the HTTP status"), attr("latency_ms", Number, "ms"), attr("outcome", String, "delivered, retry or gone"),
		attr("error_class", String, "timeout, connect, ..."), attr("at", String, "RFC 3339 UTC"), ttl,
	},
}

// webhookAccesses are the webhook accesses of the spec, appended to
// Accesses before init checks the declaration.
var webhookAccesses = []Access{
	{Sid: "RecordWebhookEvents", By: []Principal{ToolFunctions, ReviewRequest}, On: []*Kind{WebhookEvent}, Actions: []Action{PutItem},
		Code: "store.Store.RecordEvent", Doc: "the event's conditional PutItem"},
	{Sid: "MarkWebhookEventsSent", By: []Principal{ReviewRequest}, On: []*Kind{WebhookEvent}, Actions: []Action{UpdateItem},
		Code: "store.Store.MarkSent", Doc: "REMOVE unsent, SET sent_at"},
	{Sid: "WebhookEvents", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookEvent}, Actions: []Action{GetItem, PutItem, UpdateItem},
		Code: "store.Store", Doc: "an event's read, record and mark sent"},
	{Sid: "UnsentWebhookEvents", By: []Principal{WebhookDelivery}, Index: WebhookUnsent, Actions: []Action{Query},
		Code: "store.Store.Unsent", Doc: "the relay's Query of the sparse index"},
	{Sid: "DeliverToSubscriptions", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookSubscription}, Actions: []Action{Query, UpdateItem},
		Code: "store.Store Subscriptions, Disable", Doc: "the fan-out's listing; disabling on 410"},
	{Sid: "RecordWebhookAttempts", By: []Principal{WebhookDelivery}, On: []*Kind{WebhookAttempt}, Actions: []Action{PutItem},
		Code: "store.Store.RecordAttempt", Doc: "one attempt's PutItem"},
	{Sid: "ManageWebhookSubscriptions", By: []Principal{Webhooks}, On: []*Kind{WebhookSubscription}, Actions: []Action{PutItem, UpdateItem, Query},
		Code: "store.Store Subscribe, Rotate, Disable, Subscriptions", Doc: "subscribe, rotate-secret, disable, list"},
	{Sid: "ReadWebhookDeliveries", By: []Principal{Webhooks}, On: []*Kind{WebhookEvent, WebhookAttempt}, Actions: []Action{Query},
		Code: "store.Store.Attempts", Doc: "an event and its attempts"},
	// The admin function verifies caller proofs as every function in
	// Functions does (the store branch adds it to Functions).
	{Sid: "RecordCallerProofs", By: []Principal{Webhooks}, On: []*Kind{Proof}, Actions: []Action{PutItem},
		Attributes: Proof.Names(PK, SK, "binding", "arn", ExpiresAt), Code: "ledger.ProofTable.Record",
		Doc: "the conditional PutItem of an accepted proof (ReturnValuesOnConditionCheckFailure ALL_OLD)"},
	{Sid: "ReadCallerProofs", By: []Principal{Webhooks}, On: []*Kind{Proof}, Actions: []Action{GetItem},
		Code: "ledger.ProofTable.Record", Doc: "the proof record after its condition failed without the old item (dynalite)"},
}

var _ = func() bool {
	Accesses = append(Accesses, webhookAccesses...)
	Kinds = append(Kinds, WebhookSubscription, WebhookEvent, WebhookAttempt)
	Indexes = append(Indexes, WebhookUnsent)
	return true
}()
