package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/observed"
	shapedynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Shapes learned the way the dispatcher learns them (its identity,
// shared/observed/dynamo) are read through the publish function by
// toolgate shapes, toolset show --shapes and shapes --lock; refusals are
// clear and non-zero; and no value fed to Observe reaches any output.
func TestShapesThroughPublishFunction(t *testing.T) {
	t.Parallel()
	p, db, table := localtest.SharedTable(t, "toolgate-cli")
	callers := localtest.StartCallers(t)
	cliEnv := localAWS().with(callers.CLIEnv())
	fn := startPublishFunction(t, callers, p.Endpoint(), table, false)
	as := []string{"--function-endpoint", fn.Endpoint(), "--as", "bob"}
	dir := t.TempDir()
	copyFiles(t, dir, "demo.yaml", "schemas/create-ticket.input.json")
	if code, _, errs := cliEnv.run("toolset", "register", filepath.Join(dir, "demo.yaml"), "--toolsets", t.TempDir(), "--function-endpoint", fn.Endpoint(), "--as", "alice"); code != ExitOK {
		t.Fatalf("register: %s", errs)
	}
	noLocks := []string{"--toolsets", t.TempDir()}

	// The dispatcher's identities of the demo's structured-data-fetch,
	// two hosts, fed results full of canaries.
	lock, err := toolset.Parse([]byte(readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))))
	if err != nil {
		t.Fatal(err)
	}
	fetch := lock.Tools["structured-data-fetch"]
	id, perHost, learns := fetch.ShapeIdentity("structured-data-fetch")
	if !perHost || !learns {
		t.Fatal("structured-data-fetch learns per host")
	}
	canaries := []string{"canary-value-7Q9", "424242.125", "canary@example.org", "2026-12-03T20:00:00Z"}
	store := shapedynamo.New(db, table)
	for host, result := range map[string]string{
		"api.example.com": `{"items":[{"name":"canary-value-7Q9","price":424242.125}],"next":null}`,
		"127.0.0.1:8080":  `{"by_user":{"canary@example.org":{"seen":"2026-12-03T20:00:00Z"}}}`,
	} {
		shape, err := observed.Observe([]byte(result))
		if err != nil {
			t.Fatal(err)
		}
		id.Host = host
		if ok, err := store.Put(t.Context(), id, shape, 0, 3); !ok || err != nil {
			t.Fatalf("put %s: %v %v", host, ok, err)
		}
	}
	noValue := func(t *testing.T, where, s string) {
		t.Helper()
		for _, c := range canaries {
			if strings.Contains(s, c) {
				t.Fatalf("%s holds %q:\n%s", where, c, s)
			}
		}
	}

	t.Run("text", func(t *testing.T) {
		code, out, errs := cliEnv.run(append(append([]string{"shapes", demoID}, noLocks...), as...)...)
		if code != ExitOK || errs != "" {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"structured-data-fetch, data from 127.0.0.1:8080 (learned from 3 results):", "structured-data-fetch, data from api.example.com (learned from 3 results):", `"price"`, `"additionalProperties"`} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in:\n%s", want, out)
			}
		}
		noValue(t, "the text", out)
	})
	t.Run("json is the shapes file", func(t *testing.T) {
		code, out, errs := cliEnv.run(append(append([]string{"shapes", demoID, "structured-data-fetch", "--json"}, noLocks...), as...)...)
		if code != ExitOK || errs != "" {
			t.Fatalf("exit %d: %s", code, errs)
		}
		f, err := observed.ParseFile([]byte(out))
		if err != nil || f.Toolset != demoID || len(f.Tools["structured-data-fetch"].Hosts) != 2 {
			t.Fatalf("%v\n%s", err, out)
		}
		noValue(t, "the shapes file", out)
	})
	t.Run("toolset show --shapes", func(t *testing.T) {
		code, out, errs := cliEnv.run(append(append([]string{"toolset", "show", demoID, "--shapes"}, noLocks...), as...)...)
		if code != ExitOK || errs != "" {
			t.Fatalf("exit %d: %s", code, errs)
		}
		ts, err := toolset.Parse([]byte(out))
		if err != nil || ts.ID != demoID || ts.Observed == nil || len(ts.Observed.Tools) != 1 {
			t.Fatalf("%v\n%s", err, out)
		}
		noValue(t, "toolset show", out)
	})
	t.Run("shapes --lock writes the lock's observed member", func(t *testing.T) {
		locks := t.TempDir()
		path := filepath.Join(locks, "demo.lock.json")
		if err := os.WriteFile(path, []byte(readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := cliEnv.run(append([]string{"shapes", demoID, "--lock", path, "--toolsets", locks}, as...)...)
		if code != ExitOK || errs != "" {
			t.Fatalf("exit %d: %s", code, errs)
		}
		doc := readFile(t, path)
		ts, err := toolset.Parse([]byte(doc))
		if err != nil || ts.ID != demoID || ts.Observed == nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		noValue(t, "the lock", doc)
	})
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an unknown id", append(append([]string{"shapes", unknownID}, noLocks...), as...), ExitErrors, "not found"},
		{"an unknown tool", append(append([]string{"shapes", demoID, "no-such-tool"}, noLocks...), as...), ExitMisuse, `pins no tool "no-such-tool"`},
		{"no publish function", append([]string{"shapes", demoID}, noLocks...), ExitMisuse, "read through the publish function"},
		{"a malformed id", append(append([]string{"shapes", "ts_x"}, noLocks...), as...), ExitMisuse, "is not a toolset id"},
	} {
		t.Run("refuses "+c.name, func(t *testing.T) {
			code, out, errs := cliEnv.run(c.args...)
			if code != c.code || !strings.Contains(errs, c.want) || out != "" {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, c.code, out, errs)
			}
		})
	}
}
