package publish

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/resolver"
)

// fakeSFN holds one state machine and records the calls Start makes.
type fakeSFN struct {
	SFNAPI
	name, definition string
	calls            []string
	started          *sfn.StartExecutionInput
}

const fakeARN = "arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-dev_weekly-digest"

func (f *fakeSFN) ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	f.calls = append(f.calls, "ListStateMachines")
	return &sfn.ListStateMachinesOutput{StateMachines: []sfntypes.StateMachineListItem{{Name: aws.String(f.name), StateMachineArn: aws.String(fakeARN)}}}, nil
}

func (f *fakeSFN) DescribeStateMachine(_ context.Context, in *sfn.DescribeStateMachineInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	f.calls = append(f.calls, "DescribeStateMachine")
	if aws.ToString(in.StateMachineArn) != fakeARN {
		return nil, &sfntypes.StateMachineDoesNotExist{}
	}
	return &sfn.DescribeStateMachineOutput{StateMachineArn: in.StateMachineArn, Definition: aws.String(f.definition)}, nil
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.calls = append(f.calls, "StartExecution")
	f.started = in
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly-digest:" + aws.ToString(in.Name))}, nil
}

func newsletter(t *testing.T) *resolver.Result {
	t.Helper()
	src, err := os.ReadFile("../../testdata/solutions/newsletter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := resolver.Compile("newsletter.yaml", src, resolver.Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	return res
}

// TestStartChecksInput: toolgate run's Start checks the input against the
// definition's record before it signs or starts anything.
func TestStartChecksInput(t *testing.T) {
	def := string(newsletter(t).Definition)
	cases := []struct {
		name, definition, input string
		wantErr                 string // "" starts
		inputError              bool
	}{
		{"valid", def, `{"recipient": "team@example.com"}`, "", false},
		{"schema", def, `{"recipient": 42}`, `input/recipient fails "type"`, true},
		{"required", def, `{}`, `want property "recipient"`, true},
		{"size", def, `{"recipient": "` + strings.Repeat("x", 40_000) + `"}`, "over the Solution's policy.input_limit_bytes of 32768", true},
		{"no record", strings.Replace(def, resolver.InputRecordPrefix, "", 1), `{"recipient": "x"}`, "publish the Solution again", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSFN{name: StateMachineName("dev", "weekly-digest"), definition: c.definition}
			proved := false
			arn, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(c.input), "run-1", func(context.Context, string) (string, error) {
				proved = true
				return "proof", nil
			})
			if c.wantErr == "" {
				if err != nil || f.started == nil || !strings.HasSuffix(arn, ":run-1") {
					t.Fatalf("%v (calls %v)", err, f.calls)
				}
				var body ExecutionInput
				if err := json.Unmarshal([]byte(aws.ToString(f.started.Input)), &body); err != nil || body.Meta.StartProof != "proof" {
					t.Fatalf("execution input %s: %v", aws.ToString(f.started.Input), err)
				}
				return
			}
			var ie *resolver.InputError
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.As(err, &ie) != c.inputError {
				t.Fatalf("%v, want %q (InputError %v)", err, c.wantErr, c.inputError)
			}
			if proved || f.started != nil || strings.Join(f.calls, ",") != "ListStateMachines,DescribeStateMachine" {
				t.Fatalf("proof signed %v, calls %v", proved, f.calls)
			}
		})
	}
}
