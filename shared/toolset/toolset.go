package toolset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/schema"
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
// checks that its id is the digest of its content: a document that does
// not decode is a *Refusal for RuleFormat, a wrong id one for RuleDigest.
// It does not check the tools against the catalog; Verify does.
func Parse(data []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ts Toolset
	if err := dec.Decode(&ts); err != nil {
		return nil, refuse(ts.ID, RuleFormat, "decode toolset: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, refuse(ts.ID, RuleFormat, "data after the toolset object")
	}
	if !IDPattern.MatchString(ts.ID) {
		return nil, refuse(ts.ID, RuleDigest, "the id does not match %s", IDPattern)
	}
	want, err := ts.ComputeID()
	if err != nil {
		return nil, refuse(ts.ID, RuleFormat, "%v", err)
	}
	if want != ts.ID {
		return nil, refuse(ts.ID, RuleDigest, "the content digests to %s, not to its id", want)
	}
	// What was decoded must be all the document says: Go's decoder matches
	// member names in any letter case and keeps the last of duplicates, so
	// a document could show one value and register another.
	shown, err := jcs.Transform(data)
	if err != nil {
		return nil, refuse(ts.ID, RuleFormat, "the document is not canonicalizable JSON (RFC 8785): %v", err)
	}
	decoded, err := json.Marshal(&ts)
	if err == nil {
		decoded, err = jcs.Transform(decoded)
	}
	if err != nil || !bytes.Equal(shown, decoded) {
		return nil, refuse(ts.ID, RuleFormat, "the document holds members that are not the toolset's fields, in their exact names, once each")
	}
	return &ts, nil
}

// ParseStored decodes a stored toolset item: id is the item's key, body
// its "body" attribute. The body must be exactly Canonical() of a toolset
// (no id member, in any letter case, no other form): otherwise a body
// naming another id, or written with other spacing or duplicate members,
// would load as content its key does not name. A failure is a *Refusal for
// RuleFormat naming id. The result still needs Verify (the digest and the
// catalog rules).
func ParseStored(id string, body []byte) (*Toolset, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var content struct {
		Tools      map[string]Tool `json:"tools"`
		FetchHosts []string        `json:"fetch_hosts"`
	}
	if err := dec.Decode(&content); err != nil {
		return nil, refuse(id, RuleFormat, "the stored body does not decode: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	ts := &Toolset{ID: id, Tools: content.Tools, FetchHosts: content.FetchHosts}
	canonical, err := ts.Canonical()
	if err != nil {
		return nil, refuse(id, RuleFormat, "%v", err)
	}
	if !bytes.Equal(canonical, body) {
		return nil, refuse(id, RuleFormat, "the stored body is not the toolset's RFC 8785 form")
	}
	return ts, nil
}

// Bounds of a pinned schema (toolgate's own, docs/ledger.md): the
// catalog's schemas are under 1 KiB, 7 levels deep, with no reference. A
// schema past them could make its compilation or every validation of an
// input take longer than the function's timeout (deep "not" chains, or
// "$ref"s that fan out through "allOf"), before any approval is checked.
const (
	MaxSchemaBytes = 64 << 10
	MaxSchemaDepth = 32
	MaxSchemaRefs  = 16
)

// checkSchemaSize refuses a schema document over MaxSchemaBytes, nested
// deeper than MaxSchemaDepth, or with more than MaxSchemaRefs reference
// keywords ($ref, $dynamicRef, $recursiveRef).
func checkSchemaSize(doc json.RawMessage) error {
	if len(doc) > MaxSchemaBytes {
		return fmt.Errorf("is %d bytes, over %d", len(doc), MaxSchemaBytes)
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("is not JSON: %v", err)
	}
	refs := 0
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		var children []any
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" {
					refs++
				}
				children = append(children, c)
			}
		case []any:
			children = v
		default:
			return nil
		}
		if depth > MaxSchemaDepth {
			return fmt.Errorf("is nested deeper than %d levels", MaxSchemaDepth)
		}
		if refs > MaxSchemaRefs {
			return fmt.Errorf("has more than %d references", MaxSchemaRefs)
		}
		for _, c := range children {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(v, 1)
}

// MaxReasonBytes bounds a Refusal's reason (and so the "toolset refused"
// log line and the caller's message): a reason quotes parts of the
// toolset, such as a schema's compile error, which an item may make as
// large as DynamoDB's 400 KB item limit; CloudWatch Logs takes events of
// at most 256 KiB, and a cut line would not match the alarm's JSON filter.
const MaxReasonBytes = 300

// refuse builds a Refusal with the id and the reason cut to size.
func refuse(id, rule, format string, a ...any) *Refusal {
	return &Refusal{ToolsetID: shorten(id), Rule: rule, Reason: cut(fmt.Sprintf(format, a...), MaxReasonBytes)}
}

// shorten keeps a malformed id short enough to name in a message.
func shorten(id string) string { return cut(id, 40) }

// cut returns s, or its first n bytes (whole UTF-8 sequences) and "...".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
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

// Rules a toolset can break, named in a Refusal and in the "toolset
// refused" log line (docs/ledger.md, "Toolsets are checked on every load").
const (
	// RuleFormat: the stored item or document is not a toolset (no body,
	// not JSON, unknown fields).
	RuleFormat = "toolset-format"
	// RuleDigest: the id is not "ts_" and the digest of the content.
	RuleDigest = "toolset-digest"
	// RuleReviewRequired: a tool the catalog gates is pinned without
	// review_required.
	RuleReviewRequired = "toolset-review-required"
	// RulePolicy: an at_most_once tool is pinned with another policy.
	RulePolicy = "toolset-policy"
	// RuleIdempotent: a tool that does not honour idempotency keys is pinned
	// as one that does.
	RuleIdempotent = "toolset-idempotent"
	// RuleSchema: a pinned input or output schema does not compile.
	RuleSchema = "toolset-schema"
	// RuleFetchHosts: fetch_hosts are not canonical host list entries
	// (package hostlist), sorted and unique.
	RuleFetchHosts = "toolset-fetch-hosts"
)

// RefusedLogMessage is the "msg" of the one JSON log line a function writes
// when it refuses a toolset it loaded (with "toolset_id" and "rule"); the
// infrastructure's toolset-refused alarm filters on it.
const RefusedLogMessage = "toolset refused"

// Refusal is a toolset that fails the registration check: which toolset,
// the rule it breaks (one of the Rule constants) and why. Its message
// names tools and rules only, never inputs.
type Refusal struct {
	ToolsetID string
	Rule      string
	Reason    string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("toolset %s is refused [%s]: %s", r.ToolsetID, r.Rule, r.Reason)
}

// Verify is the registration check, which every load of a stored toolset
// runs again before the toolset is used or cached: the id is the digest of
// the content (RuleDigest); no tool is weaker than catalog c admits it
// (CheckAgainst); every pinned schema compiles as JSON Schema 2020-12
// (RuleSchema), so that no schema fails only after a tool ran; and
// fetch_hosts are canonical host list entries (RuleFetchHosts). It
// returns nil or a *Refusal.
func (ts *Toolset) Verify(c *catalog.Catalog) error {
	refuse := func(rule, format string, a ...any) error { return refuse(ts.ID, rule, format, a...) }
	if !IDPattern.MatchString(ts.ID) {
		return refuse(RuleDigest, "the id does not match %s", IDPattern)
	}
	want, err := ts.ComputeID()
	if err != nil {
		return refuse(RuleDigest, "the content cannot be canonicalized: %v", err)
	}
	if want != ts.ID {
		return refuse(RuleDigest, "the content digests to %s, not to its id", want)
	}
	if err := ts.CheckAgainst(c); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		for _, s := range []struct {
			kind string
			doc  json.RawMessage
		}{{"input", t.InputSchema}, {"output", t.OutputSchema}} {
			if err := checkSchemaSize(s.doc); err != nil {
				return refuse(RuleSchema, "tool %s: the %s schema %v", name, s.kind, err)
			}
			if _, err := schema.Compile(s.doc); err != nil {
				return refuse(RuleSchema, "tool %s: the %s schema does not compile: %v", name, s.kind, err)
			}
		}
	}
	hosts, err := hostlist.ParseList(ts.FetchHosts)
	if err != nil {
		return refuse(RuleFetchHosts, "%v", err)
	}
	canonical := slices.Compact(slices.Sorted(slices.Values(hosts.Strings())))
	if !slices.Equal(canonical, ts.FetchHosts) {
		return refuse(RuleFetchHosts, "fetch_hosts are not in canonical form, sorted and unique")
	}
	return nil
}

