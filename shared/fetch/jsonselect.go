package fetch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds JSON nesting, as encoding/json does (json.Valid refuses
// deeper texts).
const maxDepth = 10000

// parsePointer splits an RFC 6901 JSON Pointer into its reference tokens,
// with "~1" and "~0" decoded. "" is the whole document.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New(`a JSON Pointer is "" or starts with "/" (RFC 6901)`)
	}
	toks := strings.Split(p[1:], "/")
	if len(toks) > maxDepth {
		return nil, fmt.Errorf("a JSON Pointer of more than %d tokens cannot resolve", maxDepth)
	}
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || t[j+1] != '0' && t[j+1] != '1') {
				return nil, errors.New(`"~" must be followed by 0 or 1 (RFC 6901 §3)`)
			}
		}
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// arrayIndex reads an RFC 6901 array index: "0", or digits without a
// leading zero. "-" (past the end) never resolves.
func arrayIndex(s string) (int, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func pointerPrefix(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// selectJSON reads exactly one JSON text (RFC 8259) from r and returns the
// value at ptr, byte for byte as it appears in the body. It streams: it
// holds a 32 KiB window, the member name being compared and the selected
// value, whatever the body's size, and allocates nothing per token. When an
// object has a member name twice, the last one counts, as in JSON.parse and
// encoding/json. It returns a *parseError for a body that is not one JSON
// text (what json.Valid refuses), a *noMatch when ptr does not resolve, and
// r's error when reading fails.
func selectJSON(r io.Reader, ptr []string) (json.RawMessage, error) {
	w := walker{t: &tokenizer{r: r, buf: make([]byte, 32<<10)}, ptr: ptr}
	raw, found, err := w.walk(0)
	if err == nil {
		err = w.t.finish()
	}
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, &noMatch{at: w.failAt}
	}
	return raw, nil
}

// noMatch says which prefix of a select does not resolve.
type noMatch struct{ at string }

func (e *noMatch) Error() string { return "no " + e.at }

type walker struct {
	t      *tokenizer
	ptr    []string
	failAt string // the shortest pointer prefix that does not resolve
}

// walk consumes one value at depth and returns its part at ptr[depth:].
func (w *walker) walk(depth int) (json.RawMessage, bool, error) {
	t := w.t
	if depth == len(w.ptr) {
		raw, err := t.capture()
		return raw, err == nil, err
	}
	k, err := t.next()
	if err != nil {
		return nil, false, err
	}
	var (
		raw     json.RawMessage
		found   bool
		matched bool
	)
	switch k {
	case beginObject:
		for {
			if k, err = t.next(); err != nil {
				return nil, false, err
			}
			if k == endObject {
				break
			}
			if string(t.key) == w.ptr[depth] {
				// A later member of the same name replaces this result.
				if raw, found, err = w.walk(depth + 1); err != nil {
					return nil, false, err
				}
				matched = true
			} else if err = t.skip(); err != nil {
				return nil, false, err
			}
		}
	case beginArray:
		idx, isIndex := arrayIndex(w.ptr[depth])
		for i := 0; ; i++ {
			more, err := t.more()
			if err != nil {
				return nil, false, err
			}
			if !more {
				if _, err := t.next(); err != nil { // "]"
					return nil, false, err
				}
				break
			}
			if isIndex && i == idx {
				if raw, found, err = w.walk(depth + 1); err != nil {
					return nil, false, err
				}
				matched = true
			} else if err = t.skip(); err != nil {
				return nil, false, err
			}
		}
	}
	if !matched {
		w.failAt = pointerPrefix(w.ptr[:depth+1])
	}
	return raw, found, nil
}

type kind uint8

const (
	beginObject kind = iota + 1
	endObject
	beginArray
	endArray
	key    // an object member's name, decoded into tokenizer.key
	scalar // a string, number, true, false or null
)

// state is what the grammar allows next (RFC 8259 §2–§7).
type state uint8

const (
	wantValue      state = iota // the top-level value, or a value after "[", "," or ":"
	wantFirstValue              // after "[": a value or "]"
	wantFirstKey                // after "{": a member name or "}"
	wantKey                     // after "," in an object: a member name
	afterValue                  // after a value in a container: "," or the closing bracket
	done                        // after the top-level value: only blanks
)

// tokenizer is a streaming, validating JSON tokenizer over its own window.
type tokenizer struct {
	r        io.Reader
	buf      []byte
	pos, end int
	off      int64 // offset of buf[0] in the stream
	rerr     error // the reader's error once seen (io.EOF at the end)
	stack    []byte
	st       state
	key      []byte // the last member name, decoded
	capOn    bool
	captured []byte
}

func (t *tokenizer) syntax(what string) error {
	if t.pos == t.end && t.rerr != nil && t.rerr != io.EOF {
		return t.rerr
	}
	if t.pos == t.end && t.rerr == io.EOF {
		return parseErrorf("the body is not valid JSON (RFC 8259): it ends before the value does")
	}
	return parseErrorf("the body is not valid JSON (RFC 8259): %s at byte %d", what, t.off+int64(t.pos))
}

// peek returns the next byte without consuming it; ok is false at the end
// of the input or on a read error.
func (t *tokenizer) peek() (byte, bool) {
	for t.pos == t.end {
		if t.rerr != nil {
			return 0, false
		}
		t.off += int64(t.end)
		n, err := t.r.Read(t.buf)
		t.pos, t.end, t.rerr = 0, n, err
	}
	return t.buf[t.pos], true
}

func (t *tokenizer) take() {
	if t.capOn {
		t.captured = append(t.captured, t.buf[t.pos])
	}
	t.pos++
}

// blank consumes blanks (RFC 8259 §2) and peeks at the next byte.
func (t *tokenizer) blank() (byte, bool) {
	for {
		c, ok := t.peek()
		if !ok || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, ok
		}
		t.take()
	}
}

