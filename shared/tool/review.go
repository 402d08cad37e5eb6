package tool

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// ReviewedCall is the call a review is about, as both ways of asking for
// one send it: a compiled review Task (ReviewTask) and a direct-lane
// request (shared/review LaneRequest), which embed it. Every field is
// required of a review Task.
type ReviewedCall struct {
	RunID          string          `json:"run_id"`
	Step           string          `json:"step"`
	Of             string          `json:"of"`
	Tool           string          `json:"tool"`
	ToolsetID      string          `json:"toolset_id"`
	Input          json.RawMessage `json:"input"`
	Reviewers      []string        `json:"reviewers"`
	TimeoutSeconds int             `json:"timeout_seconds"`
}

// ReviewTask is the payload a compiled review Task sends review-request
// with its task token (docs/solutions.md, "The review Task"): the reviewed
// call between its task token and its requester; review-request decodes it
// strictly (shared/review DecodeTask). Every field is required.
type ReviewTask struct {
	TaskToken string `json:"task_token"`
	ReviewedCall
	// Requester is the verified starter of the execution (StartResult),
	// who may not decide the review (four eyes, docs/reviews.md).
	Requester string `json:"requester"`
	// Traceparent is the run's $.meta.traceparent, null when the run has
	// none; absent from the payloads of state machines published before
	// it. review-request stores the review's place in the run's trace
	// from it (docs/reviews.md, "Trace context").
	Traceparent Traceparent `json:"traceparent,omitempty"`
	// Kind is what the review asks (docs/reviews.md, "Kinds of review"):
	// ReviewOfCall (the inputs of one tool call, which the approval
	// authorises) or ReviewShow (values shown to the reviewer; the
	// approval authorises no call, and Of and Tool are ""). Absent from
	// the payloads of state machines published before it: ReviewOfCall.
	Kind ReviewKind `json:"kind,omitempty"`
	// Ask is the JSON Schema (2020-12) of the answer the reviewer gives
	// with the decision (review.ask in the Solution), compact JSON with
	// bounded strings and arrays, at most MaxAskSchemaBytes; absent: the
	// review asks nothing. The answer is the decision JSON's Answer.
	Ask json.RawMessage `json:"ask,omitempty"`
	// Editable names the top-level members of Input the reviewer may
	// replace before approving (review.editable; ReviewOfCall only), at
	// most MaxEditable names; absent: none. The resolver never lets a
	// member that decides where the effect lands be editable.
	Editable []string `json:"editable,omitempty"`
	// Notify lists the addresses (RFC 5322 addr-specs) that receive the
	// platform's review notice when the review is requested
	// (review.notify), at most MaxNotify; review-request sends only to
	// those on the platform's notices allow-list. Absent: no notice.
	Notify []string `json:"notify,omitempty"`
}

// ReviewKind is a review Task's Kind.
type ReviewKind string

// The kinds of review.
const (
	// ReviewOfCall reviews the inputs of one tool call ("" in payloads
	// and items written before kinds existed).
	ReviewOfCall ReviewKind = "call"
	// ReviewShow shows values and routes on the decision; it authorises
	// no tool call.
	ReviewShow ReviewKind = "show"
)

// Bounds of a review's question, edits and notices (docs/reviews.md).
const (
	// MaxAskSchemaBytes bounds review.ask's schema as compact JSON.
	MaxAskSchemaBytes = 8 << 10
	// MaxAnswerBytes bounds an answer as compact JSON, whatever its
	// schema allows: the decision JSON carries it into the state data.
	MaxAnswerBytes = 64 << 10
	// MaxEditable bounds review.editable's names.
	MaxEditable = 32
	// MaxNotify bounds review.notify's addresses: SES takes at most 50
	// recipients per message (Amazon SES quotas).
	MaxNotify = 50
)

// RunStartCheck is the payload of a compiled Solution's Starter Task,
// which review-request (on the sfn lane) answers with a StartResult: the
// start record toolgate run wrote for this execution ARN before it started
// it (review.StartRequest), accepted when the digest of the execution's
// whole input is the recorded one and the execution started before the
// record's deadline (docs/identity.md, "Four eyes").
type RunStartCheck struct {
	// Check is RunStartCheckName: it tells the payload from a child run's
	// ChildStartCheck, which has the same other members.
	Check string `json:"check"`
	// ExecutionARN is $$.Execution.Id: the record is found by it only.
	ExecutionARN string `json:"execution_arn"`
	// ExecutionInput is $$.Execution.Input, whose digest
	// (tool.InputDigest) must be the recorded input_digest.
	ExecutionInput json.RawMessage `json:"execution_input"`
	// StartTime is $$.Execution.StartTime (RFC 3339): at most the
	// record's deadline.
	StartTime string `json:"start_time"`
}

