package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiled caches Compile by the document's bytes: a compiled schema is
// safe for concurrent use, and pinned schemas repeat.
var compiled sync.Map // string -> *Schema

// Schema is a compiled JSON Schema. Validate is safe for concurrent use;
// validations of a schema with ECMA-262 patterns (those Go's regexp
// refuses) take turns, since each has its own budget (ValidationBudget).
type Schema struct {
	s  *jsonschema.Schema
	p  *patterns
	mu sync.Mutex // held by a validation that may run ECMA-262 patterns
}

// Validate validates an instance in the encoding/json data model (maps,
// slices, json.Number or float64, strings, booleans, nil). It returns nil,
// a *jsonschema.ValidationError, or a *PatternLimitError when an ECMA-262
// match did not finish: the value is refused then. Problems flattens
// either.
func (s *Schema) Validate(v any) error {
	if len(s.p.ecma) == 0 {
		return s.s.Validate(v)
	}
	r := &run{}
	err := s.validateAs(r, v)
	if len(r.limits) == 0 {
		return err
	}
	return &PatternLimitError{Limits: r.limits, Err: err}
}

// validateAs runs one validation with r as its account of ECMA-262 matches.
func (s *Schema) validateAs(r *run, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p.run = r
	defer func() { s.p.run = nil }()
	return s.s.Validate(v)
}

// Compile compiles one JSON Schema document. Documents without "$schema"
// are read as draft 2020-12. Remote references are not loaded: a pinned
// schema must be self-contained. Patterns compile with Go's regexp (RE2),
// or, when RE2 refuses them, as ECMA-262 with bounded matching (see
// MatchTimeout). Results are cached by content.
func Compile(doc json.RawMessage) (*Schema, error) {
	if s, ok := compiled.Load(string(doc)); ok {
		return s.(*Schema), nil
	}
	s, err := CompileUncached(doc)
	if err != nil {
		return nil, err
	}
	compiled.Store(string(doc), s)
	return s, nil
}

// CompileUncached is Compile without the cache, which keeps every schema
// it compiled for the life of the process: for a caller that keeps the
// compiled schema itself and bounds what it keeps (a compiled schema takes
// about twenty times its document's size).
func CompileUncached(doc json.RawMessage) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	return CompileValue(v)
}

// CompileValue compiles a schema already decoded into the encoding/json data
// model (maps, slices, json.Number or float64, strings, booleans, nil).
// An invalid pattern is a *jsonschema.SchemaValidationError or an error
// naming the pattern's location and why neither engine compiles it.
func CompileValue(doc any) (*Schema, error) {
	p := &patterns{}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(p.compile)
	if err := c.AddResource("urn:toolgate:schema", doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err := c.Compile("urn:toolgate:schema")
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	p.locate(s)
	p.sealed = true
	return &Schema{s: s, p: p}, nil
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %s is not loaded: pinned schemas must be self-contained", url)
}

// Problem is one reason an instance does not match its schema.
type Problem struct {
	// Location is the JSON Pointer of the value at fault ("" is the whole instance).
	Location string
	// Message says what is wrong; it may quote the value at fault or its
	// property names, so it is for authors at compile time, never for run
	// time messages or logs (use Redacted).
	Message string
	// Keyword is the JSON Schema keyword that failed ("pattern",
	// "additionalProperties", ...; "" when the library names none).
	Keyword string
	// KeywordLocation is the JSON Pointer (RFC 6901) of the failing
	// keyword in its schema resource ("/properties/to/items/type"); ""
	// when unknown. It quotes the schema only, never the instance.
	KeywordLocation string
	// Want says what the keyword asks for, in the schema's terms and at
	// most the value's JSON type ("array, got string", "property \"to\"",
	// "at most 50 items"); "" when saying it would need the instance's
	// values. Safe to show at run time.
	Want string
	// Limit, when not empty, says why the keyword could not be decided
	// (an ECMA-262 match that did not finish, PatternLimit): the value is
	// refused for it. It never quotes the instance.
	Limit string
}

// Redacted is the problem without any value of the instance: its location,
// the failing keyword and where the schema has it, what the keyword wants
// and a limit's reason, for messages and logs at run time, where the
// instance is a tool's payload or a run's input:
//
//	/to fails "type" (schema /properties/to/type): want array, got string
//	/ fails "required" (schema /required): want properties "to", "subject"
//	/email fails "pattern" (schema /properties/email/pattern): the ECMA-262 match did not finish within its 100ms timeout
func (p Problem) Redacted() string {
	k := p.Keyword
	if k == "" {
		k = "schema"
	}
	loc := p.Location
	if loc == "" {
		loc = "/"
	}
	out := loc + " fails " + strconv.Quote(k)
	if p.KeywordLocation != "" {
		out += " (schema " + p.KeywordLocation + ")"
	}
	if p.Want != "" {
		out += ": want " + p.Want
	}
	if p.Limit != "" {
		out += ": " + p.Limit
	}
	return out
}

// RedactedLines says what is wrong, one line a problem: each problem's
// Redacted text after root (the name of the value checked, such as
// "input" or "output", or ""), at most n lines and then one saying how
// many more there are ("and 3 more"). Nothing in them quotes the
// instance, so they may reach a caller, a log or an execution's history.
func RedactedLines(ps []Problem, root string, n int) []string {
	var out []string
	for i, p := range ps {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(ps)-n))
			break
		}
		out = append(out, root+p.Redacted())
	}
	return out
}

func (p Problem) String() string {
	if p.Location == "" {
		return p.Message
	}
	return p.Location + ": " + p.Message
}

var printer = message.NewPrinter(language.English)

