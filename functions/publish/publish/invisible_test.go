package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// createSFN has no state machine yet, and creates one with a version.
type createSFN struct{ SFNAPI }

func (createSFN) ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	return &sfn.ListStateMachinesOutput{}, nil
}

func (createSFN) CreateStateMachine(_ context.Context, in *sfn.CreateStateMachineInput, _ ...func(*sfn.Options)) (*sfn.CreateStateMachineOutput, error) {
	arn := "arn:aws:states:us-east-1:000000000000:stateMachine:" + aws.ToString(in.Name)
	return &sfn.CreateStateMachineOutput{StateMachineArn: aws.String(arn), StateMachineVersionArn: aws.String(arn + ":1")}, nil
}

// A Solution whose source holds a right-to-left override (in a string)
// and a zero-width space (in a comment) is published, with warnings
// naming each line and its code points, as toolgate check prints them,
// and one WARN log line naming the lines and the code points: never the
// characters or the text around them.
func TestPublishWarnsOfInvisibleCharacters(t *testing.T) {
	e := newToolsetEnv(t)
	var logs bytes.Buffer
	e.h.service.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	e.h.service.SFN, e.h.service.Region = createSFN{}, "us-east-1"
	e.h.service.Params = deployment.FileParams{deployment.ExecutionRoleParam("test"): "arn:aws:iam::000000000000:role/toolgate-test-solution-execution",
		deployment.FunctionARNParam("test", "review-request"): "arn:aws:lambda:us-east-1:000000000000:function:toolgate-test-review-request"}
	src := []byte("solution: bidi\nversion: 1\nsteps:\n  - id: a # secret\u200b\n    pass: {x: \"invoice\u202efdp.exe\"}\n")
	res, err := e.h.service.Publish(t.Context(), Request{File: "bidi.yaml", Source: src, Proof: e.callers.Proof(t, "alice", publishapi.Binding("bidi.yaml", src))})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bidi.yaml:4:19: warning: [invisible] line 4 has invisible or bidirectional characters (U+200B): a reader of the Solution does not see them, or sees the text around them reordered",
		"bidi.yaml:5:23: warning: [invisible] line 5 has invisible or bidirectional characters (U+202E): a reader of the Solution does not see them, or sees the text around them reordered",
	}
	if strings.Join(res.Warnings, "\n") != strings.Join(want, "\n") || strings.Join(res.Diagnostics, "\n") != strings.Join(want, "\n") || res.VersionARN == "" {
		t.Fatalf("published %q with warnings %q and diagnostics %q, want the warnings\n%s", res.VersionARN, res.Warnings, res.Diagnostics, strings.Join(want, "\n"))
	}
	var line map[string]any
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, SolutionInvisibleLogMessage) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line["level"] != "WARN" || line["file"] != "bidi.yaml" || line["code_points"] != "U+200B, U+202E" || line["line_count"] != 2.0 ||
		len(line["lines"].([]any)) != 2 || line["lines"].([]any)[0] != 4.0 || line["lines"].([]any)[1] != 5.0 {
		t.Fatalf("log line %v", line)
	}
	for _, secret := range []string{"\u202e", "\u200b", "invoice", "secret"} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds %+q:\n%s", secret, logs.String())
		}
	}
}
