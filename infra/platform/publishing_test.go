package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/infra/toolfunction"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/ssmparams"
	ledgertable "github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Publishing only through the resolver, in a function, and
// stages apart (§3): template assertions on who may write state machines
// and on the stage every Step Functions ARN names, and the publish
// function's and toolgate run's own requests replayed against the
// template.

// statementsByOwner returns every identity policy statement by owner: a
// function role by its function's name, the Solution execution role as
// solution-execution, a managed policy by its whole name
// (toolgate-<stage>-publisher).
func statementsByOwner(pj tmpl) map[string][]tmpl {
	out := principalStatements(pj)
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		name := text(props(p)["ManagedPolicyName"])
		delete(out, strings.TrimPrefix(name, "toolgate-test-"))
	}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		name := text(props(p)["ManagedPolicyName"])
		out[name] = append(out[name], statements(props(p)["PolicyDocument"])...)
	}
	return out
}

// executionRoleARN is the Solution execution role of the test stack, as a
// concrete ARN.
const executionRoleARN = "arn:aws:iam::123456789012:role/toolgate-test-solution-execution"

// mayBeExecutionRole: resource (rendered with text) may name the Solution
// execution role: its Arn attribute, or an ARN pattern matching its name
// (a placeholder counts as *).
// roleArnAttribute matches a rendered Fn::GetAtt [X, Arn].
var roleArnAttribute = regexp.MustCompile(`^\$\{([A-Za-z0-9]+)\.Arn\}$`)

func mayBeExecutionRole(resource string) bool {
	if resource == "${SolutionExecutionRole.Arn}" {
		return true
	}
	// Another role of the template by its Arn attribute is that role.
	if m := roleArnAttribute.FindStringSubmatch(resource); m != nil && strings.HasSuffix(m[1], "Role") {
		return false
	}
	return wildcardMatch(placeholder.ReplaceAllString(resource, "*"), executionRoleARN, false)
}

// checkStateMachineWriters: a hand-written definition has no path to a
// state machine for a Publisher. No managed policy for people (Publisher,
// Reviewer, Operator) and no role but the publish function's allows, in
// any form (wildcards, letter case, NotAction, any resource), an action
// that puts a definition on a state machine or labels a version
// (stateMachineWriteActions), or iam:PassRole of the Solution execution
// role (which CreateStateMachine and UpdateStateMachine need). And the
// publish role has them all.
func checkStateMachineWriters(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	all := statementsByOwner(pj)
	has := map[string]bool{}
	for _, owner := range slices.Sorted(maps.Keys(all)) {
		for _, s := range all[owner] {
			if s["Effect"] != "Allow" {
				continue
			}
			sid := "without Sid"
			if id, ok := s["Sid"].(string); ok {
				sid = id
			}
			var writes []string
			for _, a := range stateMachineWriteActions {
				if allowsAction(s, a) {
					writes = append(writes, a)
				}
			}
			if allowsAction(s, "iam:PassRole") {
				passes := false
				if nr, ok := s["NotResource"]; ok {
					passes = !slices.ContainsFunc(strs(nr), mayBeExecutionRole)
				} else {
					passes = slices.ContainsFunc(strs(s["Resource"]), mayBeExecutionRole)
				}
				if passes {
					writes = append(writes, "iam:PassRole of the Solution execution role")
				}
			}
			if owner == fnPublish {
				for _, w := range writes {
					has[w] = true
				}
				continue
			}
			if len(writes) > 0 {
				errs = append(errs, fmt.Errorf("%s: statement %s allows %s: only the publish function's role writes state machines, "+
					"so that a hand-written definition has no path to one", owner, sid, strings.Join(writes, ", ")))
			}
		}
	}
	for _, w := range append(slices.Clone(stateMachineWriteActions), "iam:PassRole of the Solution execution role") {
		if !has[w] {
			errs = append(errs, fmt.Errorf("the publish role does not allow %s: publishing cannot work", w))
		}
	}
	return errors.Join(errs...)
}

