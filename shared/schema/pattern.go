package schema

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Limits of the ECMA-262 engine. JSON Schema 2020-12 writes "pattern"
// (Validation §6.3.3) and the keys of "patternProperties" (Core §10.3.2.2)
// as ECMA-262 regular expressions (Core §6.4), and schemas come from
// platform teams and third-party servers: a backtracking engine on a
// pattern such as ^(a+)+$ runs for hours on a 40-character value, so
// every match on it is bounded.
const (
	// MatchTimeout bounds one match of one pattern on the ECMA-262 engine
	// (regexp2's MatchTimeout). regexp2 checks it against a clock that
	// ticks every 100 ms, so a match may run up to about 300 ms.
	MatchTimeout = 100 * time.Millisecond
	// ValidationBudget bounds the time all ECMA-262 matches of one
	// validation (one Schema.Validate call) take together. Once it is
	// spent, every further ECMA-262 match of that validation is refused
	// without running.
	ValidationBudget = 500 * time.Millisecond
	// MaxECMAPatternBytes bounds a pattern the ECMA-262 engine compiles,
	// in bytes of UTF-8: longer patterns that RE2 refuses are refused
	// too. It bounds the engine's compile time and memory on untrusted
	// text (the "regex" format compiles the instance's strings).
	MaxECMAPatternBytes = 16 << 10
	// maxLimits bounds the PatternLimits an error message lists.
	maxLimits = 16
)

// Why an ECMA-262 match did not finish (PatternLimit.Reason).
var (
	reasonTimeout   = fmt.Sprintf("the ECMA-262 match did not finish within its %v timeout", MatchTimeout)
	reasonBudget    = fmt.Sprintf("not matched: this validation's %v budget for ECMA-262 matches was spent", ValidationBudget)
	reasonBacktrack = "the ECMA-262 match exceeded the engine's backtracking limit"
)

// PatternLimit is one ECMA-262 match that did not finish. What it means:
// the value (or property name) is refused, as if it did not match, and the
// whole validation fails with a *PatternLimitError, even where a keyword
// that fails would be tolerated (under "not", in a branch of
// "anyOf"/"oneOf", a property name that "patternProperties" would
// otherwise not apply to): a pattern that cannot be decided never lets a
// value through.
type PatternLimit struct {
	// Keyword is "pattern" or "patternProperties".
	Keyword string
	// KeywordLocation is the JSON Pointer (RFC 6901) of the keyword in its
	// schema resource ("/properties/email/pattern",
	// "/patternProperties/^(a+)+$"); "" when it could not be found.
	KeywordLocation string
	// Pattern is the pattern as written in the schema.
	Pattern string
	// Reason says why the match did not finish; it never quotes the value.
	Reason string
	// got is the string that was being matched, to find the library's
	// error for it; it is never shown.
	got string
}

func (l PatternLimit) String() string {
	where := l.KeywordLocation
	if where == "" {
		where = l.Keyword + " " + l.Pattern
	}
	return where + ": " + l.Reason
}

// PatternLimitError is a validation that refused a value because an
// ECMA-262 match of its schema did not finish (PatternLimit). Err is the
// library's *jsonschema.ValidationError, or nil when the unfinished match
// left no other trace (a "patternProperties" key, a branch of "not").
// Problems turns both into problems.
type PatternLimitError struct {
	// Limits are the distinct unfinished matches, in the order they
	// happened.
	Limits []PatternLimit
	Err    error
}

func (e *PatternLimitError) Error() string {
	var parts []string
	for i, l := range e.Limits {
		if i == maxLimits {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Limits)-maxLimits))
			break
		}
		parts = append(parts, l.String())
	}
	return "jsonschema: a pattern could not be decided, the value is refused: " + strings.Join(parts, "; ")
}

func (e *PatternLimitError) Unwrap() error { return e.Err }

// patterns is the regexp engine of one compiled schema and the state of
// its current validation.
type patterns struct {
	ecma []*ecmaRegexp
	// sealed is set once the schema is compiled: patterns compiled later
	// (the "regex" format compiles instance strings) are not registered.
	sealed bool
	// run is the current validation, set by Schema.Validate under its
	// mutex.
	run *run
	// engines counts the patterns each engine compiled, for tests.
	re2, ecmaCount int
}

// run is one validation's account of its ECMA-262 matches.
type run struct {
	spent  time.Duration
	limits []PatternLimit
	seen   map[limitKey]bool
}

type limitKey struct {
	e           *ecmaRegexp
	got, reason string
}

// limit records an unfinished match once per pattern, string and reason
// (the library may match one string against one pattern several times).
func (r *run) limit(e *ecmaRegexp, got, reason string) {
	k := limitKey{e, got, reason}
	if r.seen[k] {
		return
	}
	if r.seen == nil {
		r.seen = map[limitKey]bool{}
	}
	r.seen[k] = true
	r.limits = append(r.limits, PatternLimit{Keyword: e.keyword, KeywordLocation: e.loc, Pattern: e.pattern, Reason: reason, got: got})
}

