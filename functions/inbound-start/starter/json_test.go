package starter_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
)

// A body that names one member twice in an object (which RFC 8259 §4
// leaves to each reader, and which the start's input digest, RFC 8785,
// refuses) fails its event with a problem that says so, neither quoting
// the member's name or value nor blaming a number.
func TestABodyWithAMemberNamedTwiceFailsSayingSo(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "billing", "msg_dup", `{"id":"evt","recipient":"team@example.com","recipient":"secret-7c1e@example.com"}`)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	ev := f.event(t, k)
	problems := strings.Join(ev.Problems, "\n")
	if ev.Status != store.StatusFailed || !strings.Contains(problems, "twice") || strings.Contains(problems, "number") {
		t.Fatalf("event %s, problems %q: want FAILED naming a member given twice", ev.Status, problems)
	}
	if strings.Contains(problems, "recipient") || strings.Contains(problems, "7c1e") {
		t.Errorf("problems quote the body: %q", problems)
	}
	if len(f.rec.all()) != 0 || len(f.executions(t)) != 0 {
		t.Errorf("a refused input was recorded or started")
	}
}
