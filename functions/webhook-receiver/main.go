// Command webhook-receiver is the webhook receiver function
// (docs/webhooks.md, "Receiving events"): behind a Function URL with auth
// NONE it verifies each POST /in/<source> against the source's secrets,
// records the event once under its provider's event id and queues it for
// the inbound-start function; on its schedule it runs the relay, which
// queues events recorded but not sent.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/webhook-receiver/receiver"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound/store"
)

func main() {
	log := coldstart.Logger()
	cfg, err := receiver.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	keys := kms.NewFromConfig(awsCfg)
	h := receiver.New(receiver.Config{
		Store:    store.New(dynamodb.NewFromConfig(awsCfg), cfg.Table),
		Queue:    sqs.NewFromConfig(awsCfg),
		QueueURL: cfg.Queue,
		// Secrets are sealed under the credentials' key, purpose
		// webhook-source: the receiver only opens them.
		Open: func(ctx context.Context, source string, s vault.Sealed) ([]byte, error) {
			return store.OpenSecret(ctx, keys, source, s)
		},
		Log:         log,
		Retention:   cfg.Retention,
		RelayAfter:  cfg.RelayAfter,
		SecretCache: cfg.SecretCache,
	})
	lambda.Start(h.Handle)
}
