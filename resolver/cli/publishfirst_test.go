package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAWS is an environment with AWS credentials and a region that sign
// requests and proofs offline, and nothing that names the publish function
// or the ledger table, as on a machine where neither is set.
var fakeAWS = environ{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1"}

// Without flags, toolset register and invoke point at the publish function
// (--url, $TOOLGATE_PUBLISH_URL) before the ledger table, whose writes are
// the deploy role's (docs/ledger.md).
func TestWithoutFlagsRegisterAndInvokeNameThePublishFunctionFirst(t *testing.T) {
	t.Parallel()
	input := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(input, []byte(`{"solution": "x"}`), 0o644)
	for _, c := range []struct {
		name  string
		args  []string
		first string // named before the table
	}{
		{"toolset register FILE", []string{"toolset", "register", filepath.Join(toolsetFiles, "demo.yaml")}, "--url URL, or set $" + EnvPublishURL},
		{"toolset register --tool", []string{"toolset", "register", "--tool", "workflow-validator"}, "--url URL, or set $" + EnvPublishURL},
		{"invoke", []string{"invoke", "workflow-validator", "--input", input}, "--url URL or $" + EnvPublishURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(c.args...)
			first, table := strings.Index(errs, c.first), strings.Index(errs, "--table")
			if code != ExitMisuse || first < 0 || table < 0 || first > table {
				t.Fatalf("exit %d, want 2 naming %q before --table\nstdout: %s\nstderr: %s", code, c.first, out, errs)
			}
		})
	}
}

// invoke --url reads the toolset through the publish function (GET
// /toolsets/ID); one not registered there is named with the command that
// registers it through the publish function, and the table is not named.
func TestInvokeReadsTheToolsetThroughThePublishFunction(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error": {"code": "PUBLISH_NOT_FOUND", "message": "toolset is not registered in stage test"}}`))
	}))
	defer fn.Close()
	input := filepath.Join(t.TempDir(), "in.json")
	os.WriteFile(input, []byte(`{"solution": "x"}`), 0o644)
	code, out, errs := fakeAWS.run("invoke", "workflow-validator", "--input", input, "--url", fn.URL)
	want := "toolgate toolset register --url " + fn.URL + " --tool workflow-validator"
	if code != ExitErrors || !strings.Contains(errs, "is not registered") || !strings.Contains(errs, want) || strings.Contains(errs, "--table") {
		t.Fatalf("exit %d, want 1 naming %q and no table\nstdout: %s\nstderr: %s", code, want, out, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || !strings.HasPrefix(paths[0], "GET /toolsets/ts_") {
		t.Fatalf("requests %v, want one GET /toolsets/ts_...", paths)
	}
}
