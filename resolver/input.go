package resolver

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

// InputRecordPrefix starts the Comment of the Start state of every compiled
// definition; a compact JSON object, the InputRecord, follows it:
//
//	toolgate:input:v1 {"input_limit_bytes":32768,"input_schema":{"type":"object",...}}
//
// The record lives in a Comment, which Step Functions never evaluates, so
// it never enters the state data; toolgate run reads it back with
// DescribeStateMachine (resolver/publish Start). A later format gets a new
// version in the prefix.
const InputRecordPrefix = "toolgate:input:v1 "

// MaxInputRecordBytes bounds the Start state's Comment, in bytes of UTF-8
// before the definition's own JSON escaping: 64 KiB, a sixteenth of the
// 1 MiB definition (MaxDefinitionBytes). Beyond it the Solution is refused
// with [quota]: the input schema, as compact JSON, takes nearly all of it,
// descriptions and examples included.
const MaxInputRecordBytes = 64 << 10

// InputRecord is what a run's input must satisfy, as the resolver records
// it in the definition: the input's size bound and the Solution's input
// schema. toolgate run checks an input against it before StartExecution;
// a bare StartExecution is not checked (docs/solutions.md, "The execution
// input").
type InputRecord struct {
	// LimitBytes is policy.input_limit_bytes: the input's size, in bytes of
	// compact JSON as toolgate run sends it (InputSize).
	LimitBytes int `json:"input_limit_bytes"`
	// Schema is the Solution's input JSON Schema, compact; absent when the
	// Solution has none.
	Schema json.RawMessage `json:"input_schema,omitempty"`
}

// comment encodes the record as the Start state's Comment.
func (r InputRecord) comment() (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	return InputRecordPrefix + strings.TrimSuffix(b.String(), "\n"), nil
}

// inputRecord is the record of a decoded Solution.
func inputRecord(sol *Solution) (InputRecord, error) {
	r := InputRecord{LimitBytes: sol.InputLimit}
	if sol.Input != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(sol.Input.plain()); err != nil {
			return r, err
		}
		r.Schema = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return r, nil
}

// ReadInputRecord reads the InputRecord of a definition, as
// DescribeStateMachine returns it. A definition without one (not compiled
// by toolgate, or by a toolgate before the record) or with a record of
// another version is an error: such a state machine is published again
// before toolgate run starts it.
func ReadInputRecord(definition []byte) (*InputRecord, error) {
	var def struct {
		StartAt string
		States  map[string]struct{ Comment string }
	}
	if err := json.Unmarshal(definition, &def); err != nil {
		return nil, fmt.Errorf("the definition is not JSON: %w", err)
	}
	c := def.States[def.StartAt].Comment
	if !strings.HasPrefix(c, InputRecordPrefix) {
		if strings.HasPrefix(c, "toolgate:input:") {
			v, _, _ := strings.Cut(strings.TrimPrefix(c, "toolgate:input:"), " ")
			return nil, fmt.Errorf("the definition's input record is of version %.20q, and this toolgate reads %q: use a newer toolgate", v, strings.TrimSpace(strings.TrimPrefix(InputRecordPrefix, "toolgate:input:")))
		}
		return nil, errors.New("the definition has no input record (its Start state's Comment): publish the Solution again with this toolgate")
	}
	var r InputRecord
	d := json.NewDecoder(strings.NewReader(strings.TrimPrefix(c, InputRecordPrefix)))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("the definition's input record: %w", err)
	}
	if r.LimitBytes < 1 || r.LimitBytes > MaxInputLimitBytes {
		return nil, fmt.Errorf("the definition's input record: input_limit_bytes %d is outside 1..%d", r.LimitBytes, MaxInputLimitBytes)
	}
	return &r, nil
}

