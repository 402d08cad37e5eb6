package publish

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestExecutionLogging(t *testing.T) {
	l, err := executionLogging("arn:aws:iam::123456789012:role/toolgate-prod-solution-execution", "eu-west-1", "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/vendedlogs/states/toolgate-prod:*"
	if got := aws.ToString(l.Destinations[0].CloudWatchLogsLogGroup.LogGroupArn); got != want || l.IncludeExecutionData {
		t.Fatalf("log group %s (execution data %v), want %s without data", got, l.IncludeExecutionData, want)
	}
	for _, bad := range [][2]string{{"not-an-arn", "eu-west-1"}, {"arn:aws:iam::123456789012:role/x", ""}, {"arn:aws:iam:::role/x", "eu-west-1"}} {
		if _, err := executionLogging(bad[0], bad[1], "prod"); err == nil {
			t.Errorf("role %q region %q accepted", bad[0], bad[1])
		}
	}
}

func TestParamNames(t *testing.T) {
	for got, want := range map[string]string{
		FunctionARNParam("dev", "send-email"): "/toolgate/dev/function/send-email/arn",
		ExecutionRoleParam("dev"):             "/toolgate/dev/role/solution-execution/arn",
		TableParam("dev"):                     "/toolgate/dev/table/name",
		ReviewDecisionURLParam("dev"):         "/toolgate/dev/review-decision/url",
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

func TestStateMachineNamesKeepStagesApart(t *testing.T) {
	if got := StateMachineName("dev", "weekly-digest"); got != "toolgate-dev_weekly-digest" {
		t.Fatalf("StateMachineName = %q", got)
	}
	if len(StateMachineName(strings.Repeat("s", 20), strings.Repeat("a", 50))) > 80 {
		t.Fatal("the longest name is over Step Functions' 80 characters")
	}
	for stage, ok := range map[string]bool{"dev": true, "dev-2": true, "prod_eu": false, "": false, "Dev": false, strings.Repeat("s", 21): false} {
		if (CheckStage(stage) == nil) != ok {
			t.Errorf("CheckStage(%q): want ok %v", stage, ok)
		}
	}
}
