package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// MaxEnvelopeSize bounds an envelope: Step Functions passes at most 256 KiB of
// state to a Task (AWS Step Functions quota), and a Lambda synchronous
// payload is at most 6 MB; anything larger is not from toolgate.
const MaxEnvelopeSize = 256 << 10

// Envelope is one call of a tool: what a compiled Step Functions Task (or
// `toolgate invoke`) sends to a tool function (docs/solutions.md, "The
// tool Task"); the dispatcher reads it with DecodeEnvelope.
type Envelope struct {
	// Tool is the tool's name in the run's toolset (ValidToolName): a
	// catalog or platform tool's, or an MCP tool's "<server>.<tool>".
	Tool      string `json:"tool"`
	ToolsetID string `json:"toolset_id"`
	// RunID is the Step Functions execution ARN, or on the direct lane
	// "direct/<verified caller>/<id>" (shared/lane).
	RunID string `json:"run_id"`
	// Seq is the call's place in its run: "1" for the first call, "4.17.2"
	// inside a for_each (Seq). A JSON number is read as a top-level seq.
	Seq  Seq    `json:"seq"`
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
	// CallerProof is the direct lane's caller proof (shared/caller), bound
	// to this call's idempotency key and input digest; absent on the sfn
	// lane. It is never logged or recorded.
	CallerProof string `json:"caller_proof,omitempty"`
	// TimeoutSeconds bounds the tool's work, in seconds (a tool step's
	// timeout_seconds, 1..MaxTimeoutSeconds): the dispatcher ends it at the
	// earlier of this and the function's deadline, with TOOL_TIMEOUT.
	// Absent or 0: the function's deadline alone.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// OutputLimitBytes bounds the result the call returns (and the ledger
	// keeps), in bytes (a tool step's output_limit_bytes, 1..MaxInlineLimit);
	// the deployment's inline limit caps it. Absent or 0: the inline limit.
	OutputLimitBytes int `json:"output_limit_bytes,omitempty"`
	// Function is a platform tool's Lambda function ARN (docs/toolsets.md):
	// the pinned function reference, its placeholder substituted at
	// publish, which toolgate's proxy for platform tools invokes. Absent
	// for the catalog's tools.
	Function string `json:"function,omitempty"`
	// Keep lists the result's fields the call returns (a tool step's keep,
	// at most MaxKeep paths, each a KeepPath); the others are dropped after
	// the whole result is validated. Absent: the whole result.
	Keep []string `json:"keep,omitempty"`
	// ParentRunID is, for a call of a child run (a Solution another
	// started with a workflow step), the parent execution's ARN, recorded
	// on the ledger row; empty or absent for every other run
	// (docs/solutions.md, "Workflow steps").
	ParentRunID string `json:"parent_run_id,omitempty"`
	// RunStartedAt is when the execution started, $$.Execution.StartTime
	// as Step Functions writes it (RFC 3339, UTC, with milliseconds:
	// "2026-01-02T03:04:05.678Z"); read it with RunStart. A redrive keeps
	// it (a redrive's own time is $$.Execution.RedriveTime). The
	// dispatcher refuses an idempotency record that an earlier execution
	// of the same name left (docs/ledger.md, "Execution names must not be
	// reused"). Absent in envelopes of definitions published before it
	// (no such check) and on the direct lane, which refuses it: a direct
	// call's run is no execution.
	RunStartedAt string `json:"run_started_at,omitempty"`
	// Trace is the W3C trace context the call continues (TraceContext):
	// the run's meta.traceparent on the sfn lane (null when the run was
	// given none), the caller's on the direct lane. A malformed value is
	// dropped, never refused; absent, null or dropped, the dispatcher
	// derives the run's trace from its run id (docs/tracing.md).
	Trace *TraceContext `json:"trace,omitempty"`
	// Start is the run's verified start, the Starter state's answer
	// ($.meta.start, which every Init state writes with nulls and the
	// Starter fills): who started the run and for which end user. The
	// dispatcher resolves run- and end-user-scope credentials by it
	// (docs/credentials.md). Absent in envelopes of definitions published
	// before it, and on the direct lane, which refuses it: a direct call
	// has no start record (docs/identity.md, "End users").
	Start *Start `json:"start,omitempty"`
	// ParkID names the park a resumed call continues after a person
	// approved it (shared/park; docs/parking.md): "park_id" holds a park
	// id (pk_ and 26 base32 characters) or null. A state machine whose
	// steps can park passes the member on every call of such a step, null
	// until a park was decided; envelopes of definitions published before
	// parking, and the direct lane, have none.
	ParkID *string `json:"park_id,omitempty"`
	// Parkable is whether the envelope has the park_id member at all, null
	// included: a state machine that parks the call's step sent it, so the
	// park Task records the park and its webhook event, and the dispatcher
	// records no event of its own (docs/parking.md, "The dispatcher").
	// DecodeEnvelope sets it; it is no member (MarshalJSON writes
	// "park_id": null for a Parkable envelope without a ParkID).
	Parkable bool `json:"-"`
}

