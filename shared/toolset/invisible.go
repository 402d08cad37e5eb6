package toolset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/invisible"
)

// InvisibleText is where one pinned tool's text, which people read, holds
// characters they cannot see or that reorder what they see (invisible.Is):
// registration warns of it, naming the tool and the code points, and
// every place toolgate shows the text escapes them (docs/toolsets.md,
// "Invisible characters").
type InvisibleText struct {
	Tool string
	// Where lists the texts, at most MaxInvisibleWhere and then one
	// "and N more": "description", "title" (an MCP tool's annotations),
	// and, for a string anywhere in a schema (a description, a title, a
	// $comment, a default, an example, an enum value, a pattern...) at
	// JSON Pointer /p, "input_schema /p" or "output_schema /p"; for a
	// member name (a property's name, a $defs key...), "input_schema /p
	// (name)", /p the member's pointer. Each is escaped (invisible.Escape),
	// as a pointer holds the names it passes through.
	Where []string
	// Runes are the characters, each once, in code point order.
	Runes []rune
}

// MaxInvisibleWhere bounds InvisibleText.Where, so that a warning stays
// one readable line in an answer and a log line (CloudWatch Logs takes
// events of at most 256 KiB) whatever a schema holds.
const MaxInvisibleWhere = 10

func (f InvisibleText) String() string {
	return fmt.Sprintf("tool %s has invisible or bidirectional characters (%s) in %s; toolgate shows them as \\u{…}",
		invisible.Escape(f.Tool), invisible.CodePoints(f.Runes), strings.Join(f.Where, ", "))
}

// InvisibleText reports each of ts's tools whose description, MCP title,
// or any string or member name of its schemas, at any depth, holds
// characters invisible.Is reports, in tool name order.
func (ts *Toolset) InvisibleText() []InvisibleText {
	var out []InvisibleText
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		f := InvisibleText{Tool: name}
		more := 0
		note := func(where, text string) {
			rs := invisible.Runes(text)
			if len(rs) == 0 {
				return
			}
			if len(f.Where) < MaxInvisibleWhere {
				f.Where = append(f.Where, invisible.Escape(where))
			} else {
				more++
			}
			for _, r := range rs {
				if !slices.Contains(f.Runes, r) {
					f.Runes = append(f.Runes, r)
				}
			}
		}
		note("description", t.Description)
		if t.MCP != nil {
			var a struct {
				Title string `json:"title"`
			}
			if json.Unmarshal(t.MCP.Annotations, &a) == nil {
				note("title", a.Title)
			}
		}
		for _, s := range []struct {
			kind string
			doc  json.RawMessage
		}{{"input_schema", t.InputSchema}, {"output_schema", t.OutputSchema}} {
			var v any
			if json.Unmarshal(s.doc, &v) == nil {
				schemaTexts(v, "", func(ptr, text string, name bool) {
					where := s.kind + " " + ptr
					if name {
						where += " (name)"
					}
					note(where, text)
				})
			}
		}
		if more > 0 {
			f.Where = append(f.Where, fmt.Sprintf("and %d more", more))
		}
		if len(f.Runes) > 0 {
			slices.Sort(f.Runes)
			out = append(out, f)
		}
	}
	return out
}

// schemaTexts calls fn with the JSON Pointer and text of every member
// name (name true; the pointer is the member's) and every string value
// in schema document v, at any depth, in document order with members in
// name order: a property's name is as unseen as its description, and a
// default, an example or an enum value is what a model may copy.
func schemaTexts(v any, ptr string, fn func(ptr, text string, name bool)) {
	switch v := v.(type) {
	case string:
		fn(ptr, v, false)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			fn(p, k, true)
			schemaTexts(v[k], p, fn)
		}
	case []any:
		for i, c := range v {
			schemaTexts(c, fmt.Sprintf("%s/%d", ptr, i), fn)
		}
	}
}
