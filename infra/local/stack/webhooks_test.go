package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// awaitHooks returns the requests to path h got once done accepts them
// (hookreceiver.Receiver.Wait), and fails t when they have not arrived
// within timeout.
func awaitHooks(t *testing.T, h *hookreceiver.Receiver, path string, timeout time.Duration, done func([]hookreceiver.Request) bool) []hookreceiver.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	got, err := h.Wait(ctx, path, done)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ofEvent are the requests of got whose webhook-id is id.
func ofEvent(got []hookreceiver.Request, id string) []hookreceiver.Request {
	var out []hookreceiver.Request
	for _, r := range got {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// verified fails t unless every request of got carries a signature key
// verifies, against the moment it arrived (hookreceiver.Verify).
func verified(t *testing.T, got []hookreceiver.Request, key []byte) {
	t.Helper()
	for i, r := range got {
		if err := hookreceiver.Verify(r, key); err != nil {
			t.Errorf("request %d to %s (%s): the signature does not verify with the subscription's secret: %v", i+1, r.Path, r.ID, err)
		}
	}
}

// webhookRun is a one-step Solution that succeeds: a fetch from the data
// server. Its input carries a canary no event may carry.
const webhookRun = `solution: NAME
version: 1
input:
  type: object
  required: [canary]
  properties:
    canary: {type: string}
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/webhook-run.json"}
`

// subscribe runs toolgate webhooks subscribe --json as name on the
// stack's webhooks function, with the further flags more, returning its
// exit code, stdout and stderr.
func (e *env) subscribe(name, url, events string, more ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := e.cliRun(append([]string{"webhooks", "subscribe", "--url", url, "--events", events, "--json",
		"--function-endpoint", e.st.Endpoints["webhooks"], "--as", name}, more...), &out, &errb)
	return code, out.String(), errb.String()
}

// subscribeHook subscribes url to events as the webhook admin, with the
// further flags more (--solution NAME), and disables the subscription
// when t ends: other tests' events on the shared stack are no business
// of it.
func (e *env) subscribeHook(t *testing.T, url, events string, more ...string) hookreceiver.Subscription {
	t.Helper()
	code, out, errOut := e.subscribe(stack.WebhookAdmin, url, events, more...)
	return e.subscribed(t, code, out, errOut)
}

// webhooksCLI runs toolgate webhooks args as the webhook admin on the
// stack's webhooks function.
func (e *env) webhooksCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return e.toolgate(t, append(append([]string{"webhooks"}, args...), "--function-endpoint", e.st.Endpoints["webhooks"], "--as", stack.WebhookAdmin)...)
}

// hookURL is the shared receiver's URL for path.
func hookURL(path string) string { return shared.hooks.URL(path) }

// webhookStore is the webhook store on the stack's table, as the
// producers use it.
func (e *env) webhookStore() *store.Store {
	return store.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table, nil)
}