// MarshalJSON writes e as its members: park_id is written, as null when
// ParkID is nil, whenever e is Parkable, so that an envelope decoded and
// encoded again (toolgate invoke) keeps the member.
func (e Envelope) MarshalJSON() ([]byte, error) {
	type plain Envelope
	if !e.Parkable || e.ParkID != nil {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		plain
		ParkID *string `json:"park_id"`
	}{plain: plain(e)})
}

// Start is an envelope's start member: the run's verified starter and its
// end-user scope, as review-request answered the run's Starter state
// (StartResult). It is decoded strictly: the members "starter" and
// "end_user", each once, and the optional "forked_from" and
// "rerun_reads" of a fork (docs/fork.md), each at most once.
type Start struct {
	// Starter is the verified principal ARN who started the run (at most
	// MaxStarterLength printable characters); null (read as "") in a run
	// of a Solution without the Starter state.
	Starter string `json:"starter"`
	// EndUser is the run's end-user scope, "end_user:" and 64 lower-case
	// hex digits (shared/enduser Scope: never the raw id), or null when the
	// run acts for no end user (none was asked for, or the mapping did not
	// let the starter act for it). Only a run with a starter has one.
	EndUser *string `json:"end_user"`
	// ForkedFrom is the parent run a fork's start record names: an
	// execution ARN (arn:<partition>:states:<region>:<account>:execution:
	// <state machine>:<name>, at most MaxStarterLength printable
	// characters), or "" (absent or null) in a run that is no fork. The
	// dispatcher matches the run's calls against the parent's by it, and
	// learns it only from here (docs/fork.md, "Forking a run"). Only a run
	// with a starter has one.
	ForkedFrom string `json:"forked_from,omitempty"`
	// RerunReads is the fork's --rerun-reads: its reads run again rather
	// than reuse the parent's results. false when absent or null.
	RerunReads bool `json:"rerun_reads,omitempty"`
}

// executionARN is an execution ARN's form (Step Functions' ARN format:
// arn:<partition>:states:<region>:<account>:execution:<state machine>:
// <name>), no ":" or white space in the last two parts.
var executionARN = regexp.MustCompile(`^arn:[a-z0-9-]+:states:[a-z0-9-]+:[0-9]{12}:execution:[^:\s]+:[^:\s]+$`)

// parkIDPattern is a park id's form (shared/park IDPattern, which this
// package cannot import: TestParkIDForm there keeps the two one).
var parkIDPattern = regexp.MustCompile(`^pk_[a-z2-7]{26}$`)

// MaxStarterLength bounds Start.Starter, in characters: IAM's longest
// ARN, 2048 (IAM quotas).
const MaxStarterLength = 2048

// endUserScope is an end-user scope's form (shared/enduser Scope, which
// this package cannot import: TestEndUserScopeForm there keeps the two
// one).
var endUserScope = regexp.MustCompile(`^end_user:[0-9a-f]{64}$`)

