// Command webhooks is the webhooks function (docs/webhooks.md): behind an
// IAM-authorised Function URL, each request with a caller proof, it lets
// webhook admins subscribe endpoints to events, list, rotate the secret of
// and disable subscriptions, read an event's delivery attempts, and list
// and redrive the deliveries' dead-letter queue.
package main

import (
	"context"
	"errors"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/webhooks/admin"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

func main() {
	log := coldstart.Logger()
	cfg, err := admin.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	db := dynamodb.NewFromConfig(awsCfg)
	cfg.Callers.Log = log
	callers, err := caller.NewVerifier(cfg.Callers, ledger.ProofTable{DB: db, Table: cfg.Table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	keys := kms.NewFromConfig(awsCfg)
	published := ledger.New(db, cfg.Table)
	svc := &admin.Service{
		Callers: callers,
		Admins:  cfg.Admins,
		Store:   store.New(db, cfg.Table, nil),
		// Secrets are sealed under the credentials' key, purpose
		// webhook-subscription: only webhook-delivery may open them.
		Seal: func(ctx context.Context, subID string, key []byte) (vault.Sealed, error) {
			return store.SealSecret(ctx, keys, cfg.Key, subID, key)
		},
		Rules: cfg.Rules,
		Published: func(ctx context.Context, solution string) (bool, error) {
			_, err := published.PublishedSolution(ctx, solution)
			if errors.Is(err, ledger.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		Queue:           sqs.NewFromConfig(awsCfg),
		DeliveriesQueue: cfg.DeliveriesQueue,
		DLQ:             cfg.DLQ,
		EventsQueue:     cfg.EventsQueue,
		EventsDLQ:       cfg.EventsDLQ,
		Log:             log,
	}
	lambda.Start(admin.NewHandler(svc).Handle)
}