// next consumes one token.
func (t *tokenizer) next() (kind, error) {
	c, ok := t.blank()
	if !ok {
		return 0, t.syntax("")
	}
	switch t.st {
	case done:
		return 0, t.syntax("more than one JSON value")
	case afterValue:
		top := t.stack[len(t.stack)-1]
		switch {
		case c == ',':
			t.take()
			t.st = wantValue
			if top == '{' {
				t.st = wantKey
			}
			return t.next()
		case c == '}' && top == '{' || c == ']' && top == '[':
			return t.close()
		}
		return 0, t.syntax(`expected "," or a closing bracket`)
	case wantFirstKey, wantKey:
		if c == '}' && t.st == wantFirstKey {
			return t.close()
		}
		if c != '"' {
			return 0, t.syntax("expected a member name")
		}
		if err := t.str(true); err != nil {
			return 0, err
		}
		if c, ok = t.blank(); !ok || c != ':' {
			return 0, t.syntax(`expected ":"`)
		}
		t.take()
		t.st = wantValue
		return key, nil
	case wantFirstValue:
		if c == ']' {
			return t.close()
		}
	}
	// a value
	switch c {
	case '{', '[':
		if len(t.stack) >= maxDepth {
			return 0, t.syntax(fmt.Sprintf("nesting deeper than %d", maxDepth))
		}
		t.take()
		t.stack = append(t.stack, c)
		if c == '{' {
			t.st = wantFirstKey
			return beginObject, nil
		}
		t.st = wantFirstValue
		return beginArray, nil
	case '"':
		if err := t.str(false); err != nil {
			return 0, err
		}
	case 't':
		if err := t.literal("true"); err != nil {
			return 0, err
		}
	case 'f':
		if err := t.literal("false"); err != nil {
			return 0, err
		}
	case 'n':
		if err := t.literal("null"); err != nil {
			return 0, err
		}
	default:
		if err := t.number(); err != nil {
			return 0, err
		}
	}
	t.valueDone()
	return scalar, nil
}

func (t *tokenizer) close() (kind, error) {
	c := t.buf[t.pos]
	t.take()
	t.stack = t.stack[:len(t.stack)-1]
	t.valueDone()
	if c == '}' {
		return endObject, nil
	}
	return endArray, nil
}

func (t *tokenizer) valueDone() {
	if len(t.stack) == 0 {
		t.st = done
	} else {
		t.st = afterValue
	}
}

// more reports whether the array being read has another element.
func (t *tokenizer) more() (bool, error) {
	c, ok := t.blank()
	if !ok {
		return false, t.syntax("")
	}
	return !(c == ']' && (t.st == wantFirstValue || t.st == afterValue)), nil
}

// skip consumes one value.
func (t *tokenizer) skip() error {
	depth := len(t.stack)
	for {
		k, err := t.next()
		if err != nil {
			return err
		}
		switch {
		case len(t.stack) < depth:
			return t.syntax("unexpected closing bracket")
		case k != key && len(t.stack) == depth:
			return nil
		}
	}
}