// UnmarshalJSON reads a start member strictly: a JSON object with the
// members "starter" (a string or null) and "end_user" (a string of an
// end-user scope's form, or null), each once, and optionally
// "forked_from" (an execution ARN or null) and "rerun_reads" (a boolean
// or null), each at most once; a member missing, repeated, of another
// name or type is refused, naming it, and so is a forked_from or a true
// rerun_reads without a starter.
func (s *Start) UnmarshalJSON(data []byte) error {
	members, err := DecodeObject("start", data)
	if err != nil {
		return err
	}
	*s = Start{}
	for _, name := range []string{"starter", "end_user"} {
		if _, ok := members[name]; !ok {
			return fmt.Errorf("start member %q is missing (write null when unset)", name)
		}
	}
	for name, raw := range members {
		var v *string
		switch name {
		case "starter", "end_user":
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("start member %q is not a string or null", name)
			}
		case "forked_from":
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("start member %q is not a string or null", name)
			}
			if v != nil {
				if *v == "" {
					return fmt.Errorf("start member \"forked_from\" is empty: write null when the run is no fork")
				}
				s.ForkedFrom = *v
			}
			continue
		case "rerun_reads":
			var b *bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return fmt.Errorf("start member %q is not a boolean or null", name)
			}
			s.RerunReads = b != nil && *b
			continue
		default:
			return fmt.Errorf("start member %s is not starter, end_user, forked_from or rerun_reads", strconv.Quote(excerpt.Bytes(name, maxQuotedBytes, "...")))
		}
		if name == "end_user" {
			s.EndUser = v
		} else if v != nil {
			s.Starter = *v
		}
	}
	switch {
	case s.Starter != "" && (len(s.Starter) > MaxStarterLength || !strings.HasPrefix(s.Starter, "arn:") || strings.ContainsFunc(s.Starter, unprintable) || strings.ContainsRune(s.Starter, ' ')):
		return fmt.Errorf("start member \"starter\" is not a principal ARN (arn:..., at most %d printable characters without spaces)", MaxStarterLength)
	case s.EndUser != nil && !endUserScope.MatchString(*s.EndUser):
		return fmt.Errorf("start member \"end_user\" is not an end-user scope (end_user: and 64 lower-case hex digits)")
	case s.EndUser != nil && s.Starter == "":
		return fmt.Errorf("start member \"end_user\" is set without a starter: only a run's Starter records an end user")
	case s.ForkedFrom != "" && (len(s.ForkedFrom) > MaxStarterLength || strings.ContainsFunc(s.ForkedFrom, unprintable) || !executionARN.MatchString(s.ForkedFrom)):
		return fmt.Errorf("start member \"forked_from\" is not an execution ARN (arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>, at most %d printable characters)", MaxStarterLength)
	case s.ForkedFrom != "" && s.Starter == "":
		return fmt.Errorf("start member \"forked_from\" is set without a starter: only a run's Starter records a fork")
	case s.RerunReads && s.ForkedFrom == "":
		return fmt.Errorf("start member \"rerun_reads\" is true without forked_from: only a fork reruns its parent's reads")
	}
	return nil
}

// MaxRunStartedAt bounds RunStartedAt's length: an RFC 3339 time with
// nanoseconds and a numeric offset is 35 characters.
const MaxRunStartedAt = 40

// RunStart is RunStartedAt as a time, and whether the envelope has one
// (DecodeEnvelope has checked that it parses).
func (e *Envelope) RunStart() (time.Time, bool) {
	if e.RunStartedAt == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, e.RunStartedAt)
	return t, err == nil
}

// MaxKeep bounds an envelope's keep list.
const MaxKeep = 64

// MaxTimeoutSeconds is the longest TimeoutSeconds: Lambda's longest
// function timeout, 900 seconds (AWS Lambda quotas); a longer bound could
// never be reached.
const MaxTimeoutSeconds = 900

// ToolsetIDPattern is the shape of a toolset id: "ts_" and 32 lower-case
// hex digits, the first 128 bits of the SHA-256 of the toolset's RFC 8785
// form (docs/toolsets.md). Every package that checks a toolset id uses it.
var ToolsetIDPattern = regexp.MustCompile(`^ts_[0-9a-f]{32}$`)

var (
	// NamePattern is a step id or a catalog or platform tool's name as an
	// envelope or a review Task carries it: lower-case letters, digits,
	// "-" and "_", at most 63 characters. The resolver's step ids
	// (resolver.StepIDPattern) and the catalog's tool names
	// (catalog.NamePattern) are each narrower.
	NamePattern = NewPattern(`^[a-z][a-z0-9_-]{0,62}$`, `^[a-z][a-z0-9_-]*$`, 63, nil)
	// An MCP tool's name is "<server>.<tool>", split at the first dot
	// (shared/toolset SplitMCPName): the server's key in the toolset and
	// the tool's name as its server defines it.

	// MCPServerPattern is an MCP server's key in a toolset: lower-case
	// letters, digits and "-", at most 31 characters, no ".", so that a
	// tool's name splits at its first dot.
	MCPServerPattern = NewPattern(`^[a-z][a-z0-9-]{0,30}$`, `^[a-z][a-z0-9-]*$`, 31, nil)
	// MCPToolNamePattern is an MCP tool's name as its server defines it:
	// 1 to 128 of A-Z, a-z, 0-9, "_", "-" and "." (MCP specification
	// 2025-11-25, "Tool names").
	MCPToolNamePattern = NewPattern(`^[A-Za-z0-9_.-]{1,128}$`, `^[A-Za-z0-9_.-]+$`, 128, nil)
)

