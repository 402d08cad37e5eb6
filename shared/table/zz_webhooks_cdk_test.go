package table

// For the CDK branch; the store branch's kinds replace this at merge.
// The webhook writes the spec declares.
func init() {
	writeRules = append(writeRules,
		writeRule{kind: WebhookEvent, by: []Principal{ToolFunctions, ReviewRequest, WebhookDelivery}, action: PutItem},
		writeRule{kind: WebhookEvent, by: []Principal{ReviewRequest, WebhookDelivery}, action: UpdateItem},
		writeRule{kind: WebhookSubscription, by: []Principal{Webhooks, WebhookDelivery}, action: UpdateItem},
		writeRule{kind: WebhookSubscription, by: []Principal{Webhooks}, action: PutItem},
		writeRule{kind: WebhookAttempt, by: []Principal{WebhookDelivery}, action: PutItem},
		writeRule{kind: Proof, by: []Principal{Webhooks}, action: PutItem, allow: []string{PK, SK, "binding", "arn", ExpiresAt}},
	)
}