// InputSize is the size of a run's input as toolgate run sends it and as
// the state data may hold it: compact JSON, as encoding/json writes it
// into the execution input ("<", ">" and "&" as \u003c, \u003e and
// \u0026), in bytes, with each number counted at the longest form Step
// Functions may write it back in once it has parsed it (numberGrowth), as
// the state-size bound counts literal numbers (docs/solutions.md §7.0).
// An input that is not one JSON value is an error.
func InputSize(input []byte) (int, error) {
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
// numberBytes, the longest shortest-round-trip form ("1e20" may come back
// as "100000000000000000000").
func numberGrowth(text string) int {
	digits := strings.TrimPrefix(text, "-")
	if len(digits) <= 15 && strings.Trim(digits, "0123456789") == "" {
		return 4
	}
	return max(0, numberBytes-len(text))
}

// Check checks a run's input (JSON) against the record: its size first
// (InputSize, LimitBytes), then the schema. A refused input is an
// *InputError; an input that is not JSON or a schema that does not compile
// is another error.
func (r *InputRecord) Check(input []byte) error {
	if !utf8.Valid(input) {
		// The SDK would send each invalid byte as U+FFFD, three bytes: the
		// size measured here would not be the size Step Functions holds.
		return errors.New("the input is not valid UTF-8 (RFC 8259 §8.1): Step Functions would receive each invalid byte as U+FFFD")
	}
	n, err := InputSize(input)
	if err != nil {
		return err
	}
	if n > r.LimitBytes {
		return &InputError{Size: n, Limit: r.LimitBytes}
	}
	if len(r.Schema) == 0 {
		return nil
	}
	s, err := schema.Compile(r.Schema)
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
		return &InputError{Problems: schema.Problems(err, nil)}
	}
	return nil
}

// maxInputProblems bounds the problems an InputError lists.
const maxInputProblems = 20

// InputError is a run input its InputRecord refuses: over the size bound,
// or failing the input schema. Its text names sizes, JSON Pointers and
// schema keywords (schema.Problem.Redacted), never the input's values.
type InputError struct {
	// Size and Limit are set when the input is over policy.input_limit_bytes:
	// its size and the bound, in bytes (InputSize).
	Size, Limit int
	// Problems are the input schema's, when the input fails it.
	Problems []schema.Problem
}

// Lines says what is wrong, one line each: the size, or one redacted
// problem per line (at most 20, then how many more).
func (e *InputError) Lines() []string {
	if e.Limit > 0 {
		return []string{fmt.Sprintf("the input is %d bytes of compact JSON, over the Solution's policy.input_limit_bytes of %d", e.Size, e.Limit)}
	}
	var out []string
	for i, p := range e.Problems {
		if i == maxInputProblems {
			out = append(out, fmt.Sprintf("and %d more", len(e.Problems)-maxInputProblems))
			break
		}
		out = append(out, "input"+p.Redacted())
	}
	return out
}

func (e *InputError) Error() string {
	if e.Limit > 0 {
		return e.Lines()[0]
	}
	return "the input does not match the Solution's input schema: " + strings.Join(e.Lines(), "; ")
}

// recordInput builds the Start state's Comment, refusing with [quota] a
// record over MaxInputRecordBytes, and with [input-schema] one holding a
// deployment placeholder.
func (c *checker) recordInput() {
	r, err := inputRecord(c.sol)
	if err == nil {
		c.inputComment, err = r.comment()
	}
	at := c.sol.InputLimitPos
	if c.sol.Input != nil {
		at = c.sol.Input.pos
	}
	if err != nil {
		c.ds.errorf(at, RuleInputSchema, "encode the input record: %v", err)
		return
	}
	// The record is written into the definition as it is: it may not hold
	// a deployment placeholder, which publishing would replace with an ARN,
	// and toolgate run would then check inputs against another schema.
	if m := placeholderPattern.FindString(c.inputComment); m != "" {
		c.ds.errorf(at, RuleInputSchema, "input holds %s, the syntax of a deployment placeholder, which publishing would replace; write it differently", m)
	}
	if n := len(c.inputComment); n > MaxInputRecordBytes {
		c.ds.errorf(at, RuleQuota, "the input schema takes %d bytes in the definition (its Start state's Comment, compact JSON); at most %d (64 KiB) fit: shorten it (descriptions and examples count too)", n, MaxInputRecordBytes)
	}
}
