package publish

import (
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
