package store

import (
	"testing"
	"time"
)

// Rotations within one grace period keep at most two secrets signing, as
// docs/webhooks.md ("Rotation": "each delivery in that window carries two
// signatures") and webhookapi.Subscription.Secrets ("2 during a rotation's
// grace period, else 1") say. Every rotated-out secret now signs until its
// own retires_at, so a webhook admin rotating again and again in a day
// grows the list without bound: each delivery opens every one with a KMS
// Decrypt and carries a signature per secret in webhook-signature, until
// the header outgrows what receivers accept or the item its 400 KB.
func TestRepeatedRotationsKeepTwoSecretsSigning(t *testing.T) {
	f := newFixture(t)
	sub := subscription(t, 1)
	if err := f.store.Subscribe(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	for v := int64(1); v <= 5; v++ {
		f.clock.Add(2 * time.Minute)
		if err := f.store.Rotate(t.Context(), sub.ID, sealedFor(byte(v+1)), 24*time.Hour, v); err != nil {
			t.Fatal(err)
		}
	}
	got, _, err := f.store.Subscription(t.Context(), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Signing(f.clock.Now())); n > 2 {
		t.Fatalf("after 5 rotations within the grace %d secrets sign, want at most 2", n)
	}
}
