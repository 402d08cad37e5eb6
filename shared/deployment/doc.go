// Package deployment names what a toolgate deployment is made of, for
// everything that must agree on it: the CDK app (infra) that creates it,
// the local stack that stands in for it, the functions that run in it and
// the CLI that publishes and runs Solutions on it.
//
// It holds the stage rules (StagePattern, CheckStage: 1 to 20 lower-case
// letters, digits and "-", starting with a letter), the names derived from
// a stage (StateMachineName "toolgate-<stage>_<solution>",
// ExecutionLogGroup), and the SSM Parameter Store names under
// /toolgate/<stage>/ that infra writes and toolgate reads (FunctionARNParam,
// ExecutionRoleParam, TableParam, PublishURLParam, ReviewDecisionURLParam,
// StartFunctionParam), with Params, the reader of those parameters, and
// FileParams, the local stack's parameters file (docs/infra.md,
// "Publishing").
//
// It links no AWS SDK: the reader of SSM Parameter Store is
// shared/deployment/ssmparams.
package deployment
