package resolver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// Severity of a diagnostic: errors refuse the Solution, warnings do not.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Rule ids, stable and shown in brackets in every diagnostic. docs/solutions.md
// lists them with the check each belongs to.
const (
	RuleSyntax          = "syntax"             // the file is not YAML or JSON, or uses anchors, aliases, tags, or numbers JSON cannot carry
	RuleUnknownField    = "unknown-field"      // a key the grammar does not have
	RuleMissingField    = "missing-field"      // a required key is absent
	RuleInvalidValue    = "invalid-value"      // wrong type, pattern or range
	RuleDuplicateID     = "duplicate-id"       // two steps share an id
	RuleUnknownTarget   = "unknown-target"     // next/on_*/default/start/of names no step
	RuleTargetKind      = "target-kind"        // review.of names a step that is not a tool step
	RuleUnreachable     = "unreachable"        // a step no path from the start reaches (warning)
	RuleBinding         = "binding"            // a ${...} that cannot be compiled
	RuleUnsetBinding    = "unset-binding"      // a bound step has not run on every path to here
	RuleBindingShape    = "binding-shape"      // a binding's path its source's schema cannot have (error) or, in an open object, does not declare (warning)
	RuleBindingType     = "binding-type"       // a bound input whose types the tool's input schema refuses there; a choice rule whose operator cannot match (warning)
	RuleUnknownTool     = "unknown-tool"       // a tool that is not in the catalog (admission)
	RuleToolInput       = "tool-input"         // literal inputs against the tool's input schema
	RuleInputSchema     = "input-schema"       // the Solution's input JSON Schema does not compile
	RuleReviewBefore    = "review-before-tool" // Gate A
	RuleNoFallback      = "no-fallback"        // on_error reaches a tool without an approved review, from which the run can still succeed
	RuleFetchHost       = "fetch-host"         // fetch_hosts entries; a literal fetch URL's host not on them
	RuleFetchURL        = "fetch-url"          // a literal fetch URL the tool's parser refuses (shared/fetchurl)
	RuleHTTPHost        = httprule.RuleHost    // http_hosts entries; an http step without them; a literal http URL whose host no entry allows
	RuleHTTPMethod      = httprule.RuleMethod  // a literal http method its URL's host entry does not pin
	RuleHTTPHeader      = httprule.RuleHeader  // a literal http header that is forbidden, or custom and not named by the host's entry
	RuleRecipient       = "recipient"          // a literal send-email recipient that is not one bare addr-spec, or too many (shared/recipient)
	RuleMailHeader      = "mail-header"        // a literal send-email subject that is not one line of text (shared/mailheader)
	RuleRetry           = "retry"              // retry and idempotency rules of the tool contract
	RuleQuota           = "quota"              // Step Functions and task-token quotas
	RuleRunTimeout      = "run-timeout"        // a review or a literal wait that could outlast the run
	RuleApprovalExpiry  = "approval-expiry"    // waits between a review's approval and its tool that outlast the approval
	RuleErrorCode       = "error-code"         // an on_error or retry.errors code the step cannot raise, or never reaches
	RuleStateSize       = "state-size"         // state data or a Task payload that could exceed 256 KiB
	RuleForEach         = "for-each"           // a for_each's options, or a for_each inside another
	RuleForEachScope    = "for-each-scope"     // a target that leaves or enters a for_each body (end ends an iteration)
	RuleReviewScope     = "review-scope"       // review.of names a tool step of another for_each body, or outside the review's
	RuleReviewEdit      = "review-edit"        // a review.editable member that decides where the call's effect lands (catalog.EffectTargets)
	RuleWorkflow        = "workflow"           // a workflow step whose Solution the toolset does not list, or a Solution's output binding
	RuleTooMany         = "too-many"           // more than MaxDiagnostics diagnostics: the rest are counted, not listed
	RuleReviewerPattern = reviewer.RulePattern // a reviewer pattern that does not name one AWS account (shared/reviewer); at publish, one naming an account the deployment does not admit
	RuleInvisible       = "invisible"          // a line of the source holding invisible or bidirectional characters (shared/invisible; warning)
)

// MaxMessageRunes bounds a diagnostic's message: values quoted from the
// source are cut, so that a huge key cannot make a huge report.
const MaxMessageRunes = 400

// Pos is a 1-based line and column in the source file.
type Pos struct {
	Line, Column int
}

// MaxNotes bounds a diagnostic's notes.
const MaxNotes = 8

// MaxDiagnostics bounds the diagnostics of one file: errors first, then
// [invisible] warnings, then the other warnings, each in source order, and
// one [too-many] diagnostic counting the rest. A diagnostic is at most (1 + MaxNotes) × MaxMessageRunes
// runes, up to 6 bytes each in JSON, so 200 fit in a publish function's
// answer, which Lambda bounds at 6 MB (AWS Lambda quota).
const MaxDiagnostics = 200

// Diagnostic is one finding, printed as
// "file:line:col: error|warning: [rule-id] message", and each of its notes
// on a line of its own below, indented by four spaces.
type Diagnostic struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	Message  string   `json:"message"`
	// Notes are what the message refers to, one line each (at most
	// MaxNotes of at most MaxMessageRunes each): a [state-size] error's
	// path and largest contributors. Omitted when there are none.
	Notes []string `json:"notes,omitempty"`
}