// TestStateMachineWriterBreaks gives state machine writes to others in more
// ways than TestRulesCatchBreakage's one, and expects
// checkStateMachineWriters to name each.
func TestStateMachineWriterBreaks(t *testing.T) {
	addManaged := func(pj tmpl, name string, s tmpl) {
		for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
			if props(p)["ManagedPolicyName"] == name {
				doc := props(p)["PolicyDocument"].(tmpl)
				doc["Statement"] = append(doc["Statement"].([]any), s)
				return
			}
		}
		panic("no managed policy " + name)
	}
	for _, c := range []struct {
		name string
		brk  func(pj tmpl)
		says string
	}{
		{"the Operator with states:*", func(pj tmpl) {
			addManaged(pj, "toolgate-test-operator", tmpl{"Effect": "Allow", "Action": "states:*", "Resource": "*"})
		}, "toolgate-test-operator: statement without Sid allows states:CreateStateMachine, states:UpdateStateMachine, states:PublishStateMachineVersion"},
		{"the Reviewer by NotAction", func(pj tmpl) {
			addManaged(pj, "toolgate-test-reviewer", tmpl{"Effect": "Allow", "NotAction": "states:Create*", "Resource": "*"})
		}, "toolgate-test-reviewer: statement without Sid allows states:UpdateStateMachine, states:PublishStateMachineVersion, iam:PassRole"},
		{"the Publisher passes the role by name", func(pj tmpl) {
			addManaged(pj, "toolgate-test-publisher", tmpl{"Sid": "Pass", "Effect": "Allow", "Action": "IAM:Pass*",
				"Resource": "arn:aws:iam::123456789012:role/toolgate-test-*"})
		}, "toolgate-test-publisher: statement Pass allows iam:PassRole of the Solution execution role"},
		{"the Publisher publishes versions", func(pj tmpl) {
			addManaged(pj, "toolgate-test-publisher", tmpl{"Sid": "Versions", "Effect": "Allow", "Action": "states:PublishStateMachineVersion",
				"Resource": tmpl{"Fn::Sub": arn("states", "stateMachine:toolgate-test_*")}})
		}, "toolgate-test-publisher: statement Versions allows states:PublishStateMachineVersion"},
		{"a function role passes any role", func(pj tmpl) {
			addStatement(pj, "ReviewDecisionFunction", tmpl{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"})
		}, "review-decision: statement without Sid allows iam:PassRole of the Solution execution role"},
		{"the execution role updates state machines", func(pj tmpl) {
			for _, p := range resources(pj, "AWS::IAM::Policy") {
				if text(props(p)["Roles"]) == `["${SolutionExecutionRole}"]` {
					doc := props(p)["PolicyDocument"].(tmpl)
					doc["Statement"] = append(doc["Statement"].([]any), tmpl{"Effect": "Allow", "Action": "states:UpdateStateMachine",
						"Resource": tmpl{"Fn::Sub": arn("states", "stateMachine:toolgate-test_*")}})
				}
			}
		}, "solution-execution: statement without Sid allows states:UpdateStateMachine"},
		{"the publish role loses PassRole", func(pj tmpl) {
			for _, s := range policyStatementsOf(pj, "PublishFunction") {
				if s["Sid"] == "PassTheExecutionRole" {
					s["Resource"] = "arn:aws:iam::123456789012:role/other"
				}
			}
		}, "the publish role does not allow iam:PassRole of the Solution execution role"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.brk(pj)
			err := checkStateMachineWriters(nil, nil, nil, pj)
			if err == nil {
				t.Fatal("the broken template passed")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", c.says, err)
			}
		})
	}
}

// statesARNs returns, by where they are ("<owner>: statement <sid>" or
// "trust of <role>"), the Step Functions ARNs a template's policies name:
// identity statements' resources, and the trust policies' conditions
// (aws:SourceArn). Resource "*" is not one: checkWildcards allows it only
// for actions with no resource type.
func statesARNs(pj tmpl) map[string][]string {
	out := map[string][]string{}
	isStates := func(v string) bool { return strings.Contains(v, ":states:") }
	all := statementsByOwner(pj)
	for owner, stmts := range all {
		for _, s := range stmts {
			sid := "without Sid"
			if id, ok := s["Sid"].(string); ok {
				sid = id
			}
			where := owner + ": statement " + sid
			for _, k := range []string{"Resource", "NotResource"} {
				for _, r := range strs(s[k]) {
					if isStates(r) {
						out[where] = append(out[where], r)
					}
				}
			}
		}
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		for _, s := range statements(props(r)["AssumeRolePolicyDocument"]) {
			c, _ := s["Condition"].(tmpl)
			for _, block := range c {
				b, _ := block.(tmpl)
				for _, v := range b {
					for _, x := range strs(v) {
						if isStates(x) {
							out["trust of "+symbol(id)] = append(out["trust of "+symbol(id)], x)
						}
					}
				}
			}
		}
	}
	return out
}

