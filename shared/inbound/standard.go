package inbound

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toolgate/toolgate/shared/webhook"
)

// Header names of the Standard Webhooks scheme (its specification,
// "Webhook headers").
const (
	HeaderWebhookID        = standardwebhooks.HeaderWebhookID
	HeaderWebhookTimestamp = standardwebhooks.HeaderWebhookTimestamp
	HeaderWebhookSignature = standardwebhooks.HeaderWebhookSignature
)

// ParseStandardSignature checks a webhook-signature value: space-separated
// entries "<version>,<signature>", each with exactly one comma and both
// parts non-empty, at most MaxSignatureHeaderBytes in all. It returns the
// signatures of version "v1" (entries of other versions are skipped, as
// the specification asks), or ErrMalformedHeader when the form is broken or
// no v1 entry is there.
func ParseStandardSignature(v string) ([]string, error) {
	if len(v) > MaxSignatureHeaderBytes {
		return nil, fmt.Errorf("%w: webhook-signature over %d bytes", ErrMalformedHeader, MaxSignatureHeaderBytes)
	}
	var v1 []string
	for _, e := range strings.Split(v, " ") {
		version, sig, ok := strings.Cut(e, ",")
		if !ok || version == "" || sig == "" || strings.Contains(sig, ",") {
			return nil, fmt.Errorf(`%w: webhook-signature entries must be "<version>,<signature>" separated by single spaces`, ErrMalformedHeader)
		}
		if version == "v1" {
			v1 = append(v1, sig)
		}
	}
	if len(v1) == 0 {
		return nil, fmt.Errorf("%w: webhook-signature has no v1 signature", ErrMalformedHeader)
	}
	return v1, nil
}

// verifyStandard follows the Standard Webhooks specification. The form of
// the headers (an id without a full stop, whole-second timestamp, v1
// entries) and the timestamp are checked here, with the injected clock;
// the signature is then matched by the specification's Go library
// (VerifyIgnoringTimestamp), once per secret: its Verify reads time.Now
// and takes one secret, so it cannot serve rotation or tests.
func verifyStandard(secrets []string, header http.Header, body []byte, now time.Time) (Event, error) {
	keys := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		k, err := webhook.ParseSecret(s)
		if err != nil {
			return Event{}, fmt.Errorf("%w: secret %d is not a whsec_ secret of 24 to 64 bytes", ErrNoSecret, i)
		}
		keys = append(keys, k)
	}
	id, err := single(header, HeaderWebhookID)
	if err != nil {
		return Event{}, err
	}
	tsv, err := single(header, HeaderWebhookTimestamp)
	if err != nil {
		return Event{}, err
	}
	sigv, err := single(header, HeaderWebhookSignature)
	if err != nil {
		return Event{}, err
	}
	if strings.Contains(id, ".") {
		// The signed content is "<id>.<timestamp>.<body>": an id holding a
		// full stop would let a signature over one body pass for a shorter
		// body under another id (the specification, "Signature scheme").
		return Event{}, fmt.Errorf("%w: webhook-id holds a full stop", ErrMalformedHeader)
	}
	ts, ok := parseUnix(tsv)
	if !ok {
		return Event{}, fmt.Errorf("%w: webhook-timestamp is not whole unix seconds", ErrMalformedHeader)
	}
	if _, err := ParseStandardSignature(sigv); err != nil {
		return Event{}, err
	}
	if err := checkTime(ts, now); err != nil {
		return Event{}, err
	}
	// The library reads the three headers itself: hand it exactly the
	// values checked above.
	h := http.Header{}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, tsv)
	h.Set(HeaderWebhookSignature, sigv)
	matched := false
	for _, k := range keys {
		wh, err := standardwebhooks.NewWebhookRaw(k)
		if err != nil {
			return Event{}, fmt.Errorf("%w: %w", ErrNoSecret, err)
		}
		err = wh.VerifyIgnoringTimestamp(body, h)
		if err == nil {
			matched = true
			break
		}
		if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			return Event{}, fmt.Errorf("%w: webhook-signature", ErrMalformedHeader)
		}
	}
	if !matched {
		return Event{}, fmt.Errorf("%w: webhook-signature", ErrBadSignature)
	}
	if !printable(id, MaxEventIDBytes) {
		return Event{}, fmt.Errorf("%w: webhook-id is not 1 to %d printable ASCII characters", ErrNoEventID, MaxEventIDBytes)
	}
	_, typ, _ := decodeObject(body)
	return Event{ID: id, Type: eventType(typ), Timestamp: ts}, nil
}
