package declare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/toolset"
)

// observedToolset is the golden toolset "observed": the MCP demo's tools
// (crm.send_sms declares no output schema: {}) and the catalog's
// structured-data-fetch, whose data member is open.
func observedToolset(t *testing.T) *toolset.Toolset {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../testdata/toolsets", "mcp-demo.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	mcp, err := toolset.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.Default()
	fetch, err := toolset.FromCatalog(c, []string{"structured-data-fetch"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := &toolset.Toolset{Name: "observed", Tools: mcp.Tools}
	ts.Tools["structured-data-fetch"] = fetch.Tools["structured-data-fetch"]
	return ts
}

// learn merges the shapes of results as the dispatcher does
// (observed.Observe, Merge).
func learn(t *testing.T, results ...string) *observed.Shape {
	t.Helper()
	var s *observed.Shape
	for _, r := range results {
		o, err := observed.Observe(json.RawMessage(r))
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			s = o
			continue
		}
		s.Merge(o)
	}
	return s
}

// goldenShapes are the learned shapes each golden toolset is rendered
// with (testdata/declarations/<name>.d.ts): only "observed" has some.
func goldenShapes(t *testing.T) map[string]*observed.File {
	t.Helper()
	return map[string]*observed.File{"observed": {
		Toolset: "",
		Tools: map[string]observed.ToolShapes{
			"crm.send_sms": {LearnedFrom: 3, Shape: learn(t,
				`{"message_id":"m-1","segments":1,"queued":true}`,
				`{"message_id":"m-2","segments":2,"queued":false,"carrier":{"name":"x","country":"DE"}}`,
				`{"message_id":"m-3","segments":1,"queued":true,"warnings":["w"]}`)},
			// A tool the toolset does not have: ignored.
			"crm.gone": {LearnedFrom: 1, Shape: learn(t, `{"a":1}`)},
			"structured-data-fetch": {Hosts: map[string]observed.HostShape{
				"api.example.com": {LearnedFrom: 12, Shape: learn(t,
					`{"items":[{"id":"a","price":1.5,"tags":["x"]}],"next":null}`,
					`{"items":[],"next":"c2"}`)},
				"status.example.org:8443": {LearnedFrom: 1, Shape: learn(t, `{"ok":true}`)},
			}},
		},
	}}
}

// A tool without an output schema gets the type of its learned shape,
// marked @observed with the number of results; the per-host data shapes
// are ObservedData's members; a tool with none stays unknown.
func TestTypeScriptObservedRendersLearnedShapes(t *testing.T) {
	ts := observedToolset(t)
	out, err := TypeScriptObserved(ts, goldenShapes(t)["observed"])
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{
		"     * @observed learned from 3 results\n",
		"\"segments\": number;",
		"\"carrier\"?: {",
		"export interface ObservedData {\n  \"structured-data-fetch\": {\n",
		"     * @observed learned from 12 results\n     */\n    \"api.example.com\": {",
		"\"status.example.org:8443\": {",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "crm.gone") {
		t.Errorf("a tool the toolset does not have is declared:\n%s", text)
	}
	plain, err := TypeScriptObserved(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "@observed") || strings.Contains(string(plain), "ObservedData") {
		t.Errorf("without shapes the rendering says @observed:\n%s", plain)
	}
}

// A declared output schema wins over a learned shape: the shape is of
// the results, the schema is what governs.
func TestTypeScriptObservedKeepsDeclaredOutput(t *testing.T) {
	ts := observedToolset(t)
	shapes := &observed.File{Tools: map[string]observed.ToolShapes{
		"crm.lookup_customer": {LearnedFrom: 9, Shape: learn(t, `{"other":1}`)},
	}}
	out, err := TypeScriptObserved(ts, shapes)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "@observed") || strings.Contains(string(out), `"other"`) {
		t.Errorf("a learned shape replaced a declared output schema:\n%s", out)
	}
}

// Shapes of another toolset are refused, naming both ids.
func TestTypeScriptObservedRefusesAnotherToolsetsShapes(t *testing.T) {
	ts := &toolset.Toolset{ID: "ts_00000000000000000000000000000001", Tools: map[string]toolset.Tool{}}
	_, err := TypeScriptObserved(ts, &observed.File{Toolset: "ts_00000000000000000000000000000002"})
	if err == nil || !strings.Contains(err.Error(), "ts_00000000000000000000000000000002") || !strings.Contains(err.Error(), ts.ID) {
		t.Fatalf("error %v, want one naming both toolsets", err)
	}
}
