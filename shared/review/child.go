package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
)

// A child run is a Solution another run started with a workflow step
// (docs/solutions.md, "Workflow steps"). It carries no person's start
// proof: its parent records, before the start, who started the parent and
// the digest of the child's input for the child's execution ARN
// (ChildStart); the child's first state accepts that record instead of a
// proof when its own ARN and input match (ChildCheck).

// stateMachineARN is a Step Functions state machine ARN, with an optional
// version number: arn:<partition>:states:<region>:<account>:stateMachine:<name>[:<version>]
// (AWS Step Functions API reference, "StateMachineArn"; state machine
// names are 1 to 80 characters without ":"). The name's length is checked
// apart (nameMax, matchStateMachineARN): RE2 unrolls a counted repetition
// (docs/performance.md, "Cold init of the tool functions").
var stateMachineARN = regexp.MustCompile(`^arn:(aws[a-z-]*):states:([a-z0-9-]+):([0-9]{12}):stateMachine:([^:/\s]+)(?::([1-9][0-9]{0,9}))?$`)

// matchStateMachineARN is stateMachineARN's submatches when arn is a state
// machine ARN whose name is at most nameMax runes, else nil.
func matchStateMachineARN(arn string) []string {
	m := stateMachineARN.FindStringSubmatch(arn)
	if m == nil || utf8.RuneCountInString(m[4]) > nameMax {
		return nil
	}
	return m
}

// ChildExecutionARN is the ARN of the execution named name of the state
// machine (or state machine version) stateMachine: Step Functions names an
// execution by its state machine, never its version
// (arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>).
func ChildExecutionARN(stateMachine, name string) (string, error) {
	m := matchStateMachineARN(stateMachine)
	if m == nil {
		return "", fmt.Errorf("%q is not a state machine ARN", excerpt.Bytes(stateMachine, 200, "..."))
	}
	return fmt.Sprintf("arn:%s:states:%s:%s:execution:%s:%s", m[1], m[2], m[3], m[4], name), nil
}

// ChildRecord is what a parent records for a child execution, under the
// child's execution ARN.
type ChildRecord struct {
	// Starter is the parent's verified starter: the child's requester for
	// four eyes.
	Starter string
	// ParentRunID is the parent's execution ARN.
	ParentRunID string
	// InputDigest is tool.InputDigest of the child's whole execution input.
	InputDigest string
	// StateMachineARN is the child's published version ARN the parent
	// starts: a child execution of any other version (or of none, the
	// latest revision) does not take the record.
	StateMachineARN string
	// StartedAt is the $$.Execution.StartTime of the child execution that
	// took the record ("" before): Step Functions lets an execution name
	// be used again 90 days after the execution closed, and the record
	// serves one execution only.
	StartedAt string
	// EndUserScope is the parent's end-user scope (shared/enduser Scope),
	// "" for none: a child run acts for its parent's end user.
	EndUserScope string
	// Fork is, when the parent is itself a fork, the parent's parent's
	// child the child is forked from (ChildPointer) and the parent's
	// rerun_reads; zero otherwise (docs/fork.md, "Child runs"). Only
	// review-request's sfn lane chooses it, from the child pointers, never
	// from a payload.
	Fork ForkOrigin
}

// ChildPointer is a run's record of a child run one of its workflow
// steps started (table.ChildPointer): the step's id, the seq it started
// the child at (whose loop index path, tool.Seq LoopPath, places it), the
// child's execution ARN and the attempt that named it
// (tool.ChildAttemptName).
type ChildPointer struct {
	Step       string
	Seq        tool.Seq
	ChildRunID string
	Attempt    int
}

