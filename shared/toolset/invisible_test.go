package toolset

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// InvisibleText finds the characters in a description, an MCP title, and
// every string and member name of a schema at any depth (a property's
// name, a default, an example, an enum value, a $comment), with the
// pointers escaped, since they hold the names they pass through.
func TestInvisibleText(t *testing.T) {
	ts := &Toolset{Tools: map[string]Tool{
		"clean": {Description: "Opens a ticket.\nTabs\tare fine.", InputSchema: json.RawMessage(`{"description":"ok","properties":{"a b":{"default":"x"}}}`), OutputSchema: json.RawMessage(`{}`)},
		"crm.lookup": {Description: "Looks up\u200b a customer.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id \u202eenO\u202c","enum":["\u2066x"]},` +
				`"description":{"title":"a/b \u2028"}}}`),
			OutputSchema: json.RawMessage(`{"allOf":[{"title":"tag \udb40\udc41"}]}`),
			MCP:          &MCP{Annotations: json.RawMessage(`{"title":"Lookup\ufeff"}`)}},
		"names": {InputSchema: json.RawMessage(`{"$comment":"\u200d","properties":{"k\u202eey":{"description":"d\u202e","default":"\u2067","examples":["\u2068"]}},` +
			`"patternProperties":{"^\u200c":{}}}`), OutputSchema: json.RawMessage(`{}`)},
	}}
	got := ts.InvisibleText()
	if len(got) != 2 {
		t.Fatalf("%d findings, want two: %v", len(got), got)
	}
	want := []string{`tool crm.lookup has invisible or bidirectional characters (U+200B, U+2028, U+202C, U+202E, U+2066, U+FEFF, U+E0041) in ` +
		`description, title, input_schema /properties/description/title, input_schema /properties/id/description, input_schema /properties/id/enum/0, output_schema /allOf/0/title; toolgate shows them as \u{…}`,
		`tool names has invisible or bidirectional characters (U+200C, U+200D, U+202E, U+2067, U+2068) in ` +
			`input_schema /$comment, input_schema /patternProperties/^\u{200C} (name), input_schema /properties/k\u{202E}ey (name), ` +
			`input_schema /properties/k\u{202E}ey/default, input_schema /properties/k\u{202E}ey/description, input_schema /properties/k\u{202E}ey/examples/0; toolgate shows them as \u{…}`}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("got  %s\nwant %s", got[i], want[i])
		}
	}
}

// A schema holding such characters in many strings is named in at most
// MaxInvisibleWhere places and a count of the rest, with every character.
func TestInvisibleTextIsBounded(t *testing.T) {
	var enum []string
	for i := range 100 {
		v, _ := json.Marshal(fmt.Sprintf("v%d%c", i, 0xE0000+rune(i)))
		enum = append(enum, string(v))
	}
	ts := &Toolset{Tools: map[string]Tool{"t": {InputSchema: json.RawMessage(`{"enum":[` + strings.Join(enum, ",") + `]}`), OutputSchema: json.RawMessage(`{}`)}}}
	got := ts.InvisibleText()
	if len(got) != 1 || len(got[0].Where) != MaxInvisibleWhere+1 || got[0].Where[MaxInvisibleWhere] != "and 90 more" || len(got[0].Runes) != 100 {
		t.Fatalf("%d findings: %v", len(got), got)
	}
}
