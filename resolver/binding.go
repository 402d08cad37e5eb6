package resolver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// A binding is a ${...} reference in a Solution value:
//
//	${input.PATH}            the run's input ($.input)
//	${steps.ID.output.PATH}  a tool or workflow step's result ($.steps.ID.output)
//	${steps.ID.error.Error}  the error a tool or workflow step failed with,
//	${steps.ID.error.Cause}  after its on_error ($.steps.ID.error)
//	${steps.ID.PATH}         a pass step's values ($.steps.ID)
//	${execution.id}          the execution's ARN ($$.Execution.Id),
//	${execution.name}        its name ($$.Execution.Name) and
//	${execution.start_time}  when it started ($$.Execution.StartTime)
//	${reviews.ID.decision}   review step ID's outcome ($.decisions.ID):
//	${reviews.ID.reason}     approve, reject or timeout, the reviewer's
//	${reviews.ID.approver}   reason and who decided
//	${reviews.ID.answer}     the reviewer's answer, of a review with ask
//	${reviews.ID.answer.PATH} (null unless approved)
//
// PATH is a sequence of .name (letters, digits, underscore; not starting
// with a digit) and [index] accessors (a whole number without leading
// zeros, so that one element has one spelling). "$${" writes a literal "${".
type binding struct {
	text string // as written inside ${ }
	// root is "input", "steps", "execution", "reviews", "for_each" (the
	// item's index, ${for_each.index}) or "item": a for_each body's item,
	// ${<as>...}, whose name is in step. checkBindingTarget refuses an
	// item root outside a body whose as it is.
	root string
	// step is the step id, for roots "steps" and "reviews"; the member of
	// $$.Execution, for root "execution".
	step string
	rest string // the JSONPath accessors after the root (and step id)
}

// bindingRoots are the first names a binding may start with; a for_each's
// item name (as) may be none of them.
var bindingRoots = []string{"input", "steps", "execution", "reviews", "for_each"}

// executionFields maps ${execution.NAME} to its member of $$.Execution
// (the context object, AWS Step Functions developer guide, "Accessing
// execution data from the Context object").
var executionFields = map[string]string{"id": "Id", "name": "Name", "start_time": "StartTime"}

// decisionFields are the members of a review's decision ${reviews.ID.NAME}
// reads, as its decision Pass writes them ($.decisions.ID); answer (a
// review with ask only) may be followed by a PATH into the answer.
var decisionFields = []string{"decision", "reason", "approver", "answer"}

// isAnswer reports whether b reads a review's answer
// (${reviews.ID.answer...}).
func (b *binding) isAnswer() bool {
	return b.root == "reviews" && (b.rest == ".answer" || strings.HasPrefix(b.rest, ".answer.") || strings.HasPrefix(b.rest, ".answer["))
}

// jsonPath returns the path of the bound value: in the state data, or in
// the context object for ${execution...}.
func (b *binding) jsonPath() string {
	switch b.root {
	case "input":
		return "$.input" + b.rest
	case "execution":
		return "$$.Execution." + executionFields[b.step]
	case "reviews":
		return "$.decisions." + b.step + b.rest
	case "for_each":
		return "$.index"
	case "item":
		return "$.item" + b.rest
	}
	return "$.steps." + b.step + b.rest
}

// isError reports whether b reads a step's error (${steps.ID.error...}).
func (b *binding) isError() bool {
	return b.root == "steps" && (b.rest == ".error" || strings.HasPrefix(b.rest, ".error."))
}

// placeholderPattern is the DefinitionSubstitutions syntax: a literal in
// this form would be replaced at deploy.
var placeholderPattern = regexp.MustCompile(`\$\{[A-Za-z0-9_]+\}`)

var bindingPattern = regexp.MustCompile(`^(input|for_each\.index|steps\.([a-z][a-z0-9_]{0,62})|execution|reviews\.([a-z][a-z0-9_]{0,62})|([a-z][a-z0-9_]{0,62}))((?:\.[A-Za-z_][A-Za-z0-9_]*|\[(?:0|[1-9][0-9]{0,8})\])*)$`)

// bindingForms is what a binding may be, for diagnostics.
const bindingForms = "${input.PATH}, ${steps.ID.output.PATH}, ${steps.ID.error.Error|Cause}, ${steps.ID.PATH}, ${execution.id|name|start_time}, ${reviews.ID.decision|reason|approver|answer}, or in a for_each body ${AS.PATH} and ${for_each.index} (PATH: .name and [index])"

