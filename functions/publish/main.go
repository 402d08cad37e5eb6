// Command publish is the publish function: the only way a Solution reaches
// Step Functions. Behind an IAM-authorised Function URL, each request with
// a caller proof of who publishes, it runs the resolver on the Solution's
// source, checks its literal URLs and recipients against the deployment's
// allow-lists, registers the toolset it pins, creates or updates the state
// machine with the platform's function ARNs substituted, and publishes a
// version that records the publisher (docs/infra.md, "Publishing"). It
// registers toolsets alone too, refusing one whose platform tools are
// pinned looser than their functions' floors (docs/tools.md).
package main

import (
	"context"
	shapedynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/ssmparams"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/mcptool"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/toolset"
)

func main() {
	log := coldstart.Logger()
	cfg, err := publish.FunctionConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	db := dynamodb.NewFromConfig(awsCfg)
	cfg.Callers.Log = log
	callers, err := caller.NewVerifier(cfg.Callers, ledger.ProofTable{DB: db, Table: cfg.Table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	var params deployment.Params = ssmparams.Params{Client: ssm.NewFromConfig(awsCfg)}
	if cfg.ParamsFile != "" {
		fp, err := deployment.ReadFileParams(cfg.ParamsFile)
		params = coldstart.Must(log, "bad configuration", deployment.Params(fp), err)
	}
	// Registration lists MCP servers under the same address rules as the
	// calls (TOOLGATE_MCP_ALLOW, docs/tools.md "MCP tools"); without an
	// allow-list no server is reachable, and drafts are refused by it.
	mcpCfg, err := mcptool.ConfigFromEnv(os.Getenv)
	mcpCfg = coldstart.Must(log, "bad configuration", mcpCfg, err)
	mcpClient := mcptool.New(mcpCfg, log)
	svc := &publish.Service{Callers: callers, Params: params, Stage: cfg.Stage, Region: awsCfg.Region,
		Store: ledger.New(db, cfg.Table), SFN: sfn.NewFromConfig(awsCfg), Log: log, Deployment: cfg.Deployment,
		MCP: mcpClient.List,
		// Registration reads each platform tool's floor from its function's
		// tags (lambda:ListTags, functions tagged for this stage only),
		// afresh for every registration.
		Floors:      platformtool.NewFloors(awslambda.NewFromConfig(awsCfg), 0, nil),
		Credentials: publish.Credentials{Admins: cfg.CredentialAdmins},
		// toolgate shapes: each pinned tool's shape items.
		Shapes: shapedynamo.New(db, cfg.Table)}
	if cfg.CredentialKey != "" {
		// Credentials are sealed under the stage's key, stored in the
		// ledger table (vault.Store), and a draft's server that
		// declares auth is listed with its toolset-scope credential.
		svc.Credentials.KMS, svc.Credentials.Key = kms.NewFromConfig(awsCfg), cfg.CredentialKey
		store := vault.NewStore(db, cfg.Table, nil)
		svc.Credentials.Store = store
		// The parked calls, read for a started run's credential set
		// again while the run waits for it (docs/credentials.md).
		svc.Credentials.Parks = parkdynamo.New(db, cfg.Table, nil)
		svc.Credentials.ListWithCredential = func(ctx context.Context, url string, t credential.Target, secret []byte) (toolset.Listed, error) {
			return mcpClient.ListWithCredential(ctx, url, credential.Opened(t, credential.ScopeToolset, 0, time.Time{}, secret))
		}
		// An end user's credentials: who may act for them, and their
		// scope under the stage's end-user key.
		svc.Credentials.EndUsers = cfg.EndUsers
		if cfg.EndUserKeyParam != "" {
			keys, err := secrets.LoadKeys(context.Background(), ssm.NewFromConfig(awsCfg), cfg.EndUserKeyParam)
			keys = coldstart.Must(log, "the end-user key", keys, err)
			svc.Credentials.EndUserKey = keys[0]
		}
	}
	lambda.Start(publish.NewHandler(svc).Handle)
}
