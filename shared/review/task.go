package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
)

// DecodeTask parses a review Task's payload strictly: every field present
// and not null, no other field, no field twice, and returns the review it
// asks for (its id derived from the task token).
func DecodeTask(data []byte) (*Review, error) {
	if len(data) > MaxInputBytes+64<<10 {
		return nil, fmt.Errorf("review request is %d bytes, too large", len(data))
	}
	var p tool.ReviewTask
	if err := decodeTask("review request", "the review Task's payload", data, &p); err != nil {
		return nil, err
	}
	if p.TaskToken == "" {
		return nil, errors.New("review request: task_token is empty")
	}
	return New(Params{
		ID: IDForToken(p.TaskToken), TaskToken: p.TaskToken, RunID: p.RunID, Step: p.Step, Of: p.Of, Tool: p.Tool,
		ToolsetID: p.ToolsetID, Input: p.Input, Reviewers: p.Reviewers, TimeoutSeconds: p.TimeoutSeconds, Requester: p.Requester,
		Traceparent: p.Traceparent, Kind: p.Kind, Ask: p.Ask, Editable: p.Editable, Notify: p.Notify,
	})
}

// decodeTask decodes a compiled Task's payload into v (a contract struct
// of shared/tool) strictly: valid UTF-8, members by their exact names,
// once each, every field present and not null (a tool.Nullable one, a
// run's traceparent, may be null), no other.
func decodeTask(what, payload string, data []byte, v any) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	seen, err := tool.DecodeObject(what, data)
	if err != nil {
		return err
	}
	for _, f := range tool.FieldNames(v) {
		m, ok := seen[f]
		if !ok && tool.Optional(v, f) {
			continue
		}
		if !ok {
			return fmt.Errorf("%s field %q is missing", what, f)
		}
		if string(bytes.TrimSpace(m)) == "null" && !tool.Nullable(v, f) {
			return fmt.Errorf("%s field %q must not be null", what, f)
		}
		delete(seen, f)
	}
	for k := range seen {
		return fmt.Errorf("%s field %q is not part of %s", what, excerpt.Bytes(k, 40, "..."), payload)
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// DecodeStart parses a start Task's payload strictly (as DecodeTask):
// every field of tool.StartCheck present, once, not null, and no other;
// start_time RFC 3339.
func DecodeStart(payload []byte) (*tool.StartCheck, time.Time, error) {
	var c tool.StartCheck
	if err := decodeTask("start check", "the start Task's payload", payload, &c); err != nil {
		return nil, time.Time{}, err
	}
	started, err := time.Parse(time.RFC3339Nano, c.StartTime)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start check: start_time %q is not RFC 3339", excerpt.Bytes(c.StartTime, 40, "..."))
	}
	return &c, started, nil
}

// executionARN is a Step Functions execution ARN:
// arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>
// (AWS Step Functions API reference, "executionArn"; names are 1 to 80
// characters without ":"). The name lengths are checked apart (nameMax)
// rather than counted in the pattern: RE2 unrolls a counted repetition, and
// compiling {1,80} twice cost a tool function's cold start about 0.18 MB
// (docs/performance.md, "Cold init of the tool functions").
var executionARN = regexp.MustCompile(`^arn:(aws[a-z-]*):states:([a-z0-9-]+):([0-9]{12}):execution:([^:/\s]+):([^:/\s]+)$`)

// nameMax is the longest state machine or execution name, in runes as the
// regexp counts them (an invalid UTF-8 byte is one rune): 80 (AWS Step
// Functions API reference, "name").
const nameMax = 80

// matchExecutionARN is executionARN's submatches when arn is an execution
// ARN whose state machine and execution names are at most nameMax runes,
// else nil.
func matchExecutionARN(arn string) []string {
	m := executionARN.FindStringSubmatch(arn)
	if m == nil || utf8.RuneCountInString(m[4]) > nameMax || utf8.RuneCountInString(m[5]) > nameMax {
		return nil
	}
	return m
}

// Execution is an execution ARN's parts
// (arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>).
type Execution struct {
	Partition, Region, Account, StateMachine, Name string
}

// ParseExecutionARN splits a Step Functions execution ARN into its parts
// (AWS Step Functions API reference, "executionArn"): ok is false for
// anything else, a state machine ARN or a version's included.
func ParseExecutionARN(arn string) (e Execution, ok bool) {
	m := matchExecutionARN(arn)
	if m == nil {
		return Execution{}, false
	}
	return Execution{Partition: m[1], Region: m[2], Account: m[3], StateMachine: m[4], Name: m[5]}, true
}

