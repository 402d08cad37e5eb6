package table

import (
	"slices"
	"testing"
)

// The event id is the key of an event item and derives from public facts
// (webhook.EventID of the type and the review id, or of the execution ARN
// and the status), and the outbox's put is conditional on the key being
// free. A principal that may put event items under the same keys as
// review-request, review-decision and webhook-delivery can therefore put
// review.decided or run.succeeded with data of its choice (the relay
// sends it, signed), or put one first and so suppress the real
// occurrence. The tool functions produce call events only (tool.
// schema_changed, credentials.expired, call.unknown): their PutItem must
// reach a kind of their own (a key prefix the IAM LeadingKeys condition
// can hold them to, whose types the fan-out can check), never the kind
// the other producers record in.
func TestToolFunctionsCannotRecordTheEventsOfOtherProducers(t *testing.T) {
	for _, a := range Accesses {
		if !slices.Contains(a.By, ToolFunctions) || !slices.Contains(a.Actions, PutItem) {
			continue
		}
		if slices.Contains(a.On, WebhookEvent) {
			t.Errorf("%s: the tool functions may put %s items, the kind review.* and run.* events are recorded in", a.Sid, WebhookEvent.Name)
		}
	}
}
