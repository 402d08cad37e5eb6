package platform

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/functionconfig"
)

// fnLedgerSecrets is the provisioning function of the stage's ledger
// secrets (functions/ledger-secrets): a CloudFormation custom resource,
// not a platform function (functionSpecs), invoked by CloudFormation only.
const fnLedgerSecrets = "ledger-secrets"

// ledgerSecretsEnv is a tool function's environment naming its ledger
// secrets (functionconfig.SecretNamesFor): its own MAC key, the stage's external key
// and since time. Names are not secret.
func ledgerSecretsEnv(stage, function string) map[string]*string {
	n := functionconfig.SecretNamesFor(stage, function)
	return map[string]*string{
		functionconfig.EnvMACParam:         jsii.String(n.MAC),
		functionconfig.EnvExternalKeyParam: jsii.String(n.ExternalKey),
		functionconfig.EnvSinceParam:       jsii.String(n.Since),
	}
}

// readLedgerSecrets is a tool function's one SSM statement for its
// secrets: ssm:GetParameters on exactly its own MAC parameter, the
// stage's external key and since parameters, which shared/secrets Load reads in
// one request. The SecureStrings are encrypted under the AWS managed key
// aws/ssm, whose key policy lets the account's principals use it through
// SSM (kms:ViaService), so no KMS statement is needed (docs/ledger.md,
// "Records are sealed by the function that writes them").
func readLedgerSecrets(stage, function string) awsiam.PolicyStatement {
	n := functionconfig.SecretNamesFor(stage, function)
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadOwnLedgerSecrets"),
		Actions:   jsii.Strings("ssm:GetParameters"),
		Resources: &[]*string{parameterARN(n.MAC), parameterARN(n.ExternalKey), parameterARN(n.Since)},
	})
}

// readExternalKey is review-request's one SSM statement: ssm:GetParameters
// on exactly the stage's external key (shared/secrets LoadExternalKey),
// under which it derives a run's trace id as the tool functions do
// (docs/reviews.md, "Trace context"). It reads no MAC key and no since
// time; the key is encrypted under aws/ssm, as readLedgerSecrets says.
func readExternalKey(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadExternalKey"),
		Actions:   jsii.Strings("ssm:GetParameters"),
		Resources: &[]*string{parameterARN(functionconfig.ExternalKeyParam(stage))},
	})
}

// readEndUserKey is the SSM statement of review-request and publish for the stage's end-user key (functionconfig.EndUserKeyParam), under
// which an end user's scope is computed (docs/identity.md, "End users"):
// ssm:GetParameters on exactly that parameter, encrypted under aws/ssm,
// as readLedgerSecrets says.
func readEndUserKey(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadEndUserKey"),
		Actions:   jsii.Strings("ssm:GetParameters"),
		Resources: &[]*string{parameterARN(functionconfig.EndUserKeyParam(stage))},
	})
}

// endUserEnv sets the end-user key's parameter name and, when p names
// one, the end-user mapping on env (review-request's and publish's).
func endUserEnv(env map[string]*string, p *PlatformStackProps) {
	env[enduser.EnvKeyParam] = jsii.String(functionconfig.EndUserKeyParam(p.Stage))
	if len(p.EndUserMapping) > 0 {
		env[enduser.EnvMapping] = jsii.String(endUserMappingJSON(p.EndUserMapping))
	}
}

// ledgerSecretNames are the parameters the provisioning function creates
// for stage: each tool function's MAC key (functionSpecs with Tool), the
// external key, the end-user key; and the since parameter.
func ledgerSecretNames(stage string) (list []string, since string) {
	for _, spec := range functionSpecs {
		if spec.Tool {
			list = append(list, functionconfig.MACParam(stage, spec.Name))
		}
	}
	return append(list, functionconfig.ExternalKeyParam(stage), functionconfig.EndUserKeyParam(stage)), functionconfig.SinceParam(stage)
}

// LedgerSecrets is the provisioning function of the tool functions'
// ledger secrets and its two custom resources (NewLedgerSecrets).
type LedgerSecrets struct {
	constructs.Construct
	Function awslambda.Function
	Role     awsiam.Role
	// Resource creates the secrets; every tool function depends on it.
	Resource awscdk.CustomResource
	// Since writes the since time; it depends on every tool function,
	// version and alias.
	Since awscdk.CustomResource
}

// ledgerSecretsMemoryMB is the ledger-secrets function's memory, in MB.
const ledgerSecretsMemoryMB = 128

