package validator

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/tool"
)

// The tool's diagnostics are exactly `toolgate check --format json`'s
// (but for notes, folded into the message: TestNotesFoldedIntoTheMessage).
func TestSameDiagnosticsAsCheck(t *testing.T) {
	for _, name := range []string{"newsletter.yaml", "refuse-structure.yaml", "refuse-no-review.yaml"} {
		src, err := os.ReadFile("../../testdata/solutions/" + name)
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
	src, err := os.ReadFile("../../testdata/solutions/refuse-state-size.yaml")
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
