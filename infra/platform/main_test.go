package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// The app is synthesized once per test binary (each synth costs seconds):
// TestMain fills these before any test runs.
var (
	ledgerTemplate, platformTemplate assertions.Template
	ledgerJSON, platformJSON         tmpl
	// The stacks, whose synthesis ran cdk-nag's packs (addNagPacks).
	ledgerStack, platformStack awscdk.Stack
)

// testConfig differs from defaultConfig wherever a prop can, so that the
// tests see props reach the template.
func testConfig() Config {
	cfg := defaultConfig()
	cfg.Stage = "test"
	cfg.Sender = "noreply@mail.example.org"
	cfg.SenderIdentity = "example.org"
	// A mixed-case address and a Unicode domain: the ses:Recipients
	// condition holds their canonical forms (TestRecipientCondition).
	cfg.RecipientAllow = []string{"@example.org", "Ops@Example.com", "@bücher.example"}
	// Review notices: review-request's ses:Recipients condition holds
	// the canonical forms too (TestReviewNoticesCondition).
	cfg.ReviewNotices = []string{"Ops@Example.com", "@reviewers.example.org"}
	cfg.FetchAllow = []string{"api.example.org", "*.data.example.net"}
	cfg.HTTPAllow = []string{"api.chat.example.org", "*.hooks.example.net"}
	cfg.HTTPMaxRequestBytes = 32 << 10
	cfg.MCPAllow = []string{"mcp.example.org", "*.mcp.example.net"}
	cfg.MCPSchemaTTLSeconds = 10
	cfg.Functions = map[string]FunctionSettings{
		fnSendEmail: {ReservedConcurrency: 5},
		fnFetch:     {MemoryMB: 1024, TimeoutSeconds: 20},
	}
	// Stage test takes anyStage's reservations; send-email's own setting
	// wins over its entry there.
	cfg.ReservedConcurrency = map[string]map[string]int{
		"dev":    {},
		anyStage: {fnSendEmail: 9, fnReviewDecision: 7},
	}
	cfg.TableThroughput = Throughput{MaxReadRequestUnits: 6000, MaxWriteRequestUnits: noMaximum}
	cfg.IndexThroughput = Throughput{MaxReadRequestUnits: 500, MaxWriteRequestUnits: 250}
	cfg.SessionRoles = []string{"AWSReservedSSO_Reviewer_0123456789abcdef", "toolgate-people"}
	cfg.DirectReviewers = map[string][]string{fnSendEmail: {
		"arn:aws:iam::123456789012:role/toolgate-reviewer", "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Reviewer_*/*",
	}}
	cfg.DirectReviewMaxSeconds = 1800
	cfg.CredentialAdmins = []string{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_CredentialAdmin_*/*"}
	cfg.AlarmTopicARN = testTopic
	cfg.ErrorAlarmThreshold = 3
	cfg.Tracing = adotCollector
	cfg.WebhookAdmins = []string{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_WebhookAdmin_*/*"}
	cfg.WebhookAllow = []string{"hooks.example.org", "*.receivers.example.net"}
	// 4 attempts over 1 h 10 min 10 s: the deliveries queue keeps 4 days.
	cfg.WebhookSchedule = "10s,10m,1h"
	cfg.InboundOperators = []string{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_InboundOperator_*/*"}
	cfg.InboundRetentionDays = 30
	return cfg
}

// adotCollector is the tracing value docs/infra.md documents: the AWS
// Distro for OpenTelemetry collector layer's local OTLP/HTTP receiver.
const adotCollector = "otlp:http://localhost:4318"

const testTopic = "arn:aws:sns:eu-west-1:123456789012:toolgate-alarms"

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// The settings of make synth, unless the caller set them.
	JSIIDefaults(filepath.Join("..", "..", ".cache", "jsii"))
	defer jsii.Close()
	cfg := testConfig()
	if err := cfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "testConfig:", err)
		return 1
	}
	app := awscdk.NewApp(nil)
	ledger, platform := NewApp(app, cfg, filepath.Join("testdata", "assets"))
	addNagPacks(app)
	ledgerStack, platformStack = ledger.Stack, platform.Stack
	if err := try(func() {
		ledgerTemplate = assertions.Template_FromStack(ledger.Stack, nil)
		platformTemplate = assertions.Template_FromStack(platform.Stack, nil)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		return 1
	}
	ledgerJSON, platformJSON = *ledgerTemplate.ToJSON(), *platformTemplate.ToJSON()
	return m.Run()
}

// try runs f and returns what it panicked with as an error: a failed
// assertions.Template assertion is a panic.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// tmpl is a CloudFormation template as JSON.
type tmpl = map[string]any

// clone deep-copies a template, for a test-only mutation.
func clone(t tmpl) tmpl {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err)
	}
	var c tmpl
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return c
}

// resources returns the template's resources of type typ by logical ID.
func resources(t tmpl, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	all, _ := t["Resources"].(map[string]any)
	for id, r := range all {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// props returns a resource's Properties.
func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// cdkHash is the 8 hex digits the CDK appends to a construct's logical ID.
var cdkHash = regexp.MustCompile(`^([A-Za-z0-9]+?)[0-9A-F]{8}$`)

// symbol is a logical ID without the CDK's hash: SendEmailFunctionLogs for
// SendEmailFunctionLogs1A2B3C4D.
func symbol(id string) string {
	if m := cdkHash.FindStringSubmatch(id); m != nil {
		return m[1]
	}
	return id
}

// text renders a template value as one string: Fn::Sub keeps its text,
// Ref X is ${X}, Fn::GetAtt [X, A] is ${X.A}, Fn::Join joins, logical IDs
// lose their CDK hash; anything else is its JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if len(v) == 1 {
			for k, arg := range v {
				switch k {
				case "Fn::Sub":
					if s, ok := arg.(string); ok {
						return s
					}
				case "Ref":
					if s, ok := arg.(string); ok {
						if strings.HasPrefix(s, "AWS::") {
							return "${" + s + "}"
						}
						return "${" + symbol(s) + "}"
					}
				case "Fn::GetAtt":
					if a, ok := arg.([]any); ok && len(a) == 2 {
						return "${" + symbol(a[0].(string)) + "." + a[1].(string) + "}"
					}
				case "Fn::Select", "Fn::Split":
					// select(2, split(/, ${X.Url})): a Function URL's host.
					if a, ok := arg.([]any); ok && len(a) == 2 {
						return strings.ToLower(strings.TrimPrefix(k, "Fn::")) + "(" + text(a[0]) + ", " + text(a[1]) + ")"
					}
				case "Fn::Join":
					if a, ok := arg.([]any); ok && len(a) == 2 {
						parts := a[1].([]any)
						s := make([]string, len(parts))
						for i, p := range parts {
							s[i] = text(p)
						}
						return strings.Join(s, a[0].(string))
					}
				}
			}
		}
		m := map[string]any{}
		for k, x := range v {
			m[k] = textTree(x)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	b, _ := json.Marshal(textTree(v))
	return string(b)
}

// textTree renders the intrinsic values inside v with text, keeping its
// shape (conditions hold maps of lists of intrinsics).
func textTree(v any) any { return intrinsicTree(v, text) }

// intrinsicTree renders each intrinsic value inside v ({"Ref": …} or
// {"Fn::…": …}) with render, keeping the shape of the maps and lists
// around them.
func intrinsicTree(v any, render func(any) string) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k := range v {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return render(v)
				}
			}
		}
		m := map[string]any{}
		for k, x := range v {
			m[k] = intrinsicTree(x, render)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = intrinsicTree(x, render)
		}
		return l
	}
	return v
}

// strs renders a string or a list of them (IAM's Action and Resource).
func strs(v any) []string {
	var out []string
	switch v := v.(type) {
	case nil:
	case []any:
		for _, x := range v {
			out = append(out, text(x))
		}
	default:
		out = append(out, text(v))
	}
	sort.Strings(out)
	return out
}

// defaultSynth synthesizes, once, the configuration of a bare `cdk synth`
// (no context: stage dev) with cdk-nag's packs, and returns the platform
// template and the unsuppressed findings of both stacks.
func defaultSynth() (tmpl, []string, error) {
	s, err := defaultSynthOnce()
	return s.pj, s.findings, err
}

type synthesis struct {
	pj       tmpl
	findings []string
}

var defaultSynthOnce = sync.OnceValues(func() (synthesis, error) {
	var out synthesis
	cfg, err := LoadConfig(func(string) any { return nil })
	if err != nil {
		return out, err
	}
	err = try(func() {
		app := awscdk.NewApp(nil)
		ledger, platform := NewApp(app, cfg, filepath.Join("testdata", "assets"))
		addNagPacks(app)
		out.pj = *assertions.Template_FromStack(platform.Stack, nil).ToJSON()
		out.findings, _ = nagResults(ledger.Stack, platform.Stack)
	})
	return out, err
})

// TestDefaultTemplate synthesizes the configuration of a bare `cdk synth`
// (no context): the direct lane is closed to gated tools (review-request
// has no TOOLGATE_DIRECT_REVIEWERS), its reviews last at most 3600 s, every
// function's session roles are the inbound-start role's alone, the lanes'
// aliases and the variables
// never set hold as in the test configuration, and cdk-nag finds nothing
// unsuppressed.
func TestDefaultTemplate(t *testing.T) {
	pj, findings, err := defaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("cdk-nag: %s", f)
	}
	for id, fn := range resources(pj, "AWS::Lambda::Function") {
		vars := props(fn)["Environment"].(tmpl)["Variables"].(tmpl)
		if v, ok := vars[envSessionRoles]; ok && text(v) != "toolgate-dev-inbound-start" {
			t.Errorf("%s: %s=%s without sessionRoles, want the inbound-start role's alone", id, envSessionRoles, text(v))
		}
		if id != "ReviewRequestFunction" {
			continue
		}
		if v, ok := vars[envDirectReviewers]; ok {
			t.Errorf("review-request: %s=%s without directReviewers", envDirectReviewers, text(v))
		}
		if got := text(vars[envDirectReviewMaxSecs]); got != "3600" {
			t.Errorf("review-request: %s=%s, want 3600", envDirectReviewMaxSecs, got)
		}
	}
	if err := errors.Join(checkNeverSet(nil, nil, nil, pj), checkAliases(nil, nil, nil, pj)); err != nil {
		t.Error(err)
	}
}
