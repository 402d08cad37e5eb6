package admin_test

import (
	"testing"

	"github.com/toolgate/toolgate/shared/table"
)

// The webhooks function's role may make the requests its commands make
// (shared/table Accesses, from which its IAM statements are generated):
// deliveries reads the event it lists (store.Store.Event, a GetItem of
// the event item), and subscribe --solution reads whether the Solution is
// published (ledger.Store.PublishedSolution, a GetItem of its published
// item). Without them both commands answer WEBHOOKS_UNAVAILABLE on AWS
// (dynalite, which the local stack runs, checks no IAM).
func TestWebhooksFunctionMayMakeTheReadsItsCommandsMake(t *testing.T) {
	for _, c := range []struct {
		command string
		kind    *table.Kind
	}{
		{"deliveries (store.Store.Event)", table.WebhookEvent},
		{"subscribe --solution (ledger.Store.PublishedSolution)", table.Published},
	} {
		allowed := false
		for _, a := range table.Of(table.Webhooks) {
			allowed = allowed || a.Allows(table.Webhooks, table.GetItem, c.kind, nil)
		}
		if !allowed {
			t.Errorf("%s: the webhooks function may not GetItem a %s item", c.command, c.kind.Name)
		}
	}
}
