package platform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/lane"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		context map[string]any // as TryGetContext answers: text from -c, JSON values from cdk.json
		want    func(*Config)
		err     string // a substring of the error; "" for none
	}{
		{name: "defaults", want: func(c *Config) { c.SenderIdentity = "example.com" }},
		{name: "text from -c", context: map[string]any{
			"toolgate:stage": "prod", "toolgate:sender": "Toolgate@Mail.Example.org", "toolgate:senderIdentity": "example.org",
			"toolgate:recipientAllow": "@example.org, ops@example.com", "toolgate:fetchAllow": "api.example.org",
			"toolgate:reviewNotices":        "ops@example.com, @reviewers.example.org",
			"toolgate:createSenderIdentity": "true", "toolgate:deletionProtection": "false", "toolgate:logRetentionDays": "365",
			"toolgate:functions":     `{"send-email": {"reservedConcurrency": 5}}`,
			"toolgate:alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:alarms",
			"toolgate:sessionRoles":  "AWSReservedSSO_Reviewer_0a1b2c3d, toolgate-people",
			"toolgate:directReviewers": `{"send-email": ["arn:aws:iam::123456789012:role/reviewer"],
				"structured-data-fetch": ["arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Reviewer_*/*"]}`,
			"toolgate:directReviewMaxSeconds": "7200", "toolgate:indexLeadingKeys": "true",
		}, want: func(c *Config) {
			c.Stage, c.Sender, c.SenderIdentity = "prod", "Toolgate@mail.example.org", "example.org"
			c.RecipientAllow, c.FetchAllow = []string{"@example.org", "ops@example.com"}, []string{"api.example.org"}
			c.ReviewNotices = []string{"ops@example.com", "@reviewers.example.org"}
			c.CreateSenderIdentity, c.DeletionProtection, c.LogRetentionDays = true, false, 365
			c.Functions = map[string]FunctionSettings{fnSendEmail: {ReservedConcurrency: 5}}
			c.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
			c.SessionRoles = []string{"AWSReservedSSO_Reviewer_0a1b2c3d", "toolgate-people"}
			c.DirectReviewers = map[string][]string{
				fnSendEmail: {"arn:aws:iam::123456789012:role/reviewer"},
				fnFetch:     {"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Reviewer_*/*"},
			}
			c.DirectReviewMaxSeconds = 7200
			c.IndexLeadingKeys = true
		}},
		{name: "JSON from cdk.json", context: map[string]any{
			"toolgate:recipientAllow": []any{"@example.net"}, "toolgate:deletionProtection": false,
			"toolgate:reviewNotices":          []any{"@reviewers.example.net"},
			"toolgate:functions":              map[string]any{"workflow-validator": map[string]any{"memoryMB": float64(1024)}},
			"toolgate:sessionRoles":           []any{"toolgate-people"},
			"toolgate:directReviewers":        map[string]any{"send-email": []any{"arn:aws:iam::123456789012:role/reviewer"}},
			"toolgate:directReviewMaxSeconds": float64(31536000),
		}, want: func(c *Config) {
			c.SenderIdentity, c.RecipientAllow, c.DeletionProtection = "example.com", []string{"@example.net"}, false
			c.ReviewNotices = []string{"@reviewers.example.net"}
			c.Functions = map[string]FunctionSettings{fnValidator: {MemoryMB: 1024}}
			c.SessionRoles = []string{"toolgate-people"}
			c.DirectReviewers = map[string][]string{fnSendEmail: {"arn:aws:iam::123456789012:role/reviewer"}}
			c.DirectReviewMaxSeconds = 31536000
		}},
		{name: "reserved concurrency and throughput from cdk.json", context: map[string]any{
			"toolgate:reservedConcurrency": map[string]any{"dev": map[string]any{}, "*": map[string]any{"send-email": float64(5)}},
			"toolgate:tableThroughput":     map[string]any{"maxReadRequestUnits": float64(100), "maxWriteRequestUnits": float64(-1)},
		}, want: func(c *Config) {
			c.SenderIdentity = "example.com"
			c.ReservedConcurrency = map[string]map[string]int{"dev": {}, anyStage: {fnSendEmail: 5}}
			c.TableThroughput = Throughput{MaxReadRequestUnits: 100, MaxWriteRequestUnits: noMaximum}
		}},
		// One maximum given: the other keeps its default.
		{name: "one index maximum from -c", context: map[string]any{"toolgate:indexThroughput": `{"maxWriteRequestUnits": 50}`},
			want: func(c *Config) {
				c.SenderIdentity = "example.com"
				c.IndexThroughput = Throughput{MaxReadRequestUnits: defaultIndexThroughput.MaxReadRequestUnits, MaxWriteRequestUnits: 50}
			}},
		{name: "reserved concurrency of no stage", context: map[string]any{"toolgate:reservedConcurrency": `{"Prod": {}}`},
			err: `reservedConcurrency: "Prod" is neither a stage nor "*"`},
		{name: "reserved concurrency of no function", context: map[string]any{"toolgate:reservedConcurrency": `{"*": {"send-mail": 5}}`},
			err: `reservedConcurrency.*: no function "send-mail"`},
		{name: "negative reserved concurrency", context: map[string]any{"toolgate:reservedConcurrency": `{"prod": {"publish": -1}}`},
			err: "reservedConcurrency.prod.publish -1: want 0 (none) or more"},
		{name: "table maximum 0", context: map[string]any{"toolgate:tableThroughput": `{"maxReadRequestUnits": 0}`},
			err: "tableThroughput.maxReadRequestUnits 0: want request units per second, 1 or more, or -1 for no maximum"},
		{name: "index maximum -2", context: map[string]any{"toolgate:indexThroughput": map[string]any{"maxWriteRequestUnits": float64(-2)}},
			err: "indexThroughput.maxWriteRequestUnits -2: want request units per second"},
		{name: "fractional maximum", context: map[string]any{"toolgate:tableThroughput": `{"maxWriteRequestUnits": 1.5}`}, err: "maxWriteRequestUnits"},
		{name: "throughput not JSON", context: map[string]any{"toolgate:tableThroughput": "max=4000"}, err: "toolgate:tableThroughput: not JSON"},
		{name: "throughput not an object", context: map[string]any{"toolgate:tableThroughput": "4000"}, err: "Config.tableThroughput"},
		{name: "recipient allow-list over IAM's limit", context: map[string]any{"toolgate:recipientAllow": manyDomains(300)},
			err: "recipientAllow: 300 entries make send-email's ses:Recipients IAM condition about"},
		{name: "bad stage", context: map[string]any{"toolgate:stage": "Prod_1"}, err: "stage"},
		// "_" ends the stage in a state machine's name (toolgate-<stage>_<solution>).
		{name: "stage with _", context: map[string]any{"toolgate:stage": "dev_2"}, err: `stage "dev_2"`},
		{name: "stage over 20", context: map[string]any{"toolgate:stage": "abcdefghijklmnopqrstu"}, err: `stage "abcdefghijklmnopqrstu"`},
		{name: "stage of 20", context: map[string]any{"toolgate:stage": "dev-2-abcdefghijklmn"}, want: func(c *Config) {
			c.Stage, c.SenderIdentity = "dev-2-abcdefghijklmn", "example.com"
		}},
		{name: "sender not an address", context: map[string]any{"toolgate:sender": "Toolgate <a@example.com>"}, err: "TOOLGATE_SENDER"},
		{name: "identity of another domain", context: map[string]any{"toolgate:senderIdentity": "example.net"}, err: "TOOLGATE_SENDER_IDENTITY_ARN"},
		{name: "empty recipient allow-list", context: map[string]any{"toolgate:recipientAllow": ""}, err: "TOOLGATE_RECIPIENT_ALLOW"},
		{name: "bad fetch host", context: map[string]any{"toolgate:fetchAllow": "http://api.example.org/"}, err: "fetchAllow"},
		{name: "fetch wildcard over a public suffix", context: map[string]any{"toolgate:fetchAllow": "api.example.org, *.github.io"}, err: `fetchAllow: fetch allow-list: hostlist: entry 1 "*.github.io": a wildcard over the public suffix github.io`},
		{name: "MCP hosts and cache", context: map[string]any{"toolgate:mcpAllow": "mcp.example.org, *.mcp.example.net", "toolgate:mcpSchemaTtlSeconds": "30"},
			want: func(c *Config) {
				c.SenderIdentity, c.MCPAllow, c.MCPSchemaTTLSeconds = "example.com", []string{"mcp.example.org", "*.mcp.example.net"}, 30
			}},
		{name: "http hosts apart from fetch's, and a body bound", context: map[string]any{"toolgate:httpAllow": "api.github.com, *.hooks.example.com", "toolgate:httpMaxRequestBytes": "131072"},
			want: func(c *Config) {
				c.SenderIdentity, c.HTTPAllow, c.HTTPMaxRequestBytes = "example.com", []string{"api.github.com", "*.hooks.example.com"}, 128<<10
			}},
		{name: "http hosts from cdk.json", context: map[string]any{"toolgate:httpAllow": []any{"hooks.example.com:8443"}},
			want: func(c *Config) { c.SenderIdentity, c.HTTPAllow = "example.com", []string{"hooks.example.com:8443"} }},
		{name: "bad http host", context: map[string]any{"toolgate:httpAllow": "https://api.github.com/repos"}, err: "httpAllow: http allow-list: hostlist"},
		{name: "http wildcard over a public suffix", context: map[string]any{"toolgate:httpAllow": "api.github.com, *.github.io"}, err: `httpAllow: http allow-list: hostlist: entry 1 "*.github.io": a wildcard over the public suffix github.io`},
		{name: "http body bound over the most", context: map[string]any{"toolgate:httpMaxRequestBytes": "196609"}, err: "httpMaxRequestBytes 196609: want 1..196608"},
		{name: "http body bound at the most", context: map[string]any{"toolgate:httpMaxRequestBytes": float64(196608)},
			want: func(c *Config) { c.SenderIdentity, c.HTTPMaxRequestBytes = "example.com", 192<<10 }},
		{name: "http body bound negative", context: map[string]any{"toolgate:httpMaxRequestBytes": "-1"}, err: "httpMaxRequestBytes -1"},
		{name: "http timeout past the catalog's", context: map[string]any{"toolgate:functions": `{"http": {"timeoutSeconds": 36}}`}, err: "functions.http.timeoutSeconds 36: more than the catalog's function_timeout_seconds, 35 s"},
		{name: "bad MCP host", context: map[string]any{"toolgate:mcpAllow": "https://mcp.example.org/mcp"}, err: "mcpAllow: hostlist"},
		{name: "MCP wildcard over a public suffix", context: map[string]any{"toolgate:mcpAllow": []any{"*.github.io"}}, err: `mcpAllow: hostlist: entry 0 "*.github.io"`},
		{name: "MCP cache over a minute", context: map[string]any{"toolgate:mcpSchemaTtlSeconds": "61"}, err: "mcpSchemaTtlSeconds 61: want 1..60"},
		{name: "MCP cache negative", context: map[string]any{"toolgate:mcpSchemaTtlSeconds": float64(-1)}, err: "mcpSchemaTtlSeconds -1"},
		{name: "unknown function", context: map[string]any{"toolgate:functions": `{"send-mail": {}}`}, err: `no function "send-mail"`},
		{name: "timeout too long", context: map[string]any{"toolgate:functions": `{"review-request": {"timeoutSeconds": 901}}`}, err: "timeoutSeconds"},
		{name: "timeout past the catalog's", context: map[string]any{"toolgate:functions": `{"structured-data-fetch": {"timeoutSeconds": 36}}`}, err: "function_timeout_seconds, 35 s"},
		{name: "removal policy", context: map[string]any{"toolgate:removalPolicy": "snapshot"}, err: "removalPolicy"},
		{name: "retention", context: map[string]any{"toolgate:logRetentionDays": "45"}, err: "logRetentionDays"},
		{name: "topic", context: map[string]any{"toolgate:alarmTopicArn": "alarms"}, err: "alarmTopicArn"},
		{name: "reviewer not an ARN", context: map[string]any{"toolgate:directReviewers": `{"send-email": ["alice@example.com"]}`},
			err: `directReviewers.send-email: reviewer "alice@example.com" must be an IAM principal ARN pattern`},
		{name: "reviewer with whitespace", context: map[string]any{"toolgate:directReviewers": `{"send-email": ["arn:aws:iam::123456789012:role/a b"]}`},
			err: "directReviewers.send-email: reviewer"},
		{name: "reviewers of no tool", context: map[string]any{"toolgate:directReviewers": `{"send-mail": ["arn:aws:iam::123456789012:role/reviewer"]}`},
			err: `directReviewers: no tool "send-mail"`},
		{name: "no reviewers for a tool", context: map[string]any{"toolgate:directReviewers": `{"send-email": []}`},
			err: "directReviewers.send-email: no reviewer patterns"},
		{name: "reviewers not JSON", context: map[string]any{"toolgate:directReviewers": "send-email=arn:aws:iam::123456789012:role/reviewer"},
			err: "toolgate:directReviewers: not JSON"},
		{name: "reviewers not lists", context: map[string]any{"toolgate:directReviewers": `{"send-email": "arn:aws:iam::123456789012:role/reviewer"}`},
			err: "cannot unmarshal"},
		{name: "review max 0", context: map[string]any{"toolgate:directReviewMaxSeconds": "0"}, err: "directReviewMaxSeconds 0: want 1..31536000"},
		{name: "review max over a year", context: map[string]any{"toolgate:directReviewMaxSeconds": "31536001"}, err: "directReviewMaxSeconds 31536001: want 1..31536000"},
		{name: "review max negative", context: map[string]any{"toolgate:directReviewMaxSeconds": float64(-1)}, err: "directReviewMaxSeconds -1"},
		{name: "session role with a path", context: map[string]any{"toolgate:sessionRoles": "people/alice"}, err: `sessionRoles "people/alice"`},
		{name: "session role with a comma", context: map[string]any{"toolgate:sessionRoles": []any{"a,b"}}, err: `sessionRoles "a,b"`},
		{name: "tracing to the ADOT collector layer, from -c", context: map[string]any{"toolgate:tracing": " otlp:http://localhost:4318 "},
			want: func(c *Config) { c.SenderIdentity, c.Tracing = "example.com", "otlp:http://localhost:4318" }},
		{name: "tracing off, from cdk.json", context: map[string]any{"toolgate:tracing": "off"},
			want: func(c *Config) { c.SenderIdentity = "example.com" }},
		{name: "tracing empty is off", context: map[string]any{"toolgate:tracing": ""},
			want: func(c *Config) { c.SenderIdentity = "example.com" }},
		{name: "tracing neither off nor otlp", context: map[string]any{"toolgate:tracing": "xray"},
			err: `context toolgate:tracing: TOOLGATE_TRACING: must be "off" or "otlp:"`},
		{name: "tracing to a receiver not over http", context: map[string]any{"toolgate:tracing": "otlp:grpc://localhost:4317"},
			err: "context toolgate:tracing: TOOLGATE_TRACING: the OTLP/HTTP receiver's URL must be http or https"},
		{name: "tracing to a URL with a query", context: map[string]any{"toolgate:tracing": "otlp:https://otel.example.org/?token=s3cret"},
			err: "context toolgate:tracing: TOOLGATE_TRACING: the OTLP/HTTP receiver's URL must have no user information, query or fragment"},
		{name: "session role too long", context: map[string]any{"toolgate:sessionRoles": strings.Repeat("r", 65)}, err: "sessionRoles"},
		{name: "an end-user mapping from -c", context: map[string]any{"toolgate:endUserMapping": `[{"principal": "arn:aws:iam::123456789012:role/support", "endUser": "customer-*"}]`},
			want: func(c *Config) {
				c.SenderIdentity = "example.com"
				c.EndUserMapping = []enduser.Entry{{Principal: "arn:aws:iam::123456789012:role/support", EndUser: "customer-*"}}
			}},
		{name: "an end-user mapping entry of any account", context: map[string]any{"toolgate:endUserMapping": []any{map[string]any{"principal": "arn:aws:iam::*:role/support", "endUser": "*"}}},
			err: "endUserMapping: end-user mapping: entry 0: principal: reviewer \"arn:aws:iam::*:role/support\" must name its AWS account"},
		{name: "an end-user mapping entry in snake case", context: map[string]any{"toolgate:endUserMapping": `[{"principal": "arn:aws:iam::123456789012:role/support", "end_user": "*"}]`},
			err: "endUserMapping: end-user mapping: entry 0: endUser is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfig(func(k string) any { return tt.context[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaultConfig()
			tt.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

// manyDomains is an allow-list of n domain entries.
func manyDomains(n int) []any {
	var l []any
	for i := range n {
		l = append(l, fmt.Sprintf("@d%04d.example.com", i))
	}
	return l
}

// TestCDKJSON: cdk.json's context passes the checks as it is, on its own
// stage and on another.
func TestCDKJSON(t *testing.T) {
	for _, stage := range []string{"", "prod"} {
		over := map[string]any{}
		if stage != "" {
			over["toolgate:stage"] = stage
		}
		cdkConfig(t, over)
	}
}

func TestFetchTimeoutFitsTheFunction(t *testing.T) {
	for _, c := range []struct{ fn, want int }{{5, 1}, {10, 5}, {20, 15}, {35, 30}, {900, 30}} {
		if got := fetchTimeoutSeconds(c.fn); got != c.want {
			t.Errorf("fetchTimeoutSeconds(%d) = %d, want %d", c.fn, got, c.want)
		}
	}
}

// TestSAMLocalVariables: a SAM local template declares, empty, the
// variables --env-vars sets; the AWS template declares none of them
// (TestTemplates/functions checks each function's whole environment).
// Even a SAM local template sets no variable of neverSet, but for
// TOOLGATE_LANE, declared empty on the functions with lanes only.
func TestSAMLocalVariables(t *testing.T) {
	p := &PlatformStackProps{TableName: "toolgate-local", SAMLocal: true, RecipientAllow: []string{"@example.com"}}
	for _, spec := range functionSpecs {
		env := functionEnv(spec, p, spec.settings(FunctionSettings{}), nil)
		for _, k := range append(samLocalVariables[""], samLocalVariables[spec.Name]...) {
			if v, ok := env[k]; !ok || *v != "" {
				t.Errorf("%s: %s is not declared empty", spec.Name, k)
			}
		}
		for k := range neverSet {
			v, ok := env[k]
			switch {
			case k == lane.EnvLane && spec.Lanes:
				if !ok || *v != "" {
					t.Errorf("%s: %s is not declared empty", spec.Name, k)
				}
			case ok:
				t.Errorf("%s: %s is declared in a SAM local template: %s", spec.Name, k, neverSet[k])
			}
		}
	}
	p.SAMLocal = false
	for _, spec := range functionSpecs {
		env := functionEnv(spec, p, spec.settings(FunctionSettings{}), nil)
		for _, k := range append(samLocalVariables[""], samLocalVariables[spec.Name]...) {
			if _, ok := env[k]; ok {
				t.Errorf("%s: %s is declared without SAMLocal", spec.Name, k)
			}
		}
	}
}

// TestDirectLaneEnv: review-request's direct-lane variables follow the
// props, and with none the direct lane stays closed to gated tools (no
// TOOLGATE_DIRECT_REVIEWERS) and the session roles are the inbound-start
// role's alone.
func TestDirectLaneEnv(t *testing.T) {
	spec := specOf(fnReviewRequest)
	for _, c := range []struct {
		name  string
		props PlatformStackProps
		want  map[string]string // "" for a variable that must be absent
	}{
		{"defaults", PlatformStackProps{Stage: "test", TableName: "toolgate-test", DirectReviewMaxSeconds: 3600},
			map[string]string{envDirectReviewers: "", envDirectReviewMaxSecs: "3600", envSessionRoles: "toolgate-test-inbound-start"}},
		{"set", PlatformStackProps{
			Stage:                  "test",
			TableName:              "toolgate-test",
			DirectReviewers:        map[string][]string{fnValidator: {"arn:aws:iam::123456789012:role/b"}, fnSendEmail: {"arn:aws:iam::123456789012:role/a", "arn:aws:iam::123456789012:user/*"}},
			DirectReviewMaxSeconds: 60, SessionRoles: []string{"r1", "r2"},
		}, map[string]string{
			envDirectReviewers:     `{"send-email":["arn:aws:iam::123456789012:role/a","arn:aws:iam::123456789012:user/*"],"workflow-validator":["arn:aws:iam::123456789012:role/b"]}`,
			envDirectReviewMaxSecs: "60", envSessionRoles: "r1,r2,toolgate-test-inbound-start",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := functionEnv(spec, &c.props, spec.settings(FunctionSettings{}), nil)
			for k, want := range c.want {
				got, ok := "", false
				if v := env[k]; v != nil {
					got, ok = *v, true
				}
				switch {
				case want == "" && ok:
					t.Errorf("%s=%s, want it absent", k, got)
				case want != "" && got != want:
					t.Errorf("%s=%q (set: %v), want %s", k, got, ok, want)
				}
			}
			// What the app writes, review-request's own parser reads back.
			vars := map[string]string{"AWS_REGION": "eu-west-1"}
			for k, v := range env {
				vars[k] = *v
			}
			vars[envAccount] = "123456789012" // the stack's account, a token at synth
			cfg, err := request.ConfigFromEnv(func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.props.DirectReviewers, cfg.Direct.Reviewers, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("reviewers read back (-props +function):\n%s", d)
			}
			if cfg.Direct.MaxTimeoutSeconds != c.props.DirectReviewMaxSeconds {
				t.Errorf("max timeout read back %d, want %d", cfg.Direct.MaxTimeoutSeconds, c.props.DirectReviewMaxSeconds)
			}
		})
	}
	// Other functions never see the direct lane's configuration.
	p := &PlatformStackProps{DirectReviewers: map[string][]string{fnSendEmail: {"arn:aws:iam::123456789012:role/a"}}, DirectReviewMaxSeconds: 60}
	for _, spec := range functionSpecs {
		env := functionEnv(spec, p, spec.settings(FunctionSettings{}), nil)
		_, r := env[envDirectReviewers]
		_, m := env[envDirectReviewMaxSecs]
		if spec.Name != fnReviewRequest && (r || m) {
			t.Errorf("%s has the direct lane's configuration", spec.Name)
		}
	}
}

// TestSAMEnvFile: infra/testdata/sam-env.json (docs/infra.md, "SAM
// local") sets only variables a SAM local template declares, since SAM
// ignores the others, and none of neverSet but TOOLGATE_LANE.
func TestSAMEnvFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "sam-env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]string
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	p := &PlatformStackProps{TableName: "toolgate-local", SAMLocal: true, RecipientAllow: []string{"@example.com"}, FetchAllow: []string{"api.example.com"}}
	for _, spec := range functionSpecs {
		vars, ok := file[spec.LogicalID]
		if !ok {
			t.Errorf("no %s in sam-env.json", spec.LogicalID)
			continue
		}
		env := functionEnv(spec, p, spec.settings(FunctionSettings{}), jsii.String(""))
		for k, v := range vars {
			if _, ok := env[k]; !ok {
				t.Errorf("%s: %s is not declared in a SAM local template: SAM ignores it", spec.LogicalID, k)
			}
			if _, never := neverSet[k]; never && k != lane.EnvLane {
				t.Errorf("%s: %s=%s: %s", spec.LogicalID, k, v, neverSet[k])
			}
		}
	}
}

// A function whose memory buys it more than one vCPU keeps the Go
// runtime's default GOMAXPROCS; at one vCPU or less it runs with one P.
func TestGOMAXPROCSFollowsEachFunctionsMemory(t *testing.T) {
	p := &PlatformStackProps{TableName: "toolgate-test", RecipientAllow: []string{"@example.com"}}
	for _, spec := range functionSpecs {
		for _, c := range []struct {
			memoryMB int
			want     *string
		}{{128, jsii.String("1")}, {1769, jsii.String("1")}, {1770, nil}, {4096, nil}} {
			env := functionEnv(spec, p, spec.settings(FunctionSettings{MemoryMB: c.memoryMB}), nil)
			got := env["GOMAXPROCS"]
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("%s at %d MB: GOMAXPROCS %s, want %s", spec.Name, c.memoryMB, aws.ToString(got), aws.ToString(c.want))
			}
		}
	}
}
