package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// GitHub's webhook headers (GitHub's "Webhook events and payloads",
// "Delivery headers").
const (
	HeaderGitHubSignature = "X-Hub-Signature-256"
	HeaderGitHubDelivery  = "X-GitHub-Delivery"
	HeaderGitHubEvent     = "X-GitHub-Event"
)

// ParseGitHubSignature parses "sha256=<64 hex characters>" (GitHub's
// "Validating webhook deliveries"; hex of either case) into the 32-byte
// HMAC, or fails with ErrMalformedHeader.
func ParseGitHubSignature(v string) ([]byte, error) {
	h, ok := strings.CutPrefix(v, "sha256=")
	if !ok || len(h) != 2*sha256.Size {
		return nil, fmt.Errorf(`%w: X-Hub-Signature-256 is not "sha256=" and 64 hex characters`, ErrMalformedHeader)
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf(`%w: X-Hub-Signature-256 is not "sha256=" and 64 hex characters`, ErrMalformedHeader)
	}
	return b, nil
}

// verifyGitHub: HMAC-SHA256 of the body with the secret's bytes. GitHub
// signs neither a timestamp nor its delivery and event headers: the
// delivery id is read after the signature verifies, and receivers keep
// deduplication items as long as GitHub may redeliver (docs/webhooks.md).
func verifyGitHub(secrets []string, header http.Header, body []byte) (Event, error) {
	for i, s := range secrets {
		if s == "" {
			return Event{}, fmt.Errorf("%w: secret %d is empty", ErrNoSecret, i)
		}
	}
	v, err := single(header, HeaderGitHubSignature)
	if err != nil {
		return Event{}, err
	}
	got, err := ParseGitHubSignature(v)
	if err != nil {
		return Event{}, err
	}
	matched := false
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write(body)
		if hmac.Equal(got, m.Sum(nil)) {
			matched = true
		}
	}
	if !matched {
		return Event{}, fmt.Errorf("%w: X-Hub-Signature-256", ErrBadSignature)
	}
	id, err := single(header, HeaderGitHubDelivery)
	if err != nil || !printable(id, MaxEventIDBytes) {
		return Event{}, fmt.Errorf("%w: X-GitHub-Delivery absent, repeated or not 1 to %d printable ASCII characters", ErrNoEventID, MaxEventIDBytes)
	}
	typ := ""
	if vs := header.Values(HeaderGitHubEvent); len(vs) == 1 {
		typ = eventType(vs[0])
	}
	return Event{ID: id, Type: typ}, nil
}
