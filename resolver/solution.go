package resolver

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The Solution grammar, as docs/solutions.md describes it for authors.

// StepKind is the kind of a step: exactly one of its kind keys.
type StepKind string

const (
	KindTool    StepKind = "tool"
	KindPass    StepKind = "pass"
	KindChoice  StepKind = "choice"
	KindReview  StepKind = "review"
	KindSucceed StepKind = "succeed"
	KindFail    StepKind = "fail"
	// KindWorkflow starts another published Solution and waits for its
	// output (docs/solutions.md, "Workflow steps").
	KindWorkflow StepKind = "workflow"
	// KindWait pauses the run for a number of seconds or until a time
	// (docs/solutions.md, "wait"): a Wait state.
	KindWait StepKind = "wait"
	// KindForEach runs a body of steps once per item of a list
	// (docs/solutions.md, "for_each"): an INLINE Map state.
	KindForEach StepKind = "for_each"
)

// completes reports whether a step of kind k leaves a result when it is
// left by its success edge (next): a tool, workflow, pass or for_each step.
func (k StepKind) completes() bool {
	return k == KindTool || k == KindPass || k == KindWorkflow || k == KindForEach
}

// EndTarget is the reserved target meaning "the run succeeds here".
const EndTarget = "end"

// StepIDPattern is the shape of a step id (docs/solutions.md, "Steps"):
// lower-case letters, digits and "_", at most 63 characters. A Solution's
// name is toolset.NamePattern's.
var StepIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Limits of the grammar, with their sources.
const (
	// DefaultReviewTimeout applies when a review names no timeout: one day.
	DefaultReviewTimeout = 86_400
	// MaxRunTimeout bounds policy.run_timeout_seconds and a derived run
	// timeout: a year, a Standard workflow's longest execution (AWS Step
	// Functions quota; tool.MaxReviewTimeout). Without the policy the run
	// timeout is derived from the Solution's longest path
	// (Result.RunTimeout; docs/solutions.md, "The run timeout").
	MaxRunTimeout = tool.MaxReviewTimeout
	// MaxToolTimeout is Lambda's maximum function timeout, 900 seconds
	// (AWS Lambda quota); a longer Task timeout could never be reached.
	MaxToolTimeout = 900
	// DefaultInputLimitBytes applies when policy.input_limit_bytes is not
	// written: 32 KiB of compact JSON.
	DefaultInputLimitBytes = 32 << 10
	// MaxInputLimitBytes bounds policy.input_limit_bytes: 128 KiB, half of
	// the 256 KiB (262 144 bytes) Step Functions allows for an execution's
	// input and for the state data a state carries (AWS Step Functions
	// quotas, "Maximum input or output size for a task, state, or
	// execution"). The state data holds the input besides every step's
	// results: the other half is theirs. The input record's reader
	// refuses a record outside it (inputrecord.MaxLimitBytes, the same
	// constant).
	MaxInputLimitBytes = inputrecord.MaxLimitBytes
	// MaxFailError and MaxFailCause bound a fail step's error and cause,
	// in characters: what Step Functions keeps of an execution's error
	// and cause (AWS Step Functions API, ExecutionFailedEventDetails:
	// error 0-256, cause 0-32768 characters).
	MaxFailError = 256
	MaxFailCause = 32768
	// MaxForEachItems bounds a for_each's max_items: every item's collected
	// values come back into the state data, which holds at most 256 KiB
	// (AWS Step Functions quota), and an INLINE Map's history counts
	// against an execution's 25 000 events; 100 items of a few calls each
	// stay well inside both. A longer list is a distributed Map's job.
	MaxForEachItems = 100
	// MaxForEachConcurrency bounds max_concurrency: Step Functions runs
	// at most 40 iterations of an INLINE Map at once (AWS Step Functions,
	// "Map state in inline mode"), whatever MaxConcurrency says.
	MaxForEachConcurrency = 40
)

// ForEachTooManyItems is the error a for_each fails with when its list
// holds more than max_items items: never truncated, and catchable by its
// on_error (docs/solutions.md, "for_each").
const ForEachTooManyItems = "FOR_EACH_TOO_MANY_ITEMS"

// ForEach is a for_each step's options and body as written.
type ForEach struct {
	// Items is the list to iterate: one binding (a string value).
	Items *value
	// As names the item in the body's bindings (${<as>...}); AsPos is
	// where it is written.
	As    string
	AsPos Pos
	// MaxItems bounds the list (1..MaxForEachItems): a longer one fails
	// the step with FOR_EACH_TOO_MANY_ITEMS. MaxConcurrency is how many
	// items run at once (1..MaxForEachConcurrency, default 1).
	MaxItems, MaxConcurrency int
	// Collect is what each iteration returns, a mapping of names to
	// values (nil: {}); ${steps.<id>.output} is the list of them.
	Collect *value
	// Body is the body's steps, in order; the first is its start. Each is
	// also in Solution.Steps, right after the for_each, with Loop set.
	Body []*Step
	// bodyValues are the body's steps as written, for Solution.add.
	bodyValues []*value
}

// Ref is a step id written somewhere in the Solution, with where it was
// written. The zero Ref is "not written".
type Ref struct {
	Name string
	Pos  Pos
	Set  bool
}