// callUnknown is a call.unknown event of a run of its own (no Solution),
// produced at at: what the dispatcher records for an at_most_once call
// whose outcome is unknown. Its payload is checked against its schema.
func callUnknown(t *testing.T, at time.Time) webhook.Event {
	t.Helper()
	run := fresh("hook-run")
	key := "CALL#" + run + "#notify#1"
	ev, err := webhook.NewEvent(webhook.CallUnknown, key, "", webhook.CallData{Run: run, Key: key, Tool: "http", Cause: "OUTCOME_UNKNOWN"}, at)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// emit records ev and hands it to the events queue as a producer does
// (store.Emitter: the conditional put, SendMessage, the mark).
func (e *env) emit(t *testing.T, ev webhook.Event) {
	t.Helper()
	em := &store.Emitter{Store: e.webhookStore(), Queue: e.st.SQS.Client(), QueueURL: e.st.WebhookQueues.Events.URL}
	if err := em.Emit(t.Context(), ev); err != nil {
		t.Fatalf("emit %s: %v", ev.ID, err)
	}
}

// attemptLine is a line of toolgate webhooks deliveries: "SUB attempt N
// at TIME: status CODE|no answer, MS ms, OUTCOME[ (CLASS)]".
var attemptLine = regexp.MustCompile(`^(sub_\S+) attempt (\d+) at \S+: (?:status (\d+)|no answer), \d+ ms, (\w+)(?: \(([a-z-]+)\))?$`)

// deliveryAttempt is one line of toolgate webhooks deliveries, read back.
type deliveryAttempt struct {
	sub            string
	n, status      int
	outcome, class string
}

// deliveries runs toolgate webhooks deliveries --event id until done
// accepts its attempts (the attempt row is written after the receiver's
// answer), failing t after timeout; it returns them and the whole output.
func (e *env) deliveries(t *testing.T, id string, timeout time.Duration, done func([]deliveryAttempt) bool) ([]deliveryAttempt, string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, code := e.webhooksCLI(t, "deliveries", "--event", id)
		if code != cli.ExitOK {
			t.Fatalf("deliveries --event %s: %s", id, out)
		}
		var got []deliveryAttempt
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			m := attemptLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("deliveries --event %s: line %q is not an attempt", id, line)
			}
			n, _ := strconv.Atoi(m[2])
			status, _ := strconv.Atoi(m[3])
			got = append(got, deliveryAttempt{sub: m[1], n: n, status: status, outcome: m[4], class: m[5]})
		}
		if done(got) {
			return got, out
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries --event %s after %v: %s", id, timeout, out)
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: webhook-delivery records each attempt after the receiver answers
	}
}

// of are the attempts of got to subscription sub, in attempt order.
func of(got []deliveryAttempt, sub string) []deliveryAttempt {
	var out []deliveryAttempt
	for _, a := range got {
		if a.sub == sub {
			out = append(out, a)
		}
	}
	return out
}

