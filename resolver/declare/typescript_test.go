package declare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The package's golden tests share one -update flag; whichever test file
// comes first defines it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata/declarations from what the renderers write")
	}
}

// updating reports whether -update was given.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const declarationsDir = "../../testdata/declarations"

// goldenToolsets are the toolsets whose tools.d.ts is a golden file
// testdata/declarations/<name>.d.ts: the catalog's tools, the sample
// locks, and two fixtures of tools (<name>.tools.json: the JSON Schema
// subset's features, and hostile names and descriptions).
func goldenToolsets(t *testing.T) map[string]*toolset.Toolset {
	t.Helper()
	c := catalog.Default()
	all, err := toolset.FromCatalog(c, c.Names(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*toolset.Toolset{"catalog": all}
	for _, name := range []string{"demo", "mcp-demo", "parents"} {
		data, err := os.ReadFile(filepath.Join("../../testdata/toolsets", name+".lock.json"))
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = toolset.Parse(data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	out["observed"] = observedToolset(t)
	for _, name := range []string{"features", "hostile"} {
		data, err := os.ReadFile(filepath.Join(declarationsDir, name+".tools.json"))
		if err != nil {
			t.Fatal(err)
		}
		ts := &toolset.Toolset{Name: name}
		if err := json.Unmarshal(data, &ts.Tools); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = ts
	}
	return out
}

// Each toolset's rendering is its golden file, and renders the same
// bytes twice.
func TestTypeScriptGolden(t *testing.T) {
	for name, ts := range goldenToolsets(t) {
		t.Run(name, func(t *testing.T) {
			got, err := TypeScriptObserved(ts, goldenShapes(t)[name])
			if err != nil {
				t.Fatal(err)
			}
			again, _ := TypeScriptObserved(ts, goldenShapes(t)[name])
			if !bytes.Equal(got, again) {
				t.Fatal("two renderings of one toolset differ")
			}
			if err := checkShape(got); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(declarationsDir, name+".d.ts")
			if updating() {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./resolver/declare -run TestTypeScriptGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the rendering; if the change is meant, go test ./resolver/declare -run TestTypeScriptGolden -update\n%s", path, got)
			}
		})
	}
}

// tsc is the TypeScript compiler make deps installs (npm typescript, a
// platform binary): the test fails, not skips, without it.
func tsc(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "node_modules", ".bin", "tsc")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no TypeScript compiler at node_modules/.bin/tsc: run `make deps` (%v)", err)
	}
	return bin
}

// runTSC writes each golden toolset's rendering as <name>.d.ts in a
// temporary directory with the files given, and type-checks them all
// (tsc --noEmit --strict): its output, and whether it passed.
func runTSC(t *testing.T, files map[string][]byte) (string, bool) {
	t.Helper()
	bin := tsc(t)
	dir := t.TempDir()
	args := []string{"--noEmit", "--strict", "--pretty", "false"}
	for name, ts := range goldenToolsets(t) {
		out, err := TypeScriptObserved(ts, goldenShapes(t)[name])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".d.ts"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name+".d.ts")
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run tsc: %v", err)
	}
	return string(out), err == nil
}

// The examples under testdata/declarations type-check against the
// renderings: the positive ones compile, and each line of a negative one
// marked // @ts-expect-error is refused (tsc reports a marker with no
// error under it, so a rule the declarations stop enforcing fails here).
// The hostile toolset's example proves its names and descriptions
// declared nothing.
func TestTypeScriptExamplesTypeCheck(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join(declarationsDir, "*.ts"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range examples {
		if strings.HasSuffix(f, ".d.ts") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(f)] = data
	}
	if len(files) == 0 {
		t.Fatal("no examples under testdata/declarations")
	}
	if out, ok := runTSC(t, files); !ok {
		t.Fatalf("tsc refused the examples:\n%s", out)
	}
}

// The harness can fail: tsc refuses a send-email input with neither text
// nor html when no marker expects it.
func TestTypeScriptHarnessReportsErrors(t *testing.T) {
	bad := `import type { Tools } from "./catalog";
export const input: Tools["send-email"]["input"] = { to: ["a@example.com"], subject: "hello" };
`
	out, ok := runTSC(t, map[string][]byte{"bad.ts": []byte(bad)})
	if ok {
		t.Fatal("tsc accepted a send-email input with neither text nor html")
	}
	if !strings.Contains(out, "bad.ts(2,") {
		t.Errorf("tsc's refusal does not name the line:\n%s", out)
	}
}

// A schema the rendering cannot read is an error naming the tool and the
// place in the schema, and holding no schema text beyond the keyword.
func TestTypeScriptErrorNamesToolAndSchemaLocation(t *testing.T) {
	for _, c := range []struct {
		name, tool, schema, want string
	}{
		{"not JSON", "crm.create_ticket", `{"type":`, `tool "crm.create_ticket": input_schema: not JSON`},
		{"type not a name", "send-email", `{"properties":{"to":{"type":5}}}`, `tool "send-email": input_schema at "#/properties/to/type": type must be a string or an array of strings`},
		{"unknown type", "send-email", `{"type":"text"}`, `tool "send-email": input_schema at "#/type": "text" is not a JSON Schema type`},
		{"reference to nothing", "http", `{"items":{"$ref":"#/$defs/missing"}}`, `tool "http": input_schema at "#/items/$ref": the reference "#/$defs/missing" names no schema`},
		{"anyOf not an array", "http", `{"anyOf":{}}`, `tool "http": input_schema at "#/anyOf": anyOf must be a non-empty array`},
		{"schema not an object", "http", `{"properties":{"a":[]}}`, `tool "http": input_schema at "#/properties/a": a schema must be an object or a boolean`},
		{"name not UTF-8", "a\xffb", `{}`, `tool "a\ufffdb": the name is not UTF-8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := &toolset.Toolset{Tools: map[string]toolset.Tool{c.tool: {InputSchema: json.RawMessage(c.schema)}}}
			_, err := TypeScript(ts)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// A tool without an output schema has output unknown, and says so.
func TestTypeScriptOutputWithoutSchemaIsUnknown(t *testing.T) {
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"t": {InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage("null")}}}
	out, err := TypeScript(ts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "The tool declares no output schema.\n     */\n    output: unknown;\n") {
		t.Errorf("output is not unknown:\n%s", out)
	}
}

// Comment text can never end its comment nor start a tag or a tsc
// directive; invisible characters are shown escaped.
func TestCommentTextCannotEndTheComment(t *testing.T) {
	for in, want := range map[string]string{
		"a */ b":                `a *\/ b`,
		"**/":                   `**\/`,
		"@ts-ignore":            `\@ts-ignore`,
		"x {@link y}":           `x {\@link y}`,
		"mail ops@example.com":  "mail ops@example.com",
		"rtl \u202e here":       `rtl \u{202E} here`,
		"cr\rlf":                `cr\u{000D}lf`,
		"bad \xff utf-8":        "bad \uFFFD utf-8",
		"u escape \\u{202E} as": `u escape \\u{202E} as`,
	} {
		if got := commentText(in); got != want {
			t.Errorf("commentText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Arrays of arrays that each need leading elements (minItems) render in
// size linear in their depth, not a power of it.
func TestTypeScriptNestedMinItemsStayBounded(t *testing.T) {
	schema := `{"type":"string"}`
	for range 20 {
		schema = `{"type":"array","minItems":4,"items":` + schema + `}`
	}
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"t": {InputSchema: json.RawMessage(schema)}}}
	out, err := TypeScript(ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 4096 {
		t.Fatalf("the rendering of a 20-deep array is %d bytes:\n%.2000s", len(out), out)
	}
}
