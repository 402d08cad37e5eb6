package resolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// kind of a value in the positioned tree.
type kind int

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kMap
	kList
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "mapping", "list"}[k]
}

// value is a YAML/JSON value with the position of its first character: the
// plain data the Solution decoder walks, so that every diagnostic can name
// a line and column.
type value struct {
	kind   kind
	pos    Pos
	str    string // kString: the text; kNumber: the JSON number literal
	b      bool
	fields []field
	items  []*value
}

type field struct {
	key    string
	keyPos Pos
	val    *value
}

// get returns the field named key, or nil.
func (v *value) get(key string) *field {
	for i := range v.fields {
		if v.fields[i].key == key {
			return &v.fields[i]
		}
	}
	return nil
}

// plain converts the value to the encoding/json data model, numbers as
// json.Number.
func (v *value) plain() any {
	switch v.kind {
	case kBool:
		return v.b
	case kNumber:
		return json.Number(v.str)
	case kString:
		return v.str
	case kMap:
		m := make(map[string]any, len(v.fields))
		for _, f := range v.fields {
			m[f.key] = f.val.plain()
		}
		return m
	case kList:
		l := make([]any, len(v.items))
		for i, it := range v.items {
			l[i] = it.plain()
		}
		return l
	}
	return nil
}

// positioned is what go-yaml's errors carry.
type positioned interface {
	GetToken() *token.Token
	GetMessage() string
}

// parseValue parses one YAML (or JSON) document into a value tree. It
// refuses anchors, aliases, merge keys, tags, several documents, NaN and
// infinities: none of them has a JSON meaning a Step Functions definition
// could carry.
func parseValue(src []byte) (*value, Pos, error) {
	if len(src) > MaxSourceBytes {
		return nil, Pos{1, 1}, fmt.Errorf("the file is %d bytes; a Solution may be at most %d (8 MiB)", len(src), MaxSourceBytes)
	}
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark (YAML 1.2 §5.2, RFC 8259 §8.1)
	if !utf8.Valid(src) {
		return nil, invalidUTF8At(src), errors.New("the file is not valid UTF-8")
	}
	if p, deep := flowTooDeep(src); deep {
		return nil, p, fmt.Errorf("values nest deeper than %d levels", MaxDepth)
	}
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		var pe positioned
		if errors.As(err, &pe) && pe.GetToken() != nil {
			return nil, tokenPos(pe.GetToken()), errors.New(pe.GetMessage())
		}
		return nil, Pos{1, 1}, err
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if _, directive := d.Body.(*ast.DirectiveNode); d.Body != nil && !directive {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, Pos{1, 1}, errors.New("the file holds no document")
	case len(docs) > 1:
		return nil, nodePos(docs[1].Body), errors.New("the file holds more than one YAML document")
	}
	return convert(docs[0].Body, 0)
}

// MaxSourceBytes bounds a Solution file (8 MiB) so that a huge input is
// refused before it is parsed. A Solution that compiles is far smaller: its
// definition may not exceed 1 MiB, and the workflow-validator tool takes at
// most 1 MiB.
const MaxSourceBytes = 8 << 20

// MaxDepth bounds the nesting of mappings and lists in a Solution. Deeper
// values serve no workflow and cost superlinear time in JSON Schema
// validation and in the definition's size.
const MaxDepth = 32

