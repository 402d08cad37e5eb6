package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
)

const callerTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Without export, the run continues TRACEPARENT as given; a malformed one
// is ignored with a warning that does not quote it; none gives none.
func TestRunContinuesTRACEPARENTWithoutExport(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{callerTraceparent, callerTraceparent},
		{"00-SECRETLOOKING-value", ""},
		{"", ""},
	} {
		var stderr bytes.Buffer
		got, end, err := runTrace(context.Background(), envOf(map[string]string{EnvTraceparent: c.env}), "s", &stderr)
		if err != nil || got != c.want {
			t.Fatalf("TRACEPARENT %q: meta.traceparent %q, %v; want %q", c.env, got, err, c.want)
		}
		end("SUCCEEDED", false)
		if warned := stderr.Len() > 0; warned != (c.env != "" && c.want == "") || strings.Contains(stderr.String(), "SECRET") {
			t.Fatalf("TRACEPARENT %q: stderr %q", c.env, stderr.String())
		}
	}
	if _, _, err := runTrace(context.Background(), envOf(map[string]string{functionconfig.EnvTracing: "otlp:nope"}), "s", io.Discard); err == nil {
		t.Fatal("a bad TOOLGATE_TRACING was accepted")
	}
}

// With export on, run opens the root span under TRACEPARENT's, and the run
// continues the root span: meta.traceparent names it.
func TestRunOpensTheRootSpanWhenExportIsOn(t *testing.T) {
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	env := envOf(map[string]string{EnvTraceparent: callerTraceparent, functionconfig.EnvTracing: "otlp:" + rec.URL()})
	got, end, err := runTrace(context.Background(), env, "newsletter", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	end("FAILED", true)
	sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: got})
	spans := rec.Spans()
	if !ok || len(spans) != 1 {
		t.Fatalf("meta.traceparent %q, %d spans exported", got, len(spans))
	}
	root := spans[0]
	if root.Name != "toolgate.run newsletter" || root.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || root.ParentSpanID != "00f067aa0ba902b7" ||
		root.SpanID != sc.SpanID().String() || root.Status != codes.Error || root.Service != "toolgate-cli" {
		t.Fatalf("root span %+v, run continues %q", root, got)
	}
}