// Problems flattens a validation error into its leaf problems. ignore, when
// not nil, drops every problem at or below a location it returns true for
// (as RFC 6901 reference tokens); an anyOf/oneOf that one of its branches
// satisfies once ignored problems are dropped is no problem. Errors that are
// not validation errors come back as one problem; nil has none.
//
// A *PatternLimitError yields its library error's problems, the "pattern"
// problem of each unfinished match carrying the limit (Problem.Limit), and
// one problem at the whole instance for each limit without one (a
// "patternProperties" key, a branch of "not"): those are never dropped.
//
// A schema that is not valid against its metaschema (a *SchemaValidationError
// from Compile) yields the problems of the schema document itself.
func Problems(err error, ignore func(location []string) bool) []Problem {
	if err == nil {
		return nil
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		err = sve.Err
	}
	var ple *PatternLimitError
	if errors.As(err, &ple) {
		return limitProblems(ple, ignore)
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Message: strings.Join(strings.Fields(err.Error()), " ")}}
	}
	return problems(ve, ignore, nil)
}

func limitProblems(e *PatternLimitError, ignore func([]string) bool) []Problem {
	type key struct{ loc, pattern, got string }
	reasons := make(map[key]string, len(e.Limits))
	for _, l := range e.Limits {
		reasons[key{l.KeywordLocation, l.Pattern, l.got}] = l.Reason
	}
	paired := map[key]bool{}
	var out []Problem
	var ve *jsonschema.ValidationError
	if errors.As(e.Err, &ve) {
		out = problems(ve, ignore, func(kl string, k *kind.Pattern) string {
			kk := key{kl, k.Want, k.Got}
			if r, ok := reasons[kk]; ok {
				paired[kk] = true
				return r
			}
			return ""
		})
	}
	unpaired := 0
	for _, l := range e.Limits {
		if paired[key{l.KeywordLocation, l.Pattern, l.got}] {
			continue
		}
		if unpaired++; unpaired > maxLimits {
			continue
		}
		msg := fmt.Sprintf("%s %s could not be decided for a value, which is refused: %s", l.Keyword, strconv.Quote(l.Pattern), l.Reason)
		out = append(out, Problem{Message: msg, Keyword: l.Keyword, KeywordLocation: l.KeywordLocation, Limit: l.Reason})
	}
	if unpaired > maxLimits {
		out = append(out, Problem{Message: fmt.Sprintf("and %d more ECMA-262 matches that did not finish", unpaired-maxLimits), Keyword: "pattern", Limit: reasonBudget})
	}
	return out
}

// limitOf returns the reason a pattern problem was an unfinished match, or "".
type limitOf func(keywordLocation string, k *kind.Pattern) string

func problems(e *jsonschema.ValidationError, ignore func([]string) bool, limit limitOf) []Problem {
	if ignore != nil && ignore(e.InstanceLocation) {
		return nil
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			var all []Problem
			for _, c := range e.Causes {
				ps := problems(c, ignore, limit)
				if len(ps) == 0 {
					return nil
				}
				all = append(all, ps...)
			}
			p := leaf(e)
			p.Message += " (" + joinMessages(all) + ")"
			for _, c := range all {
				if c.Limit != "" {
					p.Limit = c.Limit
				}
			}
			return []Problem{p}
		}
	}
	if len(e.Causes) == 0 {
		p := leaf(e)
		if k, ok := e.ErrorKind.(*kind.Pattern); ok && limit != nil {
			if reason := limit(p.KeywordLocation, k); reason != "" {
				p.Limit = reason
				p.Message = fmt.Sprintf("pattern %s could not be decided for this value, which is refused: %s", strconv.Quote(k.Want), reason)
			}
		}
		return []Problem{p}
	}
	var out []Problem
	for _, c := range e.Causes {
		out = append(out, problems(c, ignore, limit)...)
	}
	return out
}

func leaf(e *jsonschema.ValidationError) Problem {
	p := Problem{Location: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer), Keyword: keyword(e), Want: want(e.ErrorKind)}
	if path := e.ErrorKind.KeywordPath(); len(path) > 0 && e.SchemaURL != "" {
		p.KeywordLocation = fragment(e.SchemaURL) + pointer(path)
	}
	return p
}

// want says what a failed keyword asks for, from the schema's side only:
// the instance's type name at most, never its values or property names.
func want(k jsonschema.ErrorKind) string {
	rat := func(r *big.Rat) string {
		if r.IsInt() {
			return r.Num().String()
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	quoted := func(names []string) string {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = strconv.Quote(n)
		}
		return strings.Join(q, ", ")
	}
	switch k := k.(type) {
	case *kind.Type:
		return strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.Required:
		if len(k.Missing) == 1 {
			return "property " + quoted(k.Missing)
		}
		return "properties " + quoted(k.Missing)
	case *kind.MinLength:
		return fmt.Sprintf("at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("at most %d characters", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("at most %d properties", k.Want)
	case *kind.Minimum:
		return ">= " + rat(k.Want)
	case *kind.Maximum:
		return "<= " + rat(k.Want)
	case *kind.ExclusiveMinimum:
		return "> " + rat(k.Want)
	case *kind.ExclusiveMaximum:
		return "< " + rat(k.Want)
	case *kind.MultipleOf:
		return "a multiple of " + rat(k.Want)
	case *kind.AdditionalProperties:
		return "no other properties"
	case *kind.FalseSchema:
		return "nothing here (false schema)"
	}
	return ""
}

// keyword is the last element of the failing keyword's path.
func keyword(e *jsonschema.ValidationError) string {
	if path := e.ErrorKind.KeywordPath(); len(path) > 0 {
		return path[len(path)-1]
	}
	return ""
}

func joinMessages(ps []Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// pointer renders reference tokens as an RFC 6901 JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}