// A subscriber of run.* gets run.started and run.succeeded of a run, each
// signed with the secret subscribe printed once (Standard Webhooks, checked
// against the moment it arrived), with the webhook-id derived from the
// execution and its status, and no trace of the run's input; the Step
// Functions endpoint put the status changes on the events queue, and the
// stack's pollers ran webhook-delivery's fan-out and delivery under the
// RIE. A principal who is not a webhook admin may not subscribe. On the
// local stack.
func TestWebhookSubscriberGetsASignedRunStartedAndSucceededWithoutTheRunsInput(t *testing.T) {
	e := sharedEnv(t)
	path := "/" + fresh("hook")
	endpoint := shared.hooks.URL(path)

	code, out, errOut := e.subscribe(starter, endpoint, "run.*")
	if code == cli.ExitOK || !strings.Contains(errOut, webhookapi.CodeRefused) {
		t.Fatalf("a subscribe as %s (no webhook admin): exit %d, %q %q; want %s", starter, code, out, errOut, webhookapi.CodeRefused)
	}

	key := e.subscribeHook(t, endpoint, "run.*").Key

	name := fresh("e2e-webhooks")
	e.route(t, "/webhook-run.json", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"title":"fetched"}`)
	}))
	e.publish(t, name, strings.ReplaceAll(webhookRun, "NAME", name))
	canary := fresh("canary-7f3a9c2e")
	run := e.start(t, name, map[string]any{"canary": canary})
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
	}

	type delivered struct {
		req  hookreceiver.Request
		body struct {
			Type string          `json:"type"`
			Data webhook.RunData `json:"data"`
		}
	}
	want := map[webhook.Type]string{webhook.RunStarted: "RUNNING", webhook.RunSucceeded: "SUCCEEDED"}
	var of map[webhook.Type][]delivered
	awaitHooks(t, shared.hooks, path, 90*time.Second, func(got []hookreceiver.Request) bool {
		of = map[webhook.Type][]delivered{}
		for _, r := range got {
			var d delivered
			d.req = r
			if json.Unmarshal(r.Body, &d.body) == nil && d.body.Data.ExecutionARN == run {
				of[webhook.Type(d.body.Type)] = append(of[webhook.Type(d.body.Type)], d)
			}
		}
		return len(of[webhook.RunStarted]) > 0 && len(of[webhook.RunSucceeded]) > 0
	})
	for typ, status := range want {
		for _, d := range of[typ] {
			h := d.req.Header
			if err := hookreceiver.Verify(d.req, key); err != nil {
				t.Errorf("%s: the signature does not verify with the subscription's secret: %v", typ, err)
			}
			if id := webhook.EventID(typ, run+"\n"+status); h.Get("webhook-id") != id {
				t.Errorf("%s: webhook-id %q, want %q (the execution and its status)", typ, h.Get("webhook-id"), id)
			}
			if d.body.Data.Status != status || d.body.Data.Name == "" || d.body.Data.StartDate == "" {
				t.Errorf("%s: data %+v: want status %s, the execution's name and start date", typ, d.body.Data, status)
			}
			if strings.Contains(string(d.req.Body), canary) || strings.Contains(fmt.Sprint(h), canary) {
				t.Errorf("%s carries the run's input: %s", typ, d.req.Body)
			}
		}
	}
	if others := len(of) - len(want); others > 0 {
		t.Errorf("events of other types for %s: %v", run, of)
	}
}

// A receiver that answers 500 twice and then 200 gets three attempts of
// one event, each with the event's webhook-id and a signature that
// verifies against the moment it arrived, while another subscriber of the
// same event gets it once; toolgate webhooks deliveries shows the attempts
// (subscription, attempt number, status code, outcome), never the body.
// The local schedule retries after 1 s and 2 s.
func TestWebhookReceiverFailingTwiceGetsThreeSignedAttemptsWhileAnotherSubscriberGetsOne(t *testing.T) {
	e := sharedEnv(t)
	flaky, steady := "/"+fresh("flaky"), "/"+fresh("steady")
	shared.hooks.Answer(flaky, func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	flakySub := e.subscribeHook(t, hookURL(flaky), string(webhook.CallUnknown))
	steadySub := e.subscribeHook(t, hookURL(steady), string(webhook.CallUnknown))
	ev := callUnknown(t, time.Now())
	e.emit(t, ev)

	got := awaitHooks(t, shared.hooks, flaky, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, ev.ID)) >= 3 })
	got = ofEvent(got, ev.ID)
	if len(got) != 3 || got[0].Status != 500 || got[1].Status != 500 || got[2].Status != 200 {
		t.Fatalf("the flaky receiver got %d attempts of %s; want 3, answered 500, 500, 200", len(got), ev.ID)
	}
	verified(t, got, flakySub.Key)
	if got[1].At.Sub(got[0].At) < time.Second || got[2].At.Sub(got[1].At) < 2*time.Second {
		t.Errorf("attempts at %v, %v, %v: want the schedule's 1 s and 2 s between them", got[0].At, got[1].At, got[2].At)
	}

	attempts, out := e.deliveries(t, ev.ID, 15*time.Second, func(a []deliveryAttempt) bool {
		return len(of(a, flakySub.ID)) == 3 && len(of(a, steadySub.ID)) >= 1
	})
	for i, a := range of(attempts, flakySub.ID) {
		want := deliveryAttempt{sub: flakySub.ID, n: i + 1, status: 500, outcome: "retry", class: "status"}
		if i == 2 {
			want.status, want.outcome, want.class = 200, "delivered", ""
		}
		if a != want {
			t.Errorf("attempt %+v, want %+v", a, want)
		}
	}
	if s := of(attempts, steadySub.ID); len(s) != 1 || s[0] != (deliveryAttempt{sub: steadySub.ID, n: 1, status: 200, outcome: "delivered"}) {
		t.Errorf("the steady subscriber's attempts %+v: want one, delivered", s)
	}
	var data webhook.CallData
	json.Unmarshal(ev.Data, &data)
	if strings.Contains(out, data.Run) || strings.Contains(out, "data") {
		t.Errorf("deliveries shows the event's body: %s", out)
	}
	// The steady subscriber's one delivery, long before the flaky one's
	// third attempt, was its only one.
	steadyGot := shared.hooks.Requests(steady)
	if s := ofEvent(steadyGot, ev.ID); len(s) != 1 {
		t.Fatalf("the steady receiver got %s %d times, want once", ev.ID, len(s))
	} else {
		verified(t, s, steadySub.Key)
	}
}

// A receiver that always fails gets the schedule's three attempts, and
// the delivery ends in the deliveries dead-letter queue, which dlq list
// shows; once the receiver answers 200, dlq redrive delivers it with the
// same webhook-id and a valid signature.
func TestWebhookDeliveryFailingEveryAttemptEndsInTheDeadLetterQueueAndARedriveDeliversIt(t *testing.T) {
	e := sharedEnv(t)
	path := "/" + fresh("down")
	var mu sync.Mutex
	down := true
	shared.hooks.Answer(path, func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	sub := e.subscribeHook(t, hookURL(path), string(webhook.CallUnknown))
	ev := callUnknown(t, time.Now())
	e.emit(t, ev)
	awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, ev.ID)) >= 3 })

	line := "event " + ev.ID + " to " + sub.ID + ":"
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, code := e.webhooksCLI(t, "dlq", "list")
		if code != cli.ExitOK {
			t.Fatalf("dlq list: %s", out)
		}
		if strings.Contains(out, line) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq list does not show %s to %s: %s", ev.ID, sub.ID, out)
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the queue moves the message after its last attempt
	}
	if got := shared.hooks.Requests(path); len(ofEvent(got, ev.ID)) != 3 {
		t.Fatalf("%d attempts before the dead-letter queue, want the schedule's 3", len(ofEvent(got, ev.ID)))
	}

	mu.Lock()
	down = false
	mu.Unlock()
	out, code := e.webhooksCLI(t, "dlq", "redrive")
	if code != cli.ExitOK || !strings.HasPrefix(out, "moved ") || strings.HasPrefix(out, "moved 0 ") {
		t.Fatalf("dlq redrive: exit %d: %s", code, out)
	}
	got := awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, ev.ID)) >= 4 })
	got = ofEvent(got, ev.ID)
	if last := got[len(got)-1]; last.Status != http.StatusOK {
		t.Fatalf("the redriven delivery was answered %d", last.Status)
	}
	verified(t, got, sub.Key)
}

// A subscription URL whose host name resolves to the metadata address is
// refused at subscribe, naming the address and the rule; a name that
// resolved to the receiver's loopback when subscribed and comes to answer
// the metadata address (and the loopback) is not connected to at
// delivery: the attempt is recorded as refused-address and the receiver
// gets nothing. WebhookTestHost resolves from the stack's resolve file.
func TestWebhookNameResolvingToTheMetadataAddressIsRefusedAtSubscribeAndNotConnectedToAtDelivery(t *testing.T) {
	e := sharedEnv(t)
	resolve := func(addrs ...string) {
		t.Helper()
		if err := e.st.ResolveWebhookTestHost(addrs...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { e.st.ResolveWebhookTestHost("127.0.0.1") })
	path := "/" + fresh("renamed")
	endpoint := "http://" + stack.WebhookTestHost + ":" + shared.hooks.Port() + path

	resolve("169.254.169.254")
	code, out, errOut := e.subscribe(stack.WebhookAdmin, endpoint, string(webhook.CallUnknown))
	if code == cli.ExitOK || !strings.Contains(errOut, webhookapi.CodeRefused) || !strings.Contains(errOut, "169.254.169.254 is the instance metadata service") {
		t.Fatalf("subscribe %s resolving to the metadata address: exit %d, %q %q; want %s naming the address", endpoint, code, out, errOut, webhookapi.CodeRefused)
	}

	resolve("127.0.0.1")
	sub := e.subscribeHook(t, endpoint, string(webhook.CallUnknown))
	first := callUnknown(t, time.Now())
	e.emit(t, first)
	awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, first.ID)) == 1 })

	resolve("169.254.169.254", "127.0.0.1")
	second := callUnknown(t, time.Now())
	e.emit(t, second)
	attempts, _ := e.deliveries(t, second.ID, 30*time.Second, func(a []deliveryAttempt) bool { return len(of(a, sub.ID)) >= 1 })
	if a := of(attempts, sub.ID)[0]; a.status != 0 || a.outcome != "retry" || a.class != "refused-address" {
		t.Errorf("the attempt to a name answering the metadata address: %+v, want no answer, refused-address", a)
	}
	if got := shared.hooks.Requests(path); len(ofEvent(got, second.ID)) != 0 {
		t.Errorf("the receiver got %s although its name answered the metadata address", second.ID)
	}
}

// A URL naming one of the deployment's own Function URLs is refused at
// subscribe: on the local stack the Function-URL functions' endpoints
// (127.0.0.1 and a port each) are the webhook functions' own hosts, while
// the receiver, on another port of 127.0.0.1, is not refused.
func TestWebhookSubscriptionToTheDeploymentsOwnFunctionURLIsRefused(t *testing.T) {
	e := sharedEnv(t)
	for _, name := range stack.FunctionURLFunctions {
		endpoint := e.st.Endpoints[name] + "/hook"
		code, out, errOut := e.subscribe(stack.WebhookAdmin, endpoint, "run.*")
		if code == cli.ExitOK || !strings.Contains(errOut, webhookapi.CodeRefused) || !strings.Contains(errOut, "own Function URL") ||
			!strings.Contains(errOut, webhookapi.EnvOwnHosts) {
			t.Errorf("subscribe %s (%s): exit %d, %q %q; want %s naming the own-host rule", endpoint, name, code, out, errOut, webhookapi.CodeRefused)
		}
	}
	e.subscribeHook(t, hookURL("/"+fresh("not-own")), "run.*")
}

// A producer that stops between the put and the send leaves its event
// recorded and unsent; the relay sends it, and the subscriber gets it
// once: a later relay sends nothing again, as a later event to the same
// subscriber, arriving after it, shows (its attempt rows stay one).
func TestWebhookEventOfAProducerThatCrashedBeforeItsSendIsRelayedOnce(t *testing.T) {
	e := sharedEnv(t)
	path := "/" + fresh("relayed")
	sub := e.subscribeHook(t, hookURL(path), string(webhook.CallUnknown))
	// What the producer left: the event put, no SendMessage, no mark. It
	// stopped 10 s ago, past the local relay's bound (5 s), so the
	// stack's relay ticker (every 2 s) sends it at its next run.
	orphan := callUnknown(t, time.Now().Add(-10*time.Second))
	if recorded, err := e.webhookStore().RecordEvent(t.Context(), orphan); err != nil || !recorded {
		t.Fatalf("record %s: %v, %v", orphan.ID, recorded, err)
	}
	awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, orphan.ID)) >= 1 })

	if err := e.st.RelayWebhooks(t.Context()); err != nil {
		t.Fatal(err)
	}
	fence := callUnknown(t, time.Now())
	e.emit(t, fence)
	got := awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool { return len(ofEvent(got, fence.ID)) >= 1 })
	if n := len(ofEvent(got, orphan.ID)); n != 1 {
		t.Fatalf("the relayed event arrived %d times, want once", n)
	}
	verified(t, got, sub.Key)
	attempts, _ := e.deliveries(t, orphan.ID, 10*time.Second, func(a []deliveryAttempt) bool { return len(of(a, sub.ID)) >= 1 })
	if a := of(attempts, sub.ID); len(a) != 1 || a[0].outcome != "delivered" {
		t.Errorf("attempts of %s: %+v, want one, delivered", orphan.ID, a)
	}
}

// webhookEach is a Solution whose for_each over its people reviews and
// sends one e-mail each; the names carry the run's canary into the
// e-mails' subjects, which each review shows, and the input carries it
// too.
const webhookEach = `solution: NAME
version: 1
input:
  type: object
  required: [people, canary]
  properties:
    people: {type: array, maxItems: 3}
    canary: {type: string}
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: person
      max_items: 3
      collect:
        to: "${person.email}"
      steps:
        - id: approve
          review: {of: send}
          on_approve: send
          on_reject: rejected
        - id: send
          tool: send-email
          with:
            to: ["${person.email}"]
            subject: "Hello ${person.name}"
            text: "one e-mail per item"
        - id: rejected
          fail: {error: NotApproved}
`

// review.requested arrives for each review of a for_each, each with its
// own review id, the Solution and the version it declares (as its
// definition's Comment names it), the run, the step and tool, and the
// command that decides it; the test decides each review by the id its
// event gave. No event of any type the run causes carries the canary
// planted in its input.
func TestWebhookReviewRequestedArrivesForEachReviewOfAForEachWithoutTheRunsInput(t *testing.T) {
	e := sharedEnv(t)
	path := "/" + fresh("reviews")
	sub := e.subscribeHook(t, hookURL(path), "run.*,review.*,tool.*,credentials.*,call.*")
	name := fresh("e2e-webhook-each")
	e.publish(t, name, strings.ReplaceAll(webhookEach, "NAME", name))
	canary := fresh("canary-5d1e0b7a")
	var people []map[string]string
	for _, p := range eachPeople {
		people = append(people, map[string]string{"email": p["email"], "name": p["name"] + " " + canary})
	}
	e.clearMails(t)
	run := e.start(t, name, map[string]any{"people": people, "canary": canary})
	runName := run[strings.LastIndex(run, ":")+1:]

	type requested struct {
		Type string                      `json:"type"`
		Data webhook.ReviewRequestedData `json:"data"`
	}
	reviewsOf := func(got []hookreceiver.Request) map[string]requested {
		out := map[string]requested{}
		for _, r := range got {
			var b requested
			if json.Unmarshal(r.Body, &b) == nil && b.Type == string(webhook.ReviewRequested) && b.Data.Run == runName {
				out[b.Data.ReviewID] = b
			}
		}
		return out
	}
	decided := map[string]bool{}
	for len(decided) < len(people) {
		got := awaitHooks(t, shared.hooks, path, 60*time.Second, func(got []hookreceiver.Request) bool {
			for id := range reviewsOf(got) {
				if !decided[id] {
					return true
				}
			}
			return false
		})
		for id := range reviewsOf(got) {
			if !decided[id] {
				e.decide(t, "approve", id)
				decided[id] = true
			}
		}
	}
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
	}
	got := awaitHooks(t, shared.hooks, path, 30*time.Second, func(got []hookreceiver.Request) bool {
		for _, r := range got {
			if r.ID == webhook.EventID(webhook.RunSucceeded, run+"\nSUCCEEDED") {
				return true
			}
		}
		return false
	})

	reviews := reviewsOf(got)
	if len(reviews) != len(people) {
		t.Fatalf("review.requested for %d reviews of %s, want one per item (%d)", len(reviews), runName, len(people))
	}
	for id, b := range reviews {
		d := b.Data
		if d.Solution != name || d.Version != 1 || d.Step != "send" && d.Step != "approve" || d.Tool != "send-email" ||
			!strings.Contains(d.DecideCommand, "toolgate review approve "+id) || !strings.Contains(d.DecideCommand, "toolgate review reject "+id) {
			t.Errorf("review.requested of %s: %+v", id, d)
		}
	}
	verified(t, got, sub.Key)
	for _, r := range got {
		if strings.Contains(string(r.Body), canary) || strings.Contains(fmt.Sprint(r.Header), canary) {
			t.Errorf("an event carries the run's input: %s", r.Body)
		}
	}
	if len(ofEvent(got, webhook.EventID(webhook.RunStarted, run+"\nRUNNING"))) == 0 {
		t.Errorf("the run's run.started did not arrive")
	}
}
