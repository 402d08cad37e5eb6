package toolset

import (
	"encoding/json"
	"strings"
	"testing"
)

// InvisibleText finds the characters in a description, an MCP title, and
// a schema's descriptions and titles at any depth, and nowhere else.
func TestInvisibleText(t *testing.T) {
	ts := &Toolset{Tools: map[string]Tool{
		"clean": {Description: "Opens a ticket.\nTabs\tare fine.", InputSchema: json.RawMessage(`{"description":"ok"}`), OutputSchema: json.RawMessage(`{}`)},
		"crm.lookup": {Description: "Looks up\u200b a customer.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id \u202eenO\u202c","enum":["\u2066x"]},` +
				`"description":{"title":"a/b \u2028"}}}`),
			OutputSchema: json.RawMessage(`{"allOf":[{"title":"tag \udb40\udc41"}]}`),
			MCP:          &MCP{Annotations: json.RawMessage(`{"title":"Lookup\ufeff"}`)}},
	}}
	got := ts.InvisibleText()
	if len(got) != 1 {
		t.Fatalf("%d findings, want one: %v", len(got), got)
	}
	want := `tool crm.lookup has invisible or bidirectional characters (U+200B, U+2028, U+202C, U+202E, U+FEFF, U+E0041) in ` +
		`description, title, input_schema /properties/description/title, input_schema /properties/id/description, output_schema /allOf/0/title; toolgate shows them as \u{…}`
	if got[0].String() != want {
		t.Errorf("got  %s\nwant %s", got[0], want)
	}
	if strings.Contains(got[0].String(), "enum") {
		t.Error("an enum value is not a text people read as the tool's meaning")
	}
}
