package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/functions/webhooks/admin"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Tests of what an insider or a bad request tries against the webhooks
// function: names resolving to refused addresses, replayed proofs, and
// failures whose cause must reach the function's log but not the caller.

// fakeResolver is a hand-written fake, since no local stand-in answers
// DNS with the addresses a test chooses: it answers the names of answers,
// a public address (example.com's) for any other name under example.org,
// and "no such host" for the rest.
type fakeResolver struct{ answers map[string][]netip.Addr }

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f.answers[host]; ok {
		return a, nil
	}
	if strings.HasSuffix(host, ".example.org") {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var testResolver = fakeResolver{answers: map[string][]netip.Addr{
	"meta.example.org":    {netip.MustParseAddr("169.254.169.254")},
	"mixed.example.org":   {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.7")},
	"mapped.example.org":  {netip.MustParseAddr("::ffff:169.254.169.254")},
	"nowhere.example.org": {},
	// A public address among the metadata one.
	"metadata.example.org": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("169.254.169.254")},
}}

// A URL whose host name resolves to a metadata, private or embedded
// address (any one of its answers), or to nothing, is refused at subscribe
// time, before anything is sealed or stored (docs/webhooks.md,
// "Endpoints": the rules hold "when it is made and before every
// attempt"). Only the delivery function checking it later would leave a
// subscription that can never deliver, or that delivers once the name
// stops pointing at the refused address.
func TestSubscribeRefusesANameResolvingToARefusedAddress(t *testing.T) {
	for _, host := range []string{"meta.example.org", "mixed.example.org", "mapped.example.org", "nowhere.example.org"} {
		t.Run(host, func(t *testing.T) {
			st := newStore()
			s, sealed := newService(st, &fakeQueue{})
			r := webhookapi.SubscribeRequest{URL: "https://" + host + "/in", Events: []string{"run.*"}}
			_, err := s.Subscribe(t.Context(), r, proofFor(admin1, webhookapi.SubscribeBinding(r)))
			if code(err) != webhookapi.CodeRefused || len(st.subs) != 0 || len(*sealed) != 0 {
				t.Fatalf("%v (%d stored, %d sealed), want %s and nothing stored", err, len(st.subs), len(*sealed), webhookapi.CodeRefused)
			}
		})
	}
}

// replayingCallers admits a proof again for the binding it was first
// used for, as caller.Verifier does within the proof's window (docs/
// identity.md: "the same proof for the same binding gets the first
// answer again"): the verifier cannot tell a retry from a replay, so the
// function must not act twice on one proof.
type replayingCallers struct{ fakeCallers }

// A subscribe proof presented twice (a client's retry, or someone who
// copied it within its minute) makes one subscription: the second use
// is refused and stores no second subscription with a secret nobody
// keeps, which would then fail every delivery at the receiver.
func TestAReplayedSubscribeProofMakesNoSecondSubscription(t *testing.T) {
	st := newStore()
	s, sealed := newService(st, &fakeQueue{})
	s.Callers = replayingCallers{}
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*"}}
	proof := proofFor(admin1, webhookapi.SubscribeBinding(r))
	first, err := s.Subscribe(t.Context(), r, proof)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Subscribe(t.Context(), r, proof)
	if err == nil || len(st.subs) != 1 {
		t.Fatalf("the replay answered %+v, %v; %d subscriptions stored, want 1", second, err, len(st.subs))
	}
	if code(err) != webhookapi.CodeUnauthenticated || !strings.Contains(err.Error(), first.Subscription.ID) {
		t.Fatalf("the replay: %v, want %s naming %s", err, webhookapi.CodeUnauthenticated, first.Subscription.ID)
	}
	if len(*sealed) > 2 {
		t.Fatalf("%d secrets sealed", len(*sealed))
	}
}

// rotatingStore keeps what Rotate writes, as the store does: the previous
// secret retires after grace, the new one is current, the version grows.
type rotatingStore struct{ *fakeStore }

func (s rotatingStore) Rotate(_ context.Context, id string, next store.SealedSecret, grace time.Duration, version int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.subs[id]
	if sub.Version != version {
		return store.ErrConflict
	}
	for i := range sub.Secrets {
		if sub.Secrets[i].RetiresAt.IsZero() {
			sub.Secrets[i].RetiresAt = now.Add(grace)
		}
	}
	sub.Secrets = append(sub.Secrets, next)
	sub.Version++
	s.subs[id] = sub
	s.rotated = append(s.rotated, id)
	return nil
}

// A rotate-secret proof presented twice rotates once: a replay within the
// proof's window would otherwise draw a third secret, answered to
// whoever replayed it, and leave the admin's secret retiring.
func TestAReplayedRotateProofRotatesOnce(t *testing.T) {
	st := rotatingStore{newStore(store.Subscription{ID: subA, Status: admin.StatusActive, Version: 1,
		Secrets: []store.SealedSecret{{Sealed: vault.Sealed{KeyID: "k"}, CreatedAt: now.Add(-time.Hour)}}})}
	s, _ := newService(st.fakeStore, &fakeQueue{})
	s.Store, s.Callers = st, replayingCallers{}
	proof := proofFor(admin1, webhookapi.RotateBinding(subA))
	if _, err := s.RotateSecret(t.Context(), subA, proof); err != nil {
		t.Fatal(err)
	}
	res, err := s.RotateSecret(t.Context(), subA, proof)
	if err == nil || len(st.rotated) != 1 {
		t.Fatalf("the replay answered %+v, %v; rotated %d times, want once", res, err, len(st.rotated))
	}
	// Up to the end of the proof's validity, a second rotation is refused;
	// after it, a new proof rotates.
	s.Now = func() time.Time { return now.Add(caller.Window + caller.Skew) }
	if _, err := s.RotateSecret(t.Context(), subA, proof); err == nil {
		t.Fatalf("a rotation %s after the last was allowed", caller.Window+caller.Skew)
	}
	s.Now = func() time.Time { return now.Add(caller.Window + caller.Skew + time.Second) }
	if _, err := s.RotateSecret(t.Context(), subA, proofFor(admin1, webhookapi.RotateBinding(subA))); err != nil {
		t.Fatalf("a later rotation: %v", err)
	}
}

// failingStore fails every read with a cause that names what failed.
type failingStore struct{ *fakeStore }

var errCause = errors.New("AccessDeniedException: webhooks role may not dynamodb:Query")

func (failingStore) Subscriptions(context.Context) ([]store.Subscription, error) {
	return nil, errCause
}

// A request that fails for the function's own reason (DynamoDB, KMS, SQS
// refusing it) answers WEBHOOKS_UNAVAILABLE without the cause, and logs
// the cause: otherwise a missing grant on AWS shows nowhere, neither to
// the caller nor in the function's log group.
func TestAnUnavailableAnswerLogsItsCauseAndHidesIt(t *testing.T) {
	var logs bytes.Buffer
	st := failingStore{newStore()}
	s, _ := newService(st.fakeStore, &fakeQueue{})
	s.Store, s.Log = st, slog.New(slog.NewJSONHandler(&logs, nil))
	h := admin.NewHandler(s)
	payload, _ := json.Marshal(webhookapi.DirectRequest{Action: webhookapi.ActionList, Proof: proofFor(admin1, webhookapi.ListBinding())})
	_, err := h.Handle(t.Context(), payload)
	if err == nil || !strings.Contains(err.Error(), webhookapi.CodeUnavailable) || strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("answer %v: want %s without its cause", err, webhookapi.CodeUnavailable)
	}
	if !strings.Contains(logs.String(), "AccessDeniedException") || !strings.Contains(logs.String(), webhookapi.CodeUnavailable) {
		t.Fatalf("log %q: want the code and the cause", logs.String())
	}
}

