package fetch

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// parseError marks a body that is not valid in the accept type; its text is
// safe to show (it says where, never what the body holds).
type parseError struct{ msg string }

func (e *parseError) Error() string { return e.msg }

func parseErrorf(format string, args ...any) error {
	return &parseError{msg: fmt.Sprintf(format, args...)}
}

// readError is a failure of the connection while reading the body.
type readError struct{ err error }

func (e *readError) Error() string { return "read body: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// bodyReader counts and UTF-8-checks what it reads, and stops one byte past
// the bound, so that an over-long body is seen without being read whole.
type bodyReader struct {
	r    io.Reader
	left int64 // bytes that may still be read: bound + 1 - read
	n    int64 // bytes read
	err  *readError
	utf8 utf8Check
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	b.n += int64(n)
	b.utf8.write(p[:n])
	if err != nil && err != io.EOF {
		if b.err == nil {
			b.err = &readError{err}
		}
		return n, b.err
	}
	return n, err
}

// drain reads the rest, up to the bound, so that the size and UTF-8
// outcomes do not depend on where a parser stopped.
func (b *bodyReader) drain() {
	var buf [8 << 10]byte
	for {
		if _, err := b.Read(buf[:]); err != nil {
			return
		}
	}
}

// utf8Check validates UTF-8 across chunk boundaries without copying the
// chunks.
type utf8Check struct {
	pending [utf8.UTFMax]byte
	n       int
	bad     bool
}

func (v *utf8Check) write(p []byte) {
	for v.n > 0 && len(p) > 0 {
		v.pending[v.n] = p[0]
		v.n++
		p = p[1:]
		if utf8.FullRune(v.pending[:v.n]) {
			if r, size := utf8.DecodeRune(v.pending[:v.n]); r == utf8.RuneError && size <= 1 || size != v.n {
				v.bad = true
			}
			v.n = 0
		}
	}
	if len(p) == 0 {
		return
	}
	tail := 0
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				tail = len(p) - i
			}
			break
		}
	}
	if !utf8.Valid(p[:len(p)-tail]) {
		v.bad = true
	}
	v.n = copy(v.pending[:], p[len(p)-tail:])
}

// valid reports whether everything written was UTF-8.
func (v *utf8Check) valid() bool { return !v.bad && v.n == 0 }

var bom = []byte("\xef\xbb\xbf")

// parseCSV reads an RFC 4180 body (encoding/csv, strict quotes) into rows
// keyed by the header row's names. Every row must have the header's number
// of fields; a name given twice is refused, naming the two columns by
// position (a name is the body's content).
func parseCSV(body []byte) ([]map[string]string, error) {
	r := csv.NewReader(bytes.NewReader(bareCRToLF(bytes.TrimPrefix(body, bom))))
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return nil, parseErrorf("the CSV body has no header row")
	}
	if err != nil {
		return nil, csvError(err)
	}
	names := make([]string, len(header))
	seen := make(map[string]int, len(header))
	for i, h := range header {
		if first, ok := seen[h]; ok {
			// Columns by position, never by name: the header row is the
			// body's content, which no error message carries.
			return nil, parseErrorf("the CSV header names one column twice (columns %d and %d)", first+1, i+1)
		}
		seen[h] = i
		names[i] = h
	}
	rows := []map[string]string{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		row := make(map[string]string, len(names))
		for i, v := range rec {
			row[names[i]] = v
		}
		rows = append(rows, row)
	}
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return parseErrorf("the body is not valid CSV (RFC 4180): line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
	}
	return parseErrorf("the body is not valid CSV (RFC 4180)")
}

// bareCRToLF turns a CR that is not part of CRLF into LF: old Mac line
// breaks, which encoding/csv would otherwise read as data inside one
// enormous header row.
func bareCRToLF(b []byte) []byte {
	if !bytes.Contains(b, []byte("\r")) {
		return b
	}
	out := make([]byte, len(b))
	copy(out, b)
	for i := range out {
		if out[i] == '\r' && (i+1 == len(out) || out[i+1] != '\n') {
			out[i] = '\n'
		}
	}
	return out
}