// capture consumes one value and returns its bytes.
func (t *tokenizer) capture() (json.RawMessage, error) {
	if t.st == afterValue { // an array element after the first: its ","
		c, ok := t.blank()
		if !ok || c != ',' {
			return nil, t.syntax(`expected ","`)
		}
		t.take()
		t.st = wantValue
	}
	if _, ok := t.blank(); !ok {
		return nil, t.syntax("")
	}
	t.capOn, t.captured = true, nil
	err := t.skip()
	t.capOn = false
	if err != nil {
		return nil, err
	}
	return t.captured, nil
}

// finish checks that only blanks follow the top-level value.
func (t *tokenizer) finish() error {
	if _, ok := t.blank(); ok {
		return t.syntax("more than one JSON value")
	}
	if t.rerr != io.EOF {
		return t.rerr
	}
	return nil
}

func (t *tokenizer) literal(word string) error {
	for i := 0; i < len(word); i++ {
		c, ok := t.peek()
		if !ok || c != word[i] {
			return t.syntax("invalid literal")
		}
		t.take()
	}
	return nil
}

// number consumes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (t *tokenizer) number() error {
	c, _ := t.peek()
	if c == '-' {
		t.take()
		c, _ = t.peek()
	}
	switch {
	case c == '0':
		t.take()
	case '1' <= c && c <= '9':
		t.digits()
	default:
		return t.syntax("invalid character")
	}
	if c, ok := t.peek(); ok && c == '.' {
		t.take()
		if t.digits() == 0 {
			return t.syntax("expected a digit")
		}
	}
	if c, ok := t.peek(); ok && (c == 'e' || c == 'E') {
		t.take()
		if c, ok := t.peek(); ok && (c == '+' || c == '-') {
			t.take()
		}
		if t.digits() == 0 {
			return t.syntax("expected a digit")
		}
	}
	return nil
}

func (t *tokenizer) digits() int {
	n := 0
	for {
		c, ok := t.peek()
		if !ok || c < '0' || c > '9' {
			return n
		}
		t.take()
		n++
	}
}

// str consumes a string (RFC 8259 §7). With decode, its value goes to
// t.key, with unpaired surrogate escapes as U+FFFD, as encoding/json does.
func (t *tokenizer) str(decode bool) error {
	t.take() // the opening quote
	t.key = t.key[:0]
	var high rune // a decoded high surrogate waiting for its pair
	flush := func() {
		if high != 0 {
			t.key = utf8.AppendRune(t.key, utf8.RuneError)
			high = 0
		}
	}
	for {
		c, ok := t.peek()
		switch {
		case !ok:
			return t.syntax("")
		case c == '"':
			t.take()
			flush()
			return nil
		case c < 0x20:
			return t.syntax("control character in a string")
		case c == '\\':
			t.take()
			r, u, err := t.escape()
			if err != nil {
				return err
			}
			if !decode {
				continue
			}
			switch {
			case u && high != 0 && utf16.IsSurrogate(r) && r >= 0xDC00:
				t.key = utf8.AppendRune(t.key, utf16.DecodeRune(high, r))
				high = 0
			case u && utf16.IsSurrogate(r) && r < 0xDC00:
				flush()
				high = r
			case u && utf16.IsSurrogate(r):
				flush()
				t.key = utf8.AppendRune(t.key, utf8.RuneError)
			default:
				flush()
				t.key = utf8.AppendRune(t.key, r)
			}
		default:
			t.take()
			if decode {
				flush()
				t.key = append(t.key, c)
			}
		}
	}
}

// escape consumes what follows a backslash; u reports a \uXXXX escape.
func (t *tokenizer) escape() (r rune, u bool, err error) {
	c, ok := t.peek()
	if !ok {
		return 0, false, t.syntax("")
	}
	t.take()
	switch c {
	case '"', '\\', '/':
		return rune(c), false, nil
	case 'b':
		return '\b', false, nil
	case 'f':
		return '\f', false, nil
	case 'n':
		return '\n', false, nil
	case 'r':
		return '\r', false, nil
	case 't':
		return '\t', false, nil
	case 'u':
		r, err := t.hex4()
		return r, true, err
	}
	return 0, false, t.syntax("invalid escape")
}

func (t *tokenizer) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, ok := t.peek()
		if !ok {
			return 0, t.syntax("")
		}
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, t.syntax("invalid \\u escape")
		}
		t.take()
		r = r<<4 | rune(v)
	}
	return r, nil
}
