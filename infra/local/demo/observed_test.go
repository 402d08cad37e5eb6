package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/observed"
)

// TestObservedDeclarationPrintsTheLearnedOutputType runs the offline
// half of make run's observed-shapes section: a shape learned from one
// send_sms result, declared through toolgate declarations --shapes on
// the mcp-demo lock, gives crm.send_sms an @observed output type, and
// the lines printed hold no value of the result.
func TestObservedDeclarationPrintsTheLearnedOutputType(t *testing.T) {
	t.Chdir("../../..") // the demo runs from the repository's root
	shape, err := observed.Observe(json.RawMessage(`{"content":[{"type":"text","text":"message 1 sent to +15550100"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	file := &observed.File{Toolset: "ts_e1e573600c23257d461a3f2d29e2aa3d", Tools: map[string]observed.ToolShapes{smsTool: {LearnedFrom: 1, Shape: shape}}}
	lines, err := observedDeclaration("testdata/toolsets/mcp-demo.lock.json", file, t.TempDir(), smsTool)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	t.Logf("\n%s", text)
	if !strings.Contains(text, "@observed learned from 1 result") || !strings.Contains(text, `"content": {`) || strings.Contains(text, "+15550100") || strings.Contains(text, "input:") {
		t.Errorf("the printed declaration:\n%s", text)
	}
}