// ValidToolName reports whether name is a tool name an envelope may
// carry: a catalog or platform tool's (lower-case letters, digits, "-"
// and "_", at most 63 characters), or an MCP tool's "<server>.<tool>"
// (at most 31 + 1 + 128 characters).
func ValidToolName(name string) bool {
	if NamePattern.MatchString(name) {
		return true
	}
	server, tool, ok := strings.Cut(name, ".")
	return ok && MCPServerPattern.MatchString(server) && MCPToolNamePattern.MatchString(tool)
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
	members, err := DecodeObject("envelope", data)
	if err != nil {
		return nil, Errorf(InputInvalid, "%s", err.Error())
	}
	// The members are the Envelope's fields by their JSON names (the
	// contract's only spelling of them): required unless omitempty; a
	// required raw JSON member must be an object (the tool's input), an
	// optional one that is null is absent (a missing approval).
	e := &Envelope{}
	v := reflect.ValueOf(e).Elem()
	matched := 0 // members that are envelope fields
	for _, ef := range envelopeFields() {
		i, name, required := ef.index, ef.name, ef.required
		raw, ok := members[name]
		if !ok {
			if required {
				return nil, Errorf(InputInvalid, "envelope field %q is missing", name)
			}
			continue
		}
		matched++
		null := string(bytes.TrimSpace(raw)) == "null"
		if required && null {
			return nil, Errorf(InputInvalid, "envelope field %q must not be null", name)
		}
		if ef.raw {
			if null {
				continue // an optional member that is null is absent
			}
			// A raw member is a JSON object whose names are unique: the
			// input's are checked by its digest (InputDigest refuses
			// duplicate names), the approval's here.
			if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
				return nil, Errorf(InputInvalid, "envelope field %q: must be a JSON object", name)
			}
			if !required {
				if _, err := DecodeObject("envelope field "+strconv.Quote(name), raw); err != nil {
					return nil, Errorf(InputInvalid, "%s", err.Error())
				}
			}
			v.Field(i).SetBytes(raw)
			continue
		}
		if err := json.Unmarshal(raw, v.Field(i).Addr().Interface()); err != nil {
			return nil, Errorf(InputInvalid, "envelope field %q: %s", name, typeProblem(err))
		}
	}
	if matched < len(members) {
		for k := range members {
			if !slices.ContainsFunc(envelopeFields(), func(ef envelopeField) bool { return ef.name == k }) {
				return nil, Errorf(InputInvalid, "envelope field %s is not part of the envelope", strconv.Quote(excerpt.Bytes(k, maxQuotedBytes, "...")))
			}
		}
	}
	_, e.Parkable = members[MemberParkID]
	if err := e.validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// envelopeField is one member of the envelope: the Envelope's field index,
// its JSON name, whether it is required (no omitempty), and whether it is
// raw JSON (json.RawMessage).
type envelopeField struct {
	index    int
	name     string
	required bool
	raw      bool
}

// envelopeFields are the Envelope's members by their JSON names, read
// from its struct tags once, on the first envelope decoded.
var envelopeFields = sync.OnceValue(func() []envelopeField {
	t := reflect.TypeFor[Envelope]()
	var out []envelopeField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue // no member (Parkable)
		}
		out = append(out, envelopeField{index: i, name: name, required: !strings.Contains(opts, "omitempty"),
			raw: f.Type == reflect.TypeFor[json.RawMessage]()})
	}
	return out
})

// DecodeObject reads exactly one JSON object and returns its members: the
// one strict object decoder of the contract, for the envelope and the
// review Task's payload. It refuses duplicate names (RFC 8259 §4: names
// SHOULD be unique; a reader that took the first of two "tool" members
// would see another call) and any data after the object. Errors name what
// (the document) and the member, cut to 64 bytes; numbers are kept as
// written (json.Number semantics for the caller's own decoding).
func DecodeObject(what string, data []byte) (map[string]json.RawMessage, error) {
	notObject := func() error { return fmt.Errorf("%s is not a JSON object", what) }
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject()
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			return nil, notObject()
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s field %s is not valid JSON", what, strconv.Quote(excerpt.Bytes(name, maxQuotedBytes, "...")))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s field %s appears twice", what, strconv.Quote(excerpt.Bytes(name, maxQuotedBytes, "...")))
		}
		out[name] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, notObject()
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

