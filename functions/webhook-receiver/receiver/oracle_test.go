package receiver_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
)

// A sender without the secret learns nothing of whether a source exists:
// a body over a source's max_body_bytes but under the hard cap, signed
// with the wrong secret, is answered exactly as the same request to a
// name no source has (401), so the source's limit is told only to a
// sender whose signature verifies (413). Nothing is kept either way.
func TestAnOversizedUnsignedBodyLooksTheSameForAKnownAndAnUnknownSource(t *testing.T) {
	r := newRig(t)
	secret := whsec('o')
	known, unknown := fresh("oracle"), fresh("nobody")
	r.addSource(t, known, inbound.StandardWebhooks, 100, secret)
	big := bytes.Repeat([]byte(" "), 150)
	copy(big, `{"a":1}`)
	now := r.clock.Now()

	toKnown := r.send(t, standard(t, known, whsec('x'), "msg_1", now, big))
	toUnknown := r.send(t, standard(t, unknown, whsec('x'), "msg_1", now, big))
	if toKnown != toUnknown || toKnown.status != http.StatusUnauthorized {
		t.Fatalf("known source answered %+v, unknown %+v: want the same 401", toKnown, toUnknown)
	}
	r.nothingKept(t, "")
	if a := r.send(t, standard(t, known, secret, "msg_1", now, big)); a.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("well signed, over the source's limit: %+v, want 413", a)
	}
	r.nothingKept(t, "")
}

// A signed body that is JSON but not UTF-8 (RFC 8259 §8.1: JSON exchanged
// between systems is UTF-8) is refused 415 and kept nowhere: its run could
// never start (Step Functions takes UTF-8 input only), so accepting it
// would answer 202 for an event bound to fail.
func TestASignedBodyThatIsNotUTF8IsRefused415(t *testing.T) {
	r := newRig(t)
	secret := whsec('u')
	name := fresh("utf8")
	r.addSource(t, name, inbound.StandardWebhooks, 0, secret)
	body := []byte("{\"type\":\"a\",\"s\":\"\xff\xfe\"}")
	q := standard(t, name, secret, "msg_u", r.clock.Now(), body)
	q.b64 = true // as Lambda hands over a body that is not UTF-8
	if a := r.send(t, q); a.status != http.StatusUnsupportedMediaType {
		t.Fatalf("answer %+v, want 415", a)
	}
	r.nothingKept(t, name)
	// Not vacuous: the same body in UTF-8 is accepted.
	if a := r.send(t, standard(t, name, secret, "msg_u", r.clock.Now(), []byte(`{"type":"a","s":"ÿþ"}`))); a.status != http.StatusAccepted {
		t.Fatalf("the UTF-8 body: %+v, want 202", a)
	}
}

// A source removed, or removed and added again under its name with a new
// secret (for another Solution, say), takes no delivery signed with its
// old secret, although a container still holds that secret in its cache:
// a delivery that verifies against a cached source is taken only once a
// read of the source finds the same sealed secrets. The source's new
// secret verifies at once.
func TestARemovedOrReplacedSourceTakesNoDeliveryOfItsOldSecret(t *testing.T) {
	r := newRig(t)
	oldSecret, newSecret := whsec('p'), whsec('q')
	removed, replaced := fresh("removed"), fresh("replaced")
	for _, name := range []string{removed, replaced} {
		r.addSource(t, name, inbound.StandardWebhooks, 0, oldSecret)
		if a := r.send(t, standard(t, name, oldSecret, "msg_1", r.clock.Now(), []byte(`{}`))); a.status != http.StatusAccepted {
			t.Fatalf("%s before: %+v", name, a)
		}
		if err := r.st.DeleteSource(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	r.messages(t)
	r.addSource(t, replaced, inbound.StandardWebhooks, 0, newSecret)
	r.clock.Add(time.Minute) // well within the secret cache
	for _, name := range []string{removed, replaced} {
		if a := r.send(t, standard(t, name, oldSecret, "msg_2", r.clock.Now(), []byte(`{}`))); a.status != http.StatusUnauthorized {
			t.Errorf("%s, its old secret: %+v, want 401", name, a)
		}
	}
	if ev := r.events(t, ""); len(ev) != 2 {
		t.Errorf("%d event items, want the 2 from before", len(ev))
	}
	if m := r.messages(t); len(m) != 0 {
		t.Errorf("messages %+v, want none", m)
	}
	if a := r.send(t, standard(t, replaced, newSecret, "msg_3", r.clock.Now(), []byte(`{}`))); a.status != http.StatusAccepted {
		t.Fatalf("the new source's secret: %+v, want 202", a)
	}
}
