package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/functions/webhooks/admin"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The fakes below stand in for STS, the table and SQS: the caller
// verifier, the webhook store and the SQS stand-in are tested against
// their local stand-ins where they are built; these tests check the
// function's decisions only. fakeCallers admits a proof only for the
// binding it was made for, as STS's signature check does.

const (
	admin1   = "arn:aws:iam::000000000000:user/admin"
	stranger = "arn:aws:iam::000000000000:user/mallory"
	dlqURL   = "https://sqs.local/000000000000/toolgate-dev-webhook-deliveries-dlq"
	// The events queue and its dead-letter queue.
	eventsURL    = "https://sqs.local/000000000000/toolgate-dev-webhook-events"
	eventsDLQURL = "https://sqs.local/000000000000/toolgate-dev-webhook-events-dlq"
	delivURL     = "https://sqs.local/000000000000/toolgate-dev-webhook-deliveries"
)

// Subscription ids of the tests, in the shape the store requires.
var (
	subA    = "sub_" + strings.Repeat("a", 26)
	subB    = "sub_" + strings.Repeat("b", 26)
	subNone = "sub_" + strings.Repeat("z", 26)
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// proofFor is a fake proof: who signed it and for which binding.
func proofFor(principal string, b caller.Binding) string { return principal + "|" + b.Value() }

type fakeCallers struct{}

func (fakeCallers) Verify(_ context.Context, proof string, b caller.Binding) (caller.Identity, error) {
	principal, value, _ := strings.Cut(proof, "|")
	if value != b.Value() {
		return caller.Identity{}, &caller.Error{Reason: caller.Refused, Message: "STS refused the proof"}
	}
	return caller.Identity{Principal: principal}, nil
}

type fakeStore struct {
	mu       sync.Mutex
	subs     map[string]store.Subscription
	disabled map[string]string
	rotated  []string
}

func newStore(subs ...store.Subscription) *fakeStore {
	s := &fakeStore{subs: map[string]store.Subscription{}, disabled: map[string]string{}}
	for _, sub := range subs {
		s.subs[sub.ID] = sub
	}
	return s
}

// Subscribe refuses an id that is taken, as the store's conditional put
// does (store.ErrExists).
func (s *fakeStore) Subscribe(_ context.Context, sub store.Subscription) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.subs[sub.ID]; taken {
		return store.ErrExists
	}
	s.subs[sub.ID] = sub
	return nil
}
func (s *fakeStore) Subscriptions(context.Context) ([]store.Subscription, error) {
	var out []store.Subscription
	for _, sub := range s.subs {
		out = append(out, sub)
	}
	return out, nil
}

// Subscription refuses a malformed id with an error, as the store does
// (it checks the id before any request).
func (s *fakeStore) Subscription(_ context.Context, id string) (store.Subscription, bool, error) {
	if !subscriptionID.MatchString(id) {
		return store.Subscription{}, false, fmt.Errorf("read subscription: subscription id %q: want sub_ and 26 lower-case base32 characters", id)
	}
	sub, ok := s.subs[id]
	return sub, ok, nil
}

var subscriptionID = regexp.MustCompile(`^sub_[a-z2-7]{26}$`)

func (s *fakeStore) Rotate(_ context.Context, id string, next store.SealedSecret, grace time.Duration, version int64) error {
	s.rotated = append(s.rotated, id)
	return nil
}
func (s *fakeStore) Disable(_ context.Context, id, reason string) error {
	s.disabled[id] = reason
	return nil
}

// Event refuses a malformed id with an error, as the store does.
func (s *fakeStore) Event(_ context.Context, id string) (webhook.Event, bool, error) {
	if !webhook.IDPattern.MatchString(id) {
		return webhook.Event{}, false, fmt.Errorf("read event: event id %q: want evt_ and 26 lower-case base32 characters", id)
	}
	return webhook.Event{}, false, nil
}
func (s *fakeStore) Attempts(context.Context, string) ([]store.AttemptRow, error) { return nil, nil }

