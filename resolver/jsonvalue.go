package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/toolgate/toolgate/shared/excerpt"
)

// format is the grammar a source file is read in.
type format int

const (
	formatYAML format = iota // YAML 1.2, one document (parseYAML)
	formatJSON               // one JSON text, RFC 8259 (parseJSON)
)

// formatOf chooses the grammar of the file named file by its name: a name
// ending in ".json" (in any case) is read as JSON, any other as YAML
// (docs/solutions.md §2.1). The name, not the content, decides, so that a
// file reads the same wherever it is checked: the CLI, the publish function
// (which receives the base name the caller proof signs) and the
// workflow-validator tool (format json names the text "solution.json").
func formatOf(file string) format {
	if strings.HasSuffix(strings.ToLower(file), ".json") {
		return formatJSON
	}
	return formatYAML
}

// parseJSON parses src, the text of a .json file, as one JSON text (RFC
// 8259) into the value tree parseYAML gives, each value and key with the
// line and column (in characters) of its first character. It is strict
// where YAML, which otherwise reads most JSON, is lenient: no trailing
// commas, comments, single quotes, unquoted names, NaN or infinities,
// leading zeros or "+" (RFC 8259 §6), no byte order mark (§8.1), nothing
// after the value. As in YAML, a name may appear once per object and may
// not be empty, and values nest at most MaxDepth deep. Numbers keep the
// literal as written, so that refusedNumbers decides on them as on YAML's.
// The error names, in words, what is wrong at the returned position; an
// object, array or string that is never closed is reported where it opens.
func parseJSON(src []byte) (*value, Pos, error) {
	if len(src) > MaxSourceBytes {
		return nil, Pos{1, 1}, fmt.Errorf("the file is %d bytes; a Solution may be at most %d (8 MiB)", len(src), MaxSourceBytes)
	}
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		return nil, Pos{1, 1}, errors.New("the file starts with a byte order mark (U+FEFF), which a JSON text may not carry (RFC 8259 §8.1): save it as UTF-8 without one")
	}
	if !utf8.Valid(src) {
		return nil, invalidUTF8At(src), errors.New("the file is not valid UTF-8")
	}
	// Repeated names are refused by the tree builder, which can say where
	// the first one is.
	p := &jsonParser{src: src, dec: jsontext.NewDecoder(bytes.NewReader(src), jsontext.AllowDuplicateNames(true))}
	p.lines.src = src
	v, pos, err := p.value(0)
	if err != nil {
		return nil, pos, err
	}
	if end := skipJSONSpace(src, int(p.dec.InputOffset())); end < len(src) {
		return nil, p.pos(end), fmt.Errorf("text follows the JSON value that ends on line %d: a .json file holds one JSON value (RFC 8259 §2)", p.pos(int(p.dec.InputOffset())-1).Line)
	}
	return v, pos, nil
}

// jsonParser builds the value tree of one JSON text from jsontext's tokens.
type jsonParser struct {
	src   []byte
	dec   *jsontext.Decoder
	lines lineCounter
	// open lists the objects and arrays being read, outermost first, for
	// an error to name the one that is never closed.
	open []opened
	// start is the offset of the token read last, or being read when an
	// error came.
	start int
}

// opened is an object or array whose end has not been read yet.
type opened struct {
	delim byte // '{' or '['
	at    int  // offset of the delimiter
}

func (p *jsonParser) pos(off int) Pos { return p.lines.at(off) }

// next reads one token and notes the offset of its first byte: the first
// after the whitespace and the ',' or ':' that precede it.
func (p *jsonParser) next() (jsontext.Token, error) {
	p.start = skipJSONDelim(p.src, int(p.dec.InputOffset()))
	return p.dec.ReadToken()
}

