package request_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// A run started on the state machine runs the revision that was latest
// when it started. When the Solution is published again while the run
// waits (a new version, and the published record naming it), the run's
// review.requested must not name the new version: a subscriber would
// take the review for one of a definition the run does not execute. The
// version is the one whose revision the run executes, or none is named.
// On dynalite and the local Step Functions endpoint.
func TestAReviewOfARunStartedBeforeARepublishNamesTheVersionItRuns(t *testing.T) {
	e := startChildEnv(t)
	_, db, table := localtest.SharedTable(t, "webhooks-republished")
	events := store.New(db, table, nil)
	published := ledger.New(db, table)
	h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Ledger: published, Executions: stepfunctions.Executions{Client: e.client}, Webhooks: &store.Emitter{Store: events}})
	machine, v1 := e.publish(t, "toolgate-dev_rebates", `{"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": true}}}`)
	started, err := e.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("run-9"), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	updated, err := e.client.UpdateStateMachine(t.Context(), &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(machine), Publish: true,
		Definition: aws.String(`{"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 60, "End": true}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	v2 := aws.ToString(updated.StateMachineVersionArn)
	if v2 == "" || v2 == v1 {
		t.Fatalf("the second publish made version %q (first %q)", v2, v1)
	}
	if err := published.RecordPublished(t.Context(), ledger.Published{Solution: "rebates", VersionARN: v2, Version: 2, ToolsetID: "ts", OutputBoundBytes: 1 << 10, InputLimitBytes: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	r := &review.Review{ID: "rev-republished", RunID: aws.ToString(started.ExecutionArn), Step: "pay", Tool: "send-email", ExpiresAt: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	if err := h.EmitRequested(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	ev, ok, err := events.Event(t.Context(), webhook.EventID(webhook.ReviewRequested, r.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return // naming no version is right too
	}
	var got webhook.ReviewRequestedData
	if err := json.Unmarshal(ev.Data, &got); err != nil || got.Version != 1 {
		t.Fatalf("event %s: version %d, want 1, the version the run executes (or no event)", ev.Data, got.Version)
	}
}