// inputDigest is tool.InputDigest's form: "sha256:" and 64 lower-case hex
// digits.
var inputDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// DecodeStartRequest parses a request of the start alias strictly (as
// DecodeTask): action StartAction, an execution ARN, an input digest of
// tool.InputDigest's form and a proof, each present once, and an end user,
// absent or an end-user id (shared/enduser CheckID; present but empty is
// refused); a fork's forked_from, absent or another execution's ARN, and
// rerun_reads, true only with forked_from; a fork names no end user.
func DecodeStartRequest(data []byte) (*StartRequest, error) {
	var r StartRequest
	if err := decodeTask("start request", "a start request", data, &r); err != nil {
		return nil, err
	}
	members, _ := tool.DecodeObject("start request", data) // decodeTask read it
	switch {
	case r.Action != StartAction:
		return nil, fmt.Errorf("start request: action %q is not %s: the start alias takes start requests only", excerpt.Bytes(r.Action, 40, "..."), StartAction)
	case matchExecutionARN(r.ExecutionARN) == nil:
		return nil, fmt.Errorf("start request: execution_arn %q is not an execution ARN", excerpt.Bytes(r.ExecutionARN, 200, "..."))
	case !inputDigest.MatchString(r.InputDigest):
		return nil, fmt.Errorf("start request: input_digest %q is not sha256:<64 hex digits>", excerpt.Bytes(r.InputDigest, 80, "..."))
	}
	if _, given := members["end_user"]; given {
		if err := enduser.CheckID(r.EndUser); err != nil {
			return nil, fmt.Errorf("start request: end_user: %v", err)
		}
	}
	_, forked := members["forked_from"]
	switch {
	case forked && matchExecutionARN(r.ForkedFrom) == nil:
		return nil, fmt.Errorf("start request: forked_from %q is not an execution ARN", excerpt.Bytes(r.ForkedFrom, 200, "..."))
	case forked && r.ForkedFrom == r.ExecutionARN:
		return nil, fmt.Errorf("start request: forked_from is the execution itself")
	case r.RerunReads && !forked:
		return nil, fmt.Errorf("start request: rerun_reads is true without forked_from: only a fork reruns its parent's reads")
	case forked && r.EndUser != "":
		return nil, fmt.Errorf("start request: end_user is set with forked_from: a fork acts for its parent's end user")
	}
	if _, given := members["origin"]; given {
		if r.Origin == nil {
			return nil, fmt.Errorf("start request: origin is null: give an object, or leave the member out")
		}
		if err := r.Origin.Check(); err != nil {
			return nil, fmt.Errorf("start request: %v", err)
		}
	}
	return &r, nil
}

// DecodeRunStartCheck parses a Starter Task's payload (tool.RunStartCheck)
// strictly and returns its execution ARN (ParseExecutionARN's, the
// Task's $$.Execution.Id), the digest of its whole execution input and its
// start time.
func DecodeRunStartCheck(data []byte) (arn, digest string, started time.Time, err error) {
	var c tool.RunStartCheck
	if err := decodeTask("start check", "the Starter Task's payload", data, &c); err != nil {
		return "", "", time.Time{}, err
	}
	if c.Check != tool.RunStartCheckName {
		return "", "", time.Time{}, fmt.Errorf("start check: check %q is not %s", excerpt.Bytes(c.Check, 40, "..."), tool.RunStartCheckName)
	}
	if _, ok := ParseExecutionARN(c.ExecutionARN); !ok {
		return "", "", time.Time{}, fmt.Errorf("start check: execution_arn %q is not an execution ARN", excerpt.Bytes(c.ExecutionARN, 200, "..."))
	}
	if started, err = time.Parse(time.RFC3339Nano, c.StartTime); err != nil {
		return "", "", time.Time{}, fmt.Errorf("start check: start_time %q is not RFC 3339", excerpt.Bytes(c.StartTime, 40, "..."))
	}
	if _, digest, err = tool.InputDigest(c.ExecutionInput); err != nil {
		return "", "", time.Time{}, fmt.Errorf("start check: execution_input: %v", err)
	}
	return c.ExecutionARN, digest, started, nil
}