// RunStartCheckName is a RunStartCheck's check: the action toolgate run's
// start record was written for (shared/caller ActionStart).
const RunStartCheckName = "run.start"

// StartCheck is the payload of the Starter Task of a state machine
// published before start records (RunStartCheck): review-request (on the
// sfn lane) answers it with a StartResult, the start proof from the
// execution input's meta, verified as bound to this execution and signed
// at most a minute before it started. It is kept so that executions in
// flight across the upgrade finish (CHANGELOG.md).
type StartCheck struct {
	StartProof   string `json:"start_proof"`
	ExecutionARN string `json:"execution_arn"`
	// StartTime is $$.Execution.StartTime (RFC 3339).
	StartTime string `json:"start_time"`
}

// StartResult is the start Task's result: who started the execution, and
// for which end user (docs/identity.md, "End users"). The Starter state
// keeps both members at $.meta.start, which every tool Task sends as its
// envelope's start (Start), so both are always written: EndUser null when
// the run acts for no end user.
type StartResult struct {
	Starter string `json:"starter"`
	// EndUser is the run's end-user scope (shared/enduser Scope), or null:
	// none was asked for, or the mapping did not let the starter act for
	// the one asked for (the start record says which).
	EndUser *string `json:"end_user"`
	// ForkedFrom is the parent run of a fork (its execution ARN: the start
	// record's forked_from), or null for a run that is no fork
	// (docs/fork.md, "Forking a run"). Start reads it as optional:
	// Starters before forks answer without it.
	ForkedFrom *string `json:"forked_from"`
	// RerunReads is the fork's --rerun-reads; false for a run that is no
	// fork.
	RerunReads bool `json:"rerun_reads"`
}

// ReviewRejected is the error review-decision reports with
// SendTaskFailure for a rejection; the compiled review Task's Catch
// matches it (and routes away from the tool).
const ReviewRejected = "REVIEW_REJECTED"

// ReviewUnavailable is the error the review functions report when
// DynamoDB or STS failed (shared/review's CodeUnavailable): the compiled
// start and review Tasks retry it, since repeating the request is safe.
const ReviewUnavailable = "REVIEW_UNAVAILABLE"

// FieldNames returns the JSON member names of a contract struct (Envelope,
// ReviewTask), in field order. The resolver checks the Task Parameters it
// builds against them, and the decoders read members by them; the
// Member constants mirror the Envelope's (TestEnvelopeMemberNames).
func FieldNames(v any) []string {
	var out []string
	for _, f := range jsonFields(reflect.TypeOf(v)) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// jsonFields lists the fields of struct type t (or of what t points to)
// that carry a JSON member name, in order, with the fields of an embedded
// struct in its place, as encoding/json promotes them.
func jsonFields(t reflect.Type) []reflect.StructField {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "" && (f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Pointer):
			out = append(out, jsonFields(f.Type)...)
		case name != "" && name != "-":
			out = append(out, f)
		}
	}
	return out
}

// Optional reports whether v's JSON member name may be absent from a
// payload: its field's json tag says omitempty. A payload a state machine
// published earlier sends lacks the members added since, which are
// optional so that it still decodes.
func Optional(v any, name string) bool {
	for _, f := range jsonFields(reflect.TypeOf(v)) {
		n, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == name {
			return slices.Contains(strings.Split(opts, ","), "omitempty")
		}
	}
	return false
}

// Verdict is what a reviewer decides: the decision JSON's "decision".
type Verdict string

// The two verdicts.
const (
	Approve Verdict = "approve"
	Reject  Verdict = "reject"
)

// ReviewDecision is a decided review's decision JSON: the review Task's
// output on approval (a gated tool step's envelope carries it as
// "approval", from $.reviews.<of>), SendTaskFailure's cause on rejection,
// and what the direct lane puts in its envelope. The dispatcher reads its
// review_id and checks the rest against the stored review.
type ReviewDecision struct {
	ReviewID string  `json:"review_id"`
	Decision Verdict `json:"decision"`
	// Approver is the caller's IAM principal ARN, or the name given with
	// --as on the local stack (Authenticated false).
	Approver      string `json:"approver"`
	Authenticated bool   `json:"authenticated"`
	// DecidedAt is RFC 3339, UTC, milliseconds.
	DecidedAt string `json:"decided_at"`
	Reason    string `json:"reason"`
	// InputDigest is the digest of the input the approval authorises:
	// the reviewed input, or, when the reviewer edited it, the edited
	// input (ReviewedDigest then holds the reviewed one's).
	InputDigest string `json:"input_digest"`
	// Answer is the reviewer's answer to the review's question (Ask), as
	// JSON; null when the review asks nothing or none was given. Always
	// written, so that a compiled Pass reading it finds the member.
	Answer json.RawMessage `json:"answer"`
	// Edited names the members the reviewer replaced (sorted), absent
	// when none; ReviewedDigest is then the digest of the input as it was
	// shown, and InputDigest that of the input with the edits merged.
	// The edits themselves stay in the review item, which the dispatcher
	// reads (docs/reviews.md, "Approve with edits").
	Edited         []string `json:"edited,omitempty"`
	ReviewedDigest string   `json:"reviewed_digest,omitempty"`
}