// String is the diagnostic with its notes, one line each.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Head())
	for _, n := range d.Notes {
		b.WriteString("\n    ")
		b.WriteString(n)
	}
	return b.String()
}

// Head is the diagnostic's first line, without its notes:
// "file:line:col: error|warning: [rule-id] message", the file's name with
// invisible and bidirectional characters escaped (invisible.Escape), as
// the message's are.
func (d Diagnostic) Head() string {
	return fmt.Sprintf("%s:%d:%d: %s: [%s] %s", invisible.Escape(d.File), d.Line, d.Column, d.Severity, d.Rule, d.Message)
}

// Counts are a file's errors and warnings, listed or not: those a
// [too-many] diagnostic counts are in, that diagnostic itself is not.
type Counts struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
}

// String is "3 errors, 1 warning", leaving out a severity with none, or
// "no diagnostics".
func (c Counts) String() string {
	var parts []string
	for _, n := range []struct {
		n    int
		noun string
	}{{c.Errors, "error"}, {c.Warnings, "warning"}} {
		switch {
		case n.n == 1:
			parts = append(parts, "1 "+n.noun)
		case n.n > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", n.n, n.noun))
		}
	}
	if len(parts) == 0 {
		return "no diagnostics"
	}
	return strings.Join(parts, ", ")
}

// diags collects the diagnostics of one file.
type diags struct {
	file string
	list []Diagnostic
}

func (ds *diags) add(sev Severity, p Pos, rule string, notes []string, format string, args ...any) {
	d := Diagnostic{File: ds.file, Line: max(p.Line, 1), Column: max(p.Column, 1), Severity: sev, Rule: rule, Message: oneLine(fmt.Sprintf(format, args...))}
	for _, n := range notes[:min(len(notes), MaxNotes)] {
		d.Notes = append(d.Notes, oneLine(n))
	}
	ds.list = append(ds.list, d)
}

// DiagnosticText is s as a diagnostic's message or note (oneLine): for
// diagnostics built outside this package, such as the publish function's
// checks against its deployment.
func DiagnosticText(s string) string { return oneLine(s) }

// oneLine is s with every ASCII control character as a space and every
// other character a reader cannot see, or that reorders what they see,
// written as \u{202E} (invisible.Escape), cut to MaxMessageRunes. Every
// message and note goes through it, so that neither a value quoted from
// the source nor a library's message quoting it (a regular expression's
// compile error) reaches a terminal raw.
func oneLine(s string) string {
	s = invisible.Escape(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
	return excerpt.RunesWithin(s, MaxMessageRunes, "…")
}

func (ds *diags) errorf(p Pos, rule, format string, args ...any) {
	ds.add(SeverityError, p, rule, nil, format, args...)
}

// errorNotes is errorf with notes, each printed on a line of its own.
func (ds *diags) errorNotes(p Pos, rule string, notes []string, format string, args ...any) {
	ds.add(SeverityError, p, rule, notes, format, args...)
}

func (ds *diags) warnf(p Pos, rule, format string, args ...any) {
	ds.add(SeverityWarning, p, rule, nil, format, args...)
}

func (ds *diags) hasErrors() bool {
	for _, d := range ds.list {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// sorted returns the diagnostics in source order, de-duplicated and cut
// to MaxDiagnostics (capped), and how many there are, listed or not.
func (ds *diags) sorted() ([]Diagnostic, Counts) {
	out := append([]Diagnostic(nil), ds.list...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Column < out[j].Column
	})
	dedup := out[:0]
	for i, d := range out {
		if i > 0 && d.String() == out[i-1].String() {
			continue
		}
		dedup = append(dedup, d)
	}
	var n Counts
	for _, d := range dedup {
		if d.Severity == SeverityError {
			n.Errors++
		} else {
			n.Warnings++
		}
	}
	return capped(dedup), n
}

// capped is list, in source order, cut to MaxDiagnostics: errors are kept
// first, so a cut list refuses what the whole list refuses, then
// [invisible] warnings, so that no flood of other warnings hides text a
// reader cannot see, then the other warnings; a last [too-many]
// diagnostic, an error when an error was left out, counts the rest.
func capped(list []Diagnostic) []Diagnostic {
	if len(list) <= MaxDiagnostics {
		return list
	}
	rank := func(d Diagnostic) int {
		switch {
		case d.Severity == SeverityError:
			return 0
		case d.Rule == RuleInvisible:
			return 1
		}
		return 2
	}
	keep := make([]bool, len(list))
	room := MaxDiagnostics - 1
	for r := range 3 {
		for i, d := range list {
			if room > 0 && rank(d) == r {
				keep[i], room = true, room-1
			}
		}
	}
	var out []Diagnostic
	var errs, warns int
	for i, d := range list {
		switch {
		case keep[i]:
			out = append(out, d)
		case d.Severity == SeverityError:
			errs++
		default:
			warns++
		}
	}
	sev := SeverityWarning
	if errs > 0 {
		sev = SeverityError
	}
	last := list[len(list)-1]
	out = append(out, Diagnostic{File: last.File, Line: last.Line, Column: last.Column, Severity: sev, Rule: RuleTooMany,
		Message: fmt.Sprintf("%d more error(s) and %d more warning(s) are not listed: at most %d diagnostics are, errors first, then [invisible] warnings; fix these and check again", errs, warns, MaxDiagnostics)})
	return out
}
