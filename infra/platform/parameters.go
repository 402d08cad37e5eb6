package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/lane"
)

// newParameters writes the SSM parameters toolgate publish reads, named by
// shared/deployment (the local stack writes the same keys to its file): the
// sfn alias ARN of each function Solutions invoke (the one ARN the
// Solution execution role may invoke; the publish function puts it in the
// state machine's Tasks), the Solution execution role, the table, the
// review decision URL, review-request's start alias (toolgate run) and the
// publish function's URL.
func newParameters(scope constructs.Construct, p *PlatformStackProps, fns map[string]*platformFunction, a *Access, decisionURL, publishURL *string) {
	param := func(id, name string, value *string, description string) {
		awsssm.NewStringParameter(scope, jsii.String(id), &awsssm.StringParameterProps{
			ParameterName: jsii.String(name),
			StringValue:   value,
			Description:   jsii.String(description),
		})
	}
	for _, spec := range functionSpecs {
		if spec.ForSolutions {
			param(spec.LogicalID+"ArnParameter", deployment.FunctionARNParam(p.Stage, spec.Name),
				fns[spec.Name].aliasARN(lane.SFN), "ARN of the toolgate "+spec.Name+" function's sfn alias (Solutions' Tasks invoke it)")
		}
	}
	param("ExecutionRoleArnParameter", deployment.ExecutionRoleParam(p.Stage), a.ExecutionRoleARN, "ARN of the Solution execution role")
	param("TableNameParameter", deployment.TableParam(p.Stage), jsii.String(p.TableName), "name of the ledger table")
	param("ReviewDecisionUrlParameter", deployment.ReviewDecisionURLParam(p.Stage), decisionURL, "URL of the review decision function (IAM-authorised)")
	param("RunStartFunctionParameter", deployment.StartFunctionParam(p.Stage), fns[fnReviewRequest].aliasARN(lane.Start),
		"ARN of the toolgate review-request function's start alias (toolgate run records a run's start through it)")
	param("PublishUrlParameter", publishURLParam(p.Stage), publishURL, "URL of the publish function (IAM-authorised): toolgate publish --url, toolgate toolset register --url")
}

// publishURLParam names the publish function's URL
// (deployment.PublishURLParam, the name the local stack writes too).
func publishURLParam(stage string) string { return deployment.PublishURLParam(stage) }

// publishReadParams are the parameters the publish function reads
// (ssmparams.Params, GetParameter): the sfn alias ARN of each function
// for Solutions, which it substitutes into Tasks, and the Solution
// execution role.
func publishReadParams(stage string) []string {
	var out []string
	for _, spec := range functionSpecs {
		if spec.ForSolutions {
			out = append(out, deployment.FunctionARNParam(stage, spec.Name))
		}
	}
	return append(out, deployment.ExecutionRoleParam(stage))
}
