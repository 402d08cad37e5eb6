// Command http is the http tool's Lambda function: one governed request
// of GET, HEAD, POST, PUT, PATCH or DELETE behind the dispatcher, to hosts
// on both its own platform allow-list and the run's pinned http_hosts,
// each call's review and policy decided from its method
// (httptool.Contract; docs/tools.md lists its environment), and the
// credential of a host entry that declares auth presented to it.
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
	"github.com/toolgate/toolgate/shared/httptool"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	log := coldstart.Logger()
	cfg, err := httptool.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	d := toolfunction.DispatcherWith(log, awsCfg, dispatch.OneTool("http"), toolfunction.Options{Contract: httptool.Contract, Credentials: resolver(awsCfg), LearnShapes: true}, cfg.Tool())
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
