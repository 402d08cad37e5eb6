// Command lambda-tool is the platform tools' proxy: the governed
// dispatcher for every tool a run's pinned toolset names with a Lambda
// function, which then invokes that team function (shared/platformtool,
// docs/tools.md "Platform tools").
package main

import (
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/platformtool"
)

func main() {
	log := coldstart.Logger()
	client := lambda.NewFromConfig(coldstart.AWSConfig(log), platformtool.ClientOptions)
	dispatch.PlatformMain(log, platformtool.Tool(client))
}