// fakeQueue holds the dead-letter queue's messages; a received message
// stays until it is deleted, as SQS keeps it.
type fakeQueue struct {
	dlq      []types.Message
	received int
	// eventsDLQ is the events dead-letter queue's; sentTo the queue of
	// each sent message.
	eventsDLQ      []types.Message
	eventsReceived int
	sentTo         []string
	waits          []int32 // each ReceiveMessage's WaitTimeSeconds
	sent           []string
	deleted        []string
	released       []string
}

func (q *fakeQueue) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	q.waits = append(q.waits, in.WaitTimeSeconds)
	if aws.ToString(in.QueueUrl) == eventsDLQURL {
		end := min(q.eventsReceived+int(in.MaxNumberOfMessages), len(q.eventsDLQ))
		out := q.eventsDLQ[q.eventsReceived:end]
		q.eventsReceived = end
		return &sqs.ReceiveMessageOutput{Messages: out}, nil
	}
	if aws.ToString(in.QueueUrl) != dlqURL {
		return nil, errors.New("receive from another queue than the DLQs")
	}
	end := min(q.received+int(in.MaxNumberOfMessages), len(q.dlq))
	out := q.dlq[q.received:end]
	q.received = end
	return &sqs.ReceiveMessageOutput{Messages: out}, nil
}
func (q *fakeQueue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if u := aws.ToString(in.QueueUrl); u != delivURL && u != eventsURL {
		return nil, errors.New("send to another queue than the deliveries and events queues")
	}
	q.sent = append(q.sent, aws.ToString(in.MessageBody))
	q.sentTo = append(q.sentTo, aws.ToString(in.QueueUrl))
	return &sqs.SendMessageOutput{}, nil
}
func (q *fakeQueue) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	q.deleted = append(q.deleted, aws.ToString(in.ReceiptHandle))
	return &sqs.DeleteMessageOutput{}, nil
}
func (q *fakeQueue) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	q.released = append(q.released, aws.ToString(in.ReceiptHandle))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func newService(st *fakeStore, q *fakeQueue) (*admin.Service, *[][]byte) {
	var sealed [][]byte
	// The tests' receivers: any host under example.org, resolved from a
	// table (testResolver: no network); metadata.example.org answers the
	// metadata address among a public one.
	rules, err := webhook.ParseEndpointRules([]string{"*.example.org"}, nil, nil)
	if err != nil {
		panic(err)
	}
	rules.Resolver = testResolver
	return &admin.Service{Callers: fakeCallers{}, Admins: []string{admin1}, Store: st, Queue: q, DeliveriesQueue: delivURL, DLQ: dlqURL, EventsQueue: eventsURL, EventsDLQ: eventsDLQURL, Rules: rules,
		Now: func() time.Time { return now },
		Seal: func(_ context.Context, subID string, key []byte) (vault.Sealed, error) {
			sealed = append(sealed, key)
			return vault.Sealed{KeyID: "k", Ciphertext: []byte("sealed")}, nil
		},
		Published: func(_ context.Context, name string) (bool, error) { return name == "digest", nil }}, &sealed
}