// Solution is a decoded Solution file.
type Solution struct {
	Name         string
	NamePos      Pos
	Version      int
	Description  string
	ReviewBefore []Ref // tool names
	FetchHosts   []Ref // host allow-list entries as written
	FetchPos     Pos   // where policy.fetch_hosts is, or policy, or the top
	// HTTPHosts are policy.http_hosts, the http tool's host entries, in
	// their pinned form and sorted by host (those refused left out);
	// HTTPPos is where policy.http_hosts is, or policy, or the top.
	HTTPHosts []HTTPHostEntry
	HTTPPos   Pos
	// RunTimeout bounds a whole execution, in seconds (the state
	// machine's TimeoutSeconds): policy.run_timeout_seconds when
	// RunTimeoutSet (written), else derived from the longest path when
	// the Solution is checked; 0 until then, when the policy's value is
	// refused, and when it cannot be derived. RunTimeoutPos is where the
	// policy is written, or the top.
	RunTimeout    int
	RunTimeoutSet bool
	RunTimeoutPos Pos
	// ParkTimeout bounds how long a parked call waits for a person's
	// decision, in seconds (policy.park_timeout_seconds, 1 ..
	// park.MaxTimeoutSeconds): the park Task's TimeoutSeconds
	// (docs/parking.md, "The compiled states"). ParkTimeoutSet: written;
	// unset, it is park.DefaultTimeoutSeconds, or an explicit
	// policy.run_timeout_seconds when that is shorter (checker.parkTimeout).
	// ParkTimeoutPos is where it is written, or the top.
	ParkTimeout    int
	ParkTimeoutSet bool
	ParkTimeoutPos Pos
	// InputLimit bounds a run's input, in bytes of compact JSON
	// (policy.input_limit_bytes; InputRecord).
	InputLimit    int
	InputLimitPos Pos
	Input         *value
	// Toolset is the registered toolset the Solution names by id
	// (toolset: ts_...); unset: a toolset is derived from the catalog.
	Toolset Ref
	// Output is the run's result, a value with bindings (output:); nil:
	// the result is {}.
	Output   *value
	Start    Ref
	Steps    []*Step
	StepsPos Pos
	// Dropped are the ids of steps left out for want of exactly one kind
	// key: the step graph is incomplete, so the checks that follow its
	// paths stay silent rather than report what the missing steps cause.
	Dropped []string
}

// Retry is a tool step's retry as written; zero fields take the catalog's
// default.
type Retry struct {
	MaxAttempts     int
	IntervalSeconds int
	BackoffRate     float64
	// Errors narrows the retried errors to these (nil: all the retryable
	// ones); ErrorsPos is where the list is written.
	Errors    []Ref
	ErrorsPos Pos
	Pos       Pos
}

// Catch is one entry of a step's on_error list: the errors it catches,
// by name, and where they go.
type Catch struct {
	Errors []Ref
	Next   Ref
	Pos    Pos
}

// ChoiceRule is one rule of a choice step: `when: {value, <operator>: operand}`.
type ChoiceRule struct {
	Value    *value // exactly one binding
	Operator string
	Operand  *value
	Next     Ref
	Pos      Pos
}

// Step is one step of any kind; the fields of the other kinds are zero.
type Step struct {
	ID   string
	Pos  Pos // of the id value
	Kind StepKind

	// tool
	Tool    string
	ToolPos Pos
	// workflow: the Solution it starts, and where that is written
	Workflow    string
	WorkflowPos Pos
	With        *value
	Retry       *Retry
	// TimeoutSeconds bounds the tool's work, in seconds (0: the function's
	// timeout alone); TimeoutPos is where it is written.
	TimeoutSeconds int
	TimeoutPos     Pos
	// OutputLimitBytes bounds the (kept) result, in bytes (0: not written,
	// tool.DefaultInlineLimit); Keep lists the result's fields the call
	// returns (nil: all). OutputPos is where either is written, or the tool.
	OutputLimitBytes int
	Keep             []string
	OutputPos        Pos
	// OnError is where a failure goes that no entry of Catches catches
	// (on_error as a step id, or the list's last entry without errors);
	// unset: the run fails with the step's error.
	OnError Ref
	// Catches are on_error's entries that name error codes, in order.
	Catches            []Catch
	TolerateDuplicates bool

	// tool, pass
	Next Ref
	Pass *value

	// choice
	Rules   []ChoiceRule
	Default Ref

	// review
	// Of is review.of: the tool step whose call the review approves;
	// unset for a review that shows values (Show).
	Of Ref
	// Show is review.show as written: the values a review that approves
	// no call shows its reviewer, a mapping compiled as a pass step's
	// values (docs/reviews.md, "Kinds of review"); nil for a review of a
	// call.
	Show *value
	// Ask is review.ask as written: the JSON Schema (2020-12) of the
	// answer the reviewer gives with an approval; nil: the review asks
	// nothing.
	Ask *value
	// Editable are review.editable's names: top-level members of the
	// reviewed tool's input the reviewer may replace before approving
	// (reviews of a call only); EditablePos is where the list is written.
	Editable    []Ref
	EditablePos Pos
	// Notify are review.notify's addresses (RFC 5322 addr-specs, as
	// written), told by e-mail that the review waits; NotifyPos is where
	// each is written.
	Notify    []string
	NotifyPos []Pos
	// OfUnusable: review.of is written, but names no tool step of the
	// Solution (not one id, no such step, or not a tool step).
	OfUnusable    bool
	ReviewTimeout int
	// ReviewTimeoutPos is where review.timeout_seconds is written, or the
	// review.
	ReviewTimeoutPos Pos
	Reviewers        []string
	// ReviewerPos is where each of Reviewers is written.
	ReviewerPos []Pos
	OnApprove   Ref
	OnReject    Ref
	// OnTimeout is where the review goes when its timeout passes without
	// a decision; unset: OnReject's target.
	OnTimeout Ref

	// fail
	Error, Cause string

	// wait
	Wait *Wait

	// for_each
	ForEach *ForEach
	// Loop is the for_each step whose body holds this step; nil for a
	// step at the top level.
	Loop *Step
}

