// Command review-decision takes reviewers' decisions: behind an
// IAM-authorised Function URL on AWS, each request carrying a caller proof
// (the approver is whoever STS says signed it, docs/identity.md), it
// records a decision and sends it to the waiting review Task
// with SendTaskSuccess or SendTaskFailure, and lists and shows reviews, so
// that reviewers never need the table (docs/reviews.md). A delivered
// decision's review.decided webhook event is recorded and handed to the
// events queue, TOOLGATE_WEBHOOK_EVENTS_QUEUE (docs/webhooks.md). It also
// decides parked calls: a decision is sent to the park Task, a cancel
// stops the run (docs/parking.md); and it forks runs (run.fork,
// docs/fork.md).
// stops the run (docs/parking.md). It records reconciliations of calls
// whose outcome is unknown (docs/fork.md, "Reconciling").
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

func main() {
	log := coldstart.Logger()
	cfg, err := decision.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	db := dynamodb.NewFromConfig(awsCfg)
	cfg.Callers.Log = log
	callers, err := caller.NewVerifier(cfg.Callers, ledger.ProofTable{DB: db, Table: cfg.Table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	// Decisions are spans of their run's trace where the deployment
	// exports (docs/tracing.md).
	tracer, err := tracing.FromEnv(os.Getenv, "review-decision")
	tracer = coldstart.Must(log, "bad configuration", tracer, err)
	client := sfn.NewFromConfig(awsCfg)
	svc := decision.NewService(decision.Deps{
		Tracer:  tracer,
		Store:   dynamo.NewStore(db, cfg.Table),
		Tasks:   stepfunctions.Sender{Client: client},
		Callers: callers,
		Account: cfg.Callers.Account,
		// review.decided events: recorded, and sent to the events queue
		// when it is named (else the relay sends them).
		Webhooks: &store.Emitter{Store: store.New(db, cfg.Table, nil), Queue: sqs.NewFromConfig(awsCfg), QueueURL: os.Getenv(webhookapi.EnvEventsQueue)},
		Log:      log,
		// Parked calls: decided here, sent to their park Tasks, or their
		// runs stopped (docs/parking.md, "Deciding").
		Parks:      parkdynamo.New(db, cfg.Table, nil),
		ParkTasks:  stepfunctions.Parks{Client: client},
		ParkPolicy: cfg.Parks,
		// run.fork (docs/fork.md): fork items, the parent's calls without
		// their results, its starter, and its execution.
		Forks: decision.ForkDeps{
			Store:      dynamo.NewStore(db, cfg.Table),
			Calls:      ledger.New(db, cfg.Table),
			Starters:   parkdynamo.New(db, cfg.Table, nil),
			Executions: stepfunctions.Forks{Client: client},
			// The parent whose reusable calls a review of a fork's call
			// shows (docs/fork.md, "Reviews in a fork").
			Origins: parkdynamo.New(db, cfg.Table, nil),
			// A call whose outcome is unknown is known once reconciled.
			Reconciliations: decision.LedgerReconciliations{Store: ledger.New(db, cfg.Table)},
			Policy:          cfg.Forks,
		},
		// Reconciliations of calls whose outcome is unknown
		// (docs/fork.md, "Reconciling").
		Reconciles:  ledger.New(db, cfg.Table),
		Reconcilers: cfg.Reconcilers,
		// The pinned input schemas an approval's edits must pass, and a
		// show answer carries.
		Toolsets: ledger.New(db, cfg.Table),
		// A show answer's run calls (metadata only) and send-email
		// verdicts (docs/reviews.md, "What a review's show answer
		// carries").
		Runs:  ledger.New(db, cfg.Table),
		Email: cfg.Email,
	})
	h := decision.NewHandler(svc)
	lambda.Start(h.Handle)
}