func (p *jsonParser) value(depth int) (*value, Pos, error) {
	tok, err := p.next()
	if err != nil {
		return p.fail(err)
	}
	pos := p.pos(p.start)
	if depth > MaxDepth {
		return nil, pos, fmt.Errorf("values nest deeper than %d levels", MaxDepth)
	}
	switch tok.Kind() {
	case 'n':
		return &value{kind: kNull, pos: pos}, pos, nil
	case 't', 'f':
		return &value{kind: kBool, pos: pos, b: tok.Bool()}, pos, nil
	case '"':
		return &value{kind: kString, pos: pos, str: tok.String()}, pos, nil
	case '0':
		return number(tok.String(), pos), pos, nil
	case '{':
		p.open = append(p.open, opened{'{', p.start})
		v := &value{kind: kMap, pos: pos}
		seen := map[string]Pos{} // each name's position, for a repeated one
		for p.dec.PeekKind() != '}' {
			name, err := p.next()
			if err != nil {
				return p.fail(err)
			}
			key, kp := name.String(), p.pos(p.start)
			if first, ok := seen[key]; ok {
				return nil, kp, fmt.Errorf("key %q appears twice in this object (first on line %d)", excerpt.BytesWithin(key, maxQuotedBytes, "..."), first.Line)
			}
			seen[key] = kp
			if key == "" {
				return nil, kp, errors.New("an object's name may not be empty")
			}
			val, ep, err := p.value(depth + 1)
			if err != nil {
				return nil, ep, err
			}
			v.fields = append(v.fields, field{key: key, keyPos: kp, val: val})
		}
		if _, err := p.next(); err != nil {
			return p.fail(err)
		}
		p.open = p.open[:len(p.open)-1]
		return v, pos, nil
	case '[':
		p.open = append(p.open, opened{'[', p.start})
		v := &value{kind: kList, pos: pos}
		for p.dec.PeekKind() != ']' {
			it, ep, err := p.value(depth + 1)
			if err != nil {
				return nil, ep, err
			}
			v.items = append(v.items, it)
		}
		if _, err := p.next(); err != nil {
			return p.fail(err)
		}
		p.open = p.open[:len(p.open)-1]
		return v, pos, nil
	}
	// jsontext returns no other kind from a successful ReadToken.
	return nil, pos, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}

// fail explains a jsontext error in words, at the construct it concerns.
func (p *jsonParser) fail(err error) (*value, Pos, error) {
	at, err := p.explain(err)
	return nil, p.pos(at), err
}