// Wait is a wait step's length as written: literal seconds, or one
// binding to the seconds or to the time to wait until.
type Wait struct {
	// Seconds is the literal length, in seconds, when Bound is nil.
	Seconds int
	// Bound is the binding string of seconds or until; nil: literal.
	Bound *value
	// Until: Bound is the time to wait until (an RFC 3339 timestamp),
	// not a number of seconds.
	Until bool
	Pos   Pos // of the value
}

// decoder turns a value tree into a Solution, reporting every problem.
type decoder struct{ ds *diags }

// fields checks a mapping's keys against the allowed ones and reports
// missing required ones; it returns false when v is not a mapping.
func (d *decoder) mapping(v *value, what string, allowed []string, required ...string) bool {
	if v.kind != kMap {
		d.ds.errorf(v.pos, RuleInvalidValue, "%s must be a mapping, not a %s", what, v.kind)
		return false
	}
	for _, f := range v.fields {
		if !contains(allowed, f.key) {
			d.ds.errorf(f.keyPos, RuleUnknownField, "unknown field %q in %s (allowed: %s)%s", f.key, what, strings.Join(allowed, ", "), unknownFieldHint(what, f.key))
		}
	}
	for _, r := range required {
		if v.get(r) == nil {
			d.ds.errorf(v.pos, RuleMissingField, "%s has no %q", what, r)
		}
	}
	return true
}

