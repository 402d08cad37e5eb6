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
	// Where lists the texts: "description", "title" (an MCP tool's
	// annotations), and "input_schema /p/description" or
	// "output_schema /p/title" for a schema's description or title member
	// at JSON Pointer /p, at any depth.
	Where []string
	// Runes are the characters, each once, in code point order.
	Runes []rune
}

func (f InvisibleText) String() string {
	return fmt.Sprintf("tool %s has invisible or bidirectional characters (%s) in %s; toolgate shows them as \\u{…}",
		f.Tool, invisible.CodePoints(f.Runes), strings.Join(f.Where, ", "))
}

// InvisibleText reports each of ts's tools whose description, MCP title,
// or any schema description or title holds characters invisible.Is
// reports, in tool name order.
func (ts *Toolset) InvisibleText() []InvisibleText {
	var out []InvisibleText
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		f := InvisibleText{Tool: name}
		note := func(where, text string) {
			rs := invisible.Runes(text)
			if len(rs) == 0 {
				return
			}
			f.Where = append(f.Where, where)
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
				schemaTexts(v, "", func(ptr, text string) { note(s.kind+" "+ptr, text) })
			}
		}
		if len(f.Runes) > 0 {
			slices.Sort(f.Runes)
			out = append(out, f)
		}
	}
	return out
}

// schemaTexts calls fn with the JSON Pointer and value of every
// "description" or "title" member with a string value in schema
// document v, at any depth, in member name order.
func schemaTexts(v any, ptr string, fn func(ptr, text string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			if s, ok := v[k].(string); ok && (k == "description" || k == "title") {
				fn(p, s)
				continue
			}
			schemaTexts(v[k], p, fn)
		}
	case []any:
		for i, c := range v {
			schemaTexts(c, fmt.Sprintf("%s/%d", ptr, i), fn)
		}
	}
}
