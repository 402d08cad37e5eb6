// Command team-tool-cdk is an example of a platform team's CDK app that
// deploys its own tool function for a toolgate stage with
// infra/toolfunction (docs/infra.md, "Platform tools"): the demo's
// create-ticket function (examples/create-ticket), tagged for the stage
// with its owners' floor, invokable by the stage's proxy role only, its
// ARN under /toolgate/<stage>/tool-function/FunctionCreateTicket/arn.
//
// Its configuration is CDK context: team:stage (default dev),
// team:proxyRoleArn (the ARN of the stage's lambda-tool function role,
// required) and team:assets (the directory holding the function's
// bootstrap, default bin/functions/create-ticket). Run it with
//
//	npx cdk synth --app 'go run ./examples/team-tool-cdk' -c team:proxyRoleArn=arn:aws:iam::123456789012:role/...
//
// It links the CDK and infra/toolfunction only: no toolgate function,
// no AWS SDK client.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/infra/toolfunction"
	"github.com/toolgate/toolgate/shared/toolfloor"
)

// Config is the team's app configuration.
type Config struct {
	// Stage is the toolgate stage whose proxy invokes the function.
	Stage string
	// ProxyRoleARN is the stage's lambda-tool function role.
	ProxyRoleARN string
	// Assets is the directory holding the function's bootstrap.
	Assets string
}

// NewTeamStack defines the team's stack: its one tool function,
// create-ticket, with the floor its owners give it (it honours the
// idempotency key: review optional, at least once, idempotent; duplicates
// refused).
func NewTeamStack(app awscdk.App, id string, cfg Config) (awscdk.Stack, *toolfunction.ToolFunction) {
	stack := awscdk.NewStack(app, jsii.String(id), &awscdk.StackProps{
		Description: jsii.String("team tools for toolgate " + cfg.Stage),
	})
	fn := toolfunction.New(stack, "CreateTicket", &toolfunction.Props{
		Stage:        cfg.Stage,
		Tool:         "create-ticket",
		ProxyRoleARN: jsii.String(cfg.ProxyRoleARN),
		Floor:        toolfloor.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true},
		Function: &awslambda.FunctionProps{
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: awslambda.Architecture_ARM_64(),
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(cfg.Assets), nil),
			Timeout:      awscdk.Duration_Seconds(jsii.Number(30)),
			Environment:  &map[string]*string{"TICKETS_URL": jsii.String("https://tickets.example.org")},
		},
	})
	return stack, fn
}

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	context := func(key, fallback string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return fallback
	}
	cfg := Config{
		Stage:        context("team:stage", "dev"),
		ProxyRoleARN: context("team:proxyRoleArn", ""),
		Assets:       context("team:assets", "bin/functions/create-ticket"),
	}
	if cfg.ProxyRoleARN == "" {
		fmt.Fprintln(os.Stderr, "team-tool-cdk: set -c team:proxyRoleArn=<ARN of the stage's lambda-tool function role>")
		os.Exit(2)
	}
	NewTeamStack(app, "Team-"+cfg.Stage+"-Tools", cfg)
	app.Synth(nil)
}
