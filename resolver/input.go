package resolver

import (
	"bytes"
	"encoding/json"

	"github.com/toolgate/toolgate/shared/inputrecord"
)

// The input record, what a run's input must satisfy, is written into the
// Start state's Comment and read back by toolgate run and review-request
// with shared/inputrecord; these names keep the resolver's API.

// InputRecordPrefix starts the Comment of the Start state of every compiled
// definition (inputrecord.Prefix); a compact JSON object, the InputRecord,
// follows it:
//
//	toolgate:input:v1 {"input_limit_bytes":32768,"input_schema":{"type":"object",...}}
const InputRecordPrefix = inputrecord.Prefix

// MaxInputRecordBytes bounds the Start state's Comment, in bytes of UTF-8
// before the definition's own JSON escaping: 64 KiB, a sixteenth of the
// 1 MiB definition (MaxDefinitionBytes). Beyond it the Solution is refused
// with [quota]: the input schema, as compact JSON, takes nearly all of it,
// descriptions and examples included.
const MaxInputRecordBytes = 64 << 10

// InputRecord is what a run's input must satisfy, as the resolver records
// it in the definition: the input's size bound and the Solution's input
// schema (inputrecord.Record). toolgate run checks an input against it
// before StartExecution, and review-request before a parent's workflow
// step starts a child run; a bare StartExecution is not checked
// (docs/solutions.md, "The execution input").
type InputRecord = inputrecord.Record

// InputError is a run input its InputRecord refuses (inputrecord.Error):
// its text names sizes, JSON Pointers and schema keywords, never the
// input's values.
type InputError = inputrecord.Error

// ReadInputRecord reads the InputRecord of a definition, as
// DescribeStateMachine returns it (inputrecord.Read). A definition without
// one (not compiled by toolgate, or by a toolgate before the record) or
// with a record of another version is an error: such a state machine is
// published again before toolgate run starts it.
func ReadInputRecord(definition []byte) (*InputRecord, error) { return inputrecord.Read(definition) }

// InputSize is the size of a run's input as toolgate run sends it and as
// the state data may hold it (inputrecord.Size): compact JSON, in bytes,
// with each number counted at the longest form Step Functions may write
// it back in, as the state-size bound counts literal numbers
// (numberBytes, docs/solutions.md §7.0). An input that is not one JSON
// value is an error.
func InputSize(input []byte) (int, error) { return inputrecord.Size(input) }

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

// recordInput builds the Start state's Comment, refusing with [quota] a
// record over MaxInputRecordBytes, and with [input-schema] one holding a
// deployment placeholder.
func (c *checker) recordInput() {
	r, err := inputRecord(c.sol)
	if err == nil {
		c.inputComment, err = r.Comment()
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
