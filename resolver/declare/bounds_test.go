package declare

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/toolset"
)

// hostileSizeSchemas are input schemas past toolset's pinning bounds
// that a lock read with toolset.Parse alone (no Verify) can still hold:
// 1000 levels of objects, whose draft-07 conversion grows with the
// square of its depth, and references that fan out (each definition
// reaching the next twice through anyOf), whose validation doubles per
// definition.
func hostileSizeSchemas() map[string]string {
	deep := `{"type":"string"}`
	for range 1000 {
		deep = `{"type":"object","properties":{"a":` + deep + `}}`
	}
	var defs []string
	for i := range 60 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d60":{"type":"string","minLength":1}`)
	fan := `{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"required":["x"],"$defs":{` + strings.Join(defs, ",") + `}}`
	return map[string]string{"deep": deep, "fan": fan}
}

// A schema past the pinning bounds (toolset.CheckSchemaSize: bytes,
// depth, references) is refused by both renderings, promptly, with an
// error naming the tool and the bound, instead of a rendering whose size
// or time has no bound.
func TestRenderingsRefuseSchemasPastThePinningBounds(t *testing.T) {
	for name, schema := range hostileSizeSchemas() {
		t.Run(name, func(t *testing.T) {
			ts := &toolset.Toolset{Name: "bounds", Tools: map[string]toolset.Tool{
				"big." + name: {InputSchema: json.RawMessage(schema)},
			}}
			for _, r := range []struct {
				file   string
				render func(*toolset.Toolset) ([]byte, error)
			}{{TypeScriptFile, TypeScript}, {SolutionSchemaFile, SolutionSchema}} {
				start := time.Now()
				out, err := r.render(ts)
				if err == nil {
					t.Fatalf("%s: rendered %d bytes in %v; want a refusal", r.file, len(out), time.Since(start))
				}
				if !strings.Contains(err.Error(), `"big.`+name+`"`) || !strings.Contains(err.Error(), "input_schema") {
					t.Errorf("%s: the error %q does not name the tool and its input schema", r.file, err)
				}
				if !strings.Contains(err.Error(), "deeper than") && !strings.Contains(err.Error(), "references") {
					t.Errorf("%s: the error %q does not name the bound", r.file, err)
				}
			}
		})
	}
}
