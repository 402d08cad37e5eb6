package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEnvelopeSize bounds an envelope: Step Functions passes at most 256 KiB of
// state to a Task (AWS Step Functions quota), and a Lambda synchronous
// payload is at most 6 MB; anything larger is not from toolgate.
const MaxEnvelopeSize = 256 << 10

// Envelope is one call of a tool: what a compiled Step Functions Task (or
// `toolgate invoke`) sends to a tool function (docs/solutions.md, "The
// tool Task"); the dispatcher reads it with DecodeEnvelope.
type Envelope struct {
	Tool      string `json:"tool"`
	ToolsetID string `json:"toolset_id"`
	// RunID is the Step Functions execution ARN (or a generated id on the
	// direct lane).
	RunID string `json:"run_id"`
	// Seq is the per-run call counter, 1 for the first call.
	Seq  int64  `json:"seq"`
	Step string `json:"step"`
	// IdempotencyKey is "<run_id>/<seq>", the same on every attempt.
	IdempotencyKey string `json:"idempotency_key"`
	// Attempt is the caller's count (Step Functions RetryCount + 1): logged,
	// never trusted; the ledger counts attempts.
	Attempt int `json:"attempt"`
	// TolerateDuplicates is the author's consent to re-run a tool that does
	// not honour idempotency keys.
	TolerateDuplicates bool `json:"tolerate_duplicates"`
	// Input is the tool's input object, validated against the pinned schema.
	Input json.RawMessage `json:"input"`
	// Approval is the review decision, present for gated tools.
	Approval json.RawMessage `json:"approval,omitempty"`
}

var (
	toolsetIDPattern = regexp.MustCompile(`^ts_[0-9a-f]{32}$`)
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
)

type field struct {
	name     string
	required bool
	decode   func(e *Envelope, raw json.RawMessage) error
}

func str(dst func(*Envelope) *string) func(*Envelope, json.RawMessage) error {
	return func(e *Envelope, raw json.RawMessage) error { return json.Unmarshal(raw, dst(e)) }
}

var fields = []field{
	{"tool", true, str(func(e *Envelope) *string { return &e.Tool })},
	{"toolset_id", true, str(func(e *Envelope) *string { return &e.ToolsetID })},
	{"run_id", true, str(func(e *Envelope) *string { return &e.RunID })},
	{"seq", true, func(e *Envelope, raw json.RawMessage) error { return json.Unmarshal(raw, &e.Seq) }},
	{"step", true, str(func(e *Envelope) *string { return &e.Step })},
	{"idempotency_key", true, str(func(e *Envelope) *string { return &e.IdempotencyKey })},
	{"attempt", true, func(e *Envelope, raw json.RawMessage) error { return json.Unmarshal(raw, &e.Attempt) }},
	{"tolerate_duplicates", true, func(e *Envelope, raw json.RawMessage) error { return json.Unmarshal(raw, &e.TolerateDuplicates) }},
	{"input", true, func(e *Envelope, raw json.RawMessage) error {
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return fmt.Errorf("must be a JSON object")
		}
		e.Input = raw
		return nil
	}},
	{"approval", false, func(e *Envelope, raw json.RawMessage) error {
		if string(bytes.TrimSpace(raw)) != "null" {
			e.Approval = raw
		}
		return nil
	}},
}

// DecodeEnvelope parses an envelope strictly. Every failure is a *Error with
// code TOOL_INPUT_INVALID whose message names the field.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	if len(data) > MaxEnvelopeSize {
		return nil, Errorf(InputInvalid, "envelope is %d bytes, over the %d-byte limit", len(data), MaxEnvelopeSize)
	}
	if !utf8.Valid(data) {
		return nil, Errorf(InputInvalid, "envelope is not valid UTF-8")
	}
	raw, err := DecodeObject("envelope", data)
	if err != nil {
		return nil, Errorf(InputInvalid, "%s", err.Error())
	}
	known := map[string]bool{}
	e := &Envelope{}
	for _, f := range fields {
		known[f.name] = true
		v, ok := raw[f.name]
		if !ok {
			if f.required {
				return nil, Errorf(InputInvalid, "envelope field %q is missing", f.name)
			}
			continue
		}
		if f.required && string(bytes.TrimSpace(v)) == "null" {
			return nil, Errorf(InputInvalid, "envelope field %q must not be null", f.name)
		}
		if err := f.decode(e, v); err != nil {
			return nil, Errorf(InputInvalid, "envelope field %q: %s", f.name, typeProblem(err))
		}
	}
	for k := range raw {
		if !known[k] {
			return nil, Errorf(InputInvalid, "envelope field %s is not part of the envelope", strconv.Quote(truncate(k)))
		}
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// DecodeObject reads exactly one JSON object and returns its members: the
// one strict object decoder of the contract, for the envelope and the
// review Task's payload. It refuses duplicate names (RFC 8259 §4: names
// SHOULD be unique; a reader that took the first of two "tool" members
// would see another call) and any data after the object. Errors name what
// (the document) and the member, cut to 64 bytes; numbers are kept as
// written (json.Number semantics for the caller's own decoding).
func DecodeObject(what string, data []byte) (map[string]json.RawMessage, error) {
	notObject := fmt.Errorf("%s is not a JSON object", what)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			return nil, notObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s field %s is not valid JSON", what, strconv.Quote(truncate(name)))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s field %s appears twice", what, strconv.Quote(truncate(name)))
		}
		out[name] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, notObject
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("%s has data after its JSON object", what)
	}
	return out, nil
}

func typeProblem(err error) string {
	var ute *json.UnmarshalTypeError
	if ok := asType(err, &ute); ok {
		return fmt.Sprintf("got a JSON %s, want %s", ute.Value, ute.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func asType(err error, target **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = t
	}
	return ok
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (e *Envelope) validate() error {
	bad := func(field, format string, args ...any) error {
		return Errorf(InputInvalid, "envelope field %q: "+format, append([]any{field}, args...)...)
	}
	switch {
	case !namePattern.MatchString(e.Tool):
		return bad("tool", "%s is not a tool name", strconv.Quote(truncate(e.Tool)))
	case !toolsetIDPattern.MatchString(e.ToolsetID):
		return bad("toolset_id", "%s is not a toolset id (ts_ and 32 hex digits)", strconv.Quote(truncate(e.ToolsetID)))
	case e.RunID == "" || len(e.RunID) > 1024 || strings.ContainsFunc(e.RunID, unicode.IsControl):
		return bad("run_id", "must be 1 to 1024 printable characters")
	case e.Seq < 1:
		return bad("seq", "must be at least 1, not %d", e.Seq)
	case !namePattern.MatchString(e.Step):
		return bad("step", "%s is not a step id", strconv.Quote(truncate(e.Step)))
	case e.IdempotencyKey != fmt.Sprintf("%s/%d", e.RunID, e.Seq):
		return bad("idempotency_key", "must be run_id/seq")
	case e.Attempt < 1:
		return bad("attempt", "must be at least 1, not %d", e.Attempt)
	}
	return nil
}
