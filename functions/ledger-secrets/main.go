// Command ledger-secrets is the CloudFormation custom resource that
// creates a stage's ledger secrets and since time once and never
// overwrites them (shared/secrets CustomResource; docs/ledger.md,
// "Records are sealed by the function that writes them").
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/secrets"
)

func main() {
	log := coldstart.Logger()
	api := ssm.NewFromConfig(coldstart.AWSConfig(log))
	lambda.Start(cfn.LambdaWrap(secrets.CustomResource(api, time.Now)))
}
