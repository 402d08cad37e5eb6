// Command structured-data-fetch is the read tool's Lambda function: a
// hardened GET behind the governed dispatcher, to hosts on both the
// platform's allow-list and the run's pinned toolset (docs/tools.md lists
// its environment).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	cfg, err := fetch.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	d := toolfunction.DispatcherWith(log, awsCfg, dispatch.OneTool("structured-data-fetch"), toolfunction.Options{LearnShapes: true}, cfg.Tool())
	lambda.Start(d.Handle)
}