// NamesChildOf reports whether p's child execution ARN is named as the
// child parentRunID's workflow step started at p.Seq and p.Attempt
// (tool.ChildAttemptName, whose hash binds the parent run and the seq):
// a pointer naming any other execution is not the parent's child there.
func (p ChildPointer) NamesChildOf(parentRunID string) bool {
	exec, ok := ParseExecutionARN(p.ChildRunID)
	return ok && p.Attempt >= 0 && p.Attempt < tool.MaxChildAttempts && p.Seq.Valid() == nil &&
		exec.Name == tool.ChildAttemptName(parentRunID, p.Seq, p.Attempt)
}

// RunStartRecord is the start record toolgate run asked for before it
// started an execution (StartRequest).
type RunStartRecord struct {
	// Starter is the verified caller of the start request.
	Starter string
	// InputDigest is tool.InputDigest of the whole execution input.
	InputDigest string
	// Deadline is the latest $$.Execution.StartTime the record serves
	// (StartDeadline after it was written, whole seconds).
	Deadline time.Time
	// EndUserScope is the run's end-user scope (shared/enduser Scope), ""
	// for none.
	EndUserScope string
	// Fork is the parent run the start record names as forked from, and
	// the fork's --rerun-reads; zero for a run that is no fork
	// (docs/fork.md).
	Fork ForkOrigin
	// Origin is what started an inbound or scheduled run (StartOrigin);
	// nil for any other.
	Origin *StartOrigin
}

// RunStartEntry is what the start lane records for a run's start
// (dynamo.Store.RecordOrRefreshRunStart): the verified starter, the
// digest of the whole execution input, the end user (EndUserRecord;
// zero: none asked for), the fork (zero: none) and the origin (nil:
// none).
type RunStartEntry struct {
	Starter, InputDigest string
	EndUser              EndUserRecord
	Fork                 ForkOrigin
	Origin               *StartOrigin
}

// ForkOrigin is what a fork's start record holds of its parent: From,
// the parent's execution ARN ("" for a run that is no fork), and
// RerunReads (docs/fork.md, "Forking a run").
type ForkOrigin struct {
	From       string
	RerunReads bool
}

// ForkedFromAnswer is o as a start answer's forked_from: nil for a run
// that is no fork.
func (o ForkOrigin) ForkedFromAnswer() *string {
	if o.From == "" {
		return nil
	}
	from := o.From
	return &from
}

// StartRecord is any start record as a run's reviews and children read
// it: the verified starter and the run's end-user scope ("" for none).
type StartRecord struct {
	Starter, EndUserScope string
	// EndUser is the raw end-user id toolgate run recorded ("" for none,
	// and on a child's record): a fork of the run asks for it again
	// (docs/fork.md).
	EndUser string
	// Fork is the run's forked_from and rerun_reads: a fork's (the start
	// lane recorded them) or a fork's child's (its parent's workflow step
	// did); zero for a run that is no fork. A workflow step of the run
	// forks its children from the parent's children by it (docs/fork.md,
	// "Child runs").
	Fork ForkOrigin
}

// EndUserAnswer is scope as a start answer's end_user: nil for "".
func EndUserAnswer(scope string) *string {
	if scope == "" {
		return nil
	}
	return &scope
}

// ChildCheck is what a child run's start Task asks: its execution ARN,
// the digest of its whole input and its start time.
type ChildCheck struct {
	ExecutionARN, InputDigest, StartTime string
}

