package platform

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// addNagPacks applies cdk-nag's AwsSolutions and Serverless packs to
// every stack of app: synthesizing it annotates each finding (an error or
// warning naming its rule), and each suppressed one as information
// (LogIgnores). No report files are written.
func addNagPacks(app awscdk.App) {
	props := &cdknag.NagPackProps{Reports: jsii.Bool(false), LogIgnores: jsii.Bool(true), Verbose: jsii.Bool(true)}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(props), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(props), nil)
}

// nagResults returns the stacks' unsuppressed cdk-nag findings ("<path>:
// <message>") and their suppressed ones ("<path> <rule>[<data>]"), read
// from the synthesized stacks' annotations.
func nagResults(stacks ...awscdk.Stack) (findings, suppressed []string) {
	for _, s := range stacks {
		a := assertions.Annotations_FromStack(s)
		for _, msgs := range []*[]*cxapi.SynthesisMessage{
			a.FindError(jsii.String("*"), assertions.Match_AnyValue()),
			a.FindWarning(jsii.String("*"), assertions.Match_AnyValue()),
		} {
			for _, m := range *msgs {
				if msg := fmt.Sprint(m.Entry.Data); strings.HasPrefix(msg, "AwsSolutions-") || strings.HasPrefix(msg, "Serverless-") {
					findings = append(findings, *m.Id+": "+msg)
				}
			}
		}
		for _, m := range *a.FindInfo(jsii.String("*"), assertions.Match_AnyValue()) {
			// "CdkNagSuppression[<data>]: <rule> was triggered but suppressed."
			msg := fmt.Sprint(m.Entry.Data)
			head, rest, ok := strings.Cut(msg, ": ")
			rule, _, ok2 := strings.Cut(rest, " was triggered but suppressed")
			if !ok || !ok2 || !strings.HasPrefix(head, "CdkNagSuppression") {
				continue
			}
			suppressed = append(suppressed, *m.Id+" "+rule+strings.TrimPrefix(head, "CdkNagSuppression"))
		}
	}
	slices.Sort(findings)
	slices.Sort(suppressed)
	return findings, suppressed
}

