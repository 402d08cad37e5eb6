package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
			"toolgate:createSenderIdentity": "true", "toolgate:deletionProtection": "false", "toolgate:logRetentionDays": "365",
			"toolgate:functions":     `{"send-email": {"reservedConcurrency": 5}}`,
			"toolgate:alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:alarms",
		}, want: func(c *Config) {
			c.Stage, c.Sender, c.SenderIdentity = "prod", "Toolgate@mail.example.org", "example.org"
			c.RecipientAllow, c.FetchAllow = []string{"@example.org", "ops@example.com"}, []string{"api.example.org"}
			c.CreateSenderIdentity, c.DeletionProtection, c.LogRetentionDays = true, false, 365
			c.Functions = map[string]FunctionSettings{fnSendEmail: {ReservedConcurrency: 5}}
			c.AlarmTopicARN = "arn:aws:sns:eu-west-1:123456789012:alarms"
		}},
		{name: "JSON from cdk.json", context: map[string]any{
			"toolgate:recipientAllow": []any{"@example.net"}, "toolgate:deletionProtection": false,
			"toolgate:functions": map[string]any{"workflow-validator": map[string]any{"memoryMB": float64(1024)}},
		}, want: func(c *Config) {
			c.SenderIdentity, c.RecipientAllow, c.DeletionProtection = "example.com", []string{"@example.net"}, false
			c.Functions = map[string]FunctionSettings{fnValidator: {MemoryMB: 1024}}
		}},
		{name: "bad stage", context: map[string]any{"toolgate:stage": "Prod_1"}, err: "stage"},
		{name: "sender not an address", context: map[string]any{"toolgate:sender": "Toolgate <a@example.com>"}, err: "TOOLGATE_SENDER"},
		{name: "identity of another domain", context: map[string]any{"toolgate:senderIdentity": "example.net"}, err: "TOOLGATE_SENDER_IDENTITY_ARN"},
		{name: "empty recipient allow-list", context: map[string]any{"toolgate:recipientAllow": ""}, err: "TOOLGATE_RECIPIENT_ALLOW"},
		{name: "bad fetch host", context: map[string]any{"toolgate:fetchAllow": "http://api.example.org/"}, err: "fetchAllow"},
		{name: "unknown function", context: map[string]any{"toolgate:functions": `{"send-mail": {}}`}, err: `no function "send-mail"`},
		{name: "timeout too long", context: map[string]any{"toolgate:functions": `{"review-request": {"timeoutSeconds": 901}}`}, err: "timeoutSeconds"},
		{name: "timeout past the Task's", context: map[string]any{"toolgate:functions": `{"structured-data-fetch": {"timeoutSeconds": 36}}`}, err: "Task timeout, 35 s"},
		{name: "removal policy", context: map[string]any{"toolgate:removalPolicy": "snapshot"}, err: "removalPolicy"},
		{name: "retention", context: map[string]any{"toolgate:logRetentionDays": "45"}, err: "logRetentionDays"},
		{name: "topic", context: map[string]any{"toolgate:alarmTopicArn": "alarms"}, err: "alarmTopicArn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadConfig(func(k string) any { return tt.context[k] })
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
func TestSAMLocalVariables(t *testing.T) {
	p := &PlatformStackProps{TableName: "toolgate-local", SAMLocal: true, RecipientAllow: []string{"@example.com"}}
	for _, spec := range functionSpecs {
		env := functionEnv(spec, p, spec.settings(FunctionSettings{}), nil)
		for _, k := range append(samLocalVariables[""], samLocalVariables[spec.Name]...) {
			if v, ok := env[k]; !ok || *v != "" {
				t.Errorf("%s: %s is not declared empty", spec.Name, k)
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