// stageARNProblems: every Step Functions ARN of pj names stage as its
// state machines' prefix with the separator: stateMachine:toolgate-<stage>_
// or execution:toolgate-<stage>_.
func stageARNProblems(pj tmpl, stage string) []error {
	var errs []error
	byWhere := statesARNs(pj)
	for _, where := range slices.Sorted(maps.Keys(byWhere)) {
		for _, r := range byWhere[where] {
			ok := false
			for _, kind := range []string{"stateMachine", "execution"} {
				ok = ok || strings.HasPrefix(r, arn("states", kind+":"+deployment.StateMachineName(stage, "")))
			}
			if !ok {
				errs = append(errs, fmt.Errorf("%s: %s does not name stage %s (toolgate-%s_*): a policy on it reaches other stages' state machines",
					where, r, stage, stage))
			}
		}
	}
	return errs
}

// checkStageARNs: stages apart: every Step Functions ARN in
// every policy names the test stage with its separator.
func checkStageARNs(_, _ assertions.Template, _, pj tmpl) error {
	if len(statesARNs(pj)) == 0 {
		return errors.New("no policy names a Step Functions ARN")
	}
	return errors.Join(stageARNProblems(pj, "test")...)
}

// TestStageARNBreaks: ARNs naming no stage, or the stage without its
// separator, are reported wherever they are.
func TestStageARNBreaks(t *testing.T) {
	for _, c := range []struct {
		name string
		brk  func(pj tmpl)
		says string
	}{
		{"no separator", func(pj tmpl) {
			for _, s := range policyStatementsOf(pj, "PublishFunction") {
				if s["Sid"] == "PublishStateMachines" {
					s["Resource"] = tmpl{"Fn::Sub": arn("states", "stateMachine:toolgate-test*")}
				}
			}
		}, "publish: statement PublishStateMachines: arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-test* does not name stage test"},
		{"the trust of every stage", func(pj tmpl) {
			for id, r := range resources(pj, "AWS::IAM::Role") {
				if symbol(id) == "SolutionExecutionRole" {
					for _, s := range statements(props(r)["AssumeRolePolicyDocument"]) {
						s["Condition"].(tmpl)["ArnLike"] = tmpl{"aws:SourceArn": tmpl{"Fn::Sub": arn("states", "stateMachine:toolgate-*")}}
					}
				}
			}
		}, "trust of SolutionExecutionRole: arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-* does not name stage test"},
		{"another stage", func(pj tmpl) {
			grant(pj, "StartExecutions", tmpl{"Fn::Sub": arn("states", "stateMachine:toolgate-prod_*")})
		}, "toolgate-test-publisher: statement StartExecutions: arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-prod_* does not name stage test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.brk(pj)
			err := checkStageARNs(nil, nil, nil, pj)
			if err == nil {
				t.Fatal("the broken template passed")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", c.says, err)
			}
		})
	}
}

// TestStagesApart: a bare cdk synth's stage, dev, names its own state
// machines and executions only: no policy ARN matches those of stage
// dev-2 (whose names start toolgate-dev), and some match dev's own (the
// check is not vacuous).
func TestStagesApart(t *testing.T) {
	pj, _, err := defaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	if errs := stageARNProblems(pj, "dev"); len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	byWhere := statesARNs(pj)
	for _, c := range []struct {
		arn  string
		want bool
	}{
		{arn("states", "stateMachine:toolgate-dev_x"), true},
		{arn("states", "execution:toolgate-dev_x:run-1"), true},
		{arn("states", "stateMachine:toolgate-dev-2_x"), false},
		{arn("states", "execution:toolgate-dev-2_x:run-1"), false},
		{arn("states", "stateMachine:toolgate-dev2_x"), false},
		{arn("states", "execution:toolgate-de_v:run-1"), false},
	} {
		var matched []string
		for _, where := range slices.Sorted(maps.Keys(byWhere)) {
			for _, pattern := range byWhere[where] {
				if wildcardMatch(pattern, c.arn, false) {
					matched = append(matched, where+" ("+pattern+")")
				}
			}
		}
		switch {
		case c.want && len(matched) == 0:
			t.Errorf("no policy names %s", c.arn)
		case !c.want && len(matched) > 0:
			t.Errorf("%s is reached from stage dev by %s", c.arn, strings.Join(matched, ", "))
		}
	}
}

// apiRequest is one request to AWS other than DynamoDB, as IAM authorises
// it: the action, the resource (a concrete ARN of the test stack's account
// and region) and the condition keys it carries.
type apiRequest struct {
	What     string
	Action   string
	Resource string
	Context  map[string]string
}

