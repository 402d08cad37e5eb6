// Command infra is toolgate's CDK app (cdk.json runs it): the ledger table
// in one stack, and in another the functions with the sfn and direct
// aliases of their lanes, the review decision and publish URLs, the
// Solution execution role, the Publisher, Reviewer and Operator managed
// policies, the SSM parameters the publish function and the CLI read, and
// the alarms. It reads the configuration and wires; the constructs are
// infra/platform's, and teams' tool functions infra/toolfunction's.
// docs/infra.md describes the configuration, make synth and make deploy.
//
// It is its own package so that building the functions never compiles the
// CDK; infra/local (the local stack) is unrelated to it.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/infra/platform"
)

// assetsDir is where make build leaves each function's bootstrap, relative
// to the repository root (cdk runs the app there).
const assetsDir = "bin/functions"

func main() {
	os.Exit(run())
}

func run() int {
	platform.JSIIDefaults(".cache/jsii")
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := platform.LoadConfig(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "infra: bad configuration:\n%v\n", err)
		return 2
	}
	if err := platform.CheckAssets(assetsDir); err != nil {
		fmt.Fprintf(os.Stderr, "infra: %v (run make build)\n", err)
		return 2
	}
	platform.NewApp(app, cfg, assetsDir)
	app.Synth(nil)
	return 0
}