// A subscription or event id of the wrong shape is a bad request,
// WEBHOOKS_INVALID naming the shape, not WEBHOOKS_UNAVAILABLE ("repeat
// the request"), which the store's refusal of the id became.
func TestAMalformedIDIsInvalidNotUnavailable(t *testing.T) {
	s, _ := newService(newStore(), &fakeQueue{})
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"rotate-secret sub_x", func() error {
			_, err := s.RotateSecret(t.Context(), "sub_x", proofFor(admin1, webhookapi.RotateBinding("sub_x")))
			return err
		}},
		{"disable sub_../dlq", func() error {
			_, err := s.Disable(t.Context(), "sub_../dlq", proofFor(admin1, webhookapi.DisableBinding("sub_../dlq")))
			return err
		}},
		{"deliveries evt_NOPE", func() error {
			_, err := s.Deliveries(t.Context(), "evt_NOPE", proofFor(admin1, webhookapi.DeliveriesBinding("evt_NOPE")))
			return err
		}},
	} {
		if err := c.do(); code(err) != webhookapi.CodeInvalid {
			t.Errorf("%s: %v, want %s", c.name, err, webhookapi.CodeInvalid)
		}
	}
}

// dlq list and dlq redrive read the dead-letter queue until it answers no
// message, so each ReceiveMessage long-polls: a short poll samples a
// subset of SQS's servers and may answer none while messages wait (SQS
// Developer Guide, "Amazon SQS short and long polling"), which would end
// a listing early, or report the queue empty, while deliveries are left.
func TestDLQReadsLongPollSoAnEmptyAnswerMeansEmpty(t *testing.T) {
	q := &fakeQueue{dlq: []types.Message{dlqMessage(0), dlqMessage(1)}}
	s, _ := newService(newStore(), q)
	if _, err := s.DLQList(t.Context(), proofFor(admin1, webhookapi.DLQListBinding())); err != nil {
		t.Fatal(err)
	}
	q.received = 0
	if _, err := s.Redrive(t.Context(), proofFor(admin1, webhookapi.RedriveBinding())); err != nil {
		t.Fatal(err)
	}
	if len(q.waits) == 0 {
		t.Fatal("no receive")
	}
	for i, w := range q.waits {
		if w < 1 {
			t.Errorf("receive %d short-polls (WaitTimeSeconds %d)", i+1, w)
		}
	}
}