func (r apiRequest) String() string {
	return fmt.Sprintf("%s: %s on %s %v", r.What, r.Action, r.Resource, r.Context)
}

// The test stack's account and region, and its resources' ARNs.
const (
	testAccount  = "123456789012"
	testRegion   = "eu-west-1"
	publishFnARN = "arn:aws:lambda:" + testRegion + ":" + testAccount + ":function:toolgate-test-publish"
	// reviewRequestFnARN is review-request's unqualified ARN; its aliases
	// add ":sfn", ":direct" or ":start".
	reviewRequestFnARN = "arn:aws:lambda:" + testRegion + ":" + testAccount + ":function:toolgate-test-review-request"
	stateMachineOf     = "arn:aws:states:" + testRegion + ":" + testAccount + ":stateMachine:"
	// teamFnARN is a platform team's tool function, named as the team chose.
	teamFnARN = "arn:aws:lambda:" + testRegion + ":" + testAccount + ":function:tickets-create-ticket"
)

// concrete renders a policy resource of the template for the test stack's
// account and region.
var concrete = strings.NewReplacer(
	"${AWS::Partition}", "aws", "${AWS::Region}", testRegion, "${AWS::AccountId}", testAccount,
	"${SolutionExecutionRole.Arn}", executionRoleARN, "${PublishFunction.Arn}", publishFnARN,
	// An alias's Ref is its ARN.
	"${ReviewRequestFunctionStartAlias}", reviewRequestFnARN+":start",
	"${ReviewRequestFunctionDirectAlias}", reviewRequestFnARN+":direct",
	"${ReviewRequestFunctionSfnAlias}", reviewRequestFnARN+":sfn",
)

// apiAllowedBy returns the statements of stmts that allow r.
func apiAllowedBy(stmts []tmpl, r apiRequest) []tmpl {
	var out []tmpl
	context := map[string][]string{}
	for k, v := range r.Context {
		context[k] = []string{v}
	}
	for _, s := range stmts {
		if s["Effect"] != "Allow" || !allowsAction(s, r.Action) {
			continue
		}
		if _, ok := s["NotResource"]; ok || !slices.ContainsFunc(strs(s["Resource"]), func(p string) bool {
			return wildcardMatch(concrete.Replace(p), r.Resource, false)
		}) {
			continue
		}
		if conditionsHoldFor(s, context, false) {
			out = append(out, s)
		}
	}
	return out
}

// sfnRecorder is a Step Functions client that records each request as IAM
// authorises it (CreateStateMachine and UpdateStateMachine also pass the
// execution role: iam:PassRole) and answers as little as the code needs.
type sfnRecorder struct {
	what     string
	reqs     []apiRequest
	existing []string // state machine names ListStateMachines answers
}

func (r *sfnRecorder) record(action, resource string) {
	r.reqs = append(r.reqs, apiRequest{What: r.what, Action: action, Resource: resource})
}

func (r *sfnRecorder) passRole(role *string) {
	r.reqs = append(r.reqs, apiRequest{What: r.what, Action: "iam:PassRole", Resource: aws.ToString(role),
		Context: map[string]string{"iam:PassedToService": "states.amazonaws.com"}})
}

func (r *sfnRecorder) CreateStateMachine(_ context.Context, in *sfn.CreateStateMachineInput, _ ...func(*sfn.Options)) (*sfn.CreateStateMachineOutput, error) {
	arn := stateMachineOf + aws.ToString(in.Name)
	r.record("states:CreateStateMachine", arn)
	r.passRole(in.RoleArn)
	out := &sfn.CreateStateMachineOutput{StateMachineArn: aws.String(arn)}
	if in.Publish {
		// Publishing the first version with the create takes
		// states:PublishStateMachineVersion too.
		r.record("states:PublishStateMachineVersion", arn)
		out.StateMachineVersionArn = aws.String(arn + ":1")
	}
	return out, nil
}

func (r *sfnRecorder) UpdateStateMachine(_ context.Context, in *sfn.UpdateStateMachineInput, _ ...func(*sfn.Options)) (*sfn.UpdateStateMachineOutput, error) {
	r.record("states:UpdateStateMachine", aws.ToString(in.StateMachineArn))
	r.passRole(in.RoleArn)
	return &sfn.UpdateStateMachineOutput{RevisionId: aws.String("rev-2")}, nil
}

