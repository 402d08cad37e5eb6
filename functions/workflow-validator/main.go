// Command workflow-validator is the workflow-validator tool's Lambda
// function: the resolver's checks behind the governed dispatcher
// (docs/tools.md).
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/toolgate/toolgate/functions/workflow-validator/validator"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	awsCfg := coldstart.AWSConfig(log)
	d := toolfunction.Dispatcher(log, awsCfg, dispatch.OneTool("workflow-validator"), nil, validator.Tool())
	lambda.Start(d.Handle)
}
