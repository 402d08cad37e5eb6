package inbound

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Scheme is how a source signs its webhooks; a source names one when it is
// added (docs/webhooks.md, "Receiving events: verification").
type Scheme string

// The known schemes.
const (
	// StandardWebhooks: headers webhook-id, webhook-timestamp and
	// webhook-signature, "v1,<base64 HMAC-SHA256>" over
	// "<id>.<timestamp>.<body>" (Standard Webhooks specification,
	// "Signature scheme").
	StandardWebhooks Scheme = "standard-webhooks"
	// Stripe: header Stripe-Signature "t=<unix>,v1=<hex>[,v1=<hex>]...",
	// HMAC-SHA256 over "<t>.<body>" (Stripe's webhook documentation,
	// "Verify signatures manually").
	Stripe Scheme = "stripe"
	// GitHub: header X-Hub-Signature-256 "sha256=<hex>", HMAC-SHA256 over
	// the body; no timestamp is signed (GitHub's "Validating webhook
	// deliveries").
	GitHub Scheme = "github"
)

// Schemes lists the known schemes in a fixed order.
var Schemes = []Scheme{StandardWebhooks, Stripe, GitHub}

// ParseScheme returns the Scheme named s, exactly as written (lower case),
// or ErrUnknownScheme naming the known ones.
func ParseScheme(s string) (Scheme, error) {
	for _, sc := range Schemes {
		if s == string(sc) {
			return sc, nil
		}
	}
	return "", fmt.Errorf("%w: want standard-webhooks, stripe or github", ErrUnknownScheme)
}

// Tolerance is how far a signed timestamp may be from the receiver's
// clock, either way, inclusive: 5 minutes, the default of the Standard
// Webhooks libraries and of Stripe's (which checks only the past; toolgate
// checks both ways, so a timestamp set ahead cannot stretch the window).
const Tolerance = 5 * time.Minute

// Bounds of what Verify accepts.
const (
	// MaxEventIDBytes bounds an event id: ids are keys of the receiver's
	// deduplication items, and providers' ids are far shorter (GitHub's a
	// 36-character GUID, Stripe's "evt_" ids, Standard Webhooks' "msg_").
	MaxEventIDBytes = 256
	// MaxEventTypeBytes bounds an event type; a longer one is left out of
	// the Event (Type "").
	MaxEventTypeBytes = 256
	// MaxSignatureHeaderBytes bounds a signature header: a longer one is
	// malformed. It leaves room for dozens of signatures.
	MaxSignatureHeaderBytes = 4096
)

// Event is what a verified webhook tells the receiver.
type Event struct {
	// ID is the provider's event id: the webhook-id header (Standard
	// Webhooks), the body's "id" (Stripe, read only after the signature
	// verifies), or X-GitHub-Delivery (GitHub, which does not sign it).
	// 1 to MaxEventIDBytes printable ASCII characters (0x21-0x7E).
	ID string
	// Type is the event type when the scheme gives one: the body's "type"
	// (Stripe; Standard Webhooks when the body is a JSON object holding a
	// string "type") or X-GitHub-Event (GitHub, unsigned). "" when there
	// is none, or it is not 1 to MaxEventTypeBytes printable ASCII
	// characters.
	Type string
	// Timestamp is the signed time, whole seconds, UTC; zero for GitHub.
	Timestamp time.Time
}

// Errors of Verify, wrapped with the header or rule at fault; test with
// errors.Is. No message quotes a body, a signature or a secret.
var (
	// ErrUnknownScheme: the scheme is none of Schemes.
	ErrUnknownScheme = errors.New("inbound: unknown scheme")
	// ErrNoSecret: no secret, or an unusable one (a configuration fault,
	// not the sender's).
	ErrNoSecret = errors.New("inbound: no usable secret")
	// ErrMissingHeader: a header the scheme requires is absent or empty.
	ErrMissingHeader = errors.New("inbound: missing header")
	// ErrMalformedHeader: a header is given twice or is not in the
	// scheme's form.
	ErrMalformedHeader = errors.New("inbound: malformed header")
	// ErrStaleTimestamp: the signed timestamp is more than Tolerance from
	// now, either way.
	ErrStaleTimestamp = errors.New("inbound: timestamp outside the tolerance")
	// ErrBadSignature: no signature matches any secret.
	ErrBadSignature = errors.New("inbound: no signature matches")
	// ErrNoEventID: the signature verified, but there is no usable event
	// id (see Event.ID).
	ErrNoEventID = errors.New("inbound: no event id")
	// ErrBodyNotJSON: the signature verified, but the scheme reads the
	// event id from the body (Stripe) and the body is not a JSON object.
	ErrBodyNotJSON = errors.New("inbound: body is not a JSON object")
)

