package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// HeaderStripeSignature is Stripe's signature header.
const HeaderStripeSignature = "Stripe-Signature"

// StripeSignature is a parsed Stripe-Signature value.
type StripeSignature struct {
	// Timestamp is t, whole unix seconds, UTC.
	Timestamp time.Time
	// T is t as written: the signed payload starts with it.
	T string
	// V1 holds each v1 signature that is 64 hex characters, decoded
	// (32 bytes). Others are skipped, as Stripe's libraries do, so a
	// header may carry a signature of a scheme this code does not know.
	V1 [][]byte
}

// ParseStripeSignature parses "t=<unix>,v1=<hex>[,v1=<hex>]...[,v0=...]"
// (Stripe's webhook documentation, "Verify signatures manually"): items
// separated by commas, each "<key>=<value>", at most
// MaxSignatureHeaderBytes in all. t must appear exactly once, as whole unix
// seconds; keys other than t and v1 are skipped. It fails with
// ErrMalformedHeader on another form (an item without "=", no t, t twice:
// what two headers joined with a comma look like), and with
// ErrBadSignature when no usable v1 is there (Stripe's libraries answer
// "no valid signature" then too).
func ParseStripeSignature(v string) (StripeSignature, error) {
	var s StripeSignature
	if len(v) > MaxSignatureHeaderBytes {
		return s, fmt.Errorf("%w: Stripe-Signature over %d bytes", ErrMalformedHeader, MaxSignatureHeaderBytes)
	}
	seenT := false
	for _, item := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(item, "=")
		if !ok {
			return s, fmt.Errorf(`%w: Stripe-Signature items must be "<key>=<value>"`, ErrMalformedHeader)
		}
		switch k {
		case "t":
			if seenT {
				return s, fmt.Errorf("%w: Stripe-Signature has t twice", ErrMalformedHeader)
			}
			seenT = true
			ts, ok := parseUnix(val)
			if !ok {
				return s, fmt.Errorf("%w: Stripe-Signature t is not whole unix seconds", ErrMalformedHeader)
			}
			s.Timestamp, s.T = ts, val
		case "v1":
			if len(val) != 2*sha256.Size {
				continue
			}
			b, err := hex.DecodeString(val)
			if err != nil {
				continue
			}
			s.V1 = append(s.V1, b)
		}
	}
	if !seenT {
		return s, fmt.Errorf("%w: Stripe-Signature has no t", ErrMalformedHeader)
	}
	if len(s.V1) == 0 {
		return s, fmt.Errorf("%w: Stripe-Signature has no v1 signature of 64 hex characters", ErrBadSignature)
	}
	return s, nil
}

// verifyStripe: HMAC-SHA256 with the endpoint secret's bytes over
// "<t>.<body>", any v1 of any secret matching; only then the body is
// read, for its "id" and "type". Stripe's Go library is not used: its
// event construction refuses events of other API versions.
func verifyStripe(secrets []string, header http.Header, body []byte, now time.Time) (Event, error) {
	for i, s := range secrets {
		if s == "" {
			return Event{}, fmt.Errorf("%w: secret %d is empty", ErrNoSecret, i)
		}
	}
	v, err := single(header, HeaderStripeSignature)
	if err != nil {
		return Event{}, err
	}
	sig, err := ParseStripeSignature(v)
	if err != nil {
		return Event{}, err
	}
	if err := checkTime(sig.Timestamp, now); err != nil {
		return Event{}, err
	}
	matched := false
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write([]byte(sig.T))
		m.Write([]byte{'.'})
		m.Write(body)
		want := m.Sum(nil)
		for _, got := range sig.V1 {
			if hmac.Equal(got, want) {
				matched = true
			}
		}
	}
	if !matched {
		return Event{}, fmt.Errorf("%w: Stripe-Signature", ErrBadSignature)
	}
	id, typ, ok := decodeObject(body)
	if !ok {
		return Event{}, ErrBodyNotJSON
	}
	if !printable(id, MaxEventIDBytes) {
		return Event{}, fmt.Errorf(`%w: the body's "id" is not a string of 1 to %d printable ASCII characters`, ErrNoEventID, MaxEventIDBytes)
	}
	return Event{ID: id, Type: eventType(typ), Timestamp: sig.Timestamp}, nil
}
