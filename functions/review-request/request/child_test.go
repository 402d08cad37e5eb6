package request_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/tool"
)

// A child run's start is its parent's record only for one execution: of
// the version the parent starts, and the first to take it. An execution
// started by hand on the unqualified state machine ARN (the latest
// revision), or another execution of the same name later (Step Functions
// lets a name be used again 90 days after its execution closed), is
// refused. On dynalite and the local Step Functions endpoint.
func TestChildStartIsTakenOnceByThePinnedVersion(t *testing.T) {
	ctx := t.Context()
	ddb, err := local.StartDynalite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ddb.Stop() })
	sf, err := local.StartSFN(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Stop() })
	db := local.DynamoDB(ddb.Endpoint())
	if err := dynamo.CreateTable(ctx, db, "ledger"); err != nil {
		t.Fatal(err)
	}
	client := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(sf.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	created, err := client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("toolgate-dev_child"),
		RoleArn:    aws.String("arn:aws:iam::000000000000:role/r"),
		Definition: aws.String(`{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 30, "End": true}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: created.StateMachineArn})
	if err != nil {
		t.Fatal(err)
	}
	version := aws.ToString(v.StateMachineVersionArn)
	store := dynamo.NewStore(db, "ledger")
	h := &request.Handler{Store: store, Lane: lane.SFN, Executions: stepfunctions.Executions{Client: client}}
	parent := "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:run-1"
	if err := store.RecordStart(ctx, parent, "arn:aws:iam::000000000000:user/starter"); err != nil {
		t.Fatal(err)
	}

	// record has the parent's step record a child start, and starts the
	// child as the step would (by the version ARN) or by hand.
	record := func(seq int, startWith string) (arn string, input string) {
		t.Helper()
		input = fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":%d},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, parent, seq, parent)
		out, err := h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":%d,"state_machine_arn":%q,"input":%s}`, parent, seq, version, input)))
		if err != nil {
			t.Fatal(err)
		}
		var res tool.ChildStartResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		started, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(startWith), Name: aws.String(res.ExecutionName), Input: aws.String(input)})
		if err != nil || aws.ToString(started.ExecutionArn) != res.ExecutionARN {
			t.Fatalf("start %s: %v (%s, want %s)", res.ExecutionName, err, aws.ToString(started.ExecutionArn), res.ExecutionARN)
		}
		return res.ExecutionARN, input
	}
	check := func(arn, input string, started time.Time) (json.RawMessage, error) {
		return h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"execution_arn":%q,"execution_input":%s,"start_time":%q}`, arn, input, started.UTC().Format(time.RFC3339Nano))))
	}

	t.Run("the version the parent starts takes the record, once", func(t *testing.T) {
		arn, input := record(1, version)
		at := time.Now()
		for range 2 { // a retried start Task: the same execution again
			out, err := check(arn, input, at)
			if err != nil || !strings.Contains(string(out), `"starter":"arn:aws:iam::000000000000:user/starter"`) {
				t.Fatalf("%s %v", out, err)
			}
		}
		// Another execution of that name, later.
		if _, err := check(arn, input, at.Add(91*24*time.Hour)); err == nil || !strings.Contains(err.Error(), "REVIEW_UNAUTHENTICATED") || !strings.Contains(err.Error(), "another execution of that name") {
			t.Fatalf("a second execution of the name took the record: %v", err)
		}
	})
	t.Run("an execution started by hand on the latest revision is refused", func(t *testing.T) {
		arn, input := record(2, aws.ToString(created.StateMachineArn))
		if _, err := check(arn, input, time.Now()); err == nil || !strings.Contains(err.Error(), "REVIEW_UNAUTHENTICATED") || !strings.Contains(err.Error(), "not the version") {
			t.Fatalf("an unqualified execution took the record: %v", err)
		}
	})
	t.Run("another input is refused", func(t *testing.T) {
		arn, input := record(3, version)
		if _, err := check(arn, strings.Replace(input, `"t"`, `"u"`, 1), time.Now()); err == nil || !strings.Contains(err.Error(), "not the one its parent recorded") {
			t.Fatalf("%v", err)
		}
	})
}
