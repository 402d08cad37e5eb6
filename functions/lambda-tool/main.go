// Command lambda-tool is the platform tools' proxy: the governed
// dispatcher for every tool a run's pinned toolset names with a Lambda
// function, which checks the pin against the function's floor (its tags)
// and then invokes that team function (shared/platformtool, docs/tools.md
// "Platform tools").
package main

import (
	"os"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/tool"
)

func main() {
	log := coldstart.Logger()
	stage, err := tool.StageFromEnv(os.Getenv)
	stage = coldstart.Must(log, "bad configuration", stage, err)
	cfg := coldstart.AWSConfig(log)
	fns := platformtool.NewFunctions(stage, ssm.NewFromConfig(cfg))
	client := lambda.NewFromConfig(cfg, platformtool.ClientOptions)
	floors := platformtool.NewFloors(client, platformtool.FloorTTL, nil)
	dispatch.PlatformMain(log, platformtool.Check(fns, floors), platformtool.Tool(client, fns))
}
