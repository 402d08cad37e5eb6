// Command lambda-tool is the platform tools' proxy: the governed
// dispatcher for every tool a run's pinned toolset names with a Lambda
// function, which checks the pin against the function's floor (its tags)
// and then invokes that team function (shared/platformtool, docs/tools.md
// "Platform tools").
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	stage, err := tool.StageFromEnv(os.Getenv)
	stage = coldstart.Must(log, "bad configuration", stage, err)
	awsCfg := coldstart.AWSConfig(log)
	fns := platformtool.NewFunctions(stage, ssm.NewFromConfig(awsCfg))
	client := awslambda.NewFromConfig(awsCfg, platformtool.ClientOptions)
	floors := platformtool.NewFloors(client, platformtool.FloorTTL, nil)
	d := toolfunction.DispatcherWith(log, awsCfg, dispatch.PlatformTools,
		toolfunction.Options{Check: platformtool.Check(fns, floors), LearnShapes: true}, platformtool.Tool(client, fns))
	lambda.Start(d.Handle)
}
