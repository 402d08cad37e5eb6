package stack_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/tool"
)

// The local stack runs the http function under the RIE on both lanes,
// where publishing (its parameter) and Step Functions (the functions
// file) find its sfn lane, each lane running the dispatcher with its own
// ledger secrets; and the recording HTTP service listens on 127.0.0.1,
// recording what reaches it.
func TestLocalStackRunsTheHTTPFunction(t *testing.T) {
	e := sharedEnv(t)
	st := e.st

	var params, functions map[string]string
	readJSON(t, st.ParamsFile, &params)
	readJSON(t, filepath.Join(st.Dir, "functions.json"), &functions)
	if got, want := params["/toolgate/"+stack.Stage+"/function/http/arn"], stack.FunctionARN("http")+":sfn"; got != want {
		t.Errorf("http's parameter %q, want its sfn alias %q", got, want)
	}
	if functions["http"] != st.SFNEndpoints["http"]+local.InvokePath {
		t.Errorf("Step Functions invokes http at %q, not its sfn lane %q", functions["http"], st.SFNEndpoints["http"])
	}
	if _, err := st.LedgerSecrets(t.Context(), "http"); err != nil {
		t.Errorf("http's ledger secrets: %v", err)
	}
	for _, c := range []struct{ name, endpoint string }{
		{"direct lane", st.Endpoints["http"]},
		{"sfn lane", st.SFNEndpoints["http"]},
	} {
		if c.endpoint == "" {
			t.Errorf("%s: no endpoint", c.name)
			continue
		}
		if got := invokeErrorType(t, c.endpoint, `{}`); got != string(tool.InputInvalid) {
			t.Errorf("%s, no envelope: errorType %q, want %s (the dispatcher's answer)", c.name, got, tool.InputInvalid)
		}
	}

	u, err := url.Parse(st.HTTP.URL())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the recording service listens at %s (%v), want 127.0.0.1", st.HTTP.URL(), err)
	}
	before := len(st.HTTP.Requests())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.HTTP.URL()+"/stack-test/ping", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got, err := st.HTTP.Wait(ctx, before+1)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[before]; resp.StatusCode != http.StatusOK || r.Method != http.MethodGet || r.Path != "/stack-test/ping" || r.Applied {
		t.Errorf("answered %d, recorded %+v", resp.StatusCode, r)
	}
}
