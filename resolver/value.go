package resolver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/toolgate/toolgate/shared/excerpt"
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
	kind kind
	pos  Pos
	str  string // kString: the text; kNumber: the number literal as written
	b    bool
	// refused, for a kNumber, says why its literal is not one a definition
	// may carry (refusedNumber); "" when it is. parseValue's caller reports
	// every refused number (refusedNumbers) before decoding.
	refused string
	fields  []field
	items   []*value
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

// parseValue parses the text of a file in format f (formatOf its name)
// into a value tree: parseYAML or parseJSON. On error, the position is
// where the error is.
func parseValue(src []byte, f format) (*value, Pos, error) {
	if f == formatJSON {
		return parseJSON(src)
	}
	return parseYAML(src)
}

// parseYAML parses one YAML document (YAML reads most JSON texts too) into
// a value tree. It refuses anchors, aliases, merge keys, tags and several
// documents: none of them has a JSON meaning a Step Functions definition
// could carry. Number literals that a definition may not carry (NaN,
// infinities, YAML-only forms, values a double does not hold) are kept,
// marked refused, for refusedNumbers to report all of them with their
// fields. A syntax error is explained by yamlSyntax.
func parseYAML(src []byte) (*value, Pos, error) {
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
	tokens := lexer.Tokenize(string(src))
	if p, err := directive(src, tokens); err != nil {
		return nil, p, err
	}
	if p, wide := mappingTooWide(tokens); wide && tokens.InvalidToken() == nil {
		return nil, p, fmt.Errorf("a mapping here has more than %d keys, which a YAML file may not hold (its parser takes time and memory that grow with the square of a mapping's keys): write it as JSON (.json)", MaxMappingKeys)
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		var pe positioned
		if errors.As(err, &pe) && pe.GetToken() != nil {
			pos, err := yamlSyntax(src, tokenPos(pe.GetToken()), pe.GetMessage())
			return nil, pos, err
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
	return convert(docs[0].Body, 0)
}

// directive refuses the first YAML directive (%YAML, %TAG or a reserved
// one, YAML 1.2 §6.8) among tokens of src: every YAML file is read as
// YAML 1.2, and a "%YAML 1.1" that the parser ignored would let readers
// of YAML 1.1 see another document (yes, on and 010 are a boolean and a
// number there, strings and ten here).
func directive(src []byte, tokens token.Tokens) (Pos, error) {
	for _, tk := range tokens {
		if tk.Type != token.DirectiveType {
			continue
		}
		p := tokenPos(tk)
		line := src[offsetOf(src, Pos{p.Line, 1}):]
		if end := bytes.IndexByte(line, '\n'); end >= 0 {
			line = line[:end]
		}
		return p, fmt.Errorf("the directive %q is refused: toolgate reads every YAML file as YAML 1.2, whatever a directive says (YAML 1.1 reads yes, on and 010 otherwise); remove the directive", excerpt.BytesWithin(string(bytes.TrimSpace(line)), maxQuotedBytes, "..."))
	}
	return Pos{}, nil
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

// MaxMappingKeys bounds the keys of one mapping, block or flow, in a YAML
// file. The YAML parser (goccy/go-yaml) takes time and memory that grow
// with the square of a block mapping's keys (25 000 keys took 3.5 s,
// 140 000 over 2 minutes and 558 MB, more than the publish function's 30 s
// and 512 MB); 5 000 parse in a fraction of a second. Sequences, and
// mappings inside their items (a Solution's steps), are linear, so a
// Solution of 10 000 steps is not concerned; a wider mapping can be
// written as JSON, which is read in linear time.
const MaxMappingKeys = 5_000

// mappingTooWide finds a mapping with more than MaxMappingKeys keys in the
// tokens of go-yaml's lexer (linear in the text), before its parser runs:
// the position of the key past the bound. Block scalars and quoted scalars
// are one token each, so text inside them counts nothing. A block
// mapping's keys are the implicit keys (the token before a ":" on its
// line) and explicit keys ("?") at one column, until a key or a sequence
// entry ("-") less indented ends it; a flow mapping's keys are its
// non-empty entries ("{a, b: 1}" has two).
func mappingTooWide(tokens token.Tokens) (Pos, bool) {
	type block struct{ col, keys int }
	type flow struct {
		mapping bool
		keys    int
		open    bool // an entry may start: after "{", "[" or ","
	}
	var blocks []block
	var flows []flow
	key := func(p Pos) bool { // a block mapping key at p
		for len(blocks) > 0 && blocks[len(blocks)-1].col > p.Column {
			blocks = blocks[:len(blocks)-1]
		}
		if len(blocks) == 0 || blocks[len(blocks)-1].col < p.Column {
			blocks = append(blocks, block{col: p.Column})
		}
		b := &blocks[len(blocks)-1]
		b.keys++
		return b.keys > MaxMappingKeys
	}
	var prev *token.Token // the previous token outside comments
	var start Pos         // where the last node outside flow collections starts
	for _, tk := range tokens {
		if tk.Type == token.CommentType {
			continue
		}
		p := tokenPos(tk)
		if n := len(flows); n > 0 {
			f := &flows[n-1]
			if tk.Type == token.CollectEntryType {
				f.open = true
			} else if f.open && tk.Type != token.MappingEndType && tk.Type != token.SequenceEndType {
				f.open = false
				if f.mapping {
					if f.keys++; f.keys > MaxMappingKeys {
						return p, true
					}
				}
			}
		}
		switch tk.Type {
		case token.MappingStartType, token.SequenceStartType:
			if len(flows) == 0 {
				start = p
			}
			flows = append(flows, flow{mapping: tk.Type == token.MappingStartType, open: true})
		case token.MappingEndType, token.SequenceEndType:
			if len(flows) > 0 {
				flows = flows[:len(flows)-1]
			}
		case token.DocumentHeaderType:
			blocks, flows = nil, nil
		case token.SequenceEntryType:
			if len(flows) == 0 {
				for len(blocks) > 0 && blocks[len(blocks)-1].col > p.Column {
					blocks = blocks[:len(blocks)-1]
				}
			}
		case token.MappingKeyType:
			if len(flows) == 0 && key(p) {
				return p, true
			}
		case token.MappingValueType:
			// An implicit key is on the line of its ":"; a ":" after a
			// token of an earlier line is an explicit key's value, whose
			// "?" counted.
			if len(flows) == 0 && prev != nil && prev.Type != token.MappingKeyType && tokenPos(prev).Line == p.Line && start.Line == p.Line && key(start) {
				return start, true
			}
		default:
			if len(flows) == 0 {
				start = p
			}
		}
		prev = tk
	}
	return Pos{}, false
}

// flowTooDeep finds flow collections ([ and {) nested deeper than MaxDepth
// before the YAML parser sees them: go-yaml's time and memory grow faster
// than linearly with such nesting. Quoted scalars and comments are skipped;
// the scan (scanFlow) is approximate only in what it lets through, which the depth
// check on the parsed tree then refuses.
func flowTooDeep(src []byte) (Pos, bool) {
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
	var deep Pos
	depth := 0
	scanFlow(src, func(_ int, p Pos, c byte) bool {
		if c == ']' || c == '}' {
			depth = max(0, depth-1)
			return true
		}
		if depth++; depth > MaxDepth+1 {
			deep = p
			return false
		}
		return true
	})
	return deep, deep.Line > 0
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

// yamlCoreNumber is what the YAML 1.2 core schema (YAML 1.2.2 §10.3.2)
// resolves to an integer, a float, an infinity or NaN. go-yaml, which
// follows YAML 1.1 in places, leaves some of these (1e3, +1e3, +.inf) as
// strings; a plain scalar that matches is treated as a number all the same.
var yamlCoreNumber = regexp.MustCompile(`^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|` +
	`[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)

// number makes a number value of a YAML number token. A literal that
// refusedNumber refuses is kept with its reason, so that every one can be
// reported with its field.
func number(text string, p Pos) *value {
	return &value{kind: kNumber, pos: p, str: text, refused: refusedNumber(text)}
}

// refusedNumber says why a number literal may not go into a definition, as
// the end of a sentence whose subject is the literal; "" when it may.
//
// A definition carries a number as written, and what reads it (Step
// Functions, the dispatcher, the tools, a reviewer's browser) is free to
// hold it as an IEEE 754 double, as most JSON parsers do. So a literal must
// be written in the JSON number grammar (RFC 8259 §6; the YAML forms
// outside it, +1, 0x10, 010, 1_000, .5, 1., .inf, .nan, have no JSON form,
// and YAML 1.1 and YAML 1.2 read some of them differently: 010 is 8 or 10,
// 1_000 a number or a string), and it must survive the
// trip to a double and back: RFC 8259 §6 warns that a number such as 1E400
// or 3.141592653589793238462643383279 expects more range or precision
// than is widely available. Out of range (1e400, -1e400), below the
// smallest double (1e-400, which parsers read as 0) and more digits than a
// double holds (12345678901234567891) are refused; 0.1 is not, since 0.1
// is what the nearest double prints as.
func refusedNumber(text string) string {
	if !jsonNumber.MatchString(text) {
		return notJSONNumber(text)
	}
	digits, exp, ok := decimal(text)
	switch {
	case !ok:
		return "has an exponent beyond what JSON parsers carry (RFC 8259 §6)"
	case digits == "":
		return "" // 0, -0, 0.0e5: exactly zero
	}
	f, err := strconv.ParseFloat(text, 64)
	switch {
	case err != nil: // strconv.ErrRange: ±Inf
		return "is outside the range of an IEEE 754 double (±1.7976931348623157e308): JSON parsers read it as an infinity or refuse it (RFC 8259 §6)"
	case f == 0:
		return "is closer to 0 than the smallest non-zero IEEE 754 double (5e-324): JSON parsers read it as 0 (RFC 8259 §6); write 0"
	}
	if d, e, _ := decimal(strconv.FormatFloat(f, 'e', -1, 64)); d != digits || e != exp {
		read := shortest(f)
		return fmt.Sprintf("has more digits than an IEEE 754 double holds: JSON parsers read it as %s (RFC 8259 §6); write %s, or quote it for a string", read, read)
	}
	return ""
}

// shortest writes f as the shortest JSON number that reads back as f:
// whole numbers below 1e21 in plain digits, as JavaScript prints them
// (ECMA-262 Number::toString), others with an exponent.
func shortest(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// notJSONNumber explains a YAML number literal outside the JSON grammar and,
// where the value is plain, says how to write it.
func notJSONNumber(text string) string {
	sign, body := "", text
	if strings.HasPrefix(body, "+") || strings.HasPrefix(body, "-") {
		sign, body = body[:1], body[1:]
	}
	lower := strings.ToLower(body)
	switch {
	case lower == ".inf" || lower == ".nan":
		return "is not a JSON number: infinities and NaN have no JSON form (RFC 8259 §6) and a definition cannot carry them"
	case strings.HasPrefix(lower, "0x") || strings.HasPrefix(lower, "0o") || strings.HasPrefix(lower, "0b"):
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[lower[1]]
		if n, err := strconv.ParseInt(sign+lower, 0, 64); err == nil && !strings.Contains(lower, "_") {
			return fmt.Sprintf("is not a JSON number: YAML reads it in base %d, JSON numbers are decimal only (RFC 8259 §6); write %d, or quote it for a string", base, n)
		}
		return fmt.Sprintf("is not a JSON number: YAML reads it in base %d, JSON numbers are decimal only (RFC 8259 §6); write it in decimal, or quote it for a string", base)
	case strings.Contains(body, "_"):
		msg := "is not a JSON number: YAML 1.1 reads the _ as a digit separator, YAML 1.2 reads a string, and JSON has no separators (RFC 8259 §6)"
		if fix := fixJSONNumber(strings.ReplaceAll(text, "_", "")); fix != "" {
			return msg + "; write " + fix + ", or quote it for a string"
		}
		return msg + "; quote it for a string"
	case len(body) > 1 && body[0] == '0' && body[1] >= '0' && body[1] <= '9':
		return "is not a JSON number: YAML 1.1 reads a leading 0 as octal, YAML 1.2 as decimal, and JSON allows no leading zeros (RFC 8259 §6); write the number you mean without them, or quote it for a string"
	}
	var why []string
	if sign == "+" {
		why = append(why, `JSON has no leading "+"`)
	}
	if strings.HasPrefix(body, ".") || strings.Contains(body, ".e") || strings.Contains(body, ".E") || strings.HasSuffix(body, ".") {
		why = append(why, "JSON needs digits on both sides of the decimal point")
	}
	if fix := fixJSONNumber(text); fix != "" && len(why) > 0 {
		return fmt.Sprintf("is not a JSON number: %s (RFC 8259 §6); write %s", strings.Join(why, " and "), fix)
	}
	return "is not a JSON number (RFC 8259 §6: decimal digits with an optional fraction and exponent); write it as one, or quote it for a string"
}

// fixJSONNumber rewrites a YAML 1.2 decimal (+1, .5, 1., +1.e3) as the JSON
// number of the same value, or returns "" when that is not enough or the
// result is itself refused.
func fixJSONNumber(text string) string {
	fix := strings.TrimPrefix(text, "+")
	neg := strings.HasPrefix(fix, "-")
	fix = strings.TrimPrefix(fix, "-")
	if strings.HasPrefix(fix, ".") {
		fix = "0" + fix
	}
	mant, exp := fix, ""
	if i := strings.IndexAny(fix, "eE"); i >= 0 {
		mant, exp = fix[:i], fix[i:]
	}
	if strings.HasSuffix(mant, ".") {
		mant += "0"
	}
	fix = mant + exp
	if neg {
		fix = "-" + fix
	}
	if !jsonNumber.MatchString(fix) || refusedNumber(fix) != "" {
		return ""
	}
	return fix
}

// decimal reduces a JSON number literal to its significant digits, without
// leading or trailing zeros, and the power of ten of the last one; the sign
// is dropped. Zero has no digits. ok is false when the exponent as written
// does not fit 32 bits (BigDecimal's scale in the JVM, for one, does not
// go further).
func decimal(text string) (digits string, exp int64, ok bool) {
	text = strings.TrimPrefix(text, "-")
	mant := text
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		x, err := strconv.ParseInt(text[i+1:], 10, 32)
		if err != nil {
			return "", 0, false
		}
		mant, exp = text[:i], x
	}
	whole, frac, _ := strings.Cut(mant, ".")
	exp -= int64(len(frac))
	d := strings.TrimLeft(whole+frac, "0")
	t := strings.TrimRight(d, "0")
	return t, exp + int64(len(d)-len(t)), true
}

// numberProblem is a number literal that may not go into a definition.
type numberProblem struct {
	pos    Pos
	field  string // where it is written, as a reader names it: version, step "f" with.n
	text   string
	reason string
}

func (p numberProblem) String() string {
	return fmt.Sprintf("%s: %s %s", p.field, excerpt.BytesWithin(p.text, maxQuotedBytes, "..."), p.reason)
}

// refusedNumbers finds every refused number in the document v, in tree
// order, naming each by its field as the decoder's diagnostics do: version,
// policy.run_timeout_seconds, step "send" with.count, input.properties.n.maximum.
func refusedNumbers(v *value) []numberProblem {
	var out []numberProblem
	var walk func(v *value, field string)
	walk = func(v *value, field string) {
		switch v.kind {
		case kNumber:
			if v.refused != "" {
				if field == "" {
					field = "the document"
				}
				out = append(out, numberProblem{pos: v.pos, field: field, text: v.str, reason: v.refused})
			}
		case kMap:
			for _, f := range v.fields {
				walk(f.val, fieldPath(field, f.key))
			}
		case kList:
			for i, it := range v.items {
				if field == "steps" {
					walk(it, stepName(it, i)+" ")
					continue
				}
				walk(it, fmt.Sprintf("%s[%d]", field, i))
			}
		}
	}
	walk(v, "")
	return out
}

// plainKey is a key written as it is in a field path; others are quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// fieldPath appends key to the path parent (which ends in a space after a
// step's name).
func fieldPath(parent, key string) string {
	switch {
	case !plainKey.MatchString(key):
		return fmt.Sprintf("%s[%q]", strings.TrimSuffix(parent, " "), excerpt.BytesWithin(key, maxQuotedBytes, "..."))
	case parent == "" || strings.HasSuffix(parent, " "):
		return parent + key
	}
	return parent + "." + key
}

// stepName names the index-th step as the decoder does: step "id", or
// step N (1-based) when it has no string id.
func stepName(st *value, index int) string {
	if st.kind == kMap {
		if f := st.get("id"); f != nil && f.val.kind == kString {
			return fmt.Sprintf("step %q", excerpt.BytesWithin(f.val.str, maxQuotedBytes, "..."))
		}
	}
	return fmt.Sprintf("step %d", index+1)
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
		return number(n.Token.Value, p), p, nil
	case *ast.FloatNode:
		return number(n.Token.Value, p), p, nil
	case *ast.InfinityNode:
		return number(n.Token.Value, p), p, nil
	case *ast.NanNode:
		return number(n.Token.Value, p), p, nil
	case *ast.StringNode:
		if n.Token.Type == token.StringType && (jsonNumber.MatchString(n.Value) || yamlCoreNumber.MatchString(n.Value)) {
			// A plain scalar such as 1e3 or +.inf is a number in YAML 1.2
			// (and 1e3 in JSON), though go-yaml leaves it a string.
			return number(n.Value, p), p, nil
		}
		return &value{kind: kString, pos: p, str: n.Value}, p, nil
	case *ast.LiteralNode:
		return &value{kind: kString, pos: p, str: n.Value.Value}, p, nil
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 {
			p = nodePos(n.Values[0].Key) // a block mapping's token is its first ':'
		}
		v := &value{kind: kMap, pos: p}
		seen := make(map[string]Pos, len(n.Values))
		for _, mv := range n.Values {
			if ep, err := addField(v, mv, depth, seen); err != nil {
				return nil, ep, err
			}
		}
		return v, p, nil
	case *ast.MappingValueNode: // a mapping of one pair
		v := &value{kind: kMap, pos: nodePos(n.Key)}
		if ep, err := addField(v, n, depth, map[string]Pos{}); err != nil {
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
	case *ast.AnchorNode, *ast.AliasNode:
		return nil, p, errors.New("YAML anchors and aliases are not supported: write the value out")
	case *ast.TagNode:
		return nil, p, fmt.Errorf("YAML tags (%q) are not supported", n.Start.Value)
	case *ast.MergeKeyNode:
		return nil, p, errors.New("YAML merge keys (<<) are not supported")
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &value{kind: kNull, pos: p}, p, nil
	}
	return nil, p, fmt.Errorf("unsupported YAML node %s", n.Type())
}

// addField adds the pair mv to the mapping v; seen holds the position of
// each key added so far (a map, so that a mapping of many keys costs time
// linear in their number).
func addField(v *value, mv *ast.MappingValueNode, depth int, seen map[string]Pos) (Pos, error) {
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
	if first, ok := seen[key]; ok {
		return kp, fmt.Errorf("key %q appears twice in this mapping (first on line %d)", excerpt.BytesWithin(key, maxQuotedBytes, "..."), first.Line)
	}
	seen[key] = kp
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