// childMeta reads the parts of a child's execution input a ChildStart
// checks: the child's run input (its input member, $.input of the child
// run, which the child's input record applies to) and its meta, which
// names the parent run and step that start it, and whether meta asks for
// the step's traceparent (fill: "traceparent": null, which the parent's
// start-record Task sends for review-request to fill; any other value is
// refused, since the parent never writes one). Members are read by their
// exact names, once each, as the child's Start and InitChild states read
// $.meta.parent_run_id (Go's decoder alone would match any letter case and
// keep the last of duplicates).
func childMeta(input json.RawMessage) (runInput json.RawMessage, parent string, seq tool.Seq, fill bool, err error) {
	top, err := tool.DecodeObject("input", input)
	if err != nil {
		return nil, "", "", false, err
	}
	if top["input"] == nil {
		return nil, "", "", false, fmt.Errorf("input field \"input\" is missing")
	}
	meta, err := tool.DecodeObject("input field \"meta\"", top["meta"])
	if err != nil {
		return nil, "", "", false, err
	}
	if err := json.Unmarshal(meta["parent_run_id"], &parent); err != nil {
		return nil, "", "", false, fmt.Errorf("meta field \"parent_run_id\" is not a string")
	}
	if err := json.Unmarshal(meta["parent_seq"], &seq); err != nil || seq.Valid() != nil {
		return nil, "", "", false, fmt.Errorf("meta field \"parent_seq\" is not a seq")
	}
	if tp, ok := meta["traceparent"]; ok {
		if string(bytes.TrimSpace(tp)) != "null" {
			return nil, "", "", false, fmt.Errorf("meta field \"traceparent\" is not null: review-request writes the step's traceparent there")
		}
		fill = true
	}
	return top["input"], parent, seq, fill, nil
}

// ChildRunInput is the child's run input in the execution input of a
// ChildStart that DecodeChildStart accepted: its input member, read by its
// exact name, which the child version's input record must accept
// (shared/inputrecord; docs/solutions.md, "Workflow steps").
func ChildRunInput(c *tool.ChildStart) (json.RawMessage, error) {
	in, _, _, _, err := childMeta(c.Input)
	return in, err
}

