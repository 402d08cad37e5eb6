package validator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// The tool's diagnostics are exactly `toolgate check --format json`'s
// (but for notes, folded into the message: TestNotesFoldedIntoTheMessage).
func TestSameDiagnosticsAsCheck(t *testing.T) {
	for _, name := range []string{"newsletter.yaml", "refuse-structure.yaml", "refuse-no-review.yaml"} {
		src, err := os.ReadFile("../../../testdata/solutions/" + name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Validate(Input{Solution: string(src)})
		if err != nil {
			t.Fatal(err)
		}
		tmp := t.TempDir() + "/solution.yaml"
		os.WriteFile(tmp, src, 0o644)
		var stdout, stderr bytes.Buffer
		code := cli.Run([]string{"check", "--format", "json", tmp}, &stdout, &stderr)
		var doc struct {
			Valid       bool
			Diagnostics []struct {
				Line, Column            int
				Severity, Rule, Message string
			}
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Valid != out.Valid || (code == 0) != out.Valid || len(doc.Diagnostics) != len(out.Diagnostics) {
			t.Fatalf("%s: check says %v/%d diagnostics, tool %v/%d", name, doc.Valid, len(doc.Diagnostics), out.Valid, len(out.Diagnostics))
		}
		for i, d := range out.Diagnostics {
			c := doc.Diagnostics[i]
			if d.Line != c.Line || d.Column != c.Column || d.Rule != c.Rule || d.Message != c.Message {
				t.Fatalf("%s: diagnostic %d differs: %+v vs %+v", name, i, d, c)
			}
		}
		if out.Valid && !strings.HasPrefix(out.ToolsetID, "ts_") {
			t.Fatalf("valid without a toolset id")
		}
	}
}

func TestInputErrors(t *testing.T) {
	for name, in := range map[string]Input{
		"empty":      {},
		"oversized":  {Solution: strings.Repeat("#", MaxSolutionBytes+1)},
		"bad format": {Solution: "x", Format: "toml"},
	} {
		_, err := Validate(in)
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.InputInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	out, err := Validate(Input{Solution: "solution: [", Format: "json"})
	if err != nil || out.Valid || out.Diagnostics[0].Rule != "syntax" {
		t.Fatalf("invalid JSON: %+v %v", out, err)
	}
	out, err = Validate(Input{Solution: "solution: x\nversion: 0\nsteps: []"})
	if err != nil || out.Valid || len(out.Diagnostics) == 0 {
		t.Fatalf("invalid Solution must be a successful call with valid false: %+v %v", out, err)
	}
}

// A diagnostic's notes (a [state-size] error's path and largest parts) are
// folded into its message, cut as any message is: each diagnostic of the
// result stays within resolver.MaxMessageRunes.
func TestNotesFoldedIntoTheMessage(t *testing.T) {
	src, err := os.ReadFile("../../../testdata/solutions/refuse-state-size.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Validate(Input{Solution: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	folded := 0
	for _, d := range out.Diagnostics {
		if len(d.Notes) > 0 || len([]rune(d.Message)) > resolver.MaxMessageRunes {
			t.Fatalf("diagnostic with notes or over %d runes: %+v", resolver.MaxMessageRunes, d)
		}
		if strings.Contains(d.Message, "The path and the largest parts: path: f → copy; steps.copy: ") {
			folded++
		}
	}
	if folded != 1 {
		t.Fatalf("%d diagnostics fold the path f → copy into their message, want 1: %+v", folded, out.Diagnostics)
	}
}

// outputSchema is workflow-validator's output schema in the catalog,
// decoded, and compiled.
func outputSchema(t *testing.T) (map[string]any, *schema.Schema) {
	t.Helper()
	v, ok := catalog.Default().Lookup("workflow-validator")
	if !ok {
		t.Fatal("no workflow-validator in the catalog")
	}
	var doc map[string]any
	if err := json.Unmarshal(v.OutputSchema, &doc); err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(v.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	return doc, s
}

// The bounds Validate keeps are those the catalog's output schema
// declares.
func TestBoundsAreTheOutputSchemas(t *testing.T) {
	doc, _ := outputSchema(t)
	at := func(path ...string) any {
		var v any = doc
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	item := []string{"properties", "diagnostics", "items", "properties"}
	for name, c := range map[string]struct {
		got  any
		want int
	}{
		"diagnostics maxItems": {at("properties", "diagnostics", "maxItems"), MaxDiagnostics},
		"message maxLength":    {at(append(item, "message", "maxLength")...), resolver.MaxMessageRunes},
		"rule maxLength":       {at(append(item, "rule", "maxLength")...), MaxRuleRunes},
		"line maximum":         {at(append(item, "line", "maximum")...), MaxPosition},
		"column maximum":       {at(append(item, "column", "maximum")...), MaxPosition},
	} {
		if c.got != float64(c.want) {
			t.Errorf("%s: the schema says %v, Validate keeps %d", name, c.got, c.want)
		}
	}
}

// Whatever the Solution, the result meets the output schema the
// dispatcher checks it against: every example Solution's, one with more
// diagnostics than MaxDiagnostics (the first nine kept, then one saying
// how many were left out), and one whose messages quote long keys.
func TestResultsMeetTheOutputSchema(t *testing.T) {
	_, s := outputSchema(t)
	files, err := filepath.Glob("../../../testdata/solutions/*.[yj]*")
	if err != nil || len(files) < 10 {
		t.Fatalf("example Solutions: %v %v", files, err)
	}
	inputs := map[string]Input{}
	for _, f := range files {
		if strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".json") && !strings.Contains(f, ".asl.") && !strings.Contains(f, ".toolset.") {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			format := "yaml"
			if strings.HasSuffix(f, ".json") {
				format = "json"
			}
			inputs[filepath.Base(f)] = Input{Solution: string(src), Format: format}
		}
	}
	var many, long strings.Builder
	many.WriteString("solution: many\nversion: 1\nsteps:\n  - id: a\n    succeed: {}\n")
	long.WriteString("solution: long\nversion: 1\nsteps:\n  - id: a\n    succeed: {}\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&many, "unknown_%d: x\n", i)
		fmt.Fprintf(&long, "%s_%d: x\n", strings.Repeat("é<\"&", 300), i)
	}
	inputs["30 unknown keys"] = Input{Solution: many.String()}
	inputs["30 long unknown keys"] = Input{Solution: long.String()}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			out, err := Validate(in)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := Tool()(context.Background(), &toolcall.Call{Input: mustJSON(t, in)})
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(v); err != nil {
				t.Fatalf("the result does not meet the output schema: %v\n%s", err, raw)
			}
			if strings.HasPrefix(name, "30 ") {
				last := out.Diagnostics[len(out.Diagnostics)-1]
				if len(out.Diagnostics) != MaxDiagnostics || last.Rule != "truncated" || !strings.HasPrefix(last.Message, "21 more diagnostics are left out") {
					t.Fatalf("%d diagnostics, the last %+v; want %d, the last saying 21 were left out", len(out.Diagnostics), last, MaxDiagnostics)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
