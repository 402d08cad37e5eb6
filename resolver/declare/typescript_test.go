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
			got, err := TypeScript(ts)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := TypeScript(ts)
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

// runTSC writes each toolset's rendering as <name>.d.ts in a temporary
// directory with the files given, and type-checks the files there
// (tsc --noEmit --strict): its output, and whether it passed.
func runTSC(t *testing.T, files map[string][]byte) (string, bool) {
	t.Helper()
	bin := tsc(t)
	dir := t.TempDir()
	for name, ts := range goldenToolsets(t) {
		out, err := TypeScript(ts)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".d.ts"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--noEmit", "--strict", "--pretty", "false"}
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
