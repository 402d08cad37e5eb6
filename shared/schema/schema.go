package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiled caches Compile by the document's bytes: a compiled schema is
// immutable and safe for concurrent use, and pinned schemas repeat.
var compiled sync.Map // string -> *jsonschema.Schema

// Compile compiles one JSON Schema document. Documents without "$schema"
// are read as draft 2020-12. Remote references are not loaded: a pinned
// schema must be self-contained. Results are cached by content.
func Compile(doc json.RawMessage) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(string(doc)); ok {
		return s.(*jsonschema.Schema), nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	s, err := CompileValue(v)
	if err != nil {
		return nil, err
	}
	compiled.Store(string(doc), s)
	return s, nil
}

// CompileValue compiles a schema already decoded into the encoding/json data
// model (maps, slices, json.Number or float64, strings, booleans, nil).
func CompileValue(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource("urn:toolgate:schema", doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err := c.Compile("urn:toolgate:schema")
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return s, nil
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
}

// Redacted is the problem without any value of the instance: its location
// and the failing keyword, for messages and logs at run time, where the
// instance is a tool's payload.
func (p Problem) Redacted() string {
	k := p.Keyword
	if k == "" {
		k = "schema"
	}
	loc := p.Location
	if loc == "" {
		loc = "/"
	}
	return loc + " fails " + strconv.Quote(k)
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
// not validation errors come back as one problem.
//
// A schema that is not valid against its metaschema (a *SchemaValidationError
// from Compile) yields the problems of the schema document itself.
func Problems(err error, ignore func(location []string) bool) []Problem {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		err = sve.Err
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Message: strings.Join(strings.Fields(err.Error()), " ")}}
	}
	return problems(ve, ignore)
}

func problems(e *jsonschema.ValidationError, ignore func([]string) bool) []Problem {
	if ignore != nil && ignore(e.InstanceLocation) {
		return nil
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			var all []Problem
			for _, c := range e.Causes {
				ps := problems(c, ignore)
				if len(ps) == 0 {
					return nil
				}
				all = append(all, ps...)
			}
			return []Problem{{Location: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer) + " (" + joinMessages(all) + ")", Keyword: keyword(e)}}
		}
	}
	if len(e.Causes) == 0 {
		return []Problem{{Location: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer), Keyword: keyword(e)}}
	}
	var out []Problem
	for _, c := range e.Causes {
		out = append(out, problems(c, ignore)...)
	}
	return out
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
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
