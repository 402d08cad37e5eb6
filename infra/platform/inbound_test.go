package platform

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/table"
)

// The inbound functions' whole policies and environments (inbound.go),
// checked with every other function's by TestTemplates.
func init() {
	wantFunctionPolicies["SourcesFunction"] = append([]stmt{
		ownLogs("SourcesFunction"),
		// dlq list and redrive: the dead-letter queue, and SendMessage to
		// the inbound queue only.
		{Sid: "RedriveInboundEvents", Actions: sorted("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"),
			Resources: []string{"${InboundDLQ.Arn}"}},
		{Sid: "ResendInboundEvents", Actions: []string{"sqs:SendMessage"}, Resources: []string{"${InboundQueue.Arn}"}},
		// Schedules of the stage's own group only; a listing has no
		// resource type.
		{Sid: "ManageSchedules", Actions: sorted("scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"),
			Resources: []string{arn("scheduler", "schedule/toolgate-test/*")}},
		{Sid: "ListSchedules", Actions: []string{"scheduler:ListSchedules"}, Resources: []string{"*"}},
		// The scheduler role, to EventBridge Scheduler only.
		{Sid: "PassTheSchedulerRole", Actions: []string{"iam:PassRole"}, Resources: []string{"${InboundSchedulerRole.Arn}"},
			Condition: `{"StringEquals":{"iam:PassedToService":"scheduler.amazonaws.com"}}`},
		lambdaXRay,
	}, wantLedger(table.Sources)...)
	// The queue, and nothing of Step Functions, STS or Lambda: a verified
	// delivery is recorded and queued, never started here.
	wantFunctionPolicies["WebhookReceiverFunction"] = append([]stmt{
		ownLogs("WebhookReceiverFunction"),
		{Sid: "SendInboundEvents", Actions: []string{"sqs:SendMessage"}, Resources: []string{"${InboundQueue.Arn}"}},
		lambdaXRay,
	}, wantLedger(table.WebhookReceiver)...)
	wantFunctionPolicies["InboundStartFunction"] = append([]stmt{
		ownLogs("InboundStartFunction"),
		{Sid: "ConsumeInboundQueue", Actions: sorted("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"), Resources: []string{"${InboundQueue.Arn}"}},
		{Sid: "AssumeTheInboundStartRole", Actions: []string{"sts:AssumeRole"}, Resources: []string{"${InboundStartRole.Arn}"}},
		// The latest revision of the stage's state machines, never a
		// version.
		{Sid: "StartInboundRuns", Actions: sorted("states:DescribeStateMachine", "states:StartExecution"),
			Resources: []string{arn("states", "stateMachine:toolgate-test_*")}, Condition: `{"Null":{"states:StateMachineQualifier":"true"}}`},
		{Sid: "DescribeInboundRuns", Actions: []string{"states:DescribeExecution"}, Resources: []string{arn("states", "execution:toolgate-test_*:*")}},
		// The start record, through review-request's start alias only.
		{Sid: "RecordInboundStarts", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${ReviewRequestFunctionStartAlias}"}},
		{Sid: "ReadExternalKey", Actions: []string{"ssm:GetParameters"}, Resources: []string{arn("ssm", "parameter/toolgate/test/secret/external-key")}},
		lambdaXRay,
	}, wantLedger(table.InboundStart)...)

	base := func(timeout string) map[string]string {
		return map[string]string{"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": timeout, "TOOLGATE_SESSION_ROLES": sessionRoles,
			"TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector}
	}
	sources := base("30")
	maps.Copy(sources, map[string]string{
		"TOOLGATE_STAGE": "test", "TOOLGATE_CREDENTIAL_KEY": "${CredentialKey.Arn}",
		"TOOLGATE_INBOUND_OPERATORS": `["arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_InboundOperator_*/*"]`,
		"TOOLGATE_INBOUND_QUEUE":     "${InboundQueue}", "TOOLGATE_INBOUND_DLQ": "${InboundDLQ}",
		"TOOLGATE_INBOUND_QUEUE_ARN": "${InboundQueue.Arn}", "TOOLGATE_INBOUND_DLQ_ARN": "${InboundDLQ.Arn}",
		"TOOLGATE_SCHEDULER_GROUP": "toolgate-test", "TOOLGATE_SCHEDULER_ROLE": "${InboundSchedulerRole.Arn}",
	})
	receiver := base("30")
	maps.Copy(receiver, map[string]string{"TOOLGATE_INBOUND_QUEUE": "${InboundQueue}", "TOOLGATE_INBOUND_RETENTION_DAYS": "30"})
	starter := base("60")
	maps.Copy(starter, map[string]string{
		"TOOLGATE_STAGE": "test", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_INBOUND_RETENTION_DAYS": "30",
		"TOOLGATE_RUN_START_FUNCTION": "${ReviewRequestFunctionStartAlias}", "TOOLGATE_INBOUND_ROLE": "${InboundStartRole.Arn}",
	})
	wantEnv["SourcesFunction"], wantEnv["WebhookReceiverFunction"], wantEnv["InboundStartFunction"] = sources, receiver, starter
}

// roleByID returns the role whose logical ID without its hash is id.
func roleByID(pj tmpl, id string) tmpl {
	for rid, r := range resources(pj, "AWS::IAM::Role") {
		if symbol(rid) == id {
			return r
		}
	}
	return nil
}

// checkReceiverPermissions: webhook-receiver's resource policy is exactly
// a URL of auth type NONE's two statements (Lambda Developer Guide,
// "Control access to Lambda function URLs": InvokeFunctionUrl to everyone
// with lambda:FunctionUrlAuthType NONE, InvokeFunction to everyone only
// with lambda:InvokedViaFunctionUrl true) and the inbound relay's
// schedule, and its URL's auth type is NONE.
func checkReceiverPermissions(pj tmpl) error {
	var errs []error
	var got []string
	for _, r := range resources(pj, "AWS::Lambda::Permission") {
		p := props(r)
		if text(p["FunctionName"]) != "${WebhookReceiverFunction.Arn}" {
			continue
		}
		cond := ""
		for _, k := range []string{"FunctionUrlAuthType", "InvokedViaFunctionUrl", "SourceArn", "SourceAccount", "PrincipalOrgID"} {
			if v, ok := p[k]; ok {
				cond += " " + k + "=" + text(v)
			}
		}
		got = append(got, text(p["Action"])+" "+text(p["Principal"])+cond)
	}
	slices.Sort(got)
	want := []string{
		"lambda:InvokeFunction * InvokedViaFunctionUrl=true",
		"lambda:InvokeFunction events.amazonaws.com SourceArn=${InboundRelaySchedule.Arn}",
		"lambda:InvokeFunctionUrl * FunctionUrlAuthType=NONE",
	}
	if d := cmp.Diff(want, got); d != "" {
		errs = append(errs, fmt.Errorf("permissions (-want +got):\n%s", d))
	}
	var urls []string
	for _, u := range resources(pj, "AWS::Lambda::Url") {
		if text(props(u)["AuthType"]) == "NONE" {
			urls = append(urls, text(props(u)["TargetFunctionArn"]))
		}
	}
	if !slices.Equal(urls, []string{"${WebhookReceiverFunction.Arn}"}) {
		errs = append(errs, fmt.Errorf("URLs of auth type NONE: %v, want webhook-receiver's alone", urls))
	}
	return errors.Join(errs...)
}

// webhook-receiver's URL is public in exactly the two ways a URL of auth
// type NONE needs, and each widening is refused: a direct invocation by
// anyone, another function's public URL.
func TestInboundReceiverURL(t *testing.T) {
	if err := checkReceiverPermissions(platformJSON); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"anyone invokes it directly", func(pj tmpl) {
			for _, r := range resources(pj, "AWS::Lambda::Permission") {
				delete(props(r), "InvokedViaFunctionUrl")
			}
		}, "permissions"},
		{"the sources URL is public", func(pj tmpl) {
			for _, u := range resources(pj, "AWS::Lambda::Url") {
				props(u)["AuthType"] = "NONE"
			}
		}, "URLs of auth type NONE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			if err := checkReceiverPermissions(pj); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// checkInboundQueues: the inbound queue and its dead-letter queue are
// encrypted (SSE-SQS), retained and TLS only, with a visibility timeout
// six times inbound-start's; the queue keeps 4 days and moves a message
// after 5 receives, the dead-letter queue keeps 14 days; each queue's
// policy denies SendMessage to every principal but its producers
// (aws:PrincipalArn): the receiver's, the sources function's and the
// scheduler's roles on the queue, the scheduler's alone on the
// dead-letter queue; inbound-start consumes the queue in batches of 10,
// reporting failed items, at most 5 batches at once.
func checkInboundQueues(pj tmpl) error {
	var errs []error
	qid, q := queueByName(pj, "toolgate-test-inbound")
	did, d := queueByName(pj, "toolgate-test-inbound-dlq")
	if q == nil || d == nil {
		return fmt.Errorf("queues: %s %s, want toolgate-test-inbound and toolgate-test-inbound-dlq", qid, did)
	}
	for _, c := range []struct {
		id        string
		q         tmpl
		retention float64
		redrive   string
		senders   []string
	}{
		{qid, q, 4 * 86400, `{"deadLetterTargetArn":"${InboundDLQ.Arn}","maxReceiveCount":5}`,
			[]string{"${InboundSchedulerRole.Arn}", "${SourcesFunctionRole.Arn}", "${WebhookReceiverFunctionRole.Arn}"}},
		{did, d, 14 * 86400, "", []string{"${InboundSchedulerRole.Arn}"}},
	} {
		p := props(c.q)
		if p["SqsManagedSseEnabled"] != true || c.q["DeletionPolicy"] != "Retain" {
			errs = append(errs, fmt.Errorf("%s: SqsManagedSseEnabled %v, DeletionPolicy %v: want encrypted and retained", c.id, p["SqsManagedSseEnabled"], c.q["DeletionPolicy"]))
		}
		if p["MessageRetentionPeriod"] != c.retention || p["VisibilityTimeout"] != float64(6*60) {
			errs = append(errs, fmt.Errorf("%s: retention %v s, visibility %v s; want %v s and 6 × inbound-start's 60 s", c.id, p["MessageRetentionPeriod"], p["VisibilityTimeout"], c.retention))
		}
		redrive := ""
		if r, ok := p["RedrivePolicy"]; ok {
			redrive = text(r)
		}
		if redrive != c.redrive {
			errs = append(errs, fmt.Errorf("%s: redrive %s, want %s", c.id, redrive, c.redrive))
		}
		tls, deny := false, []string(nil)
		for _, pol := range resources(pj, "AWS::SQS::QueuePolicy") {
			if !slices.Contains(strs(props(pol)["Queues"]), "${"+c.id+"}") {
				continue
			}
			for _, st := range statements(props(pol)["PolicyDocument"]) {
				switch {
				case st["Effect"] == "Deny" && text(st["Condition"]) == `{"Bool":{"aws:SecureTransport":"false"}}` && text(st["Action"]) == "sqs:*":
					tls = true
				case st["Effect"] == "Deny" && text(st["Action"]) == "sqs:SendMessage" && text(st["Principal"]) == `{"AWS":"*"}`:
					cond, _ := st["Condition"].(tmpl)
					ne, _ := cond["StringNotEquals"].(tmpl)
					if len(cond) == 1 && len(ne) == 1 {
						deny = strs(ne["aws:PrincipalArn"])
					}
				case st["Effect"] == "Allow":
					errs = append(errs, fmt.Errorf("%s: its policy allows %s", c.id, text(st)))
				}
			}
		}
		if !tls {
			errs = append(errs, fmt.Errorf("%s: no policy denies requests without TLS", c.id))
		}
		if !slices.Equal(deny, c.senders) {
			errs = append(errs, fmt.Errorf("%s: SendMessage is denied to all but %v, want all but %v", c.id, deny, c.senders))
		}
	}
	var mappings []string
	for _, m := range resources(pj, "AWS::Lambda::EventSourceMapping") {
		p := props(m)
		if text(p["EventSourceArn"]) == "${"+qid+".Arn}" || text(p["EventSourceArn"]) == "${"+did+".Arn}" {
			mappings = append(mappings, fmt.Sprintf("%s <- %s batch %v %s %s", text(p["FunctionName"]), text(p["EventSourceArn"]), p["BatchSize"],
				text(p["FunctionResponseTypes"]), text(p["ScalingConfig"])))
		}
	}
	want := []string{`${InboundStartFunction} <- ${InboundQueue.Arn} batch 10 ["ReportBatchItemFailures"] {"MaximumConcurrency":5}`}
	if d := cmp.Diff(want, mappings); d != "" {
		errs = append(errs, fmt.Errorf("event source mappings (-want +got):\n%s", d))
	}
	return errors.Join(errs...)
}

// The inbound queues hold as checkInboundQueues says, and each widening
// is refused: another sender, a dead-letter queue anyone may fill, no
// redrive.
func TestInboundQueues(t *testing.T) {
	if err := checkInboundQueues(platformJSON); err != nil {
		t.Fatal(err)
	}
	sendDeny := func(pj tmpl, queue string) tmpl {
		id, _ := queueByName(pj, queue)
		for _, pol := range resources(pj, "AWS::SQS::QueuePolicy") {
			if slices.Contains(strs(props(pol)["Queues"]), "${"+id+"}") {
				for _, st := range statements(props(pol)["PolicyDocument"]) {
					if text(st["Action"]) == "sqs:SendMessage" {
						return st
					}
				}
			}
		}
		t.Fatalf("no SendMessage statement on %s", queue)
		return nil
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"inbound-start sends", func(pj tmpl) {
			ne := sendDeny(pj, "toolgate-test-inbound")["Condition"].(tmpl)["StringNotEquals"].(tmpl)
			ne["aws:PrincipalArn"] = append(ne["aws:PrincipalArn"].([]any), tmpl{"Fn::GetAtt": []any{"InboundStartFunctionRole", "Arn"}})
		}, "SendMessage is denied to all but"},
		{"anyone fills the dead-letter queue", func(pj tmpl) {
			delete(sendDeny(pj, "toolgate-test-inbound-dlq"), "Condition")
		}, "InboundDLQ: SendMessage is denied to all but []"},
		{"no dead-letter queue", func(pj tmpl) {
			_, q := queueByName(pj, "toolgate-test-inbound")
			delete(props(q), "RedrivePolicy")
		}, "redrive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			if err := checkInboundQueues(pj); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// checkInboundStartRole: toolgate-test-inbound-start trusts inbound-start's
// role alone, for sessions named src-* or sched-* only, has no policy of
// any kind, and no identity policy of the template but inbound-start's
// may assume it.
func checkInboundStartRole(pj tmpl) error {
	var errs []error
	r := roleByID(pj, "InboundStartRole")
	if r == nil {
		return errors.New("no InboundStartRole")
	}
	if n := text(props(r)["RoleName"]); n != "toolgate-test-inbound-start" {
		errs = append(errs, fmt.Errorf("role name %s, want toolgate-test-inbound-start", n))
	}
	errs = append(errs, checkTrust(pj, "InboundStartRole",
		`{"Action":"sts:AssumeRole","Condition":{"StringLike":{"sts:RoleSessionName":["src-*","sched-*"]}},"Effect":"Allow","Principal":{"AWS":"${InboundStartFunctionRole.Arn}"}}`))
	for _, k := range []string{"Policies", "ManagedPolicyArns", "PermissionsBoundary"} {
		if v, ok := props(r)[k]; ok {
			errs = append(errs, fmt.Errorf("the inbound-start role has %s %s: it must have no permissions", k, text(v)))
		}
	}
	if ps := policyOf(pj, "InboundStartRole"); len(ps) > 0 {
		errs = append(errs, fmt.Errorf("the inbound-start role has statements %v: it must have no permissions", ps))
	}
	for who, list := range principalStatements(pj) {
		for _, s := range list {
			if s["Effect"] != "Allow" || !allowsAction(s, "sts:AssumeRole") {
				continue
			}
			if who != fnInboundStart || !slices.Equal(strs(s["Resource"]), []string{"${InboundStartRole.Arn}"}) {
				errs = append(errs, fmt.Errorf("%s may sts:AssumeRole %v: only inbound-start may assume the inbound-start role, and nothing else", who, strs(s["Resource"])))
			}
		}
	}
	return errors.Join(errs...)
}

// The inbound-start role is the verified starter of inbound runs, so it
// holds nothing and only inbound-start's sessions named for an origin
// become it; each widening is refused.
func TestInboundStartRole(t *testing.T) {
	if err := checkInboundStartRole(platformJSON); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"any session name", func(pj tmpl) {
			delete(statements(props(roleByID(pj, "InboundStartRole"))["AssumeRolePolicyDocument"])[0], "Condition")
		}, "trust policy"},
		{"a permission of its own", func(pj tmpl) {
			props(roleByID(pj, "InboundStartRole"))["ManagedPolicyArns"] = []any{"arn:aws:iam::aws:policy/ReadOnlyAccess"}
		}, "must have no permissions"},
		{"the receiver assumes it", func(pj tmpl) {
			addStatement(pj, "WebhookReceiverFunction", tmpl{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": tmpl{"Fn::GetAtt": []any{"InboundStartRole", "Arn"}}})
		}, "webhook-receiver may sts:AssumeRole"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			if err := checkInboundStartRole(pj); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// checkScheduler: the schedule group is toolgate-test; the scheduler role
// trusts EventBridge Scheduler for that group of this account only, and
// may only send to the inbound queue and its dead-letter queue; only the
// sources function may pass it, to scheduler.amazonaws.com only, and no
// other principal may use EventBridge Scheduler at all.
func checkScheduler(pj tmpl) error {
	var errs []error
	groups := resources(pj, "AWS::Scheduler::ScheduleGroup")
	if len(groups) != 1 || text(props(groups[firstID(pj, "AWS::Scheduler::ScheduleGroup")])["Name"]) != "toolgate-test" {
		errs = append(errs, fmt.Errorf("schedule groups %s, want toolgate-test alone", text(groups)))
	}
	errs = append(errs, checkTrust(pj, "InboundSchedulerRole", `{"Action":"sts:AssumeRole","Condition":{"StringEquals":{"aws:SourceAccount":"${AWS::AccountId}",`+
		`"aws:SourceArn":"arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule-group/toolgate-test"}},"Effect":"Allow","Principal":{"Service":"scheduler.amazonaws.com"}}`))
	errs = append(errs, wrap("scheduler role", comparePolicy(policyOf(pj, "InboundSchedulerRole"), []stmt{
		{Sid: "SendScheduleFirings", Actions: []string{"sqs:SendMessage"}, Resources: []string{"${InboundDLQ.Arn}", "${InboundQueue.Arn}"}},
	})))
	for who, list := range principalStatements(pj) {
		for _, s := range list {
			if s["Effect"] != "Allow" {
				continue
			}
			if allowsAction(s, "iam:PassRole") && slices.ContainsFunc(strs(s["Resource"]), func(r string) bool {
				return r == "${InboundSchedulerRole.Arn}" || strings.Contains(r, "*")
			}) {
				c := text(s["Condition"])
				if who != fnSources || c != `{"StringEquals":{"iam:PassedToService":"scheduler.amazonaws.com"}}` {
					errs = append(errs, fmt.Errorf("%s may pass the scheduler role (condition %s): only the sources function, to EventBridge Scheduler only", who, c))
				}
			}
			for _, a := range strs(s["Action"]) {
				if strings.HasPrefix(a, "scheduler:") && who != fnSources {
					errs = append(errs, fmt.Errorf("%s is allowed %s: only the sources function manages schedules", who, a))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// The scheduler's group and role hold as checkScheduler says; each
// widening is refused.
func TestInboundScheduler(t *testing.T) {
	if err := checkScheduler(platformJSON); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"publish passes the scheduler role", func(pj tmpl) {
			addStatement(pj, "PublishFunction", tmpl{"Effect": "Allow", "Action": "iam:PassRole", "Resource": tmpl{"Fn::GetAtt": []any{"InboundSchedulerRole", "Arn"}}})
		}, "publish may pass the scheduler role"},
		{"sources passes it to any service", func(pj tmpl) {
			for _, s := range policyStatementsOf(pj, "SourcesFunction") {
				if s["Sid"] == "PassTheSchedulerRole" {
					delete(s, "Condition")
				}
			}
		}, "sources may pass the scheduler role"},
		{"another account's schedules", func(pj tmpl) {
			c := statements(props(roleByID(pj, "InboundSchedulerRole"))["AssumeRolePolicyDocument"])[0]["Condition"].(tmpl)
			delete(c["StringEquals"].(tmpl), "aws:SourceAccount")
		}, "trust policy of InboundSchedulerRole"},
		{"inbound-start creates schedules", func(pj tmpl) {
			addStatement(pj, "InboundStartFunction", tmpl{"Effect": "Allow", "Action": "scheduler:CreateSchedule", "Resource": "*"})
		}, "inbound-start is allowed scheduler:CreateSchedule"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			if err := checkScheduler(pj); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// The relay runs every minute on webhook-receiver without retries; the
// inbound alarms watch the dead-letter queue's depth (any message) and
// the inbound queue's oldest message (a quarter of an hour), notifying
// the alarm topic.
func TestInboundRelayAndAlarms(t *testing.T) {
	var relay tmpl
	for id, r := range resources(platformJSON, "AWS::Events::Rule") {
		if symbol(id) == "InboundRelaySchedule" {
			relay = r
		}
	}
	if relay == nil {
		t.Fatal("no InboundRelaySchedule rule")
	}
	targets := asList(props(relay)["Targets"])
	if props(relay)["ScheduleExpression"] != "rate(1 minute)" || len(targets) != 1 || text(targets[0].(tmpl)["Arn"]) != "${WebhookReceiverFunction.Arn}" ||
		text(targets[0].(tmpl)["RetryPolicy"]) != `{"MaximumEventAgeInSeconds":60,"MaximumRetryAttempts":0}` {
		t.Errorf("relay rule %s, want rate(1 minute) on webhook-receiver, no retry", text(props(relay)))
	}
	alarms := map[string]string{}
	for _, a := range resources(platformJSON, "AWS::CloudWatch::Alarm") {
		p := props(a)
		if n := text(p["AlarmName"]); strings.HasPrefix(n, "toolgate-test-inbound-") {
			alarms[n] = fmt.Sprintf("%s %s on %s >= %v -> %s", text(p["Statistic"]), text(p["MetricName"]), text(p["Dimensions"]), p["Threshold"], text(p["AlarmActions"]))
		}
	}
	dim := func(q string) string {
		return `[{"Name":"QueueName","Value":"${` + mustQueueID(platformJSON, "toolgate-test-"+q) + `.QueueName}"}]`
	}
	topic := `["` + testTopic + `"]`
	want := map[string]string{
		"toolgate-test-inbound-dlq": "Maximum ApproximateNumberOfMessagesVisible on " + dim("inbound-dlq") + " >= 1 -> " + topic,
		"toolgate-test-inbound-age": "Maximum ApproximateAgeOfOldestMessage on " + dim("inbound") + " >= 900 -> " + topic,
		// Each function's errors and throttles alarms (TestTemplates/alarms).
		"toolgate-test-inbound-start-errors":    "Sum Errors on [{\"Name\":\"FunctionName\",\"Value\":\"${InboundStartFunction}\"}] >= 3 -> " + topic,
		"toolgate-test-inbound-start-throttles": "Sum Throttles on [{\"Name\":\"FunctionName\",\"Value\":\"${InboundStartFunction}\"}] >= 1 -> " + topic,
	}
	if d := cmp.Diff(want, alarms); d != "" {
		t.Errorf("inbound alarms (-want +got):\n%s", d)
	}
}

// The inbound configuration is checked, each error naming its context
// key; LoadConfig reads the keys from text as -c gives them, and the
// receiver's reservation reaches its function settings (a stage's own
// reservedConcurrency entry winning, 0 reserving none).
func TestConfigChecksInbound(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"an operator of no account", func(c *Config) { c.InboundOperators = []string{"arn:aws:iam::*:role/ops"} }, "inboundOperators"},
		{"a negative reservation", func(c *Config) { n := -1; c.InboundReceiverConcurrency = &n }, "inboundReceiverConcurrency -1"},
		{"a reservation past the account's", func(c *Config) { n := 1000; c.InboundReceiverConcurrency = &n }, "inboundReceiverConcurrency 1000"},
		{"a retention of a day", func(c *Config) { c.InboundRetentionDays = 1 }, "inboundRetentionDays 1: want 3..400"},
		{"a retention over 400 days", func(c *Config) { c.InboundRetentionDays = 401 }, "inboundRetentionDays 401"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			c.mutate(&cfg)
			if err := cfg.check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error naming %q", err, c.want)
			}
		})
	}
	load := func(ctx map[string]any) Config {
		t.Helper()
		cfg, err := LoadConfig(func(key string) any { return ctx[key] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := load(map[string]any{
		contextPrefix + "inboundOperators":           "arn:aws:iam::123456789012:role/ops, arn:aws:iam::123456789012:role/oncall",
		contextPrefix + "inboundReceiverConcurrency": "25",
		contextPrefix + "inboundRetentionDays":       "30",
	})
	if !slices.Equal(cfg.InboundOperators, []string{"arn:aws:iam::123456789012:role/ops", "arn:aws:iam::123456789012:role/oncall"}) ||
		*cfg.InboundReceiverConcurrency != 25 || cfg.InboundRetentionDays != 30 {
		t.Errorf("LoadConfig: %q %d %d", cfg.InboundOperators, *cfg.InboundReceiverConcurrency, cfg.InboundRetentionDays)
	}
	if got := cfg.functionSettings()[fnWebhookReceiver].ReservedConcurrency; got != 25 {
		t.Errorf("receiver reserves %d, want 25", got)
	}
	byDefault := load(nil)
	if got := byDefault.functionSettings()[fnWebhookReceiver].ReservedConcurrency; got != DefaultInboundReceiverConcurrency {
		t.Errorf("receiver reserves %d by default, want %d", got, DefaultInboundReceiverConcurrency)
	}
	none := load(map[string]any{contextPrefix + "inboundReceiverConcurrency": "0"})
	if got := none.functionSettings()[fnWebhookReceiver].ReservedConcurrency; got != 0 {
		t.Errorf("receiver reserves %d with 0, want none", got)
	}
	staged := load(map[string]any{contextPrefix + "stage": "prod", contextPrefix + "reservedConcurrency": `{"prod": {"webhook-receiver": 40}}`})
	if got := staged.functionSettings()[fnWebhookReceiver].ReservedConcurrency; got != 40 {
		t.Errorf("receiver reserves %d with the stage's entry, want 40", got)
	}
}

// inboundAllowed are the only action prefixes each inbound function's
// role may hold: the receiver records and queues, and never starts a run
// nor takes a session; the sources function never starts, assumes or
// invokes; inbound-start never manages schedules, sends to a queue or
// passes a role.
var inboundAllowed = map[string][]string{
	fnWebhookReceiver: {"logs:", "xray:", "dynamodb:", "sqs:SendMessage"},
	fnSources:         {"logs:", "xray:", "dynamodb:", "sqs:", "scheduler:", "iam:PassRole"},
	fnInboundStart: {"logs:", "xray:", "dynamodb:", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sts:AssumeRole",
		"states:DescribeStateMachine", "states:StartExecution", "states:DescribeExecution", "lambda:InvokeFunction", "ssm:GetParameters"},
}

// checkInboundActions reports each action of an inbound function's role
// outside inboundAllowed.
func checkInboundActions(pj tmpl) error {
	var errs []error
	all := principalStatements(pj)
	for _, fn := range slices.Sorted(maps.Keys(inboundAllowed)) {
		for _, s := range all[fn] {
			for _, a := range strs(s["Action"]) {
				if !slices.ContainsFunc(inboundAllowed[fn], func(p string) bool { return strings.HasPrefix(a, p) }) {
					errs = append(errs, fmt.Errorf("%s's role allows %s (statement %v)", fn, a, s["Sid"]))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Each inbound function's role holds only its flow's actions: in
// particular webhook-receiver, behind a public URL, can start nothing.
func TestInboundLeastPrivilege(t *testing.T) {
	if err := checkInboundActions(platformJSON); err != nil {
		t.Fatal(err)
	}
	pj := clone(platformJSON)
	addStatement(pj, "WebhookReceiverFunction", tmpl{"Effect": "Allow", "Action": "states:StartExecution", "Resource": "*"})
	if err := checkInboundActions(pj); err == nil || !strings.Contains(err.Error(), "webhook-receiver's role allows states:StartExecution") {
		t.Fatalf("%v, want the receiver's StartExecution refused", err)
	}
}
