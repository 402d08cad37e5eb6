package inbound_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Secrets of these tests; marker sits in every body, so a message quoting
// a body or a secret is caught.
const (
	oldWhsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	newWhsec = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	oldPlain = "whsec_test_secret"
	newPlain = "whsec_test_secret_rolled_key"
	marker   = "BODYMARKER"
)

var t0 = time.Unix(1700000000, 0).UTC()

func body(id string) []byte {
	return []byte(`{"id":"` + id + `","type":"invoice.paid","note":"` + marker + `"}`)
}

func hmacHex(secret string, parts ...[]byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// signed builds a request of scheme signed at ts with secrets (each one's
// signature in the header, as a sender does during rotation).
func signed(t *testing.T, scheme inbound.Scheme, secrets []string, ts time.Time, b []byte) http.Header {
	t.Helper()
	h := http.Header{}
	switch scheme {
	case inbound.StandardWebhooks:
		var keys [][]byte
		for _, s := range secrets {
			k, err := webhook.ParseSecret(s)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		sig, err := webhook.Sign(keys, "msg_1", ts, b)
		if err != nil {
			t.Fatal(err)
		}
		h.Set("webhook-id", "msg_1")
		h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
		h.Set("webhook-signature", sig)
	case inbound.Stripe:
		tv := strconv.FormatInt(ts.Unix(), 10)
		v := "t=" + tv
		for _, s := range secrets {
			v += ",v1=" + hmacHex(s, []byte(tv), []byte("."), b)
		}
		h.Set("Stripe-Signature", v)
	case inbound.GitHub:
		// GitHub sends one signature; rotation there means the receiver
		// holds both secrets while the sender switches.
		h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secrets[0], b))
		h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		h.Set("X-GitHub-Event", "push")
	}
	return h
}

// secretsOf are a scheme's old and new secret.
func secretsOf(s inbound.Scheme) (old, nw string) {
	if s == inbound.StandardWebhooks {
		return oldWhsec, newWhsec
	}
	return oldPlain, newPlain
}

// checkQuiet fails when err quotes the body or a secret.
func checkQuiet(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{marker, oldWhsec, newWhsec, oldPlain, "C2FVsBQ", "MfKQ9r8"} {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Fatalf("error quotes a body or secret: %v", err)
		}
	}
}

func TestSignedEventVerifiesWithItsIDTypeAndTimestamp(t *testing.T) {
	for _, s := range inbound.Schemes {
		t.Run(string(s), func(t *testing.T) {
			old, _ := secretsOf(s)
			ev, err := inbound.Verify(s, []string{old}, signed(t, s, []string{old}, t0, body("evt_1")), body("evt_1"), t0)
			if err != nil {
				t.Fatal(err)
			}
			want := map[inbound.Scheme]inbound.Event{
				inbound.StandardWebhooks: {ID: "msg_1", Type: "invoice.paid", Timestamp: t0},
				inbound.Stripe:           {ID: "evt_1", Type: "invoice.paid", Timestamp: t0},
				inbound.GitHub:           {ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Type: "push"},
			}[s]
			if ev != want {
				t.Fatalf("event %+v, want %+v", ev, want)
			}
		})
	}
}

