package deployment

import (
	"strings"
	"testing"
)

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
