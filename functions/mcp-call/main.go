// Command mcp-call is the MCP tools' Lambda function: the governed
// dispatcher for every tool a run's pinned toolset takes from an MCP
// server (dispatch.MCPTools), which checks the tool's definition on its
// server against the pin before the call is claimed, presenting the
// credential resolved for a server that declares auth, then sends
// tools/call with the idempotency key in _meta (docs/tools.md, "MCP tools", lists its
// environment).
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/mcptool"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	cfg, err := mcptool.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	c := mcptool.New(cfg, log)
	awsCfg := coldstart.AWSConfig(log)
	d := toolfunction.DispatcherWith(log, awsCfg, dispatch.MCPTools, toolfunction.Options{Check: c.Check, Credentials: resolver(awsCfg), LearnShapes: true}, c.Call)
	lambda.Start(d.Handle)
}

// resolver builds the dispatcher's credential resolver: the stored
// credentials on the ledger table, decrypted with KMS (Decrypt needs no
// key id: the encrypted data key names its key; docs/credentials.md, "At
// call time").
func resolver(awsCfg aws.Config) func(db *dynamodb.Client, table string) dispatch.Credentials {
	return func(db *dynamodb.Client, table string) dispatch.Credentials {
		return vault.NewResolver(vault.NewStore(db, table, nil), kms.NewFromConfig(awsCfg), nil)
	}
}