// ChildStart is the payload of a workflow step's start-record Task, which
// a parent run sends review-request (sfn lane) before it starts a child
// Solution (docs/solutions.md, "Workflow steps"). review-request names the
// child execution, and records the parent's verified starter and the
// digest of the child's input for it: the child's first state accepts that
// record instead of a start proof (ChildStartCheck).
type ChildStart struct {
	// ParentRunID is the parent's execution ARN ($$.Execution.Id).
	ParentRunID string `json:"parent_run_id"`
	// Step is the workflow step's id (NamePattern), a constant the
	// resolver writes into the Task: with Seq's loop index path it places
	// the child among its parent's children, which a fork of the parent
	// matches its own children against (docs/fork.md, "Child runs").
	// Absent ("") in the payloads of parents published before: such a
	// step's child records no child pointer, and no fork's child is
	// forked from it.
	Step string `json:"step,omitempty"`
	// Seq is the step's seq in the parent (a string, "4" or "4.17.2"
	// inside a for_each; a JSON number is read as a top-level seq): with
	// ParentRunID it names the child execution (ChildExecutionName).
	Seq Seq `json:"seq"`
	// StateMachineARN is the child's published version ARN, substituted at
	// publish.
	StateMachineARN string `json:"state_machine_arn"`
	// Input is the child execution's whole input, exactly as the start
	// Task sends it: {input, meta: {parent_run_id, parent_seq}, ...},
	// but for meta.traceparent, null here, which review-request fills
	// with the step's span before it records the digest (ChildStartResult
	// Traceparent; absent from parents published before).
	Input json.RawMessage `json:"input"`
	// Attempt is the attempt whose name is recorded (ChildAttemptName), 0
	// to MaxChildAttempts-1.
	// Absent (0) in the payloads of parents published before names were
	// attempted again.
	Attempt int `json:"attempt,omitempty"`
	// Conflict says the start under Attempt's name found the name in use
	// (ExecutionAlreadyExists): review-request answers Taken when this
	// step's child took the record for it, and otherwise releases that
	// record, so that no execution of the name can take it, and records
	// the next attempt.
	Conflict bool `json:"conflict,omitempty"`
	// Traceparent is the parent run's $.meta.traceparent, null when it
	// has none; absent from the payloads of parents published before it.
	// The step's span (shared/tracecontext ForCall of ParentRunID and Seq
	// under it) is the child's meta.traceparent (ChildStartResult).
	Traceparent Traceparent `json:"traceparent,omitempty"`
}

// ChildStartResult names the child execution a ChildStart recorded.
type ChildStartResult struct {
	// ExecutionName is ChildAttemptName(parent, seq, Attempt).
	ExecutionName string `json:"execution_name"`
	// ExecutionARN is the child's execution ARN (its state machine's, with
	// no version qualifier, and ExecutionName).
	ExecutionARN string `json:"execution_arn"`
	// Attempt is the attempt ExecutionName names.
	Attempt int `json:"attempt"`
	// Taken, in answer to a Conflict, says this step's child took the
	// record for ExecutionName: the execution of that name is the step's
	// child, to follow.
	Taken bool `json:"taken"`
	// Traceparent is the workflow step's span context, W3C traceparent
	// (shared/tracecontext Format of ForCall(...).Step): the child's
	// meta.traceparent, which review-request wrote into the input it
	// recorded when the Input's meta held "traceparent": null, and which
	// the start then sends. Absent otherwise (a parent published before).
	Traceparent string `json:"traceparent,omitempty"`
}

// ChildStartCheck is the payload of a child run's start Task: its own
// execution ARN and whole input ($$.Execution.Input), which review-request
// compares with the record its parent wrote (ChildStart) and answers with
// a StartResult, the parent's starter.
type ChildStartCheck struct {
	ExecutionARN   string          `json:"execution_arn"`
	ExecutionInput json.RawMessage `json:"execution_input"`
	// StartTime is $$.Execution.StartTime (RFC 3339): one execution, and
	// only one, takes a parent's record.
	StartTime string `json:"start_time"`
}
