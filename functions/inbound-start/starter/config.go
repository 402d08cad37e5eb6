package starter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// FunctionConfig is the inbound-start function's configuration, read at
// cold start (FunctionConfigFromEnv).
type FunctionConfig struct {
	// Table is the table (inboundapi.EnvTable).
	Table string
	// Stage, Account and Region name the stage's state machines,
	// arn:<partition>:states:<region>:<account>:stateMachine:toolgate-<stage>_<solution>
	// (TOOLGATE_STAGE, TOOLGATE_ACCOUNT, AWS_REGION).
	Stage, Account, Region string
	// Partition is the inbound-start role ARN's partition ("aws",
	// "aws-cn", "aws-us-gov"): the state machines are in the same one.
	Partition string
	// InboundRole is the inbound-start role's ARN,
	// arn:<partition>:iam::<account>:role/<name> (inboundapi.EnvRole),
	// which the function assumes to start runs (docs/identity.md, "Four
	// eyes").
	InboundRole string
	// STSEndpoint is the STS endpoint the functions verify caller proofs
	// against (caller.EnvSTSEndpoint; default the region's): the start
	// request's proof names it.
	STSEndpoint string
	// StartFunction is review-request's start alias ARN, or on the local
	// stack the start instance's URL (http://127.0.0.1:PORT), invoked
	// as function "function" at that endpoint (inboundapi.EnvRunStartFunction).
	StartFunction string
	// ExternalKeyParam names the stage's external key in SSM
	// (inboundapi.EnvExternalKeyParam), under which execution names
	// are derived (NameKey).
	ExternalKeyParam string
	// Retention is how long an event item is kept
	// (inboundapi.EnvRetentionDays, inboundapi.DefaultRetentionDays days).
	Retention time.Duration
}

// roleARN is an IAM role ARN without a path: partition, account and name
// (IAM role names are 1 to 64 of [\w+=,.@-]).
var roleARN = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov):iam::(\d{12}):role/([\w+=,.@-]{1,64})$`)

// FunctionConfigFromEnv reads and checks the configuration; an error names
// the variable and the rule, never a secret (none is read here: the
// external key is named, and loaded by main).
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	c := FunctionConfig{Table: getenv(inboundapi.EnvTable), Stage: getenv(inboundapi.EnvStage), Account: getenv(inboundapi.EnvAccount),
		Region: getenv("AWS_REGION"), InboundRole: getenv(inboundapi.EnvRole), STSEndpoint: getenv(caller.EnvSTSEndpoint),
		StartFunction: getenv(inboundapi.EnvRunStartFunction), ExternalKeyParam: getenv(inboundapi.EnvExternalKeyParam),
		Retention: inboundapi.DefaultRetentionDays * 24 * time.Hour}
	for _, v := range []struct{ name, value string }{{inboundapi.EnvTable, c.Table}, {inboundapi.EnvStage, c.Stage}, {inboundapi.EnvAccount, c.Account},
		{"AWS_REGION", c.Region}, {inboundapi.EnvRole, c.InboundRole}, {inboundapi.EnvRunStartFunction, c.StartFunction},
		{inboundapi.EnvExternalKeyParam, c.ExternalKeyParam}} {
		if v.value == "" {
			return c, fmt.Errorf("%s is not set", v.name)
		}
	}
	if err := deployment.CheckStage(c.Stage); err != nil {
		return c, fmt.Errorf("%s: %w", inboundapi.EnvStage, err)
	}
	if !caller.ValidAccount(c.Account) {
		return c, fmt.Errorf("%s=%q is not an AWS account id (12 digits)", inboundapi.EnvAccount, c.Account)
	}
	m := roleARN.FindStringSubmatch(c.InboundRole)
	if m == nil {
		return c, fmt.Errorf("%s=%q is not an IAM role ARN arn:<partition>:iam::<account>:role/<name> (no path)", inboundapi.EnvRole, c.InboundRole)
	}
	if m[2] != c.Account {
		return c, fmt.Errorf("%s names account %s, and the deployment's is %s (%s)", inboundapi.EnvRole, m[2], c.Account, inboundapi.EnvAccount)
	}
	c.Partition = m[1]
	if c.STSEndpoint == "" {
		c.STSEndpoint = caller.DefaultEndpoint(c.Region)
	}
	if !strings.HasPrefix(c.StartFunction, "arn:") && !strings.HasPrefix(c.StartFunction, "http://127.0.0.1:") {
		return c, fmt.Errorf("%s=%q is neither a Lambda function ARN nor the local stack's http://127.0.0.1:PORT", inboundapi.EnvRunStartFunction, c.StartFunction)
	}
	if s := getenv(inboundapi.EnvRetentionDays); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < inboundapi.MinRetentionDays || n > inboundapi.MaxRetentionDays {
			return c, fmt.Errorf("%s=%q is not a whole number of days from %d to %d", inboundapi.EnvRetentionDays, s, inboundapi.MinRetentionDays, inboundapi.MaxRetentionDays)
		}
		c.Retention = time.Duration(n) * 24 * time.Hour
	}
	return c, nil
}

// StateMachineARN is the ARN of the stage's state machine of solution,
// arn:<partition>:states:<region>:<account>:stateMachine:toolgate-<stage>_<solution>
// (deployment.StateMachineName).
func (c FunctionConfig) StateMachineARN(solution string) string {
	return fmt.Sprintf("arn:%s:states:%s:%s:stateMachine:%s", c.Partition, c.Region, c.Account, deployment.StateMachineName(c.Stage, solution))
}

// ExecutionARN is the ARN of the execution name of solution's state machine
// (StateMachineARN with "execution" and ":<name>").
func (c FunctionConfig) ExecutionARN(solution, name string) string {
	return fmt.Sprintf("arn:%s:states:%s:%s:execution:%s:%s", c.Partition, c.Region, c.Account, deployment.StateMachineName(c.Stage, solution), name)
}
