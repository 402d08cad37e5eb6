package inputrecord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/schema"
)

// Prefix starts the Comment of the Start state of every compiled
// definition; a compact JSON object, the Record, follows it:
//
//	toolgate:input:v1 {"input_limit_bytes":32768,"input_schema":{"type":"object",...}}
//
// The record lives in a Comment, which Step Functions never evaluates, so
// it never enters the state data. A later format gets a new version in the
// prefix, which Read refuses by name.
const Prefix = "toolgate:input:" + RecordVersion + " "

// RecordVersion is the version of the record format Prefix names.
const RecordVersion = "v1"

// MaxLimitBytes bounds policy.input_limit_bytes: 128 KiB, half of the
// 256 KiB (262 144 bytes) Step Functions allows for an execution's input
// and for the state data a state carries (AWS Step Functions quotas,
// "Maximum input or output size for a task, state, or execution"). The
// state data holds the input besides every step's results and the
// execution input the start proof besides it: the other half is theirs.
// A record outside 1..MaxLimitBytes is refused by Read.
const MaxLimitBytes = 128 << 10

// NumberBytes is the most characters Step Functions may write a number
// with once it has parsed it as a double (the shortest round-trip form,
// sign and exponent included). Size counts an input's numbers with it,
// and the resolver's state-size bound counts literal numbers with it
// (docs/solutions.md §7.2.1): both must agree.
const NumberBytes = 24

// Record is what a run's input must satisfy, as the resolver records it
// in the definition: the input's size bound and the Solution's input
// schema.
type Record struct {
	// LimitBytes is policy.input_limit_bytes: the input's size, in bytes of
	// compact JSON as toolgate run sends it (Size).
	LimitBytes int `json:"input_limit_bytes"`
	// Schema is the Solution's input JSON Schema, compact; absent when the
	// Solution has none.
	Schema json.RawMessage `json:"input_schema,omitempty"`
	// compiled is Schema compiled by Read, or why it does not compile: a
	// record Read returned holds its compiled schema itself, and lets it go
	// with the record (schema.Compile would keep it for the process's
	// life). nil for a record built otherwise, whose Check uses
	// schema.Compile.
	compiled *compiledSchema
}

type compiledSchema struct {
	s   *schema.Schema
	err error
}

// Comment encodes the record as the Start state's Comment: Prefix, then
// the record as compact JSON without HTML escaping.
func (r Record) Comment() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	return Prefix + strings.TrimSuffix(b.String(), "\n"), nil
}

// ErrNoRecord is Read's error (wrapped) for a definition whose Start
// state's Comment holds no input record: not compiled by toolgate, or by a
// toolgate before the record.
var ErrNoRecord = errors.New("the definition has no input record (its Start state's Comment)")

// VersionError is Read's error for a definition whose input record is of
// another version than Prefix's: written by a newer toolgate.
type VersionError struct {
	// Version is the record's version, as the Comment names it ("v2").
	Version string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("the definition's input record is of version %.20q, and this toolgate reads %q: use a newer toolgate", e.Version, RecordVersion)
}

// Read reads the Record of a definition, as DescribeStateMachine returns
// it. A definition without one is ErrNoRecord (wrapped), one with a record
// of another version a *VersionError, and one whose record does not decode
// strictly, or whose input_limit_bytes is outside 1..MaxLimitBytes,
// another error: such a state machine's input cannot be checked until it
// is published again. The record's schema is compiled here, once, and
// kept with the record for Check (a schema that does not compile is
// Check's error).
func Read(definition []byte) (*Record, error) {
	var def struct {
		StartAt string
		States  map[string]struct{ Comment string }
	}
	if err := json.Unmarshal(definition, &def); err != nil {
		return nil, fmt.Errorf("the definition is not JSON: %w", err)
	}
	c := def.States[def.StartAt].Comment
	if !strings.HasPrefix(c, Prefix) {
		if strings.HasPrefix(c, "toolgate:input:") {
			v, _, _ := strings.Cut(strings.TrimPrefix(c, "toolgate:input:"), " ")
			return nil, &VersionError{Version: v}
		}
		return nil, fmt.Errorf("%w: publish the Solution again with this toolgate", ErrNoRecord)
	}
	var r Record
	d := json.NewDecoder(strings.NewReader(strings.TrimPrefix(c, Prefix)))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("the definition's input record: %w", err)
	}
	if r.LimitBytes < 1 || r.LimitBytes > MaxLimitBytes {
		return nil, fmt.Errorf("the definition's input record: input_limit_bytes %d is outside 1..%d", r.LimitBytes, MaxLimitBytes)
	}
	if len(r.Schema) > 0 {
		s, err := schema.CompileUncached(r.Schema)
		r.compiled = &compiledSchema{s: s, err: err}
	}
	return &r, nil
}