func TestTimestampToleranceIsFiveMinutesBothWays(t *testing.T) {
	cases := []struct {
		name string
		skew time.Duration // timestamp minus now
		ok   bool
	}{
		{"exactly 5 minutes old", -inbound.Tolerance, true},
		{"just inside, old", -inbound.Tolerance + time.Second, true},
		{"just outside, old", -inbound.Tolerance - time.Second, false},
		{"exactly 5 minutes ahead", inbound.Tolerance, true},
		{"just inside, ahead", inbound.Tolerance - time.Second, true},
		{"just outside, ahead", inbound.Tolerance + time.Second, false},
		{"a day old", -24 * time.Hour, false},
	}
	for _, s := range []inbound.Scheme{inbound.StandardWebhooks, inbound.Stripe} {
		for _, c := range cases {
			t.Run(string(s)+"/"+c.name, func(t *testing.T) {
				old, _ := secretsOf(s)
				now := t0.Add(-c.skew)
				_, err := inbound.Verify(s, []string{old}, signed(t, s, []string{old}, t0, body("evt_1")), body("evt_1"), now)
				if c.ok && err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if !c.ok && !errors.Is(err, inbound.ErrStaleTimestamp) {
					t.Fatalf("Verify: %v, want ErrStaleTimestamp", err)
				}
			})
		}
	}
	t.Run("github signs no timestamp", func(t *testing.T) {
		h := signed(t, inbound.GitHub, []string{oldPlain}, t0, body("evt_1"))
		if _, err := inbound.Verify(inbound.GitHub, []string{oldPlain}, h, body("evt_1"), t0.Add(365*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestChangedBodyOrSignatureIsRefused(t *testing.T) {
	sigHeader := map[inbound.Scheme]string{
		inbound.StandardWebhooks: "webhook-signature",
		inbound.Stripe:           "Stripe-Signature",
		inbound.GitHub:           "X-Hub-Signature-256",
	}
	for _, s := range inbound.Schemes {
		old, _ := secretsOf(s)
		b := body("evt_1")
		t.Run(string(s)+"/signature over a different body", func(t *testing.T) {
			h := signed(t, s, []string{old}, t0, body("evt_2"))
			_, err := inbound.Verify(s, []string{old}, h, b, t0)
			if !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("Verify: %v, want ErrBadSignature", err)
			}
			checkQuiet(t, err)
		})
		for i := range b {
			changed := append([]byte(nil), b...)
			changed[i] ^= 0x01
			h := signed(t, s, []string{old}, t0, b)
			if _, err := inbound.Verify(s, []string{old}, h, changed, t0); !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("%s: byte %d changed: %v, want ErrBadSignature", s, i, err)
			}
		}
		t.Run(string(s)+"/one character of the signature changed", func(t *testing.T) {
			h := signed(t, s, []string{old}, t0, b)
			v := h.Get(sigHeader[s])
			last := v[len(v)-2] // before a base64 pad or the last hex digit
			repl := byte('0')
			if last == '0' {
				repl = '1'
			}
			h.Set(sigHeader[s], v[:len(v)-2]+string(repl)+v[len(v)-1:])
			_, err := inbound.Verify(s, []string{old}, h, b, t0)
			if !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("Verify: %v, want ErrBadSignature", err)
			}
		})
		t.Run(string(s)+"/an extra byte at the end", func(t *testing.T) {
			h := signed(t, s, []string{old}, t0, b)
			_, err := inbound.Verify(s, []string{old}, h, append(append([]byte(nil), b...), '\n'), t0)
			if !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("Verify: %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestRotatedSecretOldAndNewVerifyThenOnlyNew(t *testing.T) {
	for _, s := range inbound.Schemes {
		old, nw := secretsOf(s)
		b := body("evt_1")
		t.Run(string(s), func(t *testing.T) {
			byOld := signed(t, s, []string{old}, t0, b)
			byNew := signed(t, s, []string{nw}, t0, b)
			for name, h := range map[string]http.Header{"signed with the old": byOld, "signed with the new": byNew} {
				if _, err := inbound.Verify(s, []string{nw, old}, h, b, t0); err != nil {
					t.Fatalf("during rotation, %s secret: %v", name, err)
				}
			}
			if s != inbound.GitHub {
				both := signed(t, s, []string{nw, old}, t0, b)
				if _, err := inbound.Verify(s, []string{nw}, both, b, t0); err != nil {
					t.Fatalf("a header carrying both, verified with the new: %v", err)
				}
			}
			if _, err := inbound.Verify(s, []string{nw}, byNew, b, t0); err != nil {
				t.Fatalf("after rotation, new: %v", err)
			}
			_, err := inbound.Verify(s, []string{nw}, byOld, b, t0)
			if !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("after rotation, old: %v, want ErrBadSignature", err)
			}
			checkQuiet(t, err)
		})
	}
}

func TestHeadersMissingDuplicatedOrMalformedAreRefused(t *testing.T) {
	type edit func(h http.Header)
	set := func(k, v string) edit { return func(h http.Header) { h.Set(k, v) } }
	del := func(k string) edit { return func(h http.Header) { h.Del(k) } }
	dup := func(k string) edit { return func(h http.Header) { h.Add(k, h.Get(k)) } }
	cases := []struct {
		scheme inbound.Scheme
		name   string
		edit   edit
		want   error
	}{
		{inbound.StandardWebhooks, "no webhook-id", del("webhook-id"), inbound.ErrMissingHeader},
		{inbound.StandardWebhooks, "no webhook-timestamp", del("webhook-timestamp"), inbound.ErrMissingHeader},
		{inbound.StandardWebhooks, "no webhook-signature", del("webhook-signature"), inbound.ErrMissingHeader},
		{inbound.StandardWebhooks, "empty webhook-signature", set("webhook-signature", ""), inbound.ErrMissingHeader},
		{inbound.StandardWebhooks, "webhook-id twice", dup("webhook-id"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "webhook-timestamp twice", dup("webhook-timestamp"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "webhook-signature twice", dup("webhook-signature"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "timestamp with a sign", set("webhook-timestamp", "+1700000000"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "timestamp in milliseconds form", set("webhook-timestamp", "1700000000.5"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "timestamps joined by a comma", set("webhook-timestamp", "1700000000,1700000000"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "signature without a version", set("webhook-signature", "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "only a v1a signature", set("webhook-signature", "v1a,AAAA"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "signatures joined by a comma", set("webhook-signature", "v1,AAAA,v1,BBBB"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "two spaces", set("webhook-signature", "v1,AAAA  v1,BBBB"), inbound.ErrMalformedHeader},
		{inbound.StandardWebhooks, "webhook-id with a space", set("webhook-id", "msg 1"), inbound.ErrBadSignature},
		{inbound.StandardWebhooks, "webhook-id with a full stop", set("webhook-id", "msg_1.1700000000"), inbound.ErrMalformedHeader},
		{inbound.Stripe, "no Stripe-Signature", del("Stripe-Signature"), inbound.ErrMissingHeader},
		{inbound.Stripe, "Stripe-Signature twice", dup("Stripe-Signature"), inbound.ErrMalformedHeader},
		{inbound.Stripe, "two headers joined by a comma", func(h http.Header) {
			h.Set("Stripe-Signature", h.Get("Stripe-Signature")+","+h.Get("Stripe-Signature"))
		}, inbound.ErrMalformedHeader},
		{inbound.Stripe, "no t", set("Stripe-Signature", "v1="+strings.Repeat("ab", 32)), inbound.ErrMalformedHeader},
		{inbound.Stripe, "t not a number", set("Stripe-Signature", "t=soon,v1="+strings.Repeat("ab", 32)), inbound.ErrMalformedHeader},
		{inbound.Stripe, "an item without =", set("Stripe-Signature", "t=1700000000,v1"), inbound.ErrMalformedHeader},
		{inbound.Stripe, "over the size bound", set("Stripe-Signature", "t=1700000000"+strings.Repeat(",v1="+strings.Repeat("ab", 32), 70)), inbound.ErrMalformedHeader},
		{inbound.GitHub, "no X-Hub-Signature-256", del("X-Hub-Signature-256"), inbound.ErrMissingHeader},
		{inbound.GitHub, "X-Hub-Signature-256 twice", dup("X-Hub-Signature-256"), inbound.ErrMalformedHeader},
		{inbound.GitHub, "sha1 prefix", func(h http.Header) {
			h.Set("X-Hub-Signature-256", strings.Replace(h.Get("X-Hub-Signature-256"), "sha256=", "sha1=", 1))
		}, inbound.ErrMalformedHeader},
		{inbound.GitHub, "short hex", set("X-Hub-Signature-256", "sha256=abcd"), inbound.ErrMalformedHeader},
		{inbound.GitHub, "not hex", set("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)), inbound.ErrMalformedHeader},
		{inbound.GitHub, "no X-GitHub-Delivery", del("X-GitHub-Delivery"), inbound.ErrNoEventID},
		{inbound.GitHub, "X-GitHub-Delivery twice", dup("X-GitHub-Delivery"), inbound.ErrNoEventID},
		{inbound.GitHub, "X-GitHub-Delivery with a control character", set("X-GitHub-Delivery", "a\x01b"), inbound.ErrNoEventID},
		{inbound.GitHub, "X-GitHub-Delivery over the bound", set("X-GitHub-Delivery", strings.Repeat("a", inbound.MaxEventIDBytes+1)), inbound.ErrNoEventID},
	}
	for _, c := range cases {
		t.Run(string(c.scheme)+"/"+c.name, func(t *testing.T) {
			old, _ := secretsOf(c.scheme)
			h := signed(t, c.scheme, []string{old}, t0, body("evt_1"))
			c.edit(h)
			_, err := inbound.Verify(c.scheme, []string{old}, h, body("evt_1"), t0)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			checkQuiet(t, err)
		})
	}
}

func TestGitHubEventHeaderIsOptional(t *testing.T) {
	h := signed(t, inbound.GitHub, []string{oldPlain}, t0, body("evt_1"))
	h.Del("X-GitHub-Event")
	ev, err := inbound.Verify(inbound.GitHub, []string{oldPlain}, h, body("evt_1"), t0)
	if err != nil || ev.Type != "" {
		t.Fatalf("event %+v, %v", ev, err)
	}
}

func TestStripeEventIDComesFromTheSignedBody(t *testing.T) {
	cases := []struct {
		name string
		body string
		want error
	}{
		{"no id", `{"type":"invoice.paid"}`, inbound.ErrNoEventID},
		{"id a number", `{"id":12}`, inbound.ErrNoEventID},
		{"id empty", `{"id":""}`, inbound.ErrNoEventID},
		{"id with a space", `{"id":"evt 1"}`, inbound.ErrNoEventID},
		{"a JSON array", `["evt_1"]`, inbound.ErrBodyNotJSON},
		{"not JSON", `id=evt_1&` + marker, inbound.ErrBodyNotJSON},
		{"empty body", ``, inbound.ErrBodyNotJSON},
		{"truncated JSON", `{"id":"evt_1"`, inbound.ErrBodyNotJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := signed(t, inbound.Stripe, []string{oldPlain}, t0, []byte(c.body))
			_, err := inbound.Verify(inbound.Stripe, []string{oldPlain}, h, []byte(c.body), t0)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			checkQuiet(t, err)
		})
		t.Run(c.name+", unsigned", func(t *testing.T) {
			h := signed(t, inbound.Stripe, []string{newPlain}, t0, []byte(c.body))
			_, err := inbound.Verify(inbound.Stripe, []string{oldPlain}, h, []byte(c.body), t0)
			if !errors.Is(err, inbound.ErrBadSignature) {
				t.Fatalf("Verify: %v, want ErrBadSignature before the body is read", err)
			}
		})
	}
}

func TestStandardWebhooksTypeOnlyFromAJSONObject(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"object with type":          {`{"type":"contact.created","data":{}}`, "contact.created"},
		"object without type":       {`{"data":{}}`, ""},
		"type not a string":         {`{"type":7}`, ""},
		"not JSON":                  {`plain text ` + marker, ""},
		"type with a space":         {`{"type":"a b"}`, ""},
		"array":                     {`[{"type":"x"}]`, ""},
		"leading whitespace object": {" \n{\"type\":\"x.y\"}", "x.y"},
	} {
		t.Run(name, func(t *testing.T) {
			h := signed(t, inbound.StandardWebhooks, []string{oldWhsec}, t0, []byte(c.body))
			ev, err := inbound.Verify(inbound.StandardWebhooks, []string{oldWhsec}, h, []byte(c.body), t0)
			if err != nil || ev.Type != c.want {
				t.Fatalf("event %+v, %v; want type %q", ev, err, c.want)
			}
		})
	}
}

func TestStandardWebhooksUnusableIDIsNoEventID(t *testing.T) {
	// The id is signed, so a sender that signs an unusable one gets
	// ErrNoEventID, after the signature.
	k, _ := webhook.ParseSecret(oldWhsec)
	id := strings.Repeat("m", inbound.MaxEventIDBytes+1)
	sig, err := webhook.Sign([][]byte{k}, id, t0, body("x"))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(t0.Unix(), 10))
	h.Set("webhook-signature", sig)
	if _, err := inbound.Verify(inbound.StandardWebhooks, []string{oldWhsec}, h, body("x"), t0); !errors.Is(err, inbound.ErrNoEventID) {
		t.Fatalf("Verify: %v, want ErrNoEventID", err)
	}
}

// allocated reports the bytes f allocates. No test of this package runs in
// parallel, so the count is f's.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestStripeBadSignatureNeverParsesTheBody(t *testing.T) {
	// A 32 MiB JSON body: parsing it (encoding/json copies the id's
	// string) allocates more than the body; checking a signature over it
	// allocates next to nothing. The signed case shows the measure sees a
	// parse.
	const size = 32 << 20
	huge := []byte(`{"id":"` + strings.Repeat("a", size) + `"}`)
	unsigned := signed(t, inbound.Stripe, []string{newPlain}, t0, huge)
	var err error
	n := allocated(func() { _, err = inbound.Verify(inbound.Stripe, []string{oldPlain}, unsigned, huge, t0) })
	if !errors.Is(err, inbound.ErrBadSignature) {
		t.Fatalf("Verify: %v, want ErrBadSignature", err)
	}
	if n > 1<<20 {
		t.Fatalf("a bad signature allocated %d bytes: the body was read", n)
	}
	good := signed(t, inbound.Stripe, []string{oldPlain}, t0, huge)
	n = allocated(func() { _, err = inbound.Verify(inbound.Stripe, []string{oldPlain}, good, huge, t0) })
	if !errors.Is(err, inbound.ErrNoEventID) { // over MaxEventIDBytes
		t.Fatalf("Verify: %v, want ErrNoEventID", err)
	}
	if n < size {
		t.Fatalf("a good signature allocated %d bytes: the measure does not see the parse", n)
	}
}

func TestSecretsAndSchemeAreChecked(t *testing.T) {
	h := signed(t, inbound.Stripe, []string{oldPlain}, t0, body("evt_1"))
	for name, c := range map[string]struct {
		scheme  inbound.Scheme
		secrets []string
		want    error
	}{
		"no secrets":                    {inbound.Stripe, nil, inbound.ErrNoSecret},
		"an empty Stripe secret":        {inbound.Stripe, []string{oldPlain, ""}, inbound.ErrNoSecret},
		"an empty GitHub secret":        {inbound.GitHub, []string{""}, inbound.ErrNoSecret},
		"a Standard secret not whsec_":  {inbound.StandardWebhooks, []string{oldPlain}, inbound.ErrNoSecret},
		"a Standard secret of 12 bytes": {inbound.StandardWebhooks, []string{"whsec_MfKQ9r8GKYqrTwjU"}, inbound.ErrNoSecret},
		"unknown scheme":                {inbound.Scheme("svix"), []string{oldPlain}, inbound.ErrUnknownScheme},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := inbound.Verify(c.scheme, c.secrets, h, body("evt_1"), t0)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			checkQuiet(t, err)
		})
	}
}

func TestParseSchemeTakesExactNames(t *testing.T) {
	for _, s := range []string{"standard-webhooks", "stripe", "github"} {
		if got, err := inbound.ParseScheme(s); err != nil || string(got) != s {
			t.Fatalf("ParseScheme(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Stripe", "GITHUB", "standard_webhooks", " stripe", "svix"} {
		if _, err := inbound.ParseScheme(s); !errors.Is(err, inbound.ErrUnknownScheme) {
			t.Fatalf("ParseScheme(%q): %v, want ErrUnknownScheme", s, err)
		}
	}
}