func (e *Envelope) validate() error {
	bad := func(field, format string, args ...any) error {
		return Errorf(InputInvalid, "envelope field %q: "+format, append([]any{field}, args...)...)
	}
	switch {
	case !ValidToolName(e.Tool):
		return bad("tool", "%s is not a tool name", strconv.Quote(excerpt.Bytes(e.Tool, maxQuotedBytes, "...")))
	case !ToolsetIDPattern.MatchString(e.ToolsetID):
		return bad("toolset_id", "%s is not a toolset id (ts_ and 32 hex digits)", strconv.Quote(excerpt.Bytes(e.ToolsetID, maxQuotedBytes, "...")))
	case e.RunID == "" || len(e.RunID) > 1024 || strings.ContainsFunc(e.RunID, unprintable):
		return bad("run_id", "must be 1 to 1024 printable characters")
	case e.Seq.Valid() != nil:
		return bad("seq", "%v", e.Seq.Valid())
	case !NamePattern.MatchString(e.Step):
		return bad("step", "%s is not a step id", strconv.Quote(excerpt.Bytes(e.Step, maxQuotedBytes, "...")))
	case e.IdempotencyKey != e.Seq.KeyIn(e.RunID):
		return bad("idempotency_key", "must be run_id/seq")
	case e.Attempt < 1:
		return bad("attempt", "must be at least 1, not %d", e.Attempt)
	case e.TimeoutSeconds < 0 || e.TimeoutSeconds > MaxTimeoutSeconds:
		return bad("timeout_seconds", "must be 1 to %d seconds, not %d", MaxTimeoutSeconds, e.TimeoutSeconds)
	case e.OutputLimitBytes < 0 || e.OutputLimitBytes > MaxInlineLimit:
		return bad("output_limit_bytes", "must be 1 to %d bytes, not %d", MaxInlineLimit, e.OutputLimitBytes)
	case e.ParentRunID != "" && (len(e.ParentRunID) > 1024 || !strings.HasPrefix(e.ParentRunID, "arn:") || strings.ContainsFunc(e.ParentRunID, unprintable)):
		return bad("parent_run_id", "must be empty or an execution ARN of at most 1024 printable characters")
	case e.RunStartedAt != "" && !validRunStart(e.RunStartedAt):
		return bad("run_started_at", "%s is not an RFC 3339 time ($$.Execution.StartTime)", strconv.Quote(excerpt.Bytes(e.RunStartedAt, maxQuotedBytes, "...")))
	case e.ParkID != nil && !parkIDPattern.MatchString(*e.ParkID):
		return bad("park_id", "%s is not a park id (pk_ and 26 lower-case base32 characters) or null", strconv.Quote(excerpt.Bytes(*e.ParkID, maxQuotedBytes, "...")))
	case len(e.Keep) > MaxKeep:
		return bad("keep", "lists %d fields, over %d", len(e.Keep), MaxKeep)
	}
	for _, k := range e.Keep {
		if _, err := KeepPath(k); err != nil {
			return bad("keep", "%v", err)
		}
	}
	return nil
}

// The envelope's member names, for code that builds an envelope as JSON
// members (the resolver's Task payloads, toolgate invoke). They are the
// Envelope struct's JSON names; TestEnvelopeMemberNames keeps the two one.
const (
	MemberTool               = "tool"
	MemberToolsetID          = "toolset_id"
	MemberRunID              = "run_id"
	MemberSeq                = "seq"
	MemberStep               = "step"
	MemberIdempotencyKey     = "idempotency_key"
	MemberAttempt            = "attempt"
	MemberTolerateDuplicates = "tolerate_duplicates"
	MemberInput              = "input"
	MemberApproval           = "approval"
	MemberCallerProof        = "caller_proof"
	MemberTimeoutSeconds     = "timeout_seconds"
	MemberOutputLimitBytes   = "output_limit_bytes"
	MemberFunction           = "function"
	MemberKeep               = "keep"
	MemberParentRunID        = "parent_run_id"
	MemberRunStartedAt       = "run_started_at"
	MemberTrace              = "trace"
	MemberStart              = "start"
	MemberParkID             = "park_id"
)

// runStartPattern is RFC 3339's date-time (section 5.6) with an upper-case
// T and Z, as Step Functions writes $$.Execution.StartTime: time.Parse
// alone also reads a one-digit hour, a decimal comma and offsets of 24
// hours or more.
var runStartPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$`)

// validRunStart reports whether s is a RunStartedAt: an RFC 3339 time
// (runStartPattern, with or without fractional seconds, read by
// time.RFC3339Nano) of at most MaxRunStartedAt characters.
func validRunStart(s string) bool {
	if len(s) > MaxRunStartedAt || !runStartPattern.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// unprintable reports a rune that is no printable character of an id: a
// control character, U+FFFD (which unpaired surrogate escapes decode to, so
// that two different escapes would name one run), a format character such
// as a bidirectional override, or a line or paragraph separator.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp)
}

// maxQuotedBytes bounds a member name or value an envelope error quotes,
// in bytes before its "...": enough to recognise it, and the message stays
// short (MaxMessageBytes bounds the whole).
const maxQuotedBytes = 64