// CheckAgainst refuses, with a *Refusal, a toolset that weakens catalog c's
// contract for a tool it admits: a tool the catalog gates must stay
// review_required (RuleReviewRequired), an at_most_once tool must stay
// at_most_once (RulePolicy), and a tool that does not honour idempotency
// keys cannot be pinned as one that does (RuleIdempotent). A Solution can
// add a review, never remove one (docs/solutions.md). Tools the catalog
// does not know are left alone: no function runs them (a function runs
// only its own catalog tool). Tools are checked in name order, so the
// same toolset is always refused for the same rule.
func (ts *Toolset) CheckAgainst(c *catalog.Catalog) error {
	refuse := func(rule, format string, a ...any) error { return refuse(ts.ID, rule, format, a...) }
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		want, ok := c.Lookup(name)
		if !ok {
			continue
		}
		switch {
		case want.ReviewRequired && !t.ReviewRequired:
			return refuse(RuleReviewRequired, "it pins %s without review_required, which the catalog requires", name)
		case want.Policy == catalog.AtMostOnce && t.Policy != catalog.AtMostOnce:
			return refuse(RulePolicy, "it pins %s as %s; the catalog says at_most_once", name, t.Policy)
		case !want.Idempotent && t.Idempotent:
			return refuse(RuleIdempotent, "it pins %s as idempotent; the catalog says it does not honour idempotency keys", name)
		}
	}
	return nil
}