// DecodeChildStart parses a workflow step's start-record payload strictly
// (as DecodeTask) and checks it: the parent run id is an execution ARN,
// seq well-formed (tool.Seq), the state machine a published version's ARN
// (ChildExecutionARN, with a version), and the child's execution input
// holds its run input (ChildRunInput) and a meta naming this parent and
// seq. It returns the child's execution name and ARN and the record to
// write, without the starter.
//
// When the input's meta holds "traceparent": null (a parent compiled with
// trace context), the child's traceparent is the step's span
// (ChildTraceparent, under secret, the stage's external key): it is
// written into the input, whose digest is then recorded, and answered
// (tool.ChildStartResult.Traceparent), so that the start, which sends the
// answer as meta.traceparent, sends exactly the input recorded. The
// returned ChildStart's Input is that input.
func DecodeChildStart(payload, secret []byte) (*tool.ChildStart, tool.ChildStartResult, ChildRecord, error) {
	var c tool.ChildStart
	var res tool.ChildStartResult
	if err := decodeTask("child start", "the workflow step's start-record payload", payload, &c); err != nil {
		return nil, res, ChildRecord{}, err
	}
	switch {
	case !strings.HasPrefix(c.ParentRunID, "arn:") || len(c.ParentRunID) > 1024:
		return nil, res, ChildRecord{}, fmt.Errorf("child start: parent_run_id %q is not an execution ARN", excerpt.Bytes(c.ParentRunID, 80, "..."))
	case c.Seq.Valid() != nil:
		return nil, res, ChildRecord{}, fmt.Errorf("child start: %v", c.Seq.Valid())
	case c.Attempt < 0 || c.Attempt >= tool.MaxChildAttempts:
		return nil, res, ChildRecord{}, fmt.Errorf("child start: attempt %d is not 0 to %d", c.Attempt, tool.MaxChildAttempts-1)
	case c.Step != "" && !tool.NamePattern.MatchString(c.Step):
		return nil, res, ChildRecord{}, fmt.Errorf("child start: step %q is not a step id", excerpt.Bytes(c.Step, 80, "..."))
	}
	_, parent, seq, fill, err := childMeta(c.Input)
	if err != nil {
		return nil, res, ChildRecord{}, fmt.Errorf("child start: input is not the child's execution input {input, meta}: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if parent != c.ParentRunID || seq != c.Seq {
		return nil, res, ChildRecord{}, fmt.Errorf("child start: the input's meta names parent %q seq %q, not this step's", excerpt.Bytes(parent, 80, "..."), seq)
	}
	recorded := c.Input
	if fill {
		res.Traceparent = ChildTraceparent(secret, c.ParentRunID, c.Seq, c.Traceparent)
		if recorded, err = withChildTraceparent(c.Input, res.Traceparent); err != nil {
			return nil, res, ChildRecord{}, fmt.Errorf("child start: input: %v", err)
		}
	}
	_, digest, err := tool.InputDigest(recorded)
	if err != nil {
		return nil, res, ChildRecord{}, fmt.Errorf("child start: input: %v", err)
	}
	res.ExecutionName, res.Attempt = tool.ChildAttemptName(c.ParentRunID, c.Seq, c.Attempt), c.Attempt
	if res.ExecutionARN, err = ChildExecutionARN(c.StateMachineARN, res.ExecutionName); err != nil {
		return nil, res, ChildRecord{}, fmt.Errorf("child start: state_machine_arn: %v", err)
	}
	// A published version, never the unqualified ARN: its definition, whose
	// input record the input is checked against, never changes, and the
	// child's start accepts only an execution of the recorded version.
	if matchStateMachineARN(c.StateMachineARN)[5] == "" {
		return nil, res, ChildRecord{}, fmt.Errorf("child start: state_machine_arn %q is not a published version ARN (arn:...:stateMachine:<name>:<version>)", excerpt.Bytes(c.StateMachineARN, 200, "..."))
	}
	return &c, res, ChildRecord{ParentRunID: c.ParentRunID, InputDigest: digest, StateMachineARN: c.StateMachineARN}, nil
}

// DecodeChildCheck parses a child run's start payload strictly and returns
// its execution ARN (ParseExecutionARN's, the Task's $$.Execution.Id), the
// digest of its whole execution input and its start time (RFC 3339).
func DecodeChildCheck(payload []byte) (ChildCheck, error) {
	var c tool.ChildStartCheck
	if err := decodeTask("child start check", "the child's start Task payload", payload, &c); err != nil {
		return ChildCheck{}, err
	}
	if _, ok := ParseExecutionARN(c.ExecutionARN); !ok {
		return ChildCheck{}, fmt.Errorf("child start check: execution_arn %q is not an execution ARN", excerpt.Bytes(c.ExecutionARN, 200, "..."))
	}
	if _, err := time.Parse(time.RFC3339Nano, c.StartTime); err != nil {
		return ChildCheck{}, fmt.Errorf("child start check: start_time %q is not RFC 3339", excerpt.Bytes(c.StartTime, 40, "..."))
	}
	_, digest, err := tool.InputDigest(c.ExecutionInput)
	if err != nil {
		return ChildCheck{}, fmt.Errorf("child start check: execution_input: %v", err)
	}
	return ChildCheck{ExecutionARN: c.ExecutionARN, InputDigest: digest, StartTime: c.StartTime}, nil
}

// ErrChildTaken is returned by a store's TakeChildStart when another
// execution of the same ARN took the parent's record before, or when the
// parent released the record (ReleaseChildStart); and by
// ReleaseChildStart when an execution took it before.
var ErrChildTaken = errors.New("the child's start record was taken by another execution of that name")

// Executions reads what Step Functions knows of a run: the published
// version an execution was started with (VersionOf; "" when started by
// the unqualified state machine ARN), the definition of a published
// version (Definition), whose input record a child's input is checked
// against before its parent records the start, and the Solution and
// version the definition an execution runs names in its top-level Comment
// (SolutionVersionOf; "" and 0 for none), which a review.requested event
// names. A child run's start is accepted only for the version its parent
// recorded.
type Executions interface {
	VersionOf(ctx context.Context, executionARN string) (string, error)
	Definition(ctx context.Context, versionARN string) (string, error)
	SolutionVersionOf(ctx context.Context, executionARN string) (solution string, version int, err error)
}