func (r *sfnRecorder) PublishStateMachineVersion(_ context.Context, in *sfn.PublishStateMachineVersionInput, _ ...func(*sfn.Options)) (*sfn.PublishStateMachineVersionOutput, error) {
	r.record("states:PublishStateMachineVersion", aws.ToString(in.StateMachineArn))
	return &sfn.PublishStateMachineVersionOutput{StateMachineVersionArn: aws.String(aws.ToString(in.StateMachineArn) + ":1")}, nil
}

func (r *sfnRecorder) ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	r.record("states:ListStateMachines", "*")
	out := &sfn.ListStateMachinesOutput{}
	for _, n := range r.existing {
		out.StateMachines = append(out.StateMachines, sfntypes.StateMachineListItem{Name: aws.String(n), StateMachineArn: aws.String(stateMachineOf + n)})
	}
	return out, nil
}

// DescribeStateMachine answers the definition of newsletter.yaml
// (weekly-digest), whose input record toolgate run checks.
func (r *sfnRecorder) DescribeStateMachine(_ context.Context, in *sfn.DescribeStateMachineInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	r.record("states:DescribeStateMachine", aws.ToString(in.StateMachineArn))
	src, err := os.ReadFile(testSolution)
	if err != nil {
		return nil, err
	}
	res := resolver.Compile(filepath.Base(testSolution), src, resolver.Options{})
	return &sfn.DescribeStateMachineOutput{StateMachineArn: in.StateMachineArn, Definition: aws.String(string(res.Definition))}, nil
}

func (r *sfnRecorder) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	r.record("states:StartExecution", aws.ToString(in.StateMachineArn))
	exec := strings.Replace(aws.ToString(in.StateMachineArn), ":stateMachine:", ":execution:", 1) + ":" + aws.ToString(in.Name)
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(exec)}, nil
}

func (r *sfnRecorder) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	r.record("states:DescribeExecution", aws.ToString(in.ExecutionArn))
	return &sfn.DescribeExecutionOutput{Status: sfntypes.ExecutionStatusSucceeded}, nil
}

func (r *sfnRecorder) GetExecutionHistory(_ context.Context, in *sfn.GetExecutionHistoryInput, _ ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error) {
	r.record("states:GetExecutionHistory", aws.ToString(in.ExecutionArn))
	return &sfn.GetExecutionHistoryOutput{}, nil
}

// ssmRecorder is an SSM client that records each GetParameter and answers
// the values of the test stack's parameters.
type ssmRecorder struct {
	what string
	reqs []apiRequest
}

func (r *ssmRecorder) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	name := aws.ToString(in.Name)
	r.reqs = append(r.reqs, apiRequest{What: r.what, Action: "ssm:GetParameter",
		Resource: "arn:aws:ssm:" + testRegion + ":" + testAccount + ":parameter" + name})
	value := ""
	switch {
	case name == deployment.ExecutionRoleParam("test"):
		value = executionRoleARN
	case strings.HasPrefix(name, "/toolgate/test/function/"):
		fn := strings.TrimSuffix(strings.TrimPrefix(name, "/toolgate/test/function/"), "/arn")
		value = "arn:aws:lambda:" + testRegion + ":" + testAccount + ":function:toolgate-test-" + fn + ":sfn"
	case strings.HasSuffix(name, "/url"):
		value = "https://example.lambda-url." + testRegion + ".on.aws/"
	case name == deployment.StartFunctionParam("test"):
		value = reviewRequestFnARN + ":start"
	default:
		return nil, &ssmtypes.ParameterNotFound{}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(value)}}, nil
}

// anyCaller is the publish function's verifier in these tests: every
// proof is a publisher's.
type anyCaller struct{}

func (anyCaller) Verify(context.Context, string, caller.Binding) (caller.Identity, error) {
	p := "arn:aws:iam::" + testAccount + ":role/toolgate-publisher"
	return caller.Identity{ARN: p, Principal: p}, nil
}

// testSolution is the Solution the publish function is run on.
const testSolution = "../../testdata/solutions/newsletter.yaml"

