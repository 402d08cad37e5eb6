package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/tool"
)

// ErrNoToolset is WithToolset's error for a Solution that names no
// registered toolset (no top-level toolset member): there is nothing to
// replace, and a toolset derived from the catalog is not a registered one.
var ErrNoToolset = errors.New("the Solution names no registered toolset (toolset: ts_...)")

// WithToolset returns src, the Solution file file's source (YAML, or JSON
// for a name ending in ".json": formatOf), with the value of its top-level
// toolset member replaced by id, a registered toolset's id
// (tool.ToolsetIDPattern; docs/toolsets.md), and nothing else changed:
// the scalar's text is replaced where the parser found it, quoted as it
// was. toolgate fork --toolset publishes the corrected Solution so
// (docs/fork.md, "Forking a run"). Errors: id is no toolset id; src does
// not parse; ErrNoToolset; the member's value is not a one-line string.
func WithToolset(file string, src []byte, id string) ([]byte, error) {
	if !tool.ToolsetIDPattern.MatchString(id) {
		return nil, fmt.Errorf("%q is not a toolset id (ts_ and 32 lower-case hex digits)", id)
	}
	ds := &diags{file: file}
	v, ok := parseChecked(src, ds)
	if !ok {
		d, _ := ds.sorted()
		return nil, fmt.Errorf("the Solution does not parse: %s", d[0].String())
	}
	f := v.get("toolset")
	if v.kind != kMap || f == nil {
		return nil, ErrNoToolset
	}
	if f.val.kind != kString {
		return nil, fmt.Errorf("%s:%d:%d: toolset is a %s, not a toolset id", file, f.val.pos.Line, f.val.pos.Column, f.val.kind)
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	if f.val.pos.Line < 1 || f.val.pos.Line > len(lines) {
		return nil, fmt.Errorf("%s: toolset's value is not where the parser placed it", file)
	}
	line := string(lines[f.val.pos.Line-1])
	start := runeOffset(line, f.val.pos.Column-1)
	if start < 0 {
		return nil, fmt.Errorf("%s:%d: toolset's value is not where the parser placed it", file, f.val.pos.Line)
	}
	end, quote := scalarEnd(line, start)
	if end < 0 {
		return nil, fmt.Errorf("%s:%d:%d: toolset's value is not a one-line string", file, f.val.pos.Line, f.val.pos.Column)
	}
	lines[f.val.pos.Line-1] = []byte(line[:start] + quote + id + quote + line[end:])
	out := bytes.Join(lines, nil)
	// The replaced source names id, and parses as before otherwise.
	if w, ok := parseChecked(out, &diags{file: file}); !ok || w.get("toolset") == nil || w.get("toolset").val.str != id || len(w.fields) != len(v.fields) {
		return nil, fmt.Errorf("%s:%d:%d: toolset's value could not be replaced", file, f.val.pos.Line, f.val.pos.Column)
	}
	return out, nil
}

// runeOffset is the byte offset of the n-th rune (0-based) of line, or -1
// past its end.
func runeOffset(line string, n int) int {
	for i := range line {
		if n == 0 {
			return i
		}
		n--
	}
	return -1
}

// scalarEnd is the byte offset just after the one-line scalar starting at
// start in line, and its quote ("\"", "'" or "" for a plain scalar); -1
// when it does not end on the line.
func scalarEnd(line string, start int) (int, string) {
	switch q := line[start]; q {
	case '"', '\'':
		for i := start + 1; i < len(line); i++ {
			switch {
			case q == '"' && line[i] == '\\':
				i++
			case line[i] == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
				i++
			case line[i] == q:
				return i + 1, string(q)
			}
		}
		return -1, ""
	}
	end := len(line)
	if i := strings.IndexAny(line[start:], ",}]\r\n"); i >= 0 {
		end = start + i
	}
	// A comment starts at a "#" after a space or a tab (YAML 1.2.2
	// §6.6, "Comments": s-separate-in-line is either).
	for _, sep := range []string{" #", "\t#"} {
		if i := strings.Index(line[start:end], sep); i >= 0 {
			end = start + i
		}
	}
	for end > start {
		r, size := utf8.DecodeLastRuneInString(line[start:end])
		if r != ' ' && r != '\t' {
			break
		}
		end -= size
	}
	if end == start {
		return -1, ""
	}
	return end, ""
}
