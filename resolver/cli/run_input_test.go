package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/deployment"
)

// signup has no tool, so it runs to the end on the local Step Functions
// endpoint alone; its input schema uses ECMA-262 patterns.
const signup = `solution: signup
version: 1
policy: {input_limit_bytes: 256}
input:
  type: object
  required: [email]
  additionalProperties: false
  properties:
    email: {type: string, pattern: "^(?=.*@).+$"}
    handle: {type: string, pattern: "^(?!admin$)\\p{Ll}+$"}
steps:
  - id: greet
    pass: {to: "${input.email}"}
output: "${steps.greet}"
`

// TestRunChecksInput: toolgate run reads the input record of the published
// definition with DescribeStateMachine and refuses a bad input before
// StartExecution, with exit code 1 and the pointers and keywords at fault.
func TestRunChecksInput(t *testing.T) {
	t.Parallel()
	p, err := local.StartSFN(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	dir := t.TempDir()
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(filepath.Join(dir, "keys")); err != nil {
		t.Fatal(err)
	}
	cliEnv := localAWS().with(map[string]string{
		EnvLocalKeys:   filepath.Join(dir, "keys"),
		EnvSTSEndpoint: "http://127.0.0.1:1", // signing names it; no proof is verified here
	})
	params := filepath.Join(dir, "params.json")
	os.WriteFile(params, []byte("{}"), 0o644)

	res := resolver.Compile("signup.yaml", []byte(signup), resolver.Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	sf := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(p.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	sm, err := sf.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(deployment.StateMachineName("dev", "signup")),
		RoleArn: aws.String("arn:aws:iam::000000000000:role/toolgate-solution"), Definition: aws.String(string(res.Definition))})
	if err != nil {
		t.Fatal(err)
	}
	// The same Solution without its record: as published by an older toolgate.
	old := strings.Replace(string(res.Definition), resolver.InputRecordPrefix, "", 1)
	if _, err := sf.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(deployment.StateMachineName("dev", "old")),
		RoleArn: aws.String("arn:aws:iam::000000000000:role/toolgate-solution"), Definition: aws.String(old)}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, solution, input string
		code                  int
		stderr                []string // lines stderr must hold
	}{
		{"valid", "signup", `{"email": "ada@example.com", "handle": "ada"}`, ExitOK, nil},
		{"lookahead", "signup", `{"email": "SECRET"}`, ExitErrors, []string{
			"toolgate run: INPUT is not an input Solution signup accepts; nothing was started:",
			`  input/email fails "pattern" (schema /properties/email/pattern)`}},
		{"several", "signup", `{"handle": "admin", "SECRET": 1}`, ExitErrors, []string{
			`  input/ fails "required" (schema /required): want property "email"`,
			`  input/ fails "additionalProperties" (schema /additionalProperties): want no other properties`,
			`  input/handle fails "pattern" (schema /properties/handle/pattern)`}},
		{"type", "signup", `["SECRET"]`, ExitErrors, []string{`  input/ fails "type" (schema /type): want object, got array`}},
		{"size", "signup", `{"email": "a@` + strings.Repeat("S", 300) + `"}`, ExitErrors, []string{
			"  the input is 314 bytes of compact JSON, over the Solution's policy.input_limit_bytes of 256"}},
		{"not JSON", "signup", `{"email":`, ExitMisuse, []string{"is not JSON"}},
		{"no record", "old", `{"email": "a@b"}`, ExitErrors, []string{"has no input record", "publish the Solution again"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			input := filepath.Join(dir, "input.json")
			os.WriteFile(input, []byte(c.input), 0o644)
			name := "run-" + string(rune('a'+i))
			code, out, errs := cliEnv.run("run", c.solution, "--input", input, "--name", name, "--wait", "--timeout", "60s",
				"--endpoint", p.Endpoint(), "--stage", "dev", "--params", params, "--as", "starter")
			errs = strings.ReplaceAll(errs, input, "INPUT")
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			for _, l := range c.stderr {
				if !strings.Contains(errs, l) {
					t.Errorf("stderr lacks %q:\n%s", l, errs)
				}
			}
			if strings.Contains(errs, "SECRET") || strings.Contains(errs, "SSS") {
				t.Errorf("stderr quotes the input:\n%s", errs)
			}
			execution := strings.Replace(aws.ToString(sm.StateMachineArn), ":stateMachine:", ":execution:", 1) + ":" + name
			_, err := sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execution)})
			var missing *sfntypes.ExecutionDoesNotExist
			if c.code == ExitOK {
				if err != nil || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, `"to":"ada@example.com"`) {
					t.Fatalf("%v\n%s", err, out)
				}
			} else if !errors.As(err, &missing) || strings.Contains(out, "started") {
				t.Fatalf("a refused input started %s: %v\n%s", execution, err, out)
			}
		})
	}
}
