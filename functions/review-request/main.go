// Command review-request is the review Task's Lambda function: invoked
// with a task token (lambda:invoke.waitForTaskToken) through its sfn alias,
// it stores the pending review and returns while the Task keeps waiting for
// the decision, and it verifies a run's start proof; through its direct
// alias it takes direct-lane review requests from verified callers
// (docs/reviews.md lists its environment).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

func main() {
	log := coldstart.Logger()
	cfg, err := request.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	db := dynamodb.NewFromConfig(awsCfg)
	// The stage's external key: the trace ids of runs given no trace
	// context are derived under it, as the dispatcher derives them. And,
	// in the same request, the end-user key, under which an end user's
	// scope is computed (docs/identity.md, "End users").
	names := []string{cfg.ExternalKeyParam}
	if cfg.EndUserKeyParam != "" {
		names = append(names, cfg.EndUserKeyParam)
	}
	keys, err := secrets.LoadKeys(context.Background(), ssm.NewFromConfig(awsCfg), names...)
	keys = coldstart.Must(log, "the external and end-user keys", keys, err)
	var endUserKey []byte
	if len(keys) > 1 {
		endUserKey = keys[1]
	}
	cfg.Callers.Log = log
	callers, err := caller.NewVerifier(cfg.Callers, ledger.ProofTable{DB: db, Table: cfg.Table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	// Reviews and children started are spans of their run's trace where
	// the deployment exports (docs/tracing.md).
	tracer, err := tracing.FromEnv(os.Getenv, "review-request")
	tracer = coldstart.Must(log, "bad configuration", tracer, err)
	// Review notices go through SES only where the deployment lists
	// whom they may reach (toolgate:reviewNotices; docs/reviews.md).
	var ses request.SES
	if cfg.Notices.On() {
		ses = sesv2.NewFromConfig(awsCfg)
	}
	// The inbound-start role, whose sessions start inbound and scheduled
	// runs (docs/identity.md, "Four eyes"); unset: none.
	inboundRole, err := request.ParseInboundRole(os.Getenv(request.EnvInboundRole), cfg.Callers.Account, cfg.Callers.SessionRoles)
	inboundRole = coldstart.Must(log, "bad configuration", inboundRole, err)
	h := request.NewHandler(cfg, request.Deps{
		Tracer:  tracer,
		Store:   dynamo.NewStore(db, cfg.Table),
		Ledger:  ledger.New(db, cfg.Table),
		Callers: callers,
		// A child run's start: the input record of the version a parent
		// starts, and the version the child's execution runs.
		Executions:  stepfunctions.Executions{Client: sfn.NewFromConfig(awsCfg)},
		ExternalKey: keys[0],
		EndUserKey:  endUserKey,
		// review.requested events: recorded, and sent to the events
		// queue when it is named (else the relay sends them).
		Webhooks: &store.Emitter{Store: store.New(db, cfg.Table, nil), Queue: sqs.NewFromConfig(awsCfg), QueueURL: os.Getenv(webhookapi.EnvEventsQueue)},
		// Parked calls: the park route reads a call's PARKED rows and
		// records its park (docs/parking.md).
		Parks:       parkdynamo.New(db, cfg.Table, nil),
		SES:         ses,
		InboundRole: inboundRole,
		Log:         log,
	})
	lambda.Start(h.Handle)
}