// testCatalogToolset is a toolset that passes the registration check.
func testCatalogToolset(t *testing.T) *toolset.Toolset {
	ts, err := toolset.FromCatalog(catalog.Default(), []string{fnValidator}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// publishRequests runs the publish function's service (functions/publish/publish
// Service) as functions/publish wires it: a publish that creates the state
// machine, one that updates it, a registration, a read of the registered
// toolset; its DynamoDB requests go to db, the others are returned.
func publishRequests(t *testing.T, db *recorder) []apiRequest {
	ctx := context.Background()
	src, err := os.ReadFile(testSolution)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Base(testSolution)
	res := resolver.Compile(file, src, resolver.Options{})
	if !res.OK() {
		t.Fatalf("%s does not compile: %v", testSolution, res.Diagnostics)
	}
	body, err := res.Toolset.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	// Publish reads back the toolset it registered (ledger.Store.Toolset).
	saved := db.item
	db.item = map[string]types.AttributeValue{"body": &types.AttributeValueMemberS{Value: string(body)}}
	defer func() { db.item = saved }()
	sf, params := &sfnRecorder{}, &ssmRecorder{}
	// Allow-lists under which testSolution's literal URL may be published.
	lists := map[string]string{publish.EnvFetchAllow: "api.example.com", publish.EnvRecipientAllow: "@example.com"}
	dep, err := publish.DeploymentFromEnv(func(k string) string { return lists[k] })
	if err != nil {
		t.Fatal(err)
	}
	dep.Accounts = []string{"123456789012"} // the account testSolution's reviewers name
	svc := &publish.Service{Callers: anyCaller{}, Params: ssmparams.Params{Client: params}, Stage: "test", Region: testRegion,
		Store: ledgertable.New(db, "toolgate-test"), SFN: sf, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Deployment: dep}
	for _, c := range []struct {
		what     string
		existing []string
	}{
		{"publish.Service.Publish (create)", nil},
		{"publish.Service.Publish (update)", []string{deployment.StateMachineName("test", res.Solution.Name)}},
	} {
		db.what, sf.what, params.what, sf.existing = c.what, c.what, c.what, c.existing
		out, err := svc.Publish(ctx, publish.Request{File: file, Source: src, Proof: "proof"})
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if out.Created != (c.existing == nil) {
			t.Fatalf("%s: created %v", c.what, out.Created)
		}
	}
	doc, err := res.Toolset.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	db.what = "publish.Service.Register"
	if _, err := svc.Register(ctx, publish.RegisterRequest{Toolset: doc, Proof: "proof"}); err != nil {
		t.Fatalf("register: %v", err)
	}
	db.what = "publish.Service.ShowToolset"
	if _, err := svc.ShowToolset(ctx, publish.ShowRequest{ID: res.Toolset.ID, Proof: "proof"}); err != nil {
		t.Fatalf("show: %v", err)
	}
	return slices.Concat(sf.reqs, params.reqs)
}

// runRequests runs what a Publisher's toolgate run does (runner.Start,
// runner.Follow, and the review decision URL its --wait reads), and adds
// how a Publisher reaches the publish function (toolgate publish --url,
// toolgate toolset register --url, after reading its URL parameter).
func runRequests(t *testing.T) []apiRequest {
	ctx := context.Background()
	sf := &sfnRecorder{what: "toolgate run", existing: []string{deployment.StateMachineName("test", "weekly-digest")}}
	params := &ssmRecorder{what: "toolgate run --wait"}
	// The start record: the start alias's parameter, then the alias.
	var recorded []apiRequest
	arn, err := runner.Start(ctx, sf, "test", "weekly-digest", []byte(`{"recipient": "a@example.org"}`), "run-1", runner.Meta{},
		func(ctx context.Context, _, _ string) error {
			params.what = "toolgate run (its start record)"
			if _, err := (ssmparams.Params{Client: params}).Get(ctx, deployment.StartFunctionParam("test")); err != nil {
				return err
			}
			recorded = append(recorded, apiRequest{What: "toolgate run (its start record)", Action: "lambda:InvokeFunction", Resource: reviewRequestFnARN + ":start"})
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 1 {
		t.Fatalf("toolgate run of %s recorded no start: the fixture must have gated tools", testSolution)
	}
	params.what = "toolgate run --wait"
	if _, err := runner.Follow(ctx, sf, arn, 0, func(runner.Event) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := (ssmparams.Params{Client: params}).Get(ctx, deployment.ReviewDecisionURLParam("test")); err != nil {
		t.Fatal(err)
	}
	params.what = "the publish function's URL"
	if _, err := (ssmparams.Params{Client: params}).Get(ctx, publishURLParam("test")); err != nil {
		t.Fatal(err)
	}
	// A Function URL request with AuthType AWS_IAM is authorised as both.
	viaURL := []apiRequest{
		{What: "toolgate publish --url", Action: "lambda:InvokeFunctionUrl", Resource: publishFnARN,
			Context: map[string]string{"lambda:FunctionUrlAuthType": "AWS_IAM"}},
		{What: "toolgate publish --url", Action: "lambda:InvokeFunction", Resource: publishFnARN,
			Context: map[string]string{"lambda:InvokedViaFunctionUrl": "true"}},
	}
	return slices.Concat(sf.reqs, params.reqs, recorded, viaURL)
}

// forgedAPI are requests that the publish role and the Publisher must each
// refuse: the other's work, another stage's state machines (test-2's names
// start toolgate-test), what neither code path asks for.
var forgedAPI = map[string][]apiRequest{
	fnPublish: {
		{What: "start an execution", Action: "states:StartExecution", Resource: stateMachineOf + "toolgate-test_weekly-digest"},
		{What: "read a history", Action: "states:GetExecutionHistory", Resource: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_weekly-digest:run-1"},
		{What: "update another stage's state machine", Action: "states:UpdateStateMachine", Resource: stateMachineOf + "toolgate-test-2_weekly-digest"},
		{What: "create a state machine outside the stage", Action: "states:CreateStateMachine", Resource: stateMachineOf + "weekly-digest"},
		{What: "delete a state machine", Action: "states:DeleteStateMachine", Resource: stateMachineOf + "toolgate-test_weekly-digest"},
		{What: "pass the execution role to Lambda", Action: "iam:PassRole", Resource: executionRoleARN,
			Context: map[string]string{"iam:PassedToService": "lambda.amazonaws.com"}},
		{What: "pass another role", Action: "iam:PassRole", Resource: "arn:aws:iam::123456789012:role/admin",
			Context: map[string]string{"iam:PassedToService": "states.amazonaws.com"}},
		{What: "read the table parameter", Action: "ssm:GetParameter", Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/table/name"},
		{What: "read another stage's parameter", Action: "ssm:GetParameter", Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test-2/role/solution-execution/arn"},
		{What: "change a parameter", Action: "ssm:PutParameter", Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/function/send-email/arn"},
		{What: "read the floor of another stage's tool function", Action: "lambda:ListTags", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test-2"}},
		{What: "read the tags of an untagged function", Action: "lambda:ListTags", Resource: teamFnARN},
		{What: "relax a tool function's floor", Action: "lambda:TagResource", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
		{What: "remove a tool function's floor", Action: "lambda:UntagResource", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
		{What: "invoke a tool function", Action: "lambda:InvokeFunction", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
	},
	"publisher": {
		{What: "create a state machine", Action: "states:CreateStateMachine", Resource: stateMachineOf + "toolgate-test_weekly-digest"},
		{What: "update a state machine", Action: "states:UpdateStateMachine", Resource: stateMachineOf + "toolgate-test_weekly-digest"},
		{What: "publish a version", Action: "states:PublishStateMachineVersion", Resource: stateMachineOf + "toolgate-test_weekly-digest"},
		{What: "pass the execution role", Action: "iam:PassRole", Resource: executionRoleARN,
			Context: map[string]string{"iam:PassedToService": "states.amazonaws.com"}},
		{What: "start another stage's execution", Action: "states:StartExecution", Resource: stateMachineOf + "toolgate-test-2_weekly-digest"},
		{What: "read another stage's definition", Action: "states:DescribeStateMachine", Resource: stateMachineOf + "toolgate-test-2_weekly-digest"},
		{What: "read another stage's history", Action: "states:GetExecutionHistory", Resource: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test-2_weekly-digest:run-1"},
		{What: "invoke the publish function directly", Action: "lambda:InvokeFunction", Resource: publishFnARN,
			Context: map[string]string{"lambda:InvokedViaFunctionUrl": "false"}},
		{What: "invoke the publish function's URL without IAM", Action: "lambda:InvokeFunctionUrl", Resource: publishFnARN,
			Context: map[string]string{"lambda:FunctionUrlAuthType": "NONE"}},
		{What: "read a function parameter", Action: "ssm:GetParameter", Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/function/send-email/arn"},
		// The start alias only: not a direct-lane review request, not a
		// Solution's Task, not a tool.
		{What: "ask for a direct-lane review", Action: "lambda:InvokeFunction", Resource: reviewRequestFnARN + ":direct"},
		{What: "pass for a Solution's Task", Action: "lambda:InvokeFunction", Resource: reviewRequestFnARN + ":sfn"},
		{What: "invoke review-request unqualified", Action: "lambda:InvokeFunction", Resource: reviewRequestFnARN},
		{What: "invoke another stage's start alias", Action: "lambda:InvokeFunction", Resource: "arn:aws:lambda:eu-west-1:123456789012:function:toolgate-test-2-review-request:start"},
		{What: "invoke a tool's direct alias", Action: "lambda:InvokeFunction", Resource: "arn:aws:lambda:eu-west-1:123456789012:function:toolgate-test-send-email:direct"},
		{What: "read the parameters in bulk", Action: "ssm:GetParameters", Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/publish/url"},
		{What: "relax a tool function's floor", Action: "lambda:TagResource", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
		{What: "remove a tool function's floor", Action: "lambda:UntagResource", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
		{What: "read a tool function's floor", Action: "lambda:ListTags", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}},
	},
}

// TestPublishRequestsAllowed: the Step Functions, IAM and SSM requests of
// the publish function's code are allowed by its role, and those of a
// Publisher's toolgate run and toolgate publish by the Publisher policy;
// every such statement of each allows one of them (logs and X-Ray
// statements aside: Lambda and CloudWatch Logs make those requests); and
// the forged requests of forgedAPI are refused.
func TestPublishRequestsAllowed(t *testing.T) {
	all := principalStatements(platformJSON)
	// testSolution names no platform tool; publishing one reads its
	// placeholder's parameter (publish.Substitute).
	platformTool := apiRequest{What: "publish.Substitute of a platform tool's placeholder", Action: "ssm:GetParameter",
		Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/tool-function/FunctionCreateTicket/arn"}
	// Registering a toolset that pins it reads its function's floor
	// (platformtool.FloorFromTags of Lambda's ListTags answer).
	floor := apiRequest{What: "registration reads a pinned platform tool function's floor", Action: "lambda:ListTags",
		Resource: teamFnARN, Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}}
	// Its cold start reads the stage's end-user key (secrets.LoadKeys),
	// under which an end user's credentials are scoped.
	endUserKey := apiRequest{What: "the cold start reads the end-user key", Action: "ssm:GetParameters",
		Resource: "arn:aws:ssm:eu-west-1:123456789012:parameter/toolgate/test/secret/end-user-key"}
	for who, reqs := range map[string][]apiRequest{fnPublish: append(publishRequests(t, &recorder{}), platformTool, floor, endUserKey), "publisher": runRequests(t)} {
		t.Run(who, func(t *testing.T) {
			used := map[string]bool{}
			for _, r := range reqs {
				by := apiAllowedBy(all[who], r)
				if len(by) == 0 {
					t.Errorf("denied: %s", r)
				}
				for _, s := range by {
					used[text(s["Sid"])] = true
				}
			}
			for _, s := range all[who] {
				own := slices.ContainsFunc(strs(s["Action"]), func(a string) bool {
					return !strings.HasPrefix(a, "dynamodb:") && !strings.HasPrefix(a, "logs:") && !strings.HasPrefix(a, "xray:")
				})
				if own && !used[text(s["Sid"])] {
					t.Errorf("statement %s allows no request the code makes: %s", text(s["Sid"]), text(s))
				}
			}
			for _, r := range forgedAPI[who] {
				if by := apiAllowedBy(all[who], r); len(by) > 0 {
					t.Errorf("%s may %s (statement %s)", who, r, text(by[0]["Sid"]))
				}
			}
		})
	}
}

// A Publisher starts runs of the latest revision only (toolgate run
// starts the unqualified state machine ARN), never a published version:
// a version keeps its definition for ever, and one published before the
// tool Tasks sent run_started_at would let an execution under a reused
// name replay an earlier execution's results (docs/ledger.md, "Execution
// names must not be reused"). Step Functions authorises a version ARN
// against its state machine's ARN, naming the version in
// states:StateMachineQualifier.
func TestPublisherStartsTheLatestRevisionOnly(t *testing.T) {
	stmts := principalStatements(platformJSON)["publisher"]
	latest := apiRequest{What: "start the latest revision", Action: "states:StartExecution", Resource: stateMachineOf + "toolgate-test_weekly-digest"}
	if len(apiAllowedBy(stmts, latest)) == 0 {
		t.Errorf("denied: %s", latest)
	}
	for _, q := range []string{"1", "3", "PROD"} {
		r := apiRequest{What: "start a published version or an alias", Action: "states:StartExecution", Resource: stateMachineOf + "toolgate-test_weekly-digest",
			Context: map[string]string{"states:StateMachineQualifier": q}}
		if by := apiAllowedBy(stmts, r); len(by) > 0 {
			t.Errorf("the publisher may %s (statement %s)", r, text(by[0]["Sid"]))
		}
	}
}