func code(err error) string {
	var e *admin.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// A webhook admin's subscribe stores an active subscription with the
// sealed key and answers the whsec_ secret; the answer holds it once.
func TestSubscribeStoresTheSealedSecretAndAnswersItOnce(t *testing.T) {
	st := newStore()
	s, sealed := newService(st, &fakeQueue{})
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*", "review.requested"}, Solution: "digest"}
	res, err := s.Subscribe(t.Context(), r, proofFor(admin1, webhookapi.SubscribeBinding(r)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Secret, "whsec_") || len(*sealed) != 1 {
		t.Fatalf("secret %q, %d keys sealed", res.Secret, len(*sealed))
	}
	body, _ := json.Marshal(res)
	if strings.Count(string(body), res.Secret) != 1 {
		t.Fatalf("the answer holds the secret %d times", strings.Count(string(body), res.Secret))
	}
	sub := st.subs[res.Subscription.ID]
	if !strings.HasPrefix(sub.ID, "sub_") || len(sub.ID) != 4+26 || sub.Status != admin.StatusActive || sub.CreatedBy != admin1 ||
		sub.Solution != "digest" || len(sub.Secrets) != 1 || sub.Version != 1 {
		t.Fatalf("stored %+v", sub)
	}
	if strings.Contains(string(sub.Secrets[0].Ciphertext), res.Secret) {
		t.Fatal("the secret is stored in the clear")
	}
}

// Subscribe resolves the endpoint's name: one answer a metadata address
// refuses it, naming the address and why, before anything is stored or
// sealed; so does a name with no answer.
func TestSubscribeRefusesANameResolvingToTheMetadataAddress(t *testing.T) {
	for _, c := range []struct{ url, why string }{
		{"https://metadata.example.org/in", "169.254.169.254 is the instance metadata service"},
		{"https://nowhere.example.org/in", "no address"},
	} {
		st := newStore()
		s, sealed := newService(st, &fakeQueue{})
		r := webhookapi.SubscribeRequest{URL: c.url, Events: []string{"run.*"}}
		_, err := s.Subscribe(t.Context(), r, proofFor(admin1, webhookapi.SubscribeBinding(r)))
		if code(err) != webhookapi.CodeRefused || !strings.Contains(err.Error(), c.why) || len(st.subs) != 0 || len(*sealed) != 0 {
			t.Errorf("%s: %v (%d stored, %d sealed); want %s saying %q and nothing stored", c.url, err, len(st.subs), len(*sealed), webhookapi.CodeRefused, c.why)
		}
	}
}

// Who may subscribe: a webhook admin with a proof bound to exactly the
// URL, events and Solution sent. A stranger is refused, a proof made for
// other events or another URL does not verify, and nothing is stored.
func TestSubscribeIsForAdminsWithAProofOfThatRequest(t *testing.T) {
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*"}}
	other := r
	other.Events = []string{"review.*"}
	moved := r
	moved.URL = "https://evil.example.org/in"
	for _, c := range []struct {
		name, proof, want string
	}{
		{"a stranger", proofFor(stranger, webhookapi.SubscribeBinding(r)), webhookapi.CodeRefused},
		{"a proof for other events", proofFor(admin1, webhookapi.SubscribeBinding(other)), webhookapi.CodeUnauthenticated},
		{"a proof for another URL", proofFor(admin1, webhookapi.SubscribeBinding(moved)), webhookapi.CodeUnauthenticated},
		{"a proof for another action", proofFor(admin1, webhookapi.ListBinding()), webhookapi.CodeUnauthenticated},
		{"no proof", "", webhookapi.CodeUnauthenticated},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore()
			s, sealed := newService(st, &fakeQueue{})
			_, err := s.Subscribe(t.Context(), r, c.proof)
			if code(err) != c.want || len(st.subs) != 0 || len(*sealed) != 0 {
				t.Fatalf("%v (%d stored, %d sealed), want %s and nothing stored", err, len(st.subs), len(*sealed), c.want)
			}
		})
	}
}

// A malformed request is refused before its proof is verified; a
// Solution filter must name a published Solution.
func TestSubscribeRefusesBadRequests(t *testing.T) {
	for _, c := range []struct {
		name string
		r    webhookapi.SubscribeRequest
		want string
	}{
		{"no url", webhookapi.SubscribeRequest{Events: []string{"run.*"}}, webhookapi.CodeInvalid},
		{"no events", webhookapi.SubscribeRequest{URL: "https://h.example.org"}, webhookapi.CodeInvalid},
		{"an unknown event", webhookapi.SubscribeRequest{URL: "https://h.example.org", Events: []string{"run.exploded"}}, webhookapi.CodeInvalid},
		{"an unpublished Solution", webhookapi.SubscribeRequest{URL: "https://h.example.org", Events: []string{"run.*"}, Solution: "nope"}, webhookapi.CodeNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newStore()
			s, _ := newService(st, &fakeQueue{})
			if _, err := s.Subscribe(t.Context(), c.r, proofFor(admin1, webhookapi.SubscribeBinding(c.r))); code(err) != c.want || len(st.subs) != 0 {
				t.Fatalf("%v, want %s", err, c.want)
			}
		})
	}
}

