// Command webhook-delivery is the webhook delivery function
// (docs/webhooks.md): from the events queue it fans each event out to one
// message per matching subscription on the deliveries queue; from the
// deliveries queue it signs and POSTs one event to one subscriber,
// retrying on the schedule and disabling a subscription whose endpoint
// answers 410; on its schedule it runs the relay for events recorded but
// not sent. Its queues' event-source mappings report partial batch
// failures.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

func main() {
	log := coldstart.Logger()
	cfg, err := delivery.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	st := store.New(dynamodb.NewFromConfig(awsCfg), cfg.Table, nil)
	queue := sqs.NewFromConfig(awsCfg)
	keys := kms.NewFromConfig(awsCfg)
	h := delivery.New(delivery.Config{
		Store:  st,
		Queue:  queue,
		Sender: &webhook.Sender{Rules: cfg.Rules, Timeout: 10 * time.Second},
		Open: func(ctx context.Context, subID string, s vault.Sealed) ([]byte, error) {
			return store.OpenSecret(ctx, keys, subID, s)
		},
		Relay: func(ctx context.Context, now time.Time) (int, error) {
			return store.Relay(ctx, st, queue, cfg.EventsQueue, now, cfg.RelayAfter)
		},
		DeliveriesQueue: cfg.DeliveriesQueue,
		Schedule:        cfg.Schedule,
		Log:             log,
	})
	lambda.Start(h.Handle)
}
