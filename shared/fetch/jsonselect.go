package fetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// maxDepth bounds JSON nesting: 10000 levels, the limit both encoding/json
// (json.Valid refuses deeper texts) and jsontext enforce.
const maxDepth = 10000

// ParsePointer splits an RFC 6901 JSON Pointer (a select) into its
// reference tokens, with "~1" and "~0" decoded, for ReadBody. "" is the
// whole document (no tokens). The error says which rule of RFC 6901 p
// breaks, or that it has more than 10000 tokens (no body nests deeper).
func ParsePointer(p string) ([]string, error) { return parsePointer(p) }

// parsePointer is ParsePointer.
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

// pointerPrefix writes reference tokens back as an RFC 6901 JSON Pointer.
func pointerPrefix(toks []string) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// selectJSON reads exactly one JSON text (RFC 8259) from r and returns the
// value at ptr, byte for byte as it appears in the body.
//
// It streams through a jsontext.Decoder, which holds a window of a few KiB
// whatever the body's size, grown only to fit the longest single token (a
// string or number), the names of the objects open above the current
// value, and the value at ptr; the rest is checked and dropped.
// When an object has a member name twice, the last one counts, as in
// JSON.parse and encoding/json (RFC 8259 §4 leaves it to the parser).
// Invalid UTF-8 and unpaired surrogate escapes pass, as json.Valid lets them
// pass: Fetch checks the whole body's UTF-8 itself (RFC 8259 §8.1).
//
// It returns a *parseError for a body that is not one JSON text (what
// json.Valid refuses, nesting deeper than maxDepth included), a *noMatch
// when ptr does not resolve, and r's error when reading fails.
func selectJSON(r io.Reader, ptr []string) (json.RawMessage, error) {
	s := selector{r: errReader{r: r}, ptr: ptr}
	s.d = jsontext.NewDecoder(&s.r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	raw, found, err := s.walk(0)
	if err == nil {
		err = s.finish()
	}
	if err != nil {
		return nil, s.explain(err)
	}
	if !found {
		return nil, &noMatch{at: s.failAt}
	}
	return raw, nil
}

// noMatch says which prefix of a select does not resolve.
type noMatch struct{ at string }

func (e *noMatch) Error() string { return "no " + e.at }

// errMoreThanOne marks a second JSON value after the first.
var errMoreThanOne = errors.New("more than one JSON value")

// selector walks one JSON text down a pointer's reference tokens.
type selector struct {
	r      errReader
	d      *jsontext.Decoder
	ptr    []string
	failAt string // the shortest pointer prefix that does not resolve
	name   []byte // an escaped member name, unescaped
}

// walk reads one value at depth and returns its part at ptr[depth:].
func (s *selector) walk(depth int) (json.RawMessage, bool, error) {
	d := s.d
	if depth == len(s.ptr) {
		v, err := d.ReadValue()
		if err != nil {
			return nil, false, err
		}
		return bytes.Clone(v), true, nil // v is only valid until the next read
	}
	tok, err := d.ReadToken()
	if err != nil {
		return nil, false, err
	}
	var (
		raw     json.RawMessage
		found   bool
		matched bool
		end     jsontext.Kind
	)
	switch tok.Kind() {
	case jsontext.KindBeginObject:
		end = jsontext.KindEndObject
		for d.PeekKind() != end {
			name, err := d.ReadValue()
			if err != nil {
				return nil, false, err
			}
			if s.nameIs(name, s.ptr[depth]) {
				// A later member of the same name replaces this result.
				if raw, found, err = s.walk(depth + 1); err != nil {
					return nil, false, err
				}
				matched = true
			} else if err := d.SkipValue(); err != nil {
				return nil, false, err
			}
		}
	case jsontext.KindBeginArray:
		end = jsontext.KindEndArray
		idx, isIndex := arrayIndex(s.ptr[depth])
		for i := 0; d.PeekKind() != end; i++ {
			if isIndex && i == idx {
				if raw, found, err = s.walk(depth + 1); err != nil {
					return nil, false, err
				}
				matched = true
			} else if err := d.SkipValue(); err != nil {
				return nil, false, err
			}
		}
	}
	if end != 0 {
		if _, err := d.ReadToken(); err != nil {
			return nil, false, err
		}
	}
	if !matched {
		s.failAt = pointerPrefix(s.ptr[:depth+1])
	}
	return raw, found, nil
}

// nameIs reports whether the member name raw, quoted as in the body, is tok
// once unescaped. Invalid UTF-8 reads as U+FFFD, as in encoding/json.
func (s *selector) nameIs(raw jsontext.Value, tok string) bool {
	if b := raw[1 : len(raw)-1]; bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return string(b) == tok
	}
	s.name, _ = jsontext.AppendUnquote(s.name[:0], raw) // raw is already checked
	return string(s.name) == tok
}

// finish checks that only blanks follow the top-level value.
func (s *selector) finish() error {
	if s.d.PeekKind() != jsontext.KindInvalid {
		return errMoreThanOne
	}
	if _, err := s.d.ReadToken(); err != io.EOF {
		return err
	}
	return nil
}

// explain turns a decoder error into a *parseError whose text says where
// the body stops being JSON, or into r's error when reading failed.
// jsontext's own text is not used: it quotes the offending bytes and the
// member names leading to them, and a *parseError never shows the body.
func (s *selector) explain(err error) error {
	const prefix = "the body is not valid JSON (RFC 8259): "
	var se *jsontext.SyntacticError
	switch {
	case s.r.err != nil:
		return s.r.err
	case err == errMoreThanOne:
		unread := s.d.UnreadBuffer()
		at := s.d.InputOffset() + int64(len(unread)-len(bytes.TrimLeft(unread, " \t\n\r")))
		return parseErrorf(prefix+"more than one JSON value at byte %d", at)
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return parseErrorf(prefix + "it ends before the value does")
	case !errors.As(err, &se):
		return err
	case errors.Is(se.Err, jsontext.ErrNonStringName):
		return parseErrorf(prefix+"expected a member name at byte %d", se.ByteOffset)
	case s.tooDeep(se):
		return parseErrorf(prefix+"nesting deeper than %d at byte %d", maxDepth, se.ByteOffset)
	}
	return parseErrorf(prefix+"unexpected input at byte %d", se.ByteOffset)
}

// tooDeep reports whether se is jsontext's refusal to nest past maxDepth,
// an error value it does not export: a bracket opening a value that lies
// inside maxDepth levels already.
func (s *selector) tooDeep(se *jsontext.SyntacticError) bool {
	unread := s.d.UnreadBuffer()
	i := se.ByteOffset - s.d.InputOffset()
	if i < 0 || i >= int64(len(unread)) || unread[i] != '[' && unread[i] != '{' {
		return false
	}
	return strings.Count(string(se.JSONPointer), "/") >= maxDepth
}

// errReader keeps the first error other than io.EOF that r returns:
// jsontext wraps it, and selectJSON returns it as r gave it.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}