// compile is the schema library's regexp hook (Compiler.UseRegexpEngine):
// Go's regexp (RE2) first, and only for a pattern RE2 refuses the
// ECMA-262 engine of dlclark/regexp2 (ECMAScript and Unicode options, the
// "u" flag JSON Schema asks for), bounded by MatchTimeout and
// ValidationBudget.
//
// RE2 accepts some patterns ECMA-262 reads differently, and RE2's reading
// wins for them: "\s" is ASCII white space only (ECMA-262 adds U+00A0,
// U+FEFF and the Unicode space separators), "." matches CR, U+2028 and
// U+2029 (ECMA-262's does not), and RE2's own syntax ("(?i)", "\A",
// "\z", "\pL") is accepted. RE2 matches in linear time, which is why it
// goes first.
func (p *patterns) compile(pattern string) (jsonschema.Regexp, error) {
	if re, err := regexp.Compile(pattern); err == nil && re2Small(pattern) {
		if !p.sealed {
			p.re2++
		}
		return re, nil
	}
	re, err := compileECMA(pattern)
	if err != nil {
		return nil, err
	}
	e := &ecmaRegexp{re: re, pattern: pattern, p: p}
	if !p.sealed {
		p.ecmaCount++
		p.ecma = append(p.ecma, e)
	}
	return e, nil
}

// maxRE2Insts bounds the program of a pattern RE2 runs: RE2 is linear in
// the input times the program's size, and a counted repetition of Unicode
// classes ("(\pL|\pN){1000}") makes a program large enough to take
// seconds per string, with no timeout. Larger programs go to the bounded
// ECMA-262 engine.
const maxRE2Insts = 2000

// re2Small reports whether RE2's program for pattern is within maxRE2Insts.
func re2Small(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	prog, err := syntax.Compile(re.Simplify())
	return err == nil && len(prog.Inst) <= maxRE2Insts
}

// compileECMA compiles an ECMA-262 pattern with regexp2, bounded by
// MaxECMAPatternBytes. A panic of the engine on odd text is a refusal.
func compileECMA(pattern string) (re *regexp2.Regexp, err error) {
	if len(pattern) > MaxECMAPatternBytes {
		return nil, fmt.Errorf("the pattern is %d bytes; a pattern Go's regexp (RE2) refuses may be at most %d bytes for the ECMA-262 engine", len(pattern), MaxECMAPatternBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			re, err = nil, fmt.Errorf("not an ECMA-262 regular expression (the engine failed on it)")
		}
	}()
	re, err = regexp2.Compile(pattern, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, fmt.Errorf("not an ECMA-262 regular expression: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	re.MatchTimeout = MatchTimeout
	return re, nil
}

// ecmaRegexp is a pattern on the ECMA-262 engine.
type ecmaRegexp struct {
	re      *regexp2.Regexp
	pattern string
	p       *patterns
	// keyword and loc say where the pattern is written (set after compile).
	keyword, loc string
}

func (e *ecmaRegexp) String() string { return e.pattern }

// MatchString reports whether s contains a match. A match that does not
// finish (timeout, backtracking limit, the validation's spent budget)
// reports false and records a PatternLimit, which fails the validation.
func (e *ecmaRegexp) MatchString(s string) bool {
	r := e.p.run
	if r == nil {
		// Matched outside Schema.Validate: bounded alone, and still false.
		r = &run{}
	}
	if r.spent >= ValidationBudget {
		r.limit(e, s, reasonBudget)
		return false
	}
	start := time.Now()
	ok, err := matchECMA(e.re, s)
	r.spent += time.Since(start)
	switch {
	case errors.Is(err, regexp2.ErrBacktrackingStackLimit):
		r.limit(e, s, reasonBacktrack)
		return false
	case err != nil:
		// regexp2's timeout error quotes the input: it is dropped here.
		r.limit(e, s, reasonTimeout)
		return false
	}
	return ok
}

// matchECMA runs one match; a panic of the engine is an unfinished match.
func matchECMA(re *regexp2.Regexp, s string) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, errors.New("regexp2 failed")
		}
	}()
	return re.MatchString(s)
}

// locate records where each ECMA-262 pattern of a compiled schema is
// written, walking every subschema reachable from root.
func (p *patterns) locate(root *jsonschema.Schema) {
	if len(p.ecma) == 0 {
		return
	}
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if e, ok := s.Pattern.(*ecmaRegexp); ok {
			e.keyword, e.loc = "pattern", fragment(s.Location)+"/pattern"
		}
		for re, sub := range s.PatternProperties {
			if e, ok := re.(*ecmaRegexp); ok {
				e.keyword, e.loc = "patternProperties", fragment(s.Location)+"/patternProperties/"+escapeToken(e.pattern)
			}
			walk(sub)
		}
		for _, sub := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
			s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema} {
			walk(sub)
		}
		if s.DynamicRef != nil {
			walk(s.DynamicRef.Ref)
		}
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for _, sub := range list {
				walk(sub)
			}
		}
		for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.DependentSchemas} {
			for _, sub := range m {
				walk(sub)
			}
		}
		for _, v := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
			switch v := v.(type) {
			case *jsonschema.Schema:
				walk(v)
			case []*jsonschema.Schema:
				for _, sub := range v {
					walk(sub)
				}
			}
		}
		for _, v := range s.Dependencies {
			if sub, ok := v.(*jsonschema.Schema); ok {
				walk(sub)
			}
		}
	}
	walk(root)
	for _, e := range p.ecma {
		if e.keyword == "" {
			e.keyword = "pattern"
		}
	}
}

// fragment is the JSON Pointer part of a schema location, without the
// URL's percent-encoding ("urn:toolgate:schema#/patternProperties/%5Ea" →
// "/patternProperties/^a").
func fragment(location string) string {
	_, f, _ := strings.Cut(location, "#")
	if u, err := url.PathUnescape(f); err == nil {
		return u
	}
	return f
}

func escapeToken(t string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
}