// Verify checks one inbound webhook of scheme: header holds the request's
// headers (canonical keys, as net/http gives them), body the exact raw
// bytes received (decoded first when a Lambda event carries it in base64),
// now the receiver's clock. secrets are the source's secrets, any of which
// may sign (several while a secret is rotated): Standard Webhooks secrets
// in the "whsec_<base64>" form (24 to 64 bytes, its specification),
// Stripe's endpoint secret and GitHub's webhook secret used as their raw
// bytes, as those providers do.
//
// Signatures are compared in constant time (hmac.Equal). The timestamp of
// Standard Webhooks and Stripe must lie within Tolerance of now, either
// way. The body is parsed only after a signature verifies. Errors are the
// Err* values, wrapped.
func Verify(scheme Scheme, secrets []string, header http.Header, body []byte, now time.Time) (Event, error) {
	if len(secrets) == 0 {
		return Event{}, fmt.Errorf("%w: the source has no secret", ErrNoSecret)
	}
	switch scheme {
	case StandardWebhooks:
		return verifyStandard(secrets, header, body, now)
	case Stripe:
		return verifyStripe(secrets, header, body, now)
	case GitHub:
		return verifyGitHub(secrets, header, body)
	}
	return Event{}, fmt.Errorf("%w: want standard-webhooks, stripe or github", ErrUnknownScheme)
}

// single returns the one value of header name: ErrMissingHeader when it is
// absent or empty, ErrMalformedHeader when it is given more than once.
func single(header http.Header, name string) (string, error) {
	vs := header.Values(name)
	switch {
	case len(vs) == 0 || (len(vs) == 1 && vs[0] == ""):
		return "", fmt.Errorf("%w: %s", ErrMissingHeader, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %s given %d times", ErrMalformedHeader, name, len(vs))
	}
	return vs[0], nil
}

// printable reports whether s is 1 to max characters of 0x21-0x7E.
func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkTime refuses ts more than Tolerance from now, either way.
func checkTime(ts, now time.Time) error {
	switch {
	case now.Sub(ts) > Tolerance:
		return fmt.Errorf("%w: %s before now", ErrStaleTimestamp, now.Sub(ts).Truncate(time.Second))
	case ts.Sub(now) > Tolerance:
		return fmt.Errorf("%w: %s after now", ErrStaleTimestamp, ts.Sub(now).Truncate(time.Second))
	}
	return nil
}

// parseUnix parses whole unix seconds: 1 to 12 ASCII digits (up to year
// 33658), nothing else (no sign, space or fraction).
func parseUnix(s string) (time.Time, bool) {
	if s == "" || len(s) > 12 {
		return time.Time{}, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return time.Time{}, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return time.Unix(n, 0).UTC(), true
}

// bodyFields are the members Verify reads from a JSON body.
type bodyFields struct {
	ID   json.RawMessage `json:"id"`
	Type json.RawMessage `json:"type"`
}

// decodeObject reads "id" and "type" of a JSON object body; ok is false
// when body is not a JSON object. A member that is not a string reads as "".
func decodeObject(body []byte) (id, typ string, ok bool) {
	var f bodyFields
	if len(body) == 0 || firstNonSpace(body) != '{' || json.Unmarshal(body, &f) != nil {
		return "", "", false
	}
	return jsonString(f.ID), jsonString(f.Type), true
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// eventType keeps t when it is a usable event type.
func eventType(t string) string {
	if printable(t, MaxEventTypeBytes) {
		return t
	}
	return ""
}