// unknownFieldHint says where an unknown field written in the wrong place
// belongs, for the keys authors put there most (docs/solutions.md §2.2):
// a Solution's run timeout is policy.run_timeout_seconds, and a review's
// outcome keys are the step's, next to on_approve. "" for any other key.
func unknownFieldHint(what, key string) string {
	switch {
	case what == "the Solution" && key == "timeout_seconds":
		return "; the run's timeout is policy.run_timeout_seconds (policy: {run_timeout_seconds: N}); a tool step's own timeout is its timeout_seconds, a review's is review.timeout_seconds"
	case strings.HasSuffix(what, " review") && (key == "on_timeout" || key == "on_approve" || key == "on_reject"):
		return fmt.Sprintf("; %s is a key of the step, next to on_approve and on_reject, not of review: write it at the step's indentation", key)
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (d *decoder) str(f *field, what string) (string, bool) {
	if f.val.kind != kString {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be a string, not a %s", what, f.val.kind)
		return "", false
	}
	return f.val.str, true
}

// integer decodes a whole number within [lo, hi].
func (d *decoder) integer(f *field, what string, lo, hi int) (int, bool) {
	if f.val.kind != kNumber {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be a whole number, not a %s", what, f.val.kind)
		return 0, false
	}
	n, err := strconv.ParseInt(f.val.str, 10, 64)
	if err != nil {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be a whole number, not %s", what, f.val.str)
		return 0, false
	}
	if n < int64(lo) || n > int64(hi) {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s %d is outside %d..%d", what, n, lo, hi)
		return 0, false
	}
	return int(n), true
}

func (d *decoder) ref(f *field, what string) Ref {
	s, ok := d.str(f, what)
	if !ok {
		return Ref{}
	}
	return Ref{Name: s, Pos: f.val.pos, Set: true}
}

func (d *decoder) strings(f *field, what string) []Ref {
	if f.val.kind != kList {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s must be a list of strings, not a %s", what, f.val.kind)
		return nil
	}
	var out []Ref
	for _, it := range f.val.items {
		if it.kind != kString {
			d.ds.errorf(it.pos, RuleInvalidValue, "%s must hold strings, not a %s", what, it.kind)
			continue
		}
		out = append(out, Ref{Name: it.str, Pos: it.pos, Set: true})
	}
	return out
}

// decodeSolution decodes the top level.
func (d *decoder) decodeSolution(v *value) *Solution {
	s := &Solution{NamePos: v.pos, FetchPos: v.pos, HTTPPos: v.pos, StepsPos: v.pos, RunTimeoutPos: v.pos,
		InputLimit: DefaultInputLimitBytes, InputLimitPos: v.pos, ParkTimeout: park.DefaultTimeoutSeconds, ParkTimeoutPos: v.pos}
	if !d.grammar(v, "the Solution", GrammarSolution) {
		return nil
	}
	for _, f := range v.fields {
		switch f.key {
		case "solution":
			s.NamePos = f.val.pos
			if name, ok := d.str(&f, "solution"); ok {
				if !toolset.NamePattern.MatchString(name) {
					d.ds.errorf(f.val.pos, RuleInvalidValue, "solution name %q must match %s", name, toolset.NamePattern)
				}
				s.Name = name
			}
		case "version":
			s.Version, _ = d.integer(&f, "version", 1, math.MaxInt32)
		case "description":
			s.Description, _ = d.str(&f, "description")
		case "policy":
			s.FetchPos, s.HTTPPos = f.keyPos, f.keyPos
			if d.grammar(f.val, "policy", GrammarPolicy) {
				for _, pf := range f.val.fields {
					switch pf.key {
					case "input_limit_bytes":
						s.InputLimitPos = pf.val.pos
						if pf.val.kind == kNumber {
							if n, err := strconv.ParseInt(pf.val.str, 10, 64); err == nil && n > MaxInputLimitBytes {
								d.ds.errorf(pf.val.pos, RuleQuota, "policy.input_limit_bytes %d is over %d (128 KiB): Step Functions carries at most 262144 bytes (256 KiB) of execution input and of state data, and the state data holds every step's results besides the input", n, MaxInputLimitBytes)
								continue
							}
						}
						if n, ok := d.integer(&pf, "policy.input_limit_bytes", 1, MaxInputLimitBytes); ok {
							s.InputLimit = n
						}
					case "run_timeout_seconds":
						// Written, it is never derived, even when it is
						// refused here (RunTimeout then stays 0).
						s.RunTimeoutPos, s.RunTimeoutSet = pf.val.pos, true
						if n, ok := d.integer(&pf, "policy.run_timeout_seconds", 1, MaxRunTimeout); ok {
							s.RunTimeout = n
						}
					case "park_timeout_seconds":
						s.ParkTimeoutPos, s.ParkTimeoutSet = pf.val.pos, true
						if pf.val.kind == kNumber {
							if n, err := strconv.ParseInt(pf.val.str, 10, 64); err == nil && n > park.MaxTimeoutSeconds {
								d.ds.errorf(pf.val.pos, RuleQuota, "policy.park_timeout_seconds %d is over %d: a park Task waits on a task token, which lives at most a year, as a Standard execution does (AWS Step Functions quotas)", n, park.MaxTimeoutSeconds)
								continue
							}
						}
						if n, ok := d.integer(&pf, "policy.park_timeout_seconds", 1, park.MaxTimeoutSeconds); ok {
							s.ParkTimeout = n
						}
					case "review_before":
						s.ReviewBefore = d.strings(&pf, "policy.review_before")
					case "fetch_hosts":
						s.FetchPos = pf.keyPos
						s.FetchHosts = d.strings(&pf, "policy.fetch_hosts")
					case "http_hosts":
						s.HTTPPos = pf.keyPos
						s.HTTPHosts = d.httpHosts(&pf, "policy.http_hosts", false)
					}
				}
			}
		case "input":
			if f.val.kind != kMap && f.val.kind != kBool {
				d.ds.errorf(f.val.pos, RuleInputSchema, "input must be a JSON Schema (a mapping or a boolean), not a %s", f.val.kind)
			} else {
				s.Input = f.val
			}
		case "output":
			s.Output = f.val
		case "start":
			s.Start = d.ref(&f, "start")
		case "toolset":
			s.Toolset = d.ref(&f, "toolset")
		case "steps":
			s.StepsPos = f.keyPos
			if f.val.kind != kList || len(f.val.items) == 0 {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "steps must be a non-empty list of steps")
				break
			}
			for i, it := range f.val.items {
				st := d.decodeStep(it, i, nil)
				s.add(st, it)
				if st != nil && st.ForEach != nil {
					// A body's steps follow their for_each: the first step
					// of the Solution stays a top-level one.
					for k, bt := range st.ForEach.Body {
						s.add(bt, st.ForEach.bodyValues[k])
					}
					st.ForEach.Body = slices.DeleteFunc(st.ForEach.Body, func(b *Step) bool { return b == nil })
				}
			}
		}
	}
	return s
}

// add appends a decoded step, or records the id of one left out.
func (s *Solution) add(st *Step, v *value) {
	switch id := v.get("id"); {
	case st != nil:
		s.Steps = append(s.Steps, st)
	case v.kind == kMap && id != nil && id.val.kind == kString:
		s.Dropped = append(s.Dropped, id.val.str)
	default:
		s.Dropped = append(s.Dropped, "")
	}
}

// decodeStep decodes step index of the top level, or of loop's body.
func (d *decoder) decodeStep(v *value, index int, loop *Step) *Step {
	what := fmt.Sprintf("step %d", index+1)
	if loop != nil {
		what = fmt.Sprintf("step %d of for_each %q", index+1, loop.ID)
	}
	if v.kind != kMap {
		d.ds.errorf(v.pos, RuleInvalidValue, "%s must be a mapping, not a %s", what, v.kind)
		return nil
	}
	st := &Step{Pos: v.pos, Loop: loop}
	if f := v.get("id"); f != nil {
		st.Pos = f.val.pos
		if id, ok := d.str(f, what+" id"); ok {
			if !StepIDPattern.MatchString(id) {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "step id %q must match %s", id, StepIDPattern)
			} else if id == EndTarget {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "step id %q is reserved: it means the run succeeds", id)
			}
			st.ID = id
			what = fmt.Sprintf("step %q", id)
		}
	} else {
		d.ds.errorf(v.pos, RuleMissingField, "%s has no \"id\"", what)
	}
	var kinds []string
	for _, f := range v.fields {
		if contains(kindKeys, f.key) {
			kinds = append(kinds, f.key)
		}
	}
	if len(kinds) != 1 {
		d.kindless(v, what, kinds)
		return nil
	}
	st.Kind = StepKind(kinds[0])
	// The id is checked above, before the kind it is reported with.
	m := grammar[GrammarStep(st.Kind)]
	d.mapping(v, what, m.Keys, slices.DeleteFunc(slices.Clone(m.Required), func(k string) bool { return k == "id" })...)
	for _, f := range v.fields {
		switch f.key {
		case "next":
			st.Next = d.ref(&f, what+" next")
		case "on_error":
			if f.val.kind == kList {
				d.decodeCatches(st, f.val, what)
			} else if f.val.kind != kString {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s on_error must be a step id, or a list of {errors: [CODE, ...], next: STEP} entries with a last {next: STEP} for any other error, not a %s", what, f.val.kind)
			} else {
				st.OnError = d.ref(&f, what+" on_error")
			}
		case "on_approve":
			st.OnApprove = d.ref(&f, what+" on_approve")
		case "on_reject":
			st.OnReject = d.ref(&f, what+" on_reject")
		case "on_timeout":
			st.OnTimeout = d.ref(&f, what+" on_timeout")
		case "default":
			st.Default = d.ref(&f, what+" default")
		case "tool":
			st.ToolPos = f.val.pos
			st.Tool, _ = d.str(&f, what+" tool")
		case "workflow":
			st.WorkflowPos = f.val.pos
			if name, ok := d.str(&f, what+" workflow"); ok {
				if !toolset.NamePattern.MatchString(name) {
					d.ds.errorf(f.val.pos, RuleInvalidValue, "%s workflow %q is not a Solution name (%s)", what, excerpt.BytesWithin(name, maxQuotedBytes, "..."), toolset.NamePattern)
				}
				st.Workflow = name
			}
		case "with":
			if f.val.kind != kMap {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s with must be a mapping of the tool's or workflow's inputs, not a %s", what, f.val.kind)
			} else {
				st.With = f.val
			}
		case "retry":
			st.Retry = d.decodeRetry(f.val, what)
		case "timeout_seconds":
			if f.val.kind == kNumber {
				if n, err := strconv.ParseInt(f.val.str, 10, 64); err == nil && n > MaxToolTimeout {
					d.ds.errorf(f.val.pos, RuleQuota, "%s timeout_seconds %d is over %d, Lambda's maximum function timeout", what, n, MaxToolTimeout)
					continue
				}
			}
			st.TimeoutSeconds, _ = d.integer(&f, what+" timeout_seconds", 1, MaxToolTimeout)
			st.TimeoutPos = f.val.pos
		case "output_limit_bytes":
			st.OutputLimitBytes, _ = d.integer(&f, what+" output_limit_bytes", 1, tool.MaxInlineLimit)
			st.OutputPos = f.val.pos
		case "keep":
			st.Keep = d.keep(&f, what)
			st.OutputPos = f.val.pos
		case "tolerate_duplicates":
			if f.val.kind != kBool {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s tolerate_duplicates must be true or false", what)
			}
			st.TolerateDuplicates = f.val.b
		case "pass":
			if f.val.kind != kMap {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s pass must be a mapping (the values it writes), not a %s", what, f.val.kind)
			} else {
				st.Pass = f.val
			}
		case "choice":
			d.decodeChoice(st, f.val, what)
		case "review":
			d.decodeReview(st, f.val, what)
		case "succeed":
			if f.val.kind != kMap || len(f.val.fields) > 0 {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s succeed takes no options: write succeed: {}", what)
			}
		case "fail":
			d.decodeFail(st, f.val, what)
		case "wait":
			d.decodeWait(st, f.val, what)
		case "for_each":
			if loop != nil {
				d.ds.errorf(f.keyPos, RuleForEach, "%s is a for_each inside for_each %q: a for_each cannot be nested; start a workflow step per item instead, whose Solution has the inner for_each", what, loop.ID)
				return nil
			}
			d.decodeForEach(st, f.val, what)
		}
	}
	return st
}