// wantNagSuppressed are the findings nag.go accepts, each with its reason
// there; a new finding, or a suppression that no longer applies, fails
// TestNag.
var wantNagSuppressed = func() []string {
	var out []string
	for _, spec := range functionSpecs {
		out = append(out, "/Toolgate-test/Functions/"+spec.LogicalID+"/Resource Serverless-LambdaDLQ",
			"/Toolgate-test/Functions/"+spec.LogicalID+"Role/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]")
	}
	// The webhooks' queues (webhooks.go): SQS event source mappings take
	// no on-failure destination, a dead-letter queue has no redrive of its
	// own, the relay's ticks need no dead-letter queue.
	out = append(out, "/Toolgate-test/Functions/WebhookDeliveryFunction/WebhookDeliveriesMapping/Resource Serverless-LambdaEventSourceMappingDestination",
		"/Toolgate-test/Functions/WebhookDeliveryFunction/WebhookEventsMapping/Resource Serverless-LambdaEventSourceMappingDestination",
		"/Toolgate-test/Webhooks/WebhookDeliveriesDLQ/Resource Serverless-SQSRedrivePolicy",
		"/Toolgate-test/Webhooks/WebhookEventsDLQ/Resource Serverless-SQSRedrivePolicy",
		"/Toolgate-test/Webhooks/WebhookRelaySchedule/Resource Serverless-EventBusDLQ")
	// The inbound queue (inbound.go), as the webhooks'; the sources
	// function's schedules of its group; inbound-start's state machines
	// and executions of the stage.
	out = append(out, "/Toolgate-test/Functions/InboundStartFunction/InboundMapping/Resource Serverless-LambdaEventSourceMappingDestination",
		"/Toolgate-test/Inbound/InboundDLQ/Resource Serverless-SQSRedrivePolicy",
		"/Toolgate-test/Inbound/InboundRelaySchedule/Resource Serverless-EventBusDLQ",
		"/Toolgate-test/Functions/SourcesFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("scheduler", "schedule/toolgate-test/*")+"]",
		"/Toolgate-test/Functions/InboundStartFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "stateMachine:toolgate-test_*")+"]",
		"/Toolgate-test/Functions/InboundStartFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "execution:toolgate-test_*:*")+"]")
	out = append(out, "/Toolgate-test/Secrets/LedgerSecretsFunction/Resource Serverless-LambdaDLQ",
		"/Toolgate-test/Secrets/LedgerSecretsFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]")
	out = append(out, "/Toolgate-test/Access/SolutionExecutionRole/DefaultPolicy/Resource AwsSolutions-IAM5[Resource::*]",
		"/Toolgate-test/Access/SolutionExecutionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "stateMachine:toolgate-test_*")+"]",
		"/Toolgate-test/Access/SolutionExecutionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "execution:toolgate-test_*:*")+"]",
		"/Toolgate-test/Functions/PublishFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "stateMachine:toolgate-test_*")+"]",
		"/Toolgate-test/Functions/ReviewRequestFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "execution:toolgate-test_*:*")+"]",
		"/Toolgate-test/Functions/ReviewDecisionFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "execution:toolgate-test_*:*")+"]",
		"/Toolgate-test/Functions/ReviewRequestFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "stateMachine:toolgate-test_*")+"]",
		"/Toolgate-test/Functions/PublishFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagParamWildcard("test")+"]",
		"/Toolgate-test/Functions/PublishFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("lambda", "function:*")+"]",
		"/Toolgate-test/Functions/LambdaToolFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagARN("lambda", "function:*")+"]",
		"/Toolgate-test/Functions/LambdaToolFunctionRole/DefaultPolicy/Resource AwsSolutions-IAM5["+nagParamWildcard("test")+"]",
		"/Toolgate-test/Access/PublisherPolicy/Resource AwsSolutions-IAM5[Resource::*]",
		"/Toolgate-test/Access/PublisherPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "stateMachine:toolgate-test_*")+"]",
		"/Toolgate-test/Access/PublisherPolicy/Resource AwsSolutions-IAM5["+nagARN("states", "execution:toolgate-test_*:*")+"]",
	)
	slices.Sort(out)
	return out
}()

// TestNag: cdk-nag's AwsSolutions and Serverless packs find nothing
// unsuppressed in either stack, and the suppressions are exactly the
// accepted findings.
func TestNag(t *testing.T) {
	findings, suppressed := nagResults(ledgerStack, platformStack)
	for _, f := range findings {
		t.Errorf("cdk-nag: %s", f)
	}
	if d := diffLines(wantNagSuppressed, suppressed); d != "" {
		t.Errorf("suppressed cdk-nag findings (-want +got):\n%s", d)
	}
}

// TestNagFinds: the packs are applied and their findings read: a role
// with a wildcard resource and no suppression is reported.
func TestNagFinds(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Nag"), nil)
	role := awsiam.NewRole(stack, jsii.String("Wide"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("dynamodb:PutItem"), Resources: jsii.Strings("*"),
	}))
	addNagPacks(app)
	var findings []string
	if err := try(func() { findings, _ = nagResults(stack) }); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(findings, func(f string) bool {
		return strings.HasPrefix(f, "/Nag/Wide/DefaultPolicy/Resource: AwsSolutions-IAM5[Resource::*]")
	}) {
		t.Fatalf("no AwsSolutions-IAM5 finding on the wildcard: %q", findings)
	}
}

// diffLines is "-" for each line of want missing from got and "+" for
// each line of got not in want.
func diffLines(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			b.WriteString("- " + w + "\n")
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			b.WriteString("+ " + g + "\n")
		}
	}
	return b.String()
}

// TestNagStaysInInfra: cdk-nag (and its jsii package) is the CDK app's
// alone: no function, shared package or the CLI depends on it.
func TestNagStaysInInfra(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goCmd, "list", "-deps", "../../resolver/...", "../../functions/...", "../../shared/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/cdklabs/cdk-nag-go/") {
			t.Errorf("%s is a dependency outside infra/", pkg)
		}
	}
}
