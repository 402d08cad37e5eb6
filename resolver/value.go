package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

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
		if d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, Pos{1, 1}, errors.New("the file holds no document")
	case len(docs) > 1:
		return nil, nodePos(docs[1].Body), errors.New("the file holds more than one YAML document")
	}
	return convert(docs[0].Body)
}

func tokenPos(t *token.Token) Pos {
	if t == nil || t.Position == nil {
		return Pos{1, 1}
	}
	return Pos{t.Position.Line, t.Position.Column}
}

func nodePos(n ast.Node) Pos { return tokenPos(n.GetToken()) }

func convert(n ast.Node) (*value, Pos, error) {
	p := nodePos(n)
	switch n := n.(type) {
	case *ast.NullNode:
		return &value{kind: kNull, pos: p}, p, nil
	case *ast.BoolNode:
		return &value{kind: kBool, pos: p, b: n.Value}, p, nil
	case *ast.IntegerNode:
		return &value{kind: kNumber, pos: p, str: fmt.Sprint(n.Value)}, p, nil
	case *ast.FloatNode:
		if math.IsInf(n.Value, 0) || math.IsNaN(n.Value) {
			return nil, p, errors.New("infinities and NaN are not JSON numbers")
		}
		return &value{kind: kNumber, pos: p, str: strconv.FormatFloat(n.Value, 'g', -1, 64)}, p, nil
	case *ast.StringNode:
		return &value{kind: kString, pos: p, str: n.Value}, p, nil
	case *ast.LiteralNode:
		return &value{kind: kString, pos: p, str: n.Value.Value}, p, nil
	case *ast.MappingNode:
		v := &value{kind: kMap, pos: p}
		for _, mv := range n.Values {
			if ep, err := addField(v, mv); err != nil {
				return nil, ep, err
			}
		}
		return v, p, nil
	case *ast.MappingValueNode: // a mapping of one pair
		v := &value{kind: kMap, pos: nodePos(n.Key)}
		if ep, err := addField(v, n); err != nil {
			return nil, ep, err
		}
		return v, v.pos, nil
	case *ast.SequenceNode:
		v := &value{kind: kList, pos: p}
		for _, it := range n.Values {
			iv, ep, err := convert(it)
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

func addField(v *value, mv *ast.MappingValueNode) (Pos, error) {
	kp := nodePos(mv.Key)
	var key string
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
		key = k.GetToken().Value
	case *ast.MergeKeyNode:
		return kp, errors.New("YAML merge keys (<<) are not supported")
	default:
		return kp, errors.New("mapping keys must be plain strings")
	}
	if v.get(key) != nil {
		return kp, fmt.Errorf("key %q appears twice in this mapping", key)
	}
	val, ep, err := convert(mv.Value)
	if err != nil {
		return ep, err
	}
	v.fields = append(v.fields, field{key: key, keyPos: kp, val: val})
	return kp, nil
}
