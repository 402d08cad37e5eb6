package stack_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/webhook"
)

// approveAs runs toolgate review approve id as the local user who, and
// returns its exit code and what it wrote to stderr.
func (e *inboundEnv) approveAs(t *testing.T, who, id string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := e.cliRun([]string{"review", "approve", id, "--reason", "four eyes", "--endpoint", e.decisionEndpoint(), "--as", who}, &out, &errb)
	return code, errb.String()
}

// refusedThenApproved checks that each of holders is refused approving
// the review of run (REVIEW_SELF_APPROVAL) and that another reviewer
// then approves it.
func (e *inboundEnv) refusedThenApproved(t *testing.T, run string, holders ...string) {
	t.Helper()
	id := e.pending(t, run, nil)
	for _, who := range holders {
		code, msg := e.approveAs(t, who, id)
		if code == cli.ExitOK || !strings.Contains(msg, string(review.CodeSelfApproval)) {
			t.Fatalf("%s, who could have chosen the run's input, approving its review: exit %d: %s", who, code, msg)
		}
	}
	e.decide(t, "approve", id)
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("the run after another reviewer's approval: %s", out.Status)
	}
}

// An inbound operator holds the secrets of the sources they add or
// rotate, and chose the input of the schedules they add: four eyes refuse
// their approval of those runs' reviews as they refuse the requester's,
// and another reviewer approves (docs/identity.md, "Four eyes").
func TestWhoHeldTheOriginCannotApproveTheRun(t *testing.T) {
	e := newInboundEnv(t)
	body := func(recipient string) []byte { return []byte(`{"id":"evt","recipient":"` + recipient + `"}`) }

	t.Run("the source's adder", func(t *testing.T) {
		name := fresh("held")
		code, out, errOut := e.sourcesCLI(stack.InboundOperator, "", "webhooks", "source", "add", "--name", name, "--scheme", "standard-webhooks", "--solution", e.solution, "--json")
		if code != cli.ExitOK {
			t.Fatalf("add: exit %d: %s", code, errOut)
		}
		var added inboundapi.AddSourceResult
		if err := json.Unmarshal([]byte(out), &added); err != nil {
			t.Fatal(err)
		}
		key, err := webhook.ParseSecret(added.Secret)
		if err != nil {
			t.Fatal(err)
		}
		// The adder signs an event of its own choosing.
		if status, answer := postInbound(t, e.st, name, key, "msg_adder", body("adder@example.com")); status != http.StatusAccepted {
			t.Fatalf("the receiver answered %d %s", status, answer)
		}
		ev := e.waitEvent(t, store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: "msg_adder"}, store.StatusStarted, store.StatusFailed)
		if ev.Status != store.StatusStarted {
			t.Fatalf("event %s problems %v", ev.Status, ev.Problems)
		}
		e.refusedThenApproved(t, ev.ExecutionARN, stack.InboundOperator)
	})

	t.Run("the source's rotator", func(t *testing.T) {
		src, _ := e.addSource(t, fresh("rotated"), inbound.StandardWebhooks)
		e.backdateSecrets(t, src.Name, 2*time.Minute)
		const given = "whsec_cm90YXRvci1ob2xkcy10aGlzLXNlY3JldC0wMDAw"
		if code, out, errOut := e.sourcesCLI(stack.InboundOperator, given+"\n", "webhooks", "source", "rotate-secret", "--name", src.Name, "--secret-from-stdin"); code != cli.ExitOK {
			t.Fatalf("rotate-secret: exit %d: %s%s", code, out, errOut)
		}
		got, err := e.store.Source(t.Context(), src.Name)
		if want := []string{stack.TestSourceAddedBy, local.LocalPrincipal(stack.InboundOperator)}; err != nil || !slices.Equal(got.SecretHolders, want) {
			t.Fatalf("secret_holders %v, %v; want %v", got.SecretHolders, err, want)
		}
		key, err := webhook.ParseSecret(given)
		if err != nil {
			t.Fatal(err)
		}
		if status, answer := postInbound(t, e.st, src.Name, key, "msg_rotator", body("rotator@example.com")); status != http.StatusAccepted {
			t.Fatalf("the receiver answered %d %s", status, answer)
		}
		ev := e.waitEvent(t, store.EventKey{Origin: inboundapi.OriginSource, Name: src.Name, ID: "msg_rotator"}, store.StatusStarted, store.StatusFailed)
		if ev.Status != store.StatusStarted {
			t.Fatalf("event %s problems %v", ev.Status, ev.Problems)
		}
		// The adder held the first secret and the rotator holds the new
		// one: neither approves.
		e.refusedThenApproved(t, ev.ExecutionARN, stack.InboundOperator, "stack-test")
	})

	t.Run("the schedule's adder", func(t *testing.T) {
		name := fresh("held-nightly")
		now := time.Now().UTC().Truncate(time.Second)
		// A firing far off: the ticker never fires it; the test does.
		sch := store.Schedule{Name: name, Solution: e.solution, Expression: "cron(0 18 1 1 ? 2199)", Input: []byte(`{"payload":{"recipient":"sched@example.com"}}`),
			AddedBy: local.LocalPrincipal(stack.InboundOperator), State: inboundapi.StateEnabled, AddedAt: now, UpdatedAt: now, Version: 1}
		if err := e.store.PutSchedule(t.Context(), sch); err != nil {
			t.Fatal(err)
		}
		if err := e.st.FireSchedule(t.Context(), name, now); err != nil {
			t.Fatal(err)
		}
		ev := e.waitEvent(t, store.EventKey{Origin: inboundapi.OriginSchedule, Name: name, ID: now.Format(time.RFC3339)}, store.StatusStarted, store.StatusFailed)
		if ev.Status != store.StatusStarted {
			t.Fatalf("firing %s problems %v", ev.Status, ev.Problems)
		}
		e.refusedThenApproved(t, ev.ExecutionARN, stack.InboundOperator)
	})
}