// The number of active subscriptions is bounded (admin.MaxSubscriptions):
// webhook-delivery fans each event out with one SendMessage per matching
// subscription, in one invocation of at most a minute, and retries the
// whole fan-out when it fails, so a few thousand subscriptions (a script
// subscribing in a loop) would stop every event's delivery, and a listing
// would outgrow a Function URL's 6 MB answer. Disabled ones do not count.
func TestSubscribeRefusesPastTheBoundOfActiveSubscriptions(t *testing.T) {
	st := newStore()
	letters := strings.NewReplacer("0", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7", "h", "8", "i", "9", "j")
	var first string
	for i := range admin.MaxSubscriptions {
		id := "sub_" + letters.Replace(fmt.Sprintf("%026d", i))
		st.subs[id] = store.Subscription{ID: id, Status: admin.StatusActive}
		if first == "" {
			first = id
		}
	}
	st.subs[subNone] = store.Subscription{ID: subNone, Status: admin.StatusDisabled}
	s, sealed := newService(st, &fakeQueue{})
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*"}}
	_, err := s.Subscribe(t.Context(), r, proofFor(admin1, webhookapi.SubscribeBinding(r)))
	if code(err) != webhookapi.CodeRefused || len(st.subs) != admin.MaxSubscriptions+1 || len(*sealed) != 0 {
		t.Fatalf("%v (%d stored, %d sealed), want %s and nothing more stored", err, len(st.subs), len(*sealed), webhookapi.CodeRefused)
	}
	st.subs[first] = store.Subscription{ID: first, Status: admin.StatusDisabled}
	if _, err := s.Subscribe(t.Context(), r, proofFor(admin1, webhookapi.SubscribeBinding(r))); err != nil {
		t.Fatalf("with one disabled: %v", err)
	}
}

// signedCallers admits any proof as admin1's, as STS would a presigned
// request whose query is reordered or re-encoded: SigV4 signs the
// canonical query, not its order in the URL.
type signedCallers struct{}

func (signedCallers) Verify(context.Context, string, caller.Binding) (caller.Identity, error) {
	return caller.Identity{Principal: admin1}, nil
}

// One proof is known by its X-Amz-Signature, as the verifier's own record
// knows it: the same proof with its query reordered is the same proof and
// makes no second subscription.
func TestASubscribeProofWithItsQueryReorderedIsTheSameProof(t *testing.T) {
	st := newStore()
	s, _ := newService(st, &fakeQueue{})
	s.Callers = signedCallers{}
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*"}}
	proof := "https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Signature=0a1b2c&X-Amz-Date=20261202T100000Z"
	reordered := "https://sts.eu-west-1.amazonaws.com/?X-Amz-Date=20261202T100000Z&X-Amz-Signature=0a1b2c&Version=2011-06-15&Action=GetCallerIdentity"
	if _, err := s.Subscribe(t.Context(), r, proof); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(t.Context(), r, reordered); code(err) != webhookapi.CodeUnauthenticated || len(st.subs) != 1 {
		t.Fatalf("the reordered proof: %v, %d subscriptions; want %s and one", err, len(st.subs), webhookapi.CodeUnauthenticated)
	}
	other := strings.Replace(proof, "0a1b2c", "0a1b2d", 1)
	if _, err := s.Subscribe(t.Context(), r, other); err != nil || len(st.subs) != 2 {
		t.Fatalf("another proof: %v, %d subscriptions; want a second", err, len(st.subs))
	}
}