// Manage and redrive proofs are bound to their subscription and
// operation: a proof to disable one subscription neither disables
// another nor rotates its secret.
func TestManageProofsAreBoundToTheSubscriptionAndOperation(t *testing.T) {
	st := newStore(store.Subscription{ID: subA, Status: admin.StatusActive}, store.Subscription{ID: subB, Status: admin.StatusActive})
	s, _ := newService(st, &fakeQueue{})
	proof := proofFor(admin1, webhookapi.DisableBinding(subA))
	if _, err := s.Disable(t.Context(), subB, proof); code(err) != webhookapi.CodeUnauthenticated {
		t.Fatalf("another subscription: %v", err)
	}
	if _, err := s.RotateSecret(t.Context(), subA, proof); code(err) != webhookapi.CodeUnauthenticated {
		t.Fatalf("another operation: %v", err)
	}
	if _, err := s.Redrive(t.Context(), proof); code(err) != webhookapi.CodeUnauthenticated {
		t.Fatalf("another action: %v", err)
	}
	res, err := s.Disable(t.Context(), subA, proof)
	if err != nil || !res.Disabled || st.disabled[subA] != "disabled by "+admin1 || len(st.disabled) != 1 {
		t.Fatalf("%+v, %v, disabled %v", res, err, st.disabled)
	}
	if _, err := s.RotateSecret(t.Context(), subNone, proofFor(admin1, webhookapi.RotateBinding(subNone))); code(err) != webhookapi.CodeNotFound {
		t.Fatalf("no such subscription: %v", err)
	}
}

func dlqMessage(i int) types.Message {
	body, _ := json.Marshal(webhookapi.DeliveryMessage{EventID: "evt_" + string(rune('a'+i)), SubscriptionID: subA})
	return types.Message{Body: aws.String(string(body)), ReceiptHandle: aws.String("rh" + string(rune('a'+i))),
		Attributes: map[string]string{"ApproximateReceiveCount": "8", "SentTimestamp": "1764669600000"}}
}

// dlq list reads the dead-letter queue and releases what it read; dlq
// redrive sends each message to the deliveries queue, then deletes it.
func TestDLQListReleasesAndRedriveMovesEachMessage(t *testing.T) {
	q := &fakeQueue{dlq: []types.Message{dlqMessage(0), dlqMessage(1), dlqMessage(2)}}
	s, _ := newService(newStore(), q)
	list, err := s.DLQList(t.Context(), proofFor(admin1, webhookapi.DLQListBinding()))
	if err != nil || len(list.Messages) != 3 || list.Messages[0].Event != "evt_a" || list.Messages[0].ReceiveCount != 8 || list.Messages[0].SentAt != "2025-12-02T10:00:00Z" {
		t.Fatalf("%+v, %v", list, err)
	}
	if len(q.released) != 3 || len(q.sent) != 0 || len(q.deleted) != 0 {
		t.Fatalf("list released %v, sent %v, deleted %v", q.released, q.sent, q.deleted)
	}
	q.received = 0
	res, err := s.Redrive(t.Context(), proofFor(admin1, webhookapi.RedriveBinding()))
	if err != nil || res.Moved != 3 || len(q.sent) != 3 || strings.Join(q.deleted, ",") != "rha,rhb,rhc" {
		t.Fatalf("%+v, %v, sent %v, deleted %v", res, err, q.sent, q.deleted)
	}
	if _, err := s.Redrive(t.Context(), proofFor(stranger, webhookapi.RedriveBinding())); code(err) != webhookapi.CodeRefused {
		t.Fatalf("a stranger's redrive: %v", err)
	}
}