// parseBinding parses the text inside ${ }.
func parseBinding(inner string) (*binding, error) {
	m := bindingPattern.FindStringSubmatch(inner)
	if m == nil {
		return nil, fmt.Errorf("binding %q must be %s", excerpt.BytesWithin("${"+inner+"}", maxQuotedBytes, "..."), bindingForms)
	}
	b := &binding{text: inner, root: m[1], rest: m[5]}
	switch {
	case m[1] == "for_each.index":
		b.root = "for_each"
		if b.rest != "" {
			return nil, fmt.Errorf("binding %q: the item's index is a number: write ${for_each.index}", excerpt.BytesWithin("${"+inner+"}", maxQuotedBytes, "..."))
		}
	case m[4] != "":
		b.root, b.step = "item", m[4]
	case m[2] != "":
		b.root, b.step = "steps", m[2]
	case m[3] != "":
		b.root, b.step = "reviews", m[3]
		if !slices.Contains(decisionFields, strings.TrimPrefix(b.rest, ".")) && !b.isAnswer() {
			return nil, fmt.Errorf("binding %q: a review's decision has decision, reason, approver and, for a review with ask, answer: write ${reviews.%s.decision}, ${reviews.%s.reason}, ${reviews.%s.approver} or ${reviews.%s.answer}", excerpt.BytesWithin("${"+inner+"}", maxQuotedBytes, "..."), m[3], m[3], m[3], m[3])
		}
	case m[1] == "execution":
		b.step = strings.TrimPrefix(b.rest, ".")
		if _, ok := executionFields[b.step]; !ok {
			return nil, fmt.Errorf("binding %q: the execution has id, name and start_time: write ${execution.id}, ${execution.name} or ${execution.start_time}", excerpt.BytesWithin("${"+inner+"}", maxQuotedBytes, "..."))
		}
		b.rest = ""
	}
	return b, nil
}

// segment is a piece of a string template: literal text or a binding.
type segment struct {
	lit string
	b   *binding
}

// parseTemplate splits a string into literal text and bindings.
func parseTemplate(s string) ([]segment, error) {
	if !strings.Contains(s, "${") {
		return []segment{{lit: s}}, nil
	}
	var segs []segment
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("binding %q has no closing }", excerpt.BytesWithin(s[i:], maxQuotedBytes, "..."))
			}
			b, err := parseBinding(s[i+2 : i+end])
			if err != nil {
				return nil, err
			}
			if lit.Len() > 0 {
				segs = append(segs, segment{lit: lit.String()})
				lit.Reset()
			}
			segs = append(segs, segment{b: b})
			i += end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 || len(segs) == 0 {
		segs = append(segs, segment{lit: lit.String()})
	}
	return segs, nil
}

// boundString is a string value after template parsing.
type boundString struct {
	segs []segment
}

// whole returns the binding when the string is exactly one ${...}.
func (bs boundString) whole() *binding {
	if len(bs.segs) == 1 {
		return bs.segs[0].b
	}
	return nil
}

func (bs boundString) bound() bool {
	for _, s := range bs.segs {
		if s.b != nil {
			return true
		}
	}
	return false
}

func (bs boundString) literal() string {
	var b strings.Builder
	for _, s := range bs.segs {
		b.WriteString(s.lit)
	}
	return b.String()
}

// intrinsicString quotes s as an intrinsic-function string literal: the
// characters ' { } \ are escaped with a backslash (Amazon States Language,
// "Reserved characters in intrinsic functions").
func intrinsicString(s string) string {
	return "'" + intrinsicEscaper.Replace(s) + "'"
}

