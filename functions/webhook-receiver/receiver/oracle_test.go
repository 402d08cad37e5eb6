package receiver_test

import (
	"bytes"
	"net/http"
	"testing"

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
