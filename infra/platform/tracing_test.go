package platform

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// tracingOf is every function's TOOLGATE_TRACING in the platform stack of
// cfg, by logical ID; "<unset>" for a function without it.
func tracingOf(t *testing.T, cfg Config) map[string]string {
	t.Helper()
	_, platform := NewApp(awscdk.NewApp(nil), cfg, filepath.Join("testdata", "assets"))
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(platform.Stack, nil) }); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for id, fn := range resources(*tpl.ToJSON(), "AWS::Lambda::Function") {
		out[id] = "<unset>"
		if e, ok := props(fn)["Environment"].(tmpl); ok {
			if v, ok := e["Variables"].(tmpl)[functionconfig.EnvTracing]; ok {
				out[id] = text(v)
			}
		}
	}
	return out
}

// With no tracing configured, every function, the ledger secrets'
// provisioning one among them, is told to export nothing: the variable is
// set, to off, rather than left out.
func TestTracingIsOffInEveryFunctionByDefault(t *testing.T) {
	cfg := testConfig()
	cfg.Stage = "untraced"
	cfg.Tracing = ""
	got := tracingOf(t, cfg)
	if len(got) != len(wantFunctions) {
		t.Fatalf("%d functions, want %d", len(got), len(wantFunctions))
	}
	for id, v := range got {
		if v != functionconfig.TracingOff {
			t.Errorf("%s: %s=%s, want %s", id, functionconfig.EnvTracing, v, functionconfig.TracingOff)
		}
	}
	if d := defaultConfig().Tracing; d != functionconfig.TracingOff {
		t.Errorf("the default configuration's tracing is %q, want %q", d, functionconfig.TracingOff)
	}
}

// testConfig's tracing (adotCollector) reaches every function of the
// shared synth, and no function has X-Ray active tracing off: the OTLP
// export is in addition to X-Ray, never instead (docs/infra.md,
// "Tracing"; checkFunctions holds the rest of each environment).
func TestTracingReachesEveryFunctionAndXRayStaysOn(t *testing.T) {
	fns := resources(platformJSON, "AWS::Lambda::Function")
	if len(fns) != len(wantFunctions) {
		t.Fatalf("%d functions, want %d", len(fns), len(wantFunctions))
	}
	for id, fn := range fns {
		p := props(fn)
		env, _ := p["Environment"].(tmpl)
		vars, _ := env["Variables"].(tmpl)
		if got := text(vars[functionconfig.EnvTracing]); got != adotCollector {
			t.Errorf("%s: %s=%s, want %s", id, functionconfig.EnvTracing, got, adotCollector)
		}
		if got := text(p["TracingConfig"]); got != `{"Mode":"Active"}` {
			t.Errorf("%s: TracingConfig %s, want X-Ray active tracing", id, got)
		}
	}
}

// A construct given a tracing value the functions would refuse stops at
// definition, naming the prop (LoadConfig refuses it first, naming the
// context key: TestLoadConfig).
func TestPlatformStackRefusesABadTracingProp(t *testing.T) {
	cfg := testConfig()
	cfg.Stage = "badtrace"
	cfg.Tracing = "otlp:localhost:4318"
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		NewApp(awscdk.NewApp(nil), cfg, filepath.Join("testdata", "assets"))
	}()
	if !strings.Contains(msg, "PlatformStackProps.Tracing: "+functionconfig.EnvTracing) {
		t.Errorf("recovered %q, want a panic naming PlatformStackProps.Tracing", msg)
	}
}