// decodeForEach decodes for_each: {items, as, max_items, max_concurrency,
// collect, steps}. The body's steps are decoded with st as their loop.
func (d *decoder) decodeForEach(st *Step, v *value, what string) {
	fe := &ForEach{MaxConcurrency: 1}
	st.ForEach = fe
	if !d.grammar(v, what+" for_each", GrammarForEach) {
		return
	}
	for _, f := range v.fields {
		switch f.key {
		case "items":
			if f.val.kind != kString {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s for_each.items must be one binding to a list, such as \"${input.orders}\", not a %s", what, f.val.kind)
				continue
			}
			fe.Items = f.val
		case "as":
			fe.AsPos = f.val.pos
			if name, ok := d.str(&f, what+" for_each.as"); ok {
				switch {
				case !StepIDPattern.MatchString(name):
					d.ds.errorf(f.val.pos, RuleInvalidValue, "%s for_each.as %q must match %s", what, excerpt.BytesWithin(name, maxQuotedBytes, "..."), StepIDPattern)
				case slices.Contains(bindingRoots, name):
					d.ds.errorf(f.val.pos, RuleInvalidValue, "%s for_each.as %q is a binding root already (%s): name the item otherwise", what, name, strings.Join(bindingRoots, ", "))
				default:
					fe.As = name
				}
			}
		case "max_items":
			fe.MaxItems, _ = d.integer(&f, what+" for_each.max_items", 1, MaxForEachItems)
		case "max_concurrency":
			fe.MaxConcurrency, _ = d.integer(&f, what+" for_each.max_concurrency", 1, MaxForEachConcurrency)
		case "collect":
			if f.val.kind != kMap {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s for_each.collect must be a mapping of the values each item returns, not a %s", what, f.val.kind)
				continue
			}
			fe.Collect = f.val
		case "steps":
			if f.val.kind != kList || len(f.val.items) == 0 {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s for_each.steps must be a non-empty list of steps: the body run for each item", what)
				continue
			}
			for i, it := range f.val.items {
				fe.Body = append(fe.Body, d.decodeStep(it, i, st))
				fe.bodyValues = append(fe.bodyValues, it)
			}
		}
	}
}

