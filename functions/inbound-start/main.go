// Command inbound-start is the consumer of the inbound queue
// (docs/webhooks.md, "How an event starts a run"; docs/schedules.md, "How
// a firing starts a run"): for each message, a source's verified event or
// a schedule's firing, it starts the run the event asks for, once, as a
// session of the inbound-start role. Its event-source mapping reports
// partial batch failures.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/toolgate/toolgate/functions/inbound-start/starter"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/secrets"
)

func main() {
	log := coldstart.Logger()
	cfg, err := starter.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	// The stage's external key, under which execution names are derived
	// (starter.NameKey).
	keys, err := secrets.LoadKeys(context.Background(), ssm.NewFromConfig(awsCfg), cfg.ExternalKeyParam)
	keys = coldstart.Must(log, "the external key", keys, err)
	h := starter.New(starter.Config{
		Function: cfg,
		Store:    store.New(dynamodb.NewFromConfig(awsCfg), cfg.Table),
		SFN:      sfn.NewFromConfig(awsCfg),
		Starts:   &starter.Lane{Function: cfg, STS: sts.NewFromConfig(awsCfg), Lambda: awslambda.NewFromConfig(awsCfg)},
		NameKey:  starter.NameKey(keys[0]),
		Log:      log,
	})
	lambda.Start(h.Handle)
}
