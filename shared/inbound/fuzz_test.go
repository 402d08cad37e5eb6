package inbound_test

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
)

// FuzzParseStandardSignature checks that an accepted webhook-signature
// yields only non-empty v1 signatures without a comma or a space, each one
// an entry of the value.
func FuzzParseStandardSignature(f *testing.F) {
	for _, s := range []string{"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "v1a,AAAA v1,BBBB", "v1,a,b", "", " ", "v1,", ",x", "v2,x v1,y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sigs, err := inbound.ParseStandardSignature(s)
		if err != nil {
			if !errors.Is(err, inbound.ErrMalformedHeader) {
				t.Fatalf("error %v is not ErrMalformedHeader", err)
			}
			return
		}
		if len(sigs) == 0 || len(s) > inbound.MaxSignatureHeaderBytes {
			t.Fatalf("accepted %q with %d signatures", s, len(sigs))
		}
		entries := strings.Split(s, " ")
		for _, sig := range sigs {
			if sig == "" || strings.ContainsAny(sig, ", ") {
				t.Fatalf("signature %q", sig)
			}
			found := false
			for _, e := range entries {
				found = found || e == "v1,"+sig
			}
			if !found {
				t.Fatalf("signature %q is not an entry of %q", sig, s)
			}
		}
	})
}

// FuzzParseStripeSignature checks that an accepted Stripe-Signature has
// one t of digits matching its Timestamp and 32-byte v1 signatures only.
func FuzzParseStripeSignature(f *testing.F) {
	for _, s := range []string{"t=1700000000,v1=3c197ecbcd9152bb0c0fa62d58b187849e1a44f5fe71352c5dc4d40c6e92d422", "v1,t=1", "t=", "t=1,t=2,v1=" + strings.Repeat("0", 64), "t=1,v0=x,v1=bad", "t=1,v1=" + strings.Repeat("A", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := inbound.ParseStripeSignature(s)
		if err != nil {
			if !errors.Is(err, inbound.ErrMalformedHeader) && !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("error %v is neither ErrMalformedHeader nor ErrBadSignature", err)
			}
			return
		}
		if strings.Count(","+s, ",t=") != 1 || len(sig.V1) == 0 {
			t.Fatalf("accepted %q: %+v", s, sig)
		}
		if n, err := strconv.ParseInt(sig.T, 10, 64); err != nil || sig.Timestamp.Unix() != n {
			t.Fatalf("t %q, timestamp %v", sig.T, sig.Timestamp)
		}
		for _, v := range sig.V1 {
			if len(v) != 32 {
				t.Fatalf("v1 of %d bytes", len(v))
			}
		}
	})
}

// FuzzParseGitHubSignature checks that an accepted X-Hub-Signature-256 is
// "sha256=" and the hex of the 32 bytes returned.
func FuzzParseGitHubSignature(f *testing.F) {
	for _, s := range []string{"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "sha256=", "sha1=abc", "sha256=" + strings.Repeat("Z", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := inbound.ParseGitHubSignature(s)
		if err != nil {
			if !errors.Is(err, inbound.ErrMalformedHeader) {
				t.Fatalf("error %v is not ErrMalformedHeader", err)
			}
			return
		}
		if len(b) != 32 || strings.ToLower(s) != "sha256="+hex.EncodeToString(b) {
			t.Fatalf("accepted %q as %x", s, b)
		}
	})
}

// FuzzVerify sends arbitrary headers and bodies through Verify with fixed
// secrets: it never panics, every error is one of the Err* values and
// does not quote the secret (that errors quote no body is checked with a
// marker in verify_test.go), and what verifies stops verifying when one
// byte of the body changes.
func FuzzVerify(f *testing.F) {
	seed := func(scheme byte, h1, h2, h3, body string, skew int64) { f.Add(scheme, h1, h2, h3, body, skew) }
	seed(0, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", `{"test": 2432232314}`, 0)
	seed(1, "t=1614265330,v1=3c197ecbcd9152bb0c0fa62d58b187849e1a44f5fe71352c5dc4d40c6e92d422", "", "", `{"id":"evt_1"}`, 10)
	seed(2, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "push", "Hello, World!", 0)
	seed(1, "t=1,t=2", "", "", "", -400)
	secrets := map[inbound.Scheme][]string{
		inbound.StandardWebhooks: {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		inbound.Stripe:           {"whsec_test_secret"},
		inbound.GitHub:           {"It's a Secret to Everybody"},
	}
	sentinels := []error{inbound.ErrMissingHeader, inbound.ErrMalformedHeader, inbound.ErrStaleTimestamp,
		inbound.ErrBadSignature, inbound.ErrNoEventID, inbound.ErrBodyNotJSON}
	f.Fuzz(func(t *testing.T, scheme byte, h1, h2, h3, body string, skew int64) {
		s := inbound.Schemes[int(scheme)%len(inbound.Schemes)]
		h := http.Header{}
		switch s {
		case inbound.StandardWebhooks:
			h.Set("webhook-id", h1)
			h.Set("webhook-timestamp", h2)
			h.Set("webhook-signature", h3)
		case inbound.Stripe:
			h.Set("Stripe-Signature", h1)
		case inbound.GitHub:
			h.Set("X-Hub-Signature-256", h1)
			h.Set("X-GitHub-Delivery", h2)
			h.Set("X-GitHub-Event", h3)
		}
		now := time.Unix(1614265330+skew%100000, 0)
		ev, err := inbound.Verify(s, secrets[s], h, []byte(body), now)
		if err != nil {
			known := false
			for _, e := range sentinels {
				known = known || errors.Is(err, e)
			}
			if !known {
				t.Fatalf("error %v is none of the Err* values", err)
			}
			if strings.Contains(err.Error(), secrets[s][0]) {
				t.Fatalf("error %v quotes the secret", err)
			}
			return
		}
		if ev.ID == "" {
			t.Fatal("verified without an event id")
		}
		if body == "" {
			return
		}
		changed := []byte(body)
		changed[0] ^= 0x20
		if _, err := inbound.Verify(s, secrets[s], h, changed, now); !errors.Is(err, inbound.ErrBadSignature) {
			t.Fatalf("a changed body: %v, want ErrBadSignature", err)
		}
	})
}