// explain turns a jsontext error into an offset and a sentence. jsontext
// gives an offset "at or after" the fault and a terse text; the sentence
// is chosen from the source around that offset.
func (p *jsonParser) explain(err error) (int, error) {
	src, start := p.src, p.start
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		switch {
		case start < len(src) && src[start] == '"':
			return start, fmt.Errorf("the string that starts on line %d is not closed: the file ends before its closing \"", p.pos(start).Line)
		case len(p.open) > 0:
			o := p.open[len(p.open)-1]
			return o.at, fmt.Errorf("%s: the file ends before its %q", p.opener(o), ch(closer(o.delim)))
		case skipJSONSpace(src, 0) == len(src):
			return 0, errors.New("the file holds no JSON value")
		}
		return start, errors.New("the file ends inside this value: write the number, true, false or null in full")
	}
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return start, fmt.Errorf("read JSON: %v", err)
	}
	o := min(int(se.ByteOffset), len(src))
	// An error inside the token that starts at start: a string or a number
	// that does not end well, or a misspelt literal.
	if o > start && start < len(src) {
		switch c := src[start]; {
		case c != '"' && p.wantName() && (lastJSONByte(src, start) == '{' || lastJSONByte(src, start) == ','):
			return start, errors.New(`object names are strings in double quotes (RFC 8259 §4): write "name": value`)
		case c == '"':
			return p.inString(start, o)
		case c == '-' && !(start+1 < len(src) && isLetter(src[start+1])) || isDigit(c):
			return start, errors.New("this number is incomplete: JSON wants digits after a \"-\", after the decimal point and in the exponent (RFC 8259 §6)")
		case c == 't' || c == 'f' || c == 'n':
			return start, errors.New("this is not a JSON value: write true, false or null in full and in lower case (RFC 8259 §3)")
		}
	}
	j := skipJSONSpace(src, o)
	if j >= len(src) {
		return o, fmt.Errorf("this is not JSON (RFC 8259): %v", se.Err)
	}
	prev := lastJSONByte(src, j)
	c := src[j]
	switch {
	case c == ',' && (prev == ',' || prev == '{' || prev == '['):
		return j, errors.New("a value is missing before this comma (RFC 8259 §4, §5)")
	case c == ',' && len(p.open) > 0 && nextJSONByte(src, j+1) == closer(p.open[len(p.open)-1].delim):
		return j, fmt.Errorf("a comma may not follow the last %s (RFC 8259 §4, §5): remove it", map[byte]string{'}': "member of an object", ']': "element of an array"}[nextJSONByte(src, j+1)])
	case c == '/' && j+1 < len(src) && (src[j+1] == '/' || src[j+1] == '*'), c == '#':
		return j, errors.New("JSON has no comments (RFC 8259 §2): remove it, or rename the file to .yaml and write it as a # comment")
	case c == '\'':
		return j, errors.New("JSON strings are in double quotes (RFC 8259 §7), not single quotes")
	case c == '+':
		return j, errors.New(`JSON numbers have no leading "+" (RFC 8259 §6): remove it`)
	case c == '.':
		return j, errors.New("JSON numbers have digits before the decimal point (RFC 8259 §6): write 0.5, not .5")
	case (c == 'x' || c == 'X' || c == 'o' || c == 'b') && afterZero(src, j):
		return j - 1, errors.New("JSON numbers are decimal only (RFC 8259 §6): write the number in decimal, or quote it for a string")
	case isDigit(c) && afterZero(src, j):
		n := j - 1
		if n > 0 && src[n-1] == '-' {
			n--
		}
		return n, errors.New("JSON numbers have no leading zeros (RFC 8259 §6): write the number without them, or quote it for a string")
	case c == ',' && (nextJSONByte(src, j+1) == '}' || nextJSONByte(src, j+1) == ']'):
		j = skipJSONSpace(src, j+1)
		c = src[j]
		fallthrough
	case c == '}' || c == ']':
		if k := len(p.open); k > 0 && closer(p.open[k-1].delim) != c {
			o := p.open[k-1]
			return o.at, fmt.Errorf("%s: %q at line %d column %d comes before its %q", p.opener(o), ch(c), p.pos(j).Line, p.pos(j).Column, ch(closer(o.delim)))
		}
		return j, fmt.Errorf("%q closes nothing that is open", ch(c))
	case p.wantName() && (prev == '{' || prev == ','):
		return j, errors.New(`object names are strings in double quotes (RFC 8259 §4): write "name": value`)
	case isLetter(c) || c == '-' && j+1 < len(src) && isLetter(src[j+1]):
		if isLetter(c) && j > 0 && src[j-1] == '-' {
			j-- // jsontext reports the letter after a "-"
		}
		word := src[j:]
		if k := bytes.IndexFunc(word, func(r rune) bool { return r != '-' && !isLetter(byte(r)) }); k >= 0 {
			word = word[:k]
		}
		switch w := string(word); strings.TrimPrefix(w, "-") {
		case "NaN", "Infinity", "inf", "nan":
			return j, fmt.Errorf("%s is not a JSON number: infinities and NaN have no JSON form (RFC 8259 §6) and a definition cannot carry them", w)
		case "True", "False", "Null", "TRUE", "FALSE", "NULL", "None", "undefined":
			return j, fmt.Errorf("%s is not a JSON value: JSON writes true, false and null in lower case (RFC 8259 §3)", w)
		}
		return j, errors.New("this is not a JSON value: a string is written in double quotes (RFC 8259 §7)")
	case prev == '"' && p.afterName():
		return j, errors.New(`a ":" must follow an object's name (RFC 8259 §4)`)
	case len(p.open) > 0 && (prev == '"' || prev == '}' || prev == ']' || isDigit(prev) || isLetter(prev)):
		o := p.open[len(p.open)-1]
		end := lastJSONByteAt(src, j)
		return end + 1, fmt.Errorf("a %q or %q must follow this value, in the %s that opens on line %d: the next one, on line %d, comes without it", ",", ch(closer(o.delim)), kindWord(o.delim), p.pos(o.at).Line, p.pos(j).Line)
	}
	return j, fmt.Errorf("this is not JSON (RFC 8259): %v", se.Err)
}

// inString explains an error at offset o inside the string that starts at
// start.
func (p *jsonParser) inString(start, o int) (int, error) {
	line := p.pos(start).Line
	switch c := p.src[o]; {
	case c == '\n' || c == '\r':
		return start, fmt.Errorf("the string that starts on line %d is not closed on its line: a JSON string ends with \" and writes a line break as \\n (RFC 8259 §7)", line)
	case c == '\t':
		return o, errors.New(`a JSON string may not hold a tab as it is: write it as \t (RFC 8259 §7)`)
	case c < 0x20:
		return o, fmt.Errorf("a JSON string may not hold the control character U+%04X as it is: write it as \\u%04X (RFC 8259 §7)", c, c)
	case c == '\\' && o+1 < len(p.src) && (p.src[o+1] == 'u' || p.src[o+1] == 'U'):
		return o, errors.New(`this \u escape is not one JSON reads: four hex digits, and a surrogate only in a pair, \uD83D\uDE00 (RFC 8259 §7)`)
	case c == '\\':
		return o, errors.New(`this is not a JSON escape: JSON knows \" \\ \/ \b \f \n \r \t and \uXXXX (RFC 8259 §7)`)
	}
	return o, fmt.Errorf("the string that starts on line %d is not valid JSON (RFC 8259 §7)", line)
}

