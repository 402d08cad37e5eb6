// Command send-email is the send-email tool's Lambda function: SES v2
// behind the governed dispatcher, from the configured sender to
// allow-listed recipients only (docs/tools.md lists its environment).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/sendemail"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	cfg, err := sendemail.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	cfg.Log = log
	awsCfg := coldstart.AWSConfig(log)
	ses := sesv2.NewFromConfig(awsCfg)
	d := toolfunction.Dispatcher(log, awsCfg, dispatch.OneTool("send-email"), nil, sendemail.Tool(cfg, testHook(ses)))
	lambda.Start(d.Handle)
}