// intrinsicEscaper escapes ' { } \ with a backslash (intrinsicString),
// built once: a Replacer builds its tables on first use, and is safe for
// concurrent use.
var intrinsicEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`, `{`, `\{`, `}`, `\}`)

// expression returns the JSONPath or intrinsic function that produces the
// string: the path itself for a whole binding, States.Format otherwise.
func (bs boundString) expression() string {
	if b := bs.whole(); b != nil {
		return b.jsonPath()
	}
	var tmpl strings.Builder
	var args []string
	for _, s := range bs.segs {
		if s.b != nil {
			tmpl.WriteString("{}")
			args = append(args, s.b.jsonPath())
			continue
		}
		tmpl.WriteString(intrinsicEscaper.Replace(s.lit))
	}
	return "States.Format('" + tmpl.String() + "', " + strings.Join(args, ", ") + ")"
}

// compiled is a value compiled for a Parameters or Payload field: either a
// static JSON value, or an expression (a JSONPath or intrinsic function)
// whose key must end in ".$".
type compiled struct {
	static any
	expr   string
}

// paramsError is a value that cannot be written in JSONPath Parameters.
type paramsError struct {
	pos Pos
	msg string
}

// compileParams compiles a value into Parameters form and collects the
// bindings it holds, each with its position.
func compileParams(v *value, inList bool, uses *[]use) (compiled, []paramsError) {
	switch v.kind {
	case kString:
		segs, err := parseTemplate(v.str)
		if err != nil {
			return compiled{}, []paramsError{{v.pos, err.Error()}}
		}
		bs := boundString{segs}
		if !bs.bound() {
			lit := bs.literal()
			if m := placeholderPattern.FindString(lit); m != "" {
				return compiled{}, []paramsError{{v.pos, fmt.Sprintf("literal %q would be read as a deployment placeholder (DefinitionSubstitutions) and replaced; write it differently", m)}}
			}
			return compiled{static: lit}, nil
		}
		for _, s := range segs {
			if s.b != nil {
				*uses = append(*uses, use{b: s.b, pos: v.pos, whole: bs.whole() != nil})
			}
			if s.b == nil && strings.Contains(s.lit, `\`) && len(segs) > 1 {
				// AWS accepts \\ in States.Format, but asl-validator 4.0.0
				// (the definition check) does not: refuse rather than emit a
				// definition that fails validation.
				return compiled{}, []paramsError{{v.pos, "a backslash in a string with bindings cannot be written in States.Format; bind the whole value instead"}}
			}
		}
		return compiled{expr: bs.expression()}, nil
	case kMap:
		obj := make(map[string]any, len(v.fields))
		var errs []paramsError
		for _, f := range v.fields {
			if strings.Contains(f.key, "${") {
				errs = append(errs, paramsError{f.keyPos, fmt.Sprintf("key %q: bindings are not allowed in keys, only in values", excerpt.BytesWithin(f.key, maxQuotedBytes, "..."))})
				continue
			}
			if strings.HasSuffix(f.key, ".$") {
				errs = append(errs, paramsError{f.keyPos, fmt.Sprintf("key %q may not end in \".$\": Step Functions reads such keys as paths", f.key)})
				continue
			}
			before := len(*uses)
			c, es := compileParams(f.val, false, uses)
			errs = append(errs, es...)
			if inList && len(*uses) > before {
				errs = append(errs, paramsError{f.val.pos, fmt.Sprintf("binding in field %q of an object inside a list: JSONPath Parameters cannot write it; bind the whole list, or move the object out of the list", f.key)})
				continue
			}
			if c.expr != "" {
				obj[f.key+".$"] = c.expr
			} else {
				obj[f.key] = c.static
			}
		}
		return compiled{static: obj}, errs
	case kList:
		before := len(*uses)
		var errs []paramsError
		items := make([]compiled, len(v.items))
		for i, it := range v.items {
			var es []paramsError
			items[i], es = compileParams(it, true, uses)
			errs = append(errs, es...)
		}
		if len(errs) > 0 {
			return compiled{}, errs
		}
		if len(*uses) == before {
			return compiled{static: v.plain()}, nil
		}
		args := make([]string, len(v.items))
		for i, it := range items {
			switch {
			case it.expr != "":
				args[i] = it.expr
			default:
				args[i] = intrinsicLiteral(it.static)
			}
		}
		return compiled{expr: "States.Array(" + strings.Join(args, ", ") + ")"}, nil
	}
	return compiled{static: v.plain()}, nil
}

// intrinsicLiteral writes a static value as an intrinsic-function argument:
// strings quoted, numbers, booleans and null as they are, objects and lists
// through States.StringToJson.
func intrinsicLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return intrinsicString(x)
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			// Intrinsic arguments take integers only (asl-validator 4.0.0).
			return "States.StringToJson(" + intrinsicString(x.String()) + ")"
		}
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case nil:
		return "null"
	}
	raw, _ := json.Marshal(v)
	return "States.StringToJson(" + intrinsicString(string(raw)) + ")"
}

// use is one binding written at a position.
type use struct {
	b   *binding
	pos Pos
	// whole: the string is exactly this binding, so the bound value is
	// copied as it is; otherwise it is formatted into a string
	// (States.Format), where JSON escaping can double its size.
	whole bool
	// refused: the binding was reported as one that cannot work
	// (checkBindingTarget); the checks after it leave it alone.
	refused bool
}

// maxQuotedBytes bounds text a diagnostic quotes from the source, in
// bytes, its "..." included (excerpt.BytesWithin): a name or a value is
// recognisable in 80 bytes, and a message stays one terminal line or two.
const maxQuotedBytes = 80
