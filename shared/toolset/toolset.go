package toolset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/gowebpki/jcs"

	"github.com/toolgate/toolgate/shared/catalog"
)

// Tool is what a toolset pins of one tool: its contract at the time the
// toolset was built, and its effective review requirement.
type Tool struct {
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	// Idempotent: the tool honours the idempotency key.
	Idempotent bool           `json:"idempotent"`
	Policy     catalog.Policy `json:"policy"`
	// ReviewRequired is the catalog's value or the Solution's
	// policy.review_before; a Solution can add a tool, never remove one.
	ReviewRequired bool `json:"review_required"`
}

// Toolset is the pinned list of tools (by name) and the http tool's
// allowed hosts, in the canonical form of package hostlist.
type Toolset struct {
	ID         string          `json:"id"`
	Tools      map[string]Tool `json:"tools"`
	FetchHosts []string        `json:"fetch_hosts"`
}

// IDPattern is the shape of a toolset id.
var IDPattern = regexp.MustCompile(`^ts_[0-9a-f]{32}$`)

// FromCatalog pins the named catalog tools. reviewBefore names tools whose
// review is required in addition to the catalog's list. fetchHosts are
// copied, sorted and de-duplicated; they must already be canonical.
// The returned toolset carries its id.
func FromCatalog(c *catalog.Catalog, names, reviewBefore, fetchHosts []string) (*Toolset, error) {
	ts := &Toolset{Tools: make(map[string]Tool, len(names))}
	for _, name := range names {
		t, ok := c.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("tool %q is not in the catalog", name)
		}
		ts.Tools[name] = Tool{
			Description:    t.Description,
			InputSchema:    t.InputSchema,
			OutputSchema:   t.OutputSchema,
			Idempotent:     t.Idempotent,
			Policy:         t.Policy,
			ReviewRequired: t.ReviewRequired || slices.Contains(reviewBefore, name),
		}
	}
	ts.FetchHosts = slices.Compact(slices.Sorted(slices.Values(fetchHosts)))
	if ts.FetchHosts == nil {
		ts.FetchHosts = []string{}
	}
	id, err := ts.ComputeID()
	if err != nil {
		return nil, err
	}
	ts.ID = id
	return ts, nil
}

// Canonical returns the RFC 8785 form of the toolset without its id: the
// bytes the id is the digest of.
func (ts *Toolset) Canonical() ([]byte, error) {
	body := struct {
		Tools      map[string]Tool `json:"tools"`
		FetchHosts []string        `json:"fetch_hosts"`
	}{ts.Tools, ts.FetchHosts}
	if body.FetchHosts == nil {
		body.FetchHosts = []string{}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode toolset: %w", err)
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalize toolset: %w", err)
	}
	return out, nil
}

// ComputeID returns "ts_" and the first 32 hex digits of the SHA-256 of
// Canonical().
func (ts *Toolset) ComputeID() (string, error) {
	c, err := ts.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return "ts_" + hex.EncodeToString(sum[:16]), nil
}

// Parse decodes a toolset document strictly (unknown fields are errors) and
// checks that its id is the digest of its content.
func Parse(data []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ts Toolset
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("decode toolset: %w", err)
	}
	if !IDPattern.MatchString(ts.ID) {
		return nil, fmt.Errorf("toolset id %q does not match %s", ts.ID, IDPattern)
	}
	want, err := ts.ComputeID()
	if err != nil {
		return nil, err
	}
	if want != ts.ID {
		return nil, fmt.Errorf("toolset id %s is not the digest of its content (%s)", ts.ID, want)
	}
	return &ts, nil
}

// MarshalIndent returns the toolset as indented JSON with its id, as
// `toolgate compile` writes it.
func (ts *Toolset) MarshalIndent() ([]byte, error) {
	out, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode toolset: %w", err)
	}
	return append(out, '\n'), nil
}

// CheckAgainst refuses a toolset that weakens the catalog's contract for a
// tool it admits: a tool the catalog gates must stay review_required, an
// at_most_once tool must stay at_most_once, and a tool that does not honour
// idempotency keys cannot be pinned as one that does. A Solution can add a
// review, never remove one (the resolver issue); registration is where a
// hand-made toolset would otherwise remove it. Tools the catalog does not
// know are left alone: no function runs them.
func (ts *Toolset) CheckAgainst(c *catalog.Catalog) error {
	for name, t := range ts.Tools {
		want, ok := c.Lookup(name)
		if !ok {
			continue
		}
		switch {
		case want.ReviewRequired && !t.ReviewRequired:
			return fmt.Errorf("toolset %s pins %s without review_required, which the catalog requires", ts.ID, name)
		case want.Policy == catalog.AtMostOnce && t.Policy != catalog.AtMostOnce:
			return fmt.Errorf("toolset %s pins %s as %s; the catalog says at_most_once", ts.ID, name, t.Policy)
		case !want.Idempotent && t.Idempotent:
			return fmt.Errorf("toolset %s pins %s as idempotent; the catalog says it does not honour idempotency keys", ts.ID, name)
		}
	}
	return nil
}
