package toolfunction

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/ledger"
	observeddynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// secretsTimeout bounds the cold start's read of the ledger secrets (one
// GetParameters), well inside Lambda's 10 s init phase (AWS Lambda
// quotas).
const secretsTimeout = 5 * time.Second

// Dispatcher returns the function's dispatcher for mode, with check run
// before each call is claimed (dispatch.Config.Check; nil: none) and run
// as the tool, or stops the function with one log line (coldstart.Must):
// a bad configuration, or ledger secrets that cannot be read. It reads
// the environment (dispatch.ConfigFromEnv, secrets.NamesFromEnv,
// caller.ConfigFromEnv), then the function's secrets from SSM
// (secrets.Load, one GetParameters: its own MAC key, the stage's external
// key secret and since time), and builds the DynamoDB and SSM clients from
// awsCfg (so AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SSM point them
// at local stand-ins), and the KMS client the same way when the function
// resolves credentials (DispatcherWith). It records the webhook events of
// parked and unknown calls in the ledger table (shared/webhook/outbox),
// for the relay to send. Both stores are sealed with the function's MAC key
// (docs/ledger.md, "Records are sealed by the function that writes
// them").
func Dispatcher(log *slog.Logger, awsCfg aws.Config, mode dispatch.Mode, check toolcall.Check, run toolcall.Func) *dispatch.Dispatcher {
	return DispatcherWith(log, awsCfg, mode, Options{Check: check}, run)
}

// Options are what a tool function's dispatcher runs besides its tool.
type Options struct {
	// Check runs before each call is claimed (dispatch.Config.Check);
	// nil: none.
	Check toolcall.Check
	// Contract gives each call its contract from its input
	// (dispatch.Config.Contract); nil: the pinned tool's.
	Contract toolcall.Contract
	// Credentials, for a function whose tools can declare auth (mcp-call,
	// http), returns its dispatcher's credential resolver
	// (dispatch.Deps.Credentials) on the ledger table's client and name:
	// a vault.Resolver decrypting with a KMS client (AWS_ENDPOINT_URL_KMS
	// points it at the local stack's local-kms), which the function's
	// main builds so that no other tool function links the KMS client.
	// nil: a call to a target that declares auth is refused.
	Credentials func(db *dynamodb.Client, table string) dispatch.Credentials
	// LearnShapes, for a function whose tools can return results of an
	// undeclared shape (structured-data-fetch, http, lambda-tool,
	// mcp-call), learns them in the ledger table (dispatch.Deps.Shapes:
	// shared/observed/dynamo's Store; docs/declarations.md, "Observed
	// shapes"); its role holds the accesses of
	// table.LearningToolFunctions. false: nothing is learned.
	LearnShapes bool
}

// DispatcherWith is Dispatcher with opts: a check, a contract, and a
// credential resolver (docs/credentials.md, "At call time").
func DispatcherWith(log *slog.Logger, awsCfg aws.Config, mode dispatch.Mode, opts Options, run toolcall.Func) *dispatch.Dispatcher {
	cfg, table, err := dispatch.ConfigFromEnv(mode, os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	cfg.Check, cfg.Contract = opts.Check, opts.Contract
	// The function's spans go where the deployment says (off by default);
	// its service name is the function's (docs/tracing.md).
	tracer, err := tracing.FromEnv(os.Getenv, os.Getenv("AWS_LAMBDA_FUNCTION_NAME"))
	cfg.Tracer = coldstart.Must(log, "bad configuration", tracer, err)
	names, err := secrets.NamesFromEnv(os.Getenv)
	names = coldstart.Must(log, "bad configuration", names, err)
	// The compact call layout's upgrade, for this function: its previous
	// code is no longer invoked once this cold start runs (docs/ledger.md,
	// "The call item on the wire").
	cfg.CompactSince = time.Now().UTC()
	ctx, cancel := context.WithTimeout(context.Background(), secretsTimeout)
	sec, err := secrets.Load(ctx, ssm.NewFromConfig(awsCfg), names)
	cancel()
	sec = coldstart.Must(log, "the function's ledger secrets cannot be read", sec, err)
	if sec.SinceAbsent {
		log.Warn("ledger since time not written yet (the deploy writes it once every tool function runs its new code): this cold start's time stands for it", "param", names.Since, "since", sec.Since)
	}
	cfg.LedgerSince, cfg.ExternalKeySecret = sec.Since, sec.ExternalKey
	key, err := seal.NewKey(sec.MAC)
	key = coldstart.Must(log, "bad configuration", key, err)
	db := dynamodb.NewFromConfig(awsCfg)
	callerCfg, err := caller.ConfigFromEnv(os.Getenv)
	callerCfg = coldstart.Must(log, "bad configuration", callerCfg, err)
	callerCfg.Log = log
	callers, err := caller.NewVerifier(callerCfg, ledger.ProofTable{DB: db, Table: table})
	callers = coldstart.Must(log, "bad configuration", callers, err)
	store := ledger.New(db, table).WithMAC(key)
	deps := dispatch.Deps{
		Ledger: store,
		// The park a call sent again names, and the covers of approved
		// definitions, sealed with the function's key (docs/parking.md);
		// only the roles of functions whose calls can park may read or
		// record them.
		Parks:   store,
		Reviews: dynamo.NewStore(db, table).WithMAC(key),
		Callers: callers,
		// The webhook events of parked and unknown calls, recorded only:
		// the relay sends them, so the role holds no queue permission and
		// links no SQS client (docs/webhooks.md).
		Webhooks: &outbox.Recorder{DB: db, Table: table},
		Run:      run,
		Log:      log,
	}
	if opts.Credentials != nil {
		deps.Credentials = opts.Credentials(db, table)
	}
	if opts.LearnShapes {
		deps.Shapes = observeddynamo.New(db, table)
	}
	d, err := dispatch.New(cfg, deps)
	return coldstart.Must(log, "bad configuration", d, err)
}
