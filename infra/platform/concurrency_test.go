package platform

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// cdkContext is cdk.json's context, as TryGetContext answers it for a
// bare `cdk synth`.
func cdkContext(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	return f.Context
}

// cdkConfig is the configuration of `cdk synth` with cdk.json and the
// context keys of over (as -c gives them).
func cdkConfig(t *testing.T, over map[string]any) Config {
	t.Helper()
	ctx := cdkContext(t)
	cfg, err := LoadConfig(func(k string) any {
		if v, ok := over[k]; ok {
			return v
		}
		return ctx[k]
	})
	if err != nil {
		t.Fatalf("cdk.json with %v: %v", over, err)
	}
	return cfg
}

// checkReserved requires each function's ReservedConcurrentExecutions to
// be want[name], absent for 0.
func checkReserved(tpl assertions.Template, want map[string]int) error {
	var errs []error
	for _, spec := range functionSpecs {
		var v any = assertions.Match_Absent()
		if n := want[spec.Name]; n > 0 {
			v = n
		}
		errs = append(errs, wrap(spec.Name, try(func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
				"FunctionName": assertions.Match_StringLikeRegexp(jsii.String("-" + spec.Name + "$")), "ReservedConcurrentExecutions": v,
			})
		})))
	}
	return errors.Join(errs...)
}

// TestReservedConcurrencyByStage: with cdk.json, a stage other than dev
// reserves cdk.json's defaults for every function, a function's own
// toolgate:functions setting wins, and dev reserves nothing.
func TestReservedConcurrencyByStage(t *testing.T) {
	defaults := cdkConfig(t, nil).ReservedConcurrency[anyStage]
	for _, spec := range functionSpecs {
		if defaults[spec.Name] < 1 {
			t.Errorf("cdk.json reserves no concurrency for %s on other stages than dev", spec.Name)
		}
	}
	t.Run("prod", func(t *testing.T) {
		cfg := cdkConfig(t, map[string]any{
			"toolgate:stage":     "prod",
			"toolgate:functions": `{"send-email": {"reservedConcurrency": 2}, "publish": {"memoryMB": 1024}}`,
		})
		want := map[string]int{}
		for name, n := range defaults {
			want[name] = n
		}
		want[fnSendEmail] = 2
		tpl, _ := synthPlatform(t, cfg)
		if err := checkReserved(tpl, want); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("dev", func(t *testing.T) {
		cfg := cdkConfig(t, nil)
		if cfg.Stage != "dev" {
			t.Fatalf("cdk.json's stage is %q", cfg.Stage)
		}
		tpl, _ := synthPlatform(t, cfg)
		if err := checkReserved(tpl, nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFunctionSettings(t *testing.T) {
	reserve := map[string]map[string]int{
		"dev":     {},
		"staging": {fnSendEmail: 3},
		anyStage:  {fnSendEmail: 5, fnReviewDecision: 10},
	}
	tests := []struct {
		name      string
		stage     string
		functions map[string]FunctionSettings
		want      map[string]int // reserved concurrency by function
	}{
		{"any other stage", "prod", nil, map[string]int{fnSendEmail: 5, fnReviewDecision: 10}},
		{"dev", "dev", nil, nil},
		{"a stage's own entry", "staging", nil, map[string]int{fnSendEmail: 3}},
		{"a function's own setting wins", "prod", map[string]FunctionSettings{fnSendEmail: {ReservedConcurrency: 1, MemoryMB: 512}},
			map[string]int{fnSendEmail: 1, fnReviewDecision: 10}},
		{"and on dev too", "dev", map[string]FunctionSettings{fnPublish: {ReservedConcurrency: 2}}, map[string]int{fnPublish: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{Stage: tt.stage, Functions: tt.functions, ReservedConcurrency: reserve}
			got := c.functionSettings()
			for _, spec := range functionSpecs {
				s := got[spec.Name]
				if s.ReservedConcurrency != tt.want[spec.Name] {
					t.Errorf("%s: reserved %d, want %d", spec.Name, s.ReservedConcurrency, tt.want[spec.Name])
				}
				if own := tt.functions[spec.Name]; s.MemoryMB != own.MemoryMB || s.TimeoutSeconds != own.TimeoutSeconds {
					t.Errorf("%s: %+v, want the memory and timeout of %+v", spec.Name, s, own)
				}
			}
		})
	}
}

// TestLedgerThroughputDefaults: with no configuration the table and its
// indexes carry the default on-demand maxima; props without them set none.
func TestLedgerThroughputDefaults(t *testing.T) {
	cfg, err := LoadConfig(func(string) any { return nil })
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(nil)
	stack := NewLedgerStack(app, "Throughput", &LedgerStackProps{LedgerProps: LedgerProps{
		TableName: "toolgate-dev", TableThroughput: cfg.TableThroughput, IndexThroughput: cfg.IndexThroughput,
	}})
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack.Stack, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := try(func() {
		tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 12000, "MaxWriteRequestUnits": 4000},
			"GlobalSecondaryIndexes": []any{assertions.Match_ObjectLike(&map[string]any{
				"IndexName":          "reviews-by-status",
				"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 4000, "MaxWriteRequestUnits": 4000},
			}), assertions.Match_ObjectLike(&map[string]any{
				"IndexName":          "webhook-unsent",
				"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 4000, "MaxWriteRequestUnits": 4000},
			}), assertions.Match_ObjectLike(&map[string]any{
				"IndexName":          "parks-by-status",
				"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 4000, "MaxWriteRequestUnits": 4000},
			}), assertions.Match_ObjectLike(&map[string]any{
				"IndexName":          "inbound-unqueued",
				"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 4000, "MaxWriteRequestUnits": 4000},
			})},
		})
	}); err != nil {
		t.Fatal(err)
	}
}
