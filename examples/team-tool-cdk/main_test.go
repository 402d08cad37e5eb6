package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	// As make synth: jsii's package cache inside the repository, no Node
	// 20 end-of-life banner, unless the caller set them.
	if os.Getenv("JSII_RUNTIME_PACKAGE_CACHE_ROOT") == "" {
		if abs, err := filepath.Abs(filepath.Join("..", "..", ".cache", "jsii")); err == nil {
			os.Setenv("JSII_RUNTIME_PACKAGE_CACHE_ROOT", abs)
		}
	}
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	jsii.Close() // the next client takes the settings above
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

const proxyRole = "arn:aws:iam::123456789012:role/toolgate-test-LambdaToolFunctionRole"

// TestTeamStack synthesizes the example's stack and checks what
// toolfunction.New guarantees the team: the function tagged for its stage
// with its floor, a resource policy for the proxy role only, its ARN in
// the placeholder's parameter, and a role of its own that holds no
// ledger or toolgate permission.
func TestTeamStack(t *testing.T) {
	var pj map[string]any
	if err := try(func() {
		app := awscdk.NewApp(nil)
		stack, _ := NewTeamStack(app, "Team-test-Tools", Config{Stage: "test", ProxyRoleARN: proxyRole, Assets: "testdata/create-ticket"})
		pj = *assertions.Template_FromStack(stack, nil).ToJSON()
	}); err != nil {
		t.Fatal(err)
	}
	fns := ofType(pj, "AWS::Lambda::Function")
	if len(fns) != 1 {
		t.Fatalf("%d functions, want 1", len(fns))
	}
	var fnID string
	var fn map[string]any
	for fnID, fn = range fns {
	}
	tags := map[string]string{}
	for _, kv := range fn["Tags"].([]any) {
		tags[kv.(map[string]any)["Key"].(string)] = kv.(map[string]any)["Value"].(string)
	}
	want := map[string]string{"toolgate:tool": "test", "toolgate:review": "optional", "toolgate:policy": "at_least_once",
		"toolgate:idempotent": "true", "toolgate:duplicates": "refuse"}
	if d := cmp.Diff(want, tags); d != "" {
		t.Errorf("the function's tags (-want +got):\n%s", d)
	}

	perms := ofType(pj, "AWS::Lambda::Permission")
	if len(perms) != 1 {
		t.Errorf("%d permissions, want the proxy's one", len(perms))
	}
	for id, p := range perms {
		if p["Action"] != "lambda:InvokeFunction" || p["Principal"] != proxyRole {
			t.Errorf("permission %s: %v to %v, want lambda:InvokeFunction to the proxy role only", id, p["Action"], p["Principal"])
		}
	}

	params := ofType(pj, "AWS::SSM::Parameter")
	if len(params) != 1 {
		t.Fatalf("%d parameters, want 1", len(params))
	}
	for id, p := range params {
		if p["Name"] != "/toolgate/test/tool-function/FunctionCreateTicket/arn" {
			t.Errorf("parameter %s: name %v", id, p["Name"])
		}
		if got := fmt.Sprint(p["Value"]); got != fmt.Sprint(map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}}) {
			t.Errorf("parameter %s: value %s, want the function's ARN", id, got)
		}
	}

	// The function's own role, which Lambda assumes, and whose one policy
	// is the team's: here none beyond its logs (the CDK's managed policy),
	// never a ledger, Step Functions or SSM permission of toolgate's.
	roleID := fn["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	role, ok := ofType(pj, "AWS::IAM::Role")[roleID]
	if !ok {
		t.Fatalf("the function's role %s is not in the stack", roleID)
	}
	if got := fmt.Sprint(role["AssumeRolePolicyDocument"]); !strings.Contains(got, "lambda.amazonaws.com") {
		t.Errorf("role %s is assumed by %s, want lambda.amazonaws.com", roleID, got)
	}
	for id, p := range ofType(pj, "AWS::IAM::Policy") {
		for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			for _, a := range asStrings(s.(map[string]any)["Action"]) {
				if strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "states:") || strings.HasPrefix(a, "ssm:") {
					t.Errorf("policy %s allows %s", id, a)
				}
			}
		}
	}
	if got := slices.Sorted(maps.Keys(ofType(pj, "AWS::IAM::Role"))); len(got) != 1 {
		t.Errorf("roles %v, want the function's one", got)
	}
}

// ofType returns the Properties of the template's resources of type typ
// by logical ID.
func ofType(pj map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range pj["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == typ {
			p, _ := r.(map[string]any)["Properties"].(map[string]any)
			out[id] = p
		}
	}
	return out
}

func asStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// try runs f and returns what it panicked with as an error: a failed
// synthesis is a panic.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