// The events dead-letter queue (a fan-out that failed every time) is
// listed after the deliveries' and redriven to the events queue, where
// each event is fanned out again: an event id shows as an event, a status
// change as its execution. Its messages were marked sent when first
// handed over, so no relay would send them again.
func TestDLQRedriveSendsTheEventsDeadLettersBackToTheEventsQueue(t *testing.T) {
	change := `{"source":"aws.states","execution_arn":"arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_digest:run-1","status":"SUCCEEDED"}`
	q := &fakeQueue{dlq: []types.Message{dlqMessage(0)}, eventsDLQ: []types.Message{
		{Body: aws.String(`{"event_id":"evt_e"}`), ReceiptHandle: aws.String("rh-e1")}, {Body: aws.String(change), ReceiptHandle: aws.String("rh-e2")}}}
	s, _ := newService(newStore(), q)
	list, err := s.DLQList(t.Context(), proofFor(admin1, webhookapi.DLQListBinding()))
	if err != nil || len(list.Messages) != 3 {
		t.Fatalf("%+v, %v", list, err)
	}
	if m := list.Messages[0]; m.Queue != webhookapi.DLQDeliveries || m.Event != "evt_a" {
		t.Errorf("first: %+v, want the delivery", m)
	}
	if m := list.Messages[1]; m.Queue != webhookapi.DLQEvents || m.Event != "evt_e" || m.Subscription != "" {
		t.Errorf("second: %+v, want the events queue's evt_e", m)
	}
	if m := list.Messages[2]; m.Queue != webhookapi.DLQEvents || m.Event != "" || !strings.HasSuffix(m.Execution, ":run-1") {
		t.Errorf("third: %+v, want the status change's execution", m)
	}
	q.received, q.eventsReceived = 0, 0
	res, err := s.Redrive(t.Context(), proofFor(admin1, webhookapi.RedriveBinding()))
	if err != nil || res.Moved != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
	if want := []string{delivURL, eventsURL, eventsURL}; strings.Join(q.sentTo, " ") != strings.Join(want, " ") || q.sent[2] != change {
		t.Fatalf("sent %v to %v, want the delivery to the deliveries queue and both events, unchanged, to the events queue", q.sent, q.sentTo)
	}
	if strings.Join(q.deleted, ",") != "rha,rh-e1,rh-e2" {
		t.Fatalf("deleted %v", q.deleted)
	}
}

// The Function URL routes reach their operation with the proof header;
// another path is WEBHOOKS_INVALID with 400.
func TestFunctionURLRoutes(t *testing.T) {
	st := newStore(store.Subscription{ID: subA, Status: admin.StatusActive})
	s, _ := newService(st, &fakeQueue{})
	h := admin.NewHandler(s)
	call := func(method, path, proof string) events.LambdaFunctionURLResponse {
		ev := events.LambdaFunctionURLRequest{RawPath: path, Headers: map[string]string{webhookapi.ProofHeader: proof}}
		ev.RequestContext.HTTP.Method = method
		payload, _ := json.Marshal(ev)
		out, err := h.Handle(t.Context(), payload)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.LambdaFunctionURLResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := call("post", "/subscriptions/"+subA+"/disable/", proofFor(admin1, webhookapi.DisableBinding(subA))); resp.StatusCode != 200 || st.disabled[subA] == "" {
		t.Fatalf("disable: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := call("GET", "/subscriptions", proofFor(admin1, webhookapi.ListBinding())); resp.StatusCode != 200 || !strings.Contains(resp.Body, subA) {
		t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := call("GET", "/subscriptions", proofFor(stranger, webhookapi.ListBinding())); resp.StatusCode != 403 || !strings.Contains(resp.Body, webhookapi.CodeRefused) {
		t.Fatalf("a stranger's list: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := call("GET", "/secrets", ""); resp.StatusCode != 400 || !strings.Contains(resp.Body, "no route") {
		t.Fatalf("no route: %d %s", resp.StatusCode, resp.Body)
	}
}
