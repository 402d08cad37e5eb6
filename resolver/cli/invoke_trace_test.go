package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/functionconfig"
)

// toolgate invoke continues TRACEPARENT: the direct call's envelope
// carries it, so the function's attempt span is in the caller's trace,
// under the call's step span, whose parent is the caller's span.
func TestInvokeContinuesTRACEPARENT(t *testing.T) {
	t.Parallel()
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	v := startDirectValidator(t, map[string]string{functionconfig.EnvTracing: "otlp:" + rec.URL()})
	store, dynamoEndpoint, fn := v.store, v.dynamo, v.fn
	cliEnv := v.cli.with(map[string]string{EnvTraceparent: callerTraceparent})
	in, _ := json.Marshal(map[string]string{"solution": "solution: s\nversion: 1\nsteps:\n  - id: a\n    succeed: {}\n"})
	p := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(p, in, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cliEnv.run("toolset", "register", "--tool", "workflow-validator", "--endpoint", dynamoEndpoint, "--table", store.Table()); code != ExitOK {
		t.Fatal(errs)
	}
	if code, _, errs := cliEnv.run("invoke", "workflow-validator", "--endpoint", fn.Endpoint(), "--as", "operator", "--dynamodb-endpoint", dynamoEndpoint,
		"--table", store.Table(), "--input", p); code != ExitOK {
		t.Fatalf("invoke: exit %d\n%s", code, errs)
	}
	spans := rec.Trace("4bf92f3577b34da6a3ce929d0e0e4736")
	var step, attempt *otlpreceiver.Span
	for i := range spans {
		switch name := spans[i].Name; {
		case strings.HasPrefix(name, "toolgate.step "):
			step = &spans[i]
		case name == "toolgate.attempt workflow-validator":
			attempt = &spans[i]
		}
	}
	if step == nil || attempt == nil || step.ParentSpanID != "00f067aa0ba902b7" || attempt.ParentSpanID != step.SpanID {
		t.Fatalf("the caller's trace holds %+v\n%s", spans, otlpreceiver.Tree(spans))
	}
}