// Size is the size of a run's input as toolgate run sends it and as the
// state data may hold it: compact JSON, as encoding/json writes it into
// the execution input ("<", ">" and "&" as \u003c, \u003e and \u0026), in
// bytes, with each number counted at the longest form Step Functions may
// write it back in once it has parsed it (numberGrowth), as the
// state-size bound counts literal numbers (docs/solutions.md §7.0). An
// input that is not one JSON value is an error.
func Size(input []byte) (int, error) {
	b, err := json.Marshal(json.RawMessage(input))
	if err != nil {
		return 0, fmt.Errorf("the input is not JSON: %w", err)
	}
	n := len(b)
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("the input is not JSON: %w", err)
		}
		if num, ok := tok.(json.Number); ok {
			n += numberGrowth(string(num))
		}
	}
}

// numberGrowth is how many bytes longer than text (a JSON number) Step
// Functions may write it after parsing it as a double: an integer of at
// most 15 digits (exact in a double) grows by at most 4 ("12345678901" as
// "1.2345678901E10", "7" as "7.0"); any other number is counted at
// NumberBytes, the longest shortest-round-trip form ("1e20" may come back
// as "100000000000000000000").
func numberGrowth(text string) int {
	digits := strings.TrimPrefix(text, "-")
	if len(digits) <= 15 && strings.Trim(digits, "0123456789") == "" {
		return 4
	}
	return max(0, NumberBytes-len(text))
}

// Check checks a run's input (JSON) against the record: its size first
// (Size, LimitBytes), then the schema. A refused input is an *Error; an
// input that is not JSON or a schema that does not compile is another
// error.
func (r *Record) Check(input []byte) error {
	if !utf8.Valid(input) {
		// The SDK would send each invalid byte as U+FFFD, three bytes: the
		// size measured here would not be the size Step Functions holds.
		return errors.New("the input is not valid UTF-8 (RFC 8259 §8.1): Step Functions would receive each invalid byte as U+FFFD")
	}
	n, err := Size(input)
	if err != nil {
		return err
	}
	if n > r.LimitBytes {
		return &Error{Size: n, Limit: r.LimitBytes}
	}
	if len(r.Schema) == 0 {
		return nil
	}
	var s *schema.Schema
	if r.compiled != nil {
		s, err = r.compiled.s, r.compiled.err
	} else {
		s, err = schema.Compile(r.Schema)
	}
	if err != nil {
		return fmt.Errorf("the recorded input schema: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(input))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("the input is not JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("the input is not JSON: more than one value")
	}
	if err := s.Validate(v); err != nil {
		return &Error{Problems: schema.Problems(err, nil)}
	}
	return nil
}

// maxProblems bounds the problems an Error lists.
const maxProblems = 20

// Error is a run input its Record refuses: over the size bound, or failing
// the input schema. Its text names sizes, JSON Pointers and schema
// keywords (schema.Problem.Redacted), never the input's values.
type Error struct {
	// Size and Limit are set when the input is over policy.input_limit_bytes:
	// its size and the bound, in bytes (Size).
	Size, Limit int
	// Problems are the input schema's, when the input fails it.
	Problems []schema.Problem
}

// Lines says what is wrong, one line each: the size, or one redacted
// problem per line (at most 20, then how many more).
func (e *Error) Lines() []string {
	if e.Limit > 0 {
		return []string{fmt.Sprintf("the input is %d bytes of compact JSON, over the Solution's policy.input_limit_bytes of %d", e.Size, e.Limit)}
	}
	return schema.RedactedLines(e.Problems, "input", maxProblems)
}

func (e *Error) Error() string {
	if e.Limit > 0 {
		return e.Lines()[0]
	}
	return "the input does not match the Solution's input schema: " + strings.Join(e.Lines(), "; ")
}
