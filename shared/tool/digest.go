package tool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"strconv"

	"github.com/gowebpki/jcs"
)

// InputDigest returns the RFC 8785 (JSON Canonicalization Scheme) form of
// a tool's input and its digest, "sha256:" and the hex SHA-256 of that
// form: the one input digest of toolgate. The dispatcher records it on
// every call and compares it with the approval's; review-request records it
// on the review (shared/review); if the two ever drifted, approvals would
// fail silently. It refuses, as TOOL_INPUT_INVALID, input that is not
// JSON and a number that canonicalisation would change (RFC 8785 writes
// every number as an IEEE 754 double): two inputs differing only there
// would share a digest, and a reviewer would approve another value than
// the one sent. A refusal names where the number ends, never its value.
func InputDigest(input json.RawMessage) (canonical []byte, digest string, err error) {
	if err := exactNumbers(input); err != nil {
		return nil, "", err
	}
	canonical, err = jcs.Transform(input)
	if err != nil {
		return nil, "", Wrap(InputInvalid, err, "input is not valid JSON")
	}
	sum := sha256.Sum256(canonical)
	return canonical, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// exactNumbers refuses numbers that RFC 8785 canonicalisation would change
// (it writes every number as an IEEE 754 double): two inputs that differ
// only there would share a digest, and the tool would see another value
// than the one validated.
func exactNumbers(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return Wrap(InputInvalid, err, "input is not valid JSON")
		}
		n, ok := t.(json.Number)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		want, ok := new(big.Rat).SetString(n.String())
		if err != nil || !ok {
			return Errorf(InputInvalid, "the input number ending at byte %d is out of range: send it as a string", dec.InputOffset())
		}
		got, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
		if got.Cmp(want) != 0 {
			return Errorf(InputInvalid, "the input number ending at byte %d cannot be represented exactly as an IEEE 754 double (RFC 8785): send it as a string", dec.InputOffset())
		}
	}
}

// ChildNamePrefix starts the name of every child execution a workflow
// step starts (ChildExecutionName, ChildAttemptName), and of no other
// execution: review-request's start lane and toolgate run refuse an
// execution name with it (docs/identity.md, "Lanes"), so that a name a
// parent's step will use is never recorded for a run someone else starts.
const ChildNamePrefix = "tg-"

// ChildExecutionName names the child execution a parent run's workflow
// step starts: ChildNamePrefix and the hex SHA-256 of "<parent run id>/<seq>" (the full seq inside a for_each), 67
// characters. Step Functions allows 80, without ":" or "/" (AWS Step
// Functions StartExecution, "name"); a retried or redriven start of the
// same step names the same execution, which Step Functions starts at most
// once.
func ChildExecutionName(parentRunID string, seq Seq) string {
	sum := sha256.Sum256([]byte(parentRunID + "/" + string(seq)))
	return ChildNamePrefix + hex.EncodeToString(sum[:])
}

// MaxChildAttempts bounds the names a workflow step tries for one child:
// attempt 0 is ChildExecutionName, and each later attempt is taken only
// when an execution the parent did not start holds the name before it
// (docs/solutions.md, "Workflow steps").
const MaxChildAttempts = 3

// ChildAttemptName names attempt (0 to MaxChildAttempts-1) of a workflow
// step's child execution: ChildExecutionName for attempt 0, and with
// "-<attempt>" after it for later ones, at most 69 characters of Step
// Functions' 80.
func ChildAttemptName(parentRunID string, seq Seq, attempt int) string {
	name := ChildExecutionName(parentRunID, seq)
	if attempt == 0 {
		return name
	}
	return name + "-" + strconv.Itoa(attempt)
}
