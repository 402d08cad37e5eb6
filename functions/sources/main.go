// Command sources is the sources function (docs/webhooks.md, "Sources";
// docs/schedules.md): behind an IAM-authorised Function URL, each request
// with a caller proof, it lets inbound operators add, list, rotate the
// secrets of and remove webhook sources, add, list, pause, resume and
// remove schedules, and list and redrive the inbound dead-letter queue.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/sources/sources"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/ledger"
)

func main() {
	log := coldstart.Logger()
	cfg, err := sources.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	db := dynamodb.NewFromConfig(awsCfg)
	cfg.Callers.Log = log
	callers, err := caller.NewVerifier(cfg.Callers, ledger.ProofTable{DB: db, Table: cfg.Table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	keys := kms.NewFromConfig(awsCfg)
	svc := &sources.Service{
		Callers:   callers,
		Operators: cfg.Operators,
		Store:     store.New(db, cfg.Table),
		// Secrets are sealed under the credentials' key, purpose
		// webhook-source: only webhook-receiver may open them.
		Seal: func(ctx context.Context, source string, secret []byte) (vault.Sealed, error) {
			return store.SealSecret(ctx, keys, cfg.Key, source, secret)
		},
		Published:    ledger.New(db, cfg.Table).PublishedSolution,
		Queue:        sqs.NewFromConfig(awsCfg),
		InboundQueue: cfg.Queue,
		DLQ:          cfg.DLQ,
		Log:          log,
	}
	if cfg.SchedulerGroup != "" {
		svc.Scheduler = &sources.Scheduler{API: scheduler.NewFromConfig(awsCfg), Group: cfg.SchedulerGroup, QueueARN: cfg.QueueARN,
			RoleARN: cfg.SchedulerRole, DLQARN: cfg.DLQARN}
	}
	lambda.Start(sources.NewHandler(svc).Handle)
}