// wantName reports whether the decoder, inside an object, waits for a
// member's name (rather than its value).
func (p *jsonParser) wantName() bool {
	if len(p.open) == 0 || p.open[len(p.open)-1].delim != '{' {
		return false
	}
	_, n := p.dec.StackIndex(p.dec.StackDepth())
	return n%2 == 0
}

// afterName reports whether the string read last is an object member's
// name, not its value.
func (p *jsonParser) afterName() bool {
	if len(p.open) == 0 || p.open[len(p.open)-1].delim != '{' {
		return false
	}
	_, n := p.dec.StackIndex(p.dec.StackDepth())
	return n%2 == 1
}

// opener names an open object or array: `the "{" on line 5 opens an object
// that is not closed`.
func (p *jsonParser) opener(o opened) string {
	return fmt.Sprintf("the %q on line %d opens %s that is not closed", ch(o.delim), p.pos(o.at).Line, map[byte]string{'{': "an object", '[': "an array"}[o.delim])
}

func kindWord(delim byte) string { return map[byte]string{'{': "object", '[': "array"}[delim] }

func closer(open byte) byte { return map[byte]byte{'{': '}', '[': ']'}[open] }

// ch is the character c as a string, for %q to quote it "like this".
func ch(c byte) string { return string(rune(c)) }

// afterZero reports whether the byte before j ends a number that is just
// "0" or "-0", so that what is at j makes it a leading zero or a base
// prefix.
func afterZero(src []byte, j int) bool {
	return j > 0 && src[j-1] == '0' && (j == 1 || !isDigit(src[j-2]) && src[j-2] != '.')
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// skipJSONSpace returns the offset of the first byte at or after off that
// is not JSON whitespace (RFC 8259 §2), or len(src).
func skipJSONSpace(src []byte, off int) int {
	for off < len(src) && (src[off] == ' ' || src[off] == '\t' || src[off] == '\n' || src[off] == '\r') {
		off++
	}
	return off
}

// skipJSONDelim is skipJSONSpace that also skips the ',' and ':' that
// separate tokens.
func skipJSONDelim(src []byte, off int) int {
	for off = skipJSONSpace(src, off); off < len(src) && (src[off] == ',' || src[off] == ':'); {
		off = skipJSONSpace(src, off+1)
	}
	return off
}

// nextJSONByte is the first byte at or after off that is not whitespace,
// or 0.
func nextJSONByte(src []byte, off int) byte {
	if off = skipJSONSpace(src, off); off < len(src) {
		return src[off]
	}
	return 0
}

// lastJSONByte is the last byte before off that is not whitespace, or 0.
func lastJSONByte(src []byte, off int) byte {
	if i := lastJSONByteAt(src, off); i >= 0 {
		return src[i]
	}
	return 0
}

// lastJSONByteAt is the offset of the last byte before off that is not
// whitespace, or -1.
func lastJSONByteAt(src []byte, off int) int {
	for off--; off >= 0 && (src[off] == ' ' || src[off] == '\t' || src[off] == '\n' || src[off] == '\r'); off-- {
	}
	return off
}

// lineCounter turns byte offsets into 1-based lines and columns, columns
// counted in characters as go-yaml counts them, so that a diagnostic names
// the same column in a .json file as in the same text read as YAML. Offsets
// asked in increasing order cost time linear in the file's size.
type lineCounter struct {
	src []byte
	off int // offset of the last answer
	pos Pos // the last answer; the zero Pos before the first
}

func (c *lineCounter) at(off int) Pos {
	off = max(0, min(off, len(c.src)))
	if c.pos.Line == 0 || off < c.off {
		c.off, c.pos = 0, Pos{1, 1}
	}
	for c.off < off {
		r, size := utf8.DecodeRune(c.src[c.off:])
		if r == '\n' {
			c.pos.Line, c.pos.Column = c.pos.Line+1, 1
		} else {
			c.pos.Column++
		}
		c.off += size
	}
	return c.pos
}