// newLedgerSecrets defines the provisioning function (its own role, whose
// one SSM statement is ssm:PutParameter on exactly the parameters it
// creates, and its own log group) and the two custom resources
// CloudFormation invokes it for, directly, with no provider framework:
// Custom::LedgerSecrets (LedgerSecrets) creates the secrets, and every
// tool function depends on it, so that its first cold start finds them;
// Custom::LedgerSince (LedgerSince) creates the since time, and depends
// on every tool function, its current version and its aliases, so that
// CloudFormation writes since only once every lane runs the new code,
// which seals: a run started before since may hold records the previous
// code wrote unsealed, a run started after it none (docs/ledger.md, "The
// upgrade rule"). No tool function depends on LedgerSince; one that cold
// starts before since exists takes its own load time (shared/secrets Load). The
// parameters outlive the stack (shared/secrets CustomResource says why).
func newLedgerSecrets(scope constructs.Construct, p *PlatformStackProps, fns map[string]*platformFunction) *LedgerSecrets {
	list, since := ledgerSecretNames(p.Stage)
	logs := awslogs.NewLogGroup(scope, jsii.String("LedgerSecretsFunctionLogs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention, RemovalPolicy: p.LogRemovalPolicy,
	})
	role := awsiam.NewRole(scope, jsii.String("LedgerSecretsFunctionRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("toolgate " + fnLedgerSecrets + " function (" + p.Stage + ")"),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogGroup"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	var arns []*string
	for _, n := range append(append([]string{}, list...), since) {
		arns = append(arns, parameterARN(n))
	}
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("CreateLedgerSecrets"),
		Actions:   jsii.Strings("ssm:PutParameter"),
		Resources: &arns,
	}))
	fn := awslambda.NewFunction(scope, jsii.String("LedgerSecretsFunction"), &awslambda.FunctionProps{
		FunctionName:  jsii.String(functionName(p.Stage, fnLedgerSecrets)),
		Description:   jsii.String("toolgate ledger-secrets: creates the stage's ledger secrets once, never overwrites them (CloudFormation custom resource)"),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(p.AssetsDir, fnLedgerSecrets)), nil),
		MemorySize:    jsii.Number(ledgerSecretsMemoryMB),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(60)),
		Role:          role,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Tracing:       awslambda.Tracing_ACTIVE,
		// Every function of the stack sets the account, its timeout and
		// where it exports spans, which this one does not read yet, and
		// its GOMAXPROCS, which the Go runtime reads.
		Environment: &map[string]*string{envAccount: awscdk.Aws_ACCOUNT_ID(), envTimeoutSeconds: jsii.String("60"), envTracing: jsii.String(p.Tracing),
			functionconfig.EnvGoMaxProcs: jsii.String(functionconfig.GoMaxProcs(ledgerSecretsMemoryMB))},
	})
	overrideLogicalID(fn, "LedgerSecretsFunction")
	var props []any
	for _, n := range list {
		props = append(props, n)
	}
	res := awscdk.NewCustomResource(scope, jsii.String("LedgerSecrets"), &awscdk.CustomResourceProps{
		ServiceToken: fn.FunctionArn(),
		ResourceType: jsii.String("Custom::LedgerSecrets"),
		Properties:   &map[string]any{functionconfig.PropSecrets: props},
		// Deleting the resource deletes nothing (shared/secrets CustomResource).
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	overrideLogicalID(res, "LedgerSecrets")
	sinceRes := awscdk.NewCustomResource(scope, jsii.String("LedgerSince"), &awscdk.CustomResourceProps{
		ServiceToken:  fn.FunctionArn(),
		ResourceType:  jsii.String("Custom::LedgerSince"),
		Properties:    &map[string]any{functionconfig.PropSince: since},
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	overrideLogicalID(sinceRes, "LedgerSince")
	// review-request reads the external and end-user keys at its cold
	// start too, and publish the end-user key.
	fns[fnReviewRequest].Function.Node().AddDependency(res)
	fns[fnPublish].Function.Node().AddDependency(res)
	for _, spec := range functionSpecs {
		if !spec.Tool {
			continue
		}
		pf := fns[spec.Name]
		pf.Function.Node().AddDependency(res)
		sinceRes.Node().AddDependency(pf.Function, pf.Function.CurrentVersion())
		for _, l := range slices.Sorted(maps.Keys(pf.Aliases)) {
			sinceRes.Node().AddDependency(pf.Aliases[l])
		}
	}
	return &LedgerSecrets{Function: fn, Role: role, Resource: res, Since: sinceRes}
}