// flowTooDeep finds flow collections ([ and {) nested deeper than MaxDepth
// before the YAML parser sees them: go-yaml's time and memory grow faster
// than linearly with such nesting. Quoted scalars and comments are skipped;
// the scan is approximate only in what it lets through, which the depth
// check on the parsed tree then refuses.
func flowTooDeep(src []byte) (Pos, bool) {
	depth, line, col := 0, 1, 0
	var quote byte
	comment := false
	// Block sequences opened on one line ("- - - x") nest as deeply as flow
	// collections and cost go-yaml as much.
	for n, l := range bytes.Split(src, []byte("\n")) {
		l = bytes.TrimLeft(l, " ")
		dashes := 0
		for len(l) > 0 && l[0] == '-' && (len(l) == 1 || l[1] == ' ' || l[1] == '\t') {
			dashes++
			l = bytes.TrimLeft(l[1:], " \t")
		}
		if dashes > MaxDepth {
			return Pos{n + 1, 1}, true
		}
	}
	for i, c := range src {
		col++
		switch {
		case c == '\n':
			line, col, comment = line+1, 0, false
			if quote == '\'' {
				continue
			}
		case comment:
		case quote != 0:
			if c == quote && (quote == '\'' || i == 0 || src[i-1] != '\\') {
				quote = 0
			}
		case (c == '"' || c == '\'') && (i == 0 || bytes.IndexByte([]byte(" \t\n[{,:-"), src[i-1]) >= 0):
			quote = c // a quoted scalar starts only where a scalar can start
		case c == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t'):
			comment = true
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth+1 {
				return Pos{line, col}, true
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return Pos{}, false
}

func invalidUTF8At(src []byte) Pos {
	p := Pos{1, 1}
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size <= 1 {
			return p
		}
		if r == '\n' {
			p.Line, p.Column = p.Line+1, 1
		} else {
			p.Column++
		}
		src = src[size:]
	}
	return p
}

// jsonNumber is the number grammar of RFC 8259 §6.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// number turns a YAML number token into a JSON number literal, refusing
// the YAML 1.1 forms (octal 010, 0b11, 1_000, 0x1f, .5) whose value a
// reader would not expect.
func number(text string, p Pos) (*value, Pos, error) {
	text = strings.TrimPrefix(text, "+")
	if !jsonNumber.MatchString(text) {
		return nil, p, fmt.Errorf("number %q is not written as a JSON number (decimal digits, optional fraction and exponent)", text)
	}
	return &value{kind: kNumber, pos: p, str: text}, p, nil
}

func tokenPos(t *token.Token) Pos {
	if t == nil || t.Position == nil {
		return Pos{1, 1}
	}
	return Pos{t.Position.Line, t.Position.Column}
}

func nodePos(n ast.Node) Pos { return tokenPos(n.GetToken()) }

func convert(n ast.Node, depth int) (*value, Pos, error) {
	p := nodePos(n)
	if depth > MaxDepth {
		return nil, p, fmt.Errorf("values nest deeper than %d levels", MaxDepth)
	}
	switch n := n.(type) {
	case *ast.NullNode:
		return &value{kind: kNull, pos: p}, p, nil
	case *ast.BoolNode:
		return &value{kind: kBool, pos: p, b: n.Value}, p, nil
	case *ast.IntegerNode:
		return number(n.Token.Value, p)
	case *ast.FloatNode:
		return number(n.Token.Value, p)
	case *ast.StringNode:
		if n.Token.Type == token.StringType && jsonNumber.MatchString(n.Value) {
			return number(n.Value, p) // a plain scalar such as 1e3 is a number in YAML 1.2 and JSON
		}
		return &value{kind: kString, pos: p, str: n.Value}, p, nil
	case *ast.LiteralNode:
		return &value{kind: kString, pos: p, str: n.Value.Value}, p, nil
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 {
			p = nodePos(n.Values[0].Key) // a block mapping's token is its first ':'
		}
		v := &value{kind: kMap, pos: p}
		for _, mv := range n.Values {
			if ep, err := addField(v, mv, depth); err != nil {
				return nil, ep, err
			}
		}
		return v, p, nil
	case *ast.MappingValueNode: // a mapping of one pair
		v := &value{kind: kMap, pos: nodePos(n.Key)}
		if ep, err := addField(v, n, depth); err != nil {
			return nil, ep, err
		}
		return v, v.pos, nil
	case *ast.SequenceNode:
		v := &value{kind: kList, pos: p}
		for _, it := range n.Values {
			iv, ep, err := convert(it, depth+1)
			if err != nil {
				return nil, ep, err
			}
			v.items = append(v.items, iv)
		}
		return v, p, nil
	case *ast.InfinityNode, *ast.NanNode:
		return nil, p, errors.New("infinities and NaN are not JSON numbers")
	case *ast.AnchorNode, *ast.AliasNode:
		return nil, p, errors.New("YAML anchors and aliases are not supported: write the value out")
	case *ast.TagNode:
		return nil, p, fmt.Errorf("YAML tags (%s) are not supported", n.Start.Value)
	case *ast.MergeKeyNode:
		return nil, p, errors.New("YAML merge keys (<<) are not supported")
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &value{kind: kNull, pos: p}, p, nil
	}
	return nil, p, fmt.Errorf("unsupported YAML node %s", n.Type())
}

func addField(v *value, mv *ast.MappingValueNode, depth int) (Pos, error) {
	kp := nodePos(mv.Key)
	var key string
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		key = k.GetToken().Value
	case *ast.MergeKeyNode:
		return kp, errors.New("YAML merge keys (<<) are not supported")
	default:
		return kp, errors.New("mapping keys must be plain strings")
	}
	if v.get(key) != nil {
		return kp, fmt.Errorf("key %q appears twice in this mapping", key)
	}
	if key == "" {
		return kp, errors.New("mapping keys may not be empty or null")
	}
	val, ep, err := convert(mv.Value, depth+1)
	if err != nil {
		return ep, err
	}
	v.fields = append(v.fields, field{key: key, keyPos: kp, val: val})
	return kp, nil
}