// kindAliases names the kind a step key from another workflow language
// most likely means: a fixed table, so that a suggestion never depends on
// spelling distance.
var kindAliases = map[string]string{
	"map": "for_each", "loop": "for_each",
	"sleep": "wait", "delay": "wait",
	"if": "choice", "switch": "choice",
	"approval": "review",
}

// kindless reports a step without exactly one kind key. With none, it
// names the keys that belong to no step kind, each with the kind it most
// likely means (kindAliases), so that "map:" or "sleep:" is not reported
// as a step with no kind at all.
func (d *decoder) kindless(v *value, what string, kinds []string) {
	one := "a step has exactly one of " + strings.Join(kindKeys, ", ")
	if len(kinds) > 1 {
		d.ds.errorf(v.pos, RuleInvalidValue, "%s has %d kind keys (%s): %s", what, len(kinds), strings.Join(kinds, " and "), one)
		return
	}
	var unknown []field
	for _, f := range v.fields {
		if !isStepKey(f.key) {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) == 0 {
		d.ds.errorf(v.pos, RuleMissingField, "%s has no kind key: %s", what, one)
		return
	}
	for _, f := range unknown {
		alias, ok := kindAliases[f.key]
		switch {
		case ok && contains(kindKeys, alias):
			d.ds.errorf(f.keyPos, RuleUnknownField, "%s has no kind key: %q is not a step kind; did you mean %q? (%s)", what, f.key, alias, one)
		case ok:
			d.ds.errorf(f.keyPos, RuleUnknownField, "%s has no kind key: %q is not a step kind, and %s, the kind it would be, is not in this version of the grammar (%s)", what, f.key, alias, one)
		default:
			d.ds.errorf(f.keyPos, RuleUnknownField, "%s has no kind key: %q is neither a step kind nor a field of any step (%s)", what, excerpt.BytesWithin(f.key, maxQuotedBytes, "..."), one)
		}
	}
}

// isStepKey reports whether key is a field of some step kind.
func isStepKey(key string) bool {
	for _, keys := range stepKeys {
		if contains(keys, key) {
			return true
		}
	}
	return false
}

// keep decodes a tool step's keep: a non-empty list of at most
// tool.MaxKeep distinct field paths (tool.KeepPath).
func (d *decoder) keep(f *field, what string) []string {
	if f.val.kind != kList || len(f.val.items) == 0 || len(f.val.items) > tool.MaxKeep {
		d.ds.errorf(f.val.pos, RuleInvalidValue, "%s keep must be a list of 1 to %d field paths of the tool's result, such as [data.title, data.count]", what, tool.MaxKeep)
		return nil
	}
	var paths []string
	for _, it := range f.val.items {
		if it.kind != kString {
			d.ds.errorf(it.pos, RuleInvalidValue, "%s keep: each entry is a field path (a string), not a %s", what, it.kind)
			continue
		}
		if _, err := tool.KeepPath(it.str); err != nil {
			d.ds.errorf(it.pos, RuleInvalidValue, "%s keep: %v", what, err)
			continue
		}
		if slices.Contains(paths, it.str) {
			d.ds.errorf(it.pos, RuleInvalidValue, "%s keep lists %q twice", what, it.str)
			continue
		}
		paths = append(paths, it.str)
	}
	return paths
}

func (d *decoder) decodeRetry(v *value, what string) *Retry {
	r := &Retry{Pos: v.pos}
	if !d.grammar(v, what+" retry", GrammarRetry) {
		return nil
	}
	for _, f := range v.fields {
		switch f.key {
		case "errors":
			r.ErrorsPos = f.val.pos
			if r.Errors = d.strings(&f, what+" retry.errors"); len(r.Errors) == 0 && f.val.kind == kList {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s retry.errors is empty: list the errors to retry, or write max_attempts: 1", what)
			}
		case "max_attempts":
			if f.val.kind != kNumber {
				d.ds.errorf(f.val.pos, RuleRetry, "%s retry.max_attempts must be a whole number 1..%d", what, tool.MaxAttempts)
				continue
			}
			n, err := strconv.Atoi(f.val.str)
			if err != nil || n < 1 || n > tool.MaxAttempts {
				d.ds.errorf(f.val.pos, RuleRetry, "%s retry.max_attempts %s is outside 1..%d (it counts all attempts, the first included)", what, f.val.str, tool.MaxAttempts)
				continue
			}
			r.MaxAttempts = n
		case "interval_seconds":
			r.IntervalSeconds, _ = d.integer(&f, what+" retry.interval_seconds", 1, 99_999_999)
		case "backoff_rate":
			if f.val.kind != kNumber {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s retry.backoff_rate must be a number >= 1.0", what)
				continue
			}
			x, err := strconv.ParseFloat(f.val.str, 64)
			if err != nil || x < 1 || x > 1000 {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s retry.backoff_rate %s is outside 1.0..1000 (Step Functions' BackoffRate)", what, f.val.str)
				continue
			}
			r.BackoffRate = x
		}
	}
	return r
}

// decodeCatches decodes on_error as a list: entries {errors: [CODE, ...],
// next: STEP}, tried in order, and at most one last entry {next: STEP}
// without errors for any other error (Step Functions' Catchers, the last
// one States.ALL).
func (d *decoder) decodeCatches(st *Step, v *value, what string) {
	if len(v.items) == 0 {
		d.ds.errorf(v.pos, RuleInvalidValue, "%s on_error is an empty list: write a step id, or entries {errors: [CODE, ...], next: STEP}", what)
		return
	}
	for k, it := range v.items {
		ewhat := fmt.Sprintf("%s on_error entry %d", what, k+1)
		if !d.grammar(it, ewhat, GrammarCatch) {
			continue
		}
		c := Catch{Pos: it.pos}
		if f := it.get("next"); f != nil {
			c.Next = d.ref(f, ewhat+" next")
		}
		f := it.get("errors")
		if f == nil {
			if k != len(v.items)-1 {
				d.ds.errorf(it.pos, RuleInvalidValue, "%s names no errors, so it catches every error, and the entries after it could never be taken: the entry without errors comes last", ewhat)
				continue
			}
			st.OnError = c.Next
			continue
		}
		if f.val.kind == kList && len(f.val.items) == 0 {
			d.ds.errorf(f.val.pos, RuleInvalidValue, "%s errors is empty: name the error codes it catches, or leave errors out in the last entry for any other error", ewhat)
			continue
		}
		c.Errors = d.strings(f, ewhat+" errors")
		if c.Next.Set && len(c.Errors) > 0 {
			st.Catches = append(st.Catches, c)
		}
	}
}

func (d *decoder) decodeChoice(st *Step, v *value, what string) {
	if v.kind != kList || len(v.items) == 0 {
		d.ds.errorf(v.pos, RuleInvalidValue, "%s choice must be a non-empty list of rules", what)
		return
	}
	for i, it := range v.items {
		rwhat := fmt.Sprintf("%s rule %d", what, i+1)
		if !d.grammar(it, rwhat, GrammarChoiceRule) {
			continue
		}
		rule := ChoiceRule{Pos: it.pos}
		if f := it.get("next"); f != nil {
			rule.Next = d.ref(f, rwhat+" next")
		}
		f := it.get("when")
		if f == nil {
			continue
		}
		if !d.grammar(f.val, rwhat+" when", GrammarWhen) {
			continue
		}
		for _, wf := range f.val.fields {
			if wf.key == "value" {
				rule.Value = wf.val
				continue
			}
			if !contains(choiceOperators, wf.key) {
				continue
			}
			if rule.Operator != "" {
				d.ds.errorf(wf.keyPos, RuleInvalidValue, "%s has two operators (%s and %s): write one rule per comparison", rwhat, rule.Operator, wf.key)
				continue
			}
			rule.Operator, rule.Operand = wf.key, wf.val
		}
		if rule.Operator == "" {
			d.ds.errorf(f.val.pos, RuleMissingField, "%s names no operator (one of %s)", rwhat, strings.Join(choiceOperators, ", "))
			continue
		}
		if rule.Operator == "is_present" && rule.Operand.kind != kBool {
			d.ds.errorf(rule.Operand.pos, RuleInvalidValue, "%s is_present takes true or false", rwhat)
			continue
		}
		if rule.Value != nil {
			st.Rules = append(st.Rules, rule)
		}
	}
}

func (d *decoder) decodeReview(st *Step, v *value, what string) {
	st.ReviewTimeout = DefaultReviewTimeout
	st.ReviewTimeoutPos = v.pos
	if !d.grammar(v, what+" review", GrammarReview) {
		return
	}
	d.reviewKind(st, v, what)
	for _, f := range v.fields {
		switch f.key {
		case "show":
			d.decodeShow(st, &f, what)
		case "ask":
			d.decodeAsk(st, &f, what)
		case "editable":
			d.decodeEditable(st, &f, what)
		case "notify":
			d.decodeNotify(st, &f, what)
		case "of":
			if f.val.kind == kList {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s review.of must be one tool step id, not a list: a review approves the inputs of one call; write one review per tool step", what)
				st.OfUnusable = true
				continue
			}
			if st.Of = d.ref(&f, what+" review.of"); !st.Of.Set {
				st.OfUnusable = true
			}
		case "timeout_seconds":
			st.ReviewTimeoutPos = f.val.pos
			if f.val.kind == kNumber {
				if n, err := strconv.ParseInt(f.val.str, 10, 64); err == nil && (n < 1 || n > tool.MaxReviewTimeout) {
					d.ds.errorf(f.val.pos, RuleQuota, "%s review.timeout_seconds %d is outside 1..%d: a task token lives at most a year", what, n, tool.MaxReviewTimeout)
					continue
				}
			}
			st.ReviewTimeout, _ = d.integer(&f, what+" review.timeout_seconds", 1, tool.MaxReviewTimeout)
		case "reviewers":
			list := d.strings(&f, what+" review.reviewers")
			if len(list) > reviewer.MaxReviewers {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s has %d reviewers; a review takes at most %d", what, len(list), reviewer.MaxReviewers)
			}
			for _, r := range list {
				if !strings.HasPrefix(r.Name, "arn:") {
					d.ds.errorf(r.Pos, RuleInvalidValue, "%s reviewer %q must be an IAM principal ARN pattern (arn:aws:...; * and ? match)", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."))
					continue
				}
				if err := reviewer.CheckRecorded(r.Name); err != nil {
					d.ds.errorf(r.Pos, RuleInvalidValue, "%s: %v", what, err)
					continue
				}
				if err := reviewer.CheckPattern(r.Name); err != nil {
					var ae *reviewer.AccountError
					if errors.As(err, &ae) {
						d.ds.errorf(r.Pos, RuleReviewerPattern, "%s: %s", what, ae.Reason())
					} else {
						d.ds.errorf(r.Pos, RuleInvalidValue, "%s: %v", what, err)
					}
					continue
				}
				// A pattern is written into the definition as it is: it may
				// not hold a deployment placeholder, which publishing would
				// replace with an ARN (as in fail.cause).
				if m := placeholderPattern.FindString(r.Name); m != "" {
					d.ds.errorf(r.Pos, RuleBinding, "%s reviewer %q holds %s, the syntax of a deployment placeholder, which publishing would replace", what, excerpt.BytesWithin(r.Name, maxQuotedBytes, "..."), m)
					continue
				}
				st.Reviewers = append(st.Reviewers, r.Name)
				st.ReviewerPos = append(st.ReviewerPos, r.Pos)
			}
		}
	}
}

// decodeWait decodes wait: {seconds: N}, {seconds: "${...}"} or
// {until: "${...}"}. A literal is a whole number of seconds up to a year
// (a Standard workflow's longest execution; checkWaits compares it with
// the run's timeout); a binding is checked when values are compiled.
func (d *decoder) decodeWait(st *Step, v *value, what string) {
	if !d.grammar(v, what+" wait", GrammarWait) {
		return
	}
	sec, until := v.get("seconds"), v.get("until")
	switch {
	case sec == nil && until == nil:
		d.ds.errorf(v.pos, RuleMissingField, "%s wait needs seconds (a whole number or one binding) or until (one binding to an RFC 3339 time)", what)
	case sec != nil && until != nil:
		d.ds.errorf(until.keyPos, RuleInvalidValue, "%s wait takes seconds or until, not both", what)
	case until != nil:
		if until.val.kind != kString {
			d.ds.errorf(until.val.pos, RuleInvalidValue, "%s wait.until must be one binding to an RFC 3339 time, such as \"${input.send_at}\", not a %s", what, until.val.kind)
			return
		}
		st.Wait = &Wait{Bound: until.val, Until: true, Pos: until.val.pos}
	case sec.val.kind == kString:
		st.Wait = &Wait{Bound: sec.val, Pos: sec.val.pos}
	case sec.val.kind == kNumber:
		if n, err := strconv.ParseInt(sec.val.str, 10, 64); err == nil && n > tool.MaxReviewTimeout {
			d.ds.errorf(sec.val.pos, RuleQuota, "%s wait.seconds %d is over %d: a run lasts at most a year", what, n, tool.MaxReviewTimeout)
			return
		}
		if n, ok := d.integer(sec, what+" wait.seconds", 0, tool.MaxReviewTimeout); ok {
			st.Wait = &Wait{Seconds: n, Pos: sec.val.pos}
		}
	default:
		d.ds.errorf(sec.val.pos, RuleInvalidValue, "%s wait.seconds must be a whole number or one binding, not a %s", what, sec.val.kind)
	}
}

// bindingLike finds text written like a binding (${…}) in a fail step's
// cause, which the definition carries as it is (docs/solutions.md, fail).
var bindingLike = regexp.MustCompile(`\$\{[^}]*\}`)

func (d *decoder) decodeFail(st *Step, v *value, what string) {
	if !d.grammar(v, what+" fail", GrammarFail) {
		return
	}
	for _, f := range v.fields {
		switch f.key {
		case "error":
			if s, ok := d.str(&f, what+" fail.error"); ok {
				if msg := checkFailError(s); msg != "" {
					d.ds.errorf(f.val.pos, RuleInvalidValue, "%s fail.error %q %s", what, excerpt.BytesWithin(s, maxQuotedBytes, "..."), msg)
				}
				st.Error = s
			}
		case "cause":
			st.Cause, _ = d.str(&f, what+" fail.cause")
			if n := utf8.RuneCountInString(st.Cause); n > MaxFailCause {
				d.ds.errorf(f.val.pos, RuleInvalidValue, "%s fail.cause is %d characters; Step Functions keeps at most %d of an execution's cause", what, n, MaxFailCause)
			}
			// A cause is written into the definition as it is: it may not
			// hold a deployment placeholder, which publishing would replace
			// with an ARN (as a literal in a binding may not).
			if m := placeholderPattern.FindString(st.Cause); m != "" {
				d.ds.errorf(f.val.pos, RuleBinding, "%s fail.cause holds %s, the syntax of a deployment placeholder, which publishing would replace", what, m)
			} else if m := bindingLike.FindString(st.Cause); m != "" {
				d.ds.errorf(f.val.pos, RuleBinding, "%s fail.cause holds %s, but a cause is literal text and nothing in it is replaced; record the value with a pass step or the run's output instead", what, m)
			}
		}
	}
}

// checkFailError says what is wrong with a fail step's error name, or ""
// when it is fine: 1 to MaxFailError characters, spaces allowed, no
// control character, not in the States. namespace Step Functions reserves
// for its own errors (Amazon States Language, "Error names"), and no
// deployment placeholder, which publishing would replace.
func checkFailError(s string) string {
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return "is empty: name the error, as in OrderRejected"
	case n > MaxFailError:
		return fmt.Sprintf("is %d characters; Step Functions keeps at most %d of an execution's error", n, MaxFailError)
	case strings.HasPrefix(s, "States."):
		return "uses the States. prefix, which Step Functions reserves for its own errors"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case placeholderPattern.MatchString(s):
		return "holds " + placeholderPattern.FindString(s) + ", the syntax of a deployment placeholder, which publishing would replace"
	}
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Sprintf("holds the control character U+%04X at byte %d: an error name is one line of text", r, i)
		}
	}
	return ""
}
