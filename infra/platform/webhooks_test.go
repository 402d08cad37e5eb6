package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/webhook"
)

// statusChangeEvent is a Step Functions execution status-change event as
// EventBridge delivers it (Step Functions Developer Guide, "Step Functions
// events": Execution Status Change), with a canary in each field that
// holds the execution's data: input, output, error and cause.
const statusChangeEvent = `{
  "version": "0", "id": "315c1398-40ff-a850-213b-158f73e60175",
  "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
  "account": "123456789012", "time": "2026-12-02T10:00:05Z", "region": "eu-west-1",
  "resources": ["arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_digest:run-1"],
  "detail": {
    "executionArn": "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_digest:run-1",
    "stateMachineArn": "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-test_digest",
    "name": "run-1", "status": "FAILED", "startDate": 1764669600000, "stopDate": 1764669605000,
    "input": "{\"secret\":\"CANARY-input\"}", "output": "CANARY-output",
    "inputDetails": {"included": true}, "outputDetails": {"included": true},
    "error": "CANARY-error", "cause": "CANARY-cause"
  }
}`

// statusChangeRule returns the template's status-change rule.
func statusChangeRule(pj tmpl) (tmpl, error) {
	for id, r := range resources(pj, "AWS::Events::Rule") {
		if symbol(id) == "WebhookStatusChangeRule" {
			return r, nil
		}
	}
	return nil, errors.New("no WebhookStatusChangeRule")
}

// transformerPlaceholder matches an input template's <name>.
var transformerPlaceholder = regexp.MustCompile(`<([A-Za-z0-9_.-]+)>`)

// transform applies an EventBridge input transformer to event the way
// EventBridge does for a JSON template: each <name> of the template is
// replaced by the JSON value at its path (InputPathsMap), a missing value
// by null. Only the simple paths the rule uses ($.a.b) are supported.
func transform(paths map[string]string, template string, event []byte) ([]byte, error) {
	var ev any
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, err
	}
	var ferr error
	out := transformerPlaceholder.ReplaceAllStringFunc(template, func(m string) string {
		name := m[1 : len(m)-1]
		path, ok := paths[name]
		if !ok {
			ferr = fmt.Errorf("placeholder %s has no path", m)
			return m
		}
		v := ev
		for _, k := range strings.Split(strings.TrimPrefix(path, "$."), ".") {
			obj, _ := v.(map[string]any)
			v = obj[k]
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	return []byte(out), ferr
}

// checkStatusChangeRule: the rule forwards this stage's executions'
// status changes, for the five run statuses, to the events queue, and its
// input transformer passes executionArn, stateMachineArn, name, status,
// startDate and stopDate only, each from the event's detail, under its
// snake_case name with source aws.states: applied to a real status-change
// event it yields exactly that message, and nothing of the execution's
// input, output, error or cause.
func checkStatusChangeRule(pj tmpl) error {
	rule, err := statusChangeRule(pj)
	if err != nil {
		return err
	}
	var errs []error
	wantPattern := `{"detail":{"stateMachineArn":[{"prefix":"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-test_"}],` +
		`"status":["RUNNING","SUCCEEDED","FAILED","TIMED_OUT","ABORTED"]},"detail-type":["Step Functions Execution Status Change"],"source":["aws.states"]}`
	if got := text(props(rule)["EventPattern"]); got != wantPattern {
		errs = append(errs, fmt.Errorf("event pattern\n got %s\nwant %s", got, wantPattern))
	}
	targets := asList(props(rule)["Targets"])
	if len(targets) != 1 {
		return errors.Join(append(errs, fmt.Errorf("%d targets, want the events queue alone", len(targets)))...)
	}
	target := targets[0].(tmpl)
	if got := text(target["Arn"]); got != "${WebhookEventsQueue.Arn}" {
		errs = append(errs, fmt.Errorf("target %s, want the events queue", got))
	}
	if _, ok := target["Input"]; ok {
		errs = append(errs, errors.New("the target sets Input: the transformer must be its only input"))
	}
	if _, ok := target["InputPath"]; ok {
		errs = append(errs, errors.New("the target sets InputPath: the transformer must be its only input"))
	}
	it, _ := target["InputTransformer"].(tmpl)
	paths := map[string]string{}
	pathsMap, _ := it["InputPathsMap"].(tmpl)
	for k, v := range pathsMap {
		paths[k] = text(v)
	}
	wantPaths := map[string]string{}
	for _, f := range []string{"executionArn", "stateMachineArn", "name", "status", "startDate", "stopDate"} {
		wantPaths[f] = "$.detail." + f
	}
	if d := cmp.Diff(wantPaths, paths); d != "" {
		errs = append(errs, fmt.Errorf("input paths (-want +got):\n%s", d))
	}
	for _, p := range slices.Sorted(maps.Values(paths)) {
		for _, bad := range []string{"input", "output", "error", "cause"} {
			if strings.Contains(strings.ToLower(p), bad) {
				errs = append(errs, fmt.Errorf("input path %s reaches the execution's %s", p, bad))
			}
		}
	}
	msg, err := transform(paths, text(it["InputTemplate"]), []byte(statusChangeEvent))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if strings.Contains(string(msg), "CANARY") {
		errs = append(errs, fmt.Errorf("the transformed message carries the execution's data: %s", msg))
	}
	var got map[string]any
	if err := json.Unmarshal(msg, &got); err != nil {
		return errors.Join(append(errs, fmt.Errorf("the transformed message is not JSON: %v: %s", err, msg))...)
	}
	want := map[string]any{
		"source":            "aws.states",
		"execution_arn":     "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_digest:run-1",
		"state_machine_arn": "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-test_digest",
		"name":              "run-1", "status": "FAILED",
		"start_date": float64(1764669600000), "stop_date": float64(1764669605000),
	}
	if d := cmp.Diff(want, got); d != "" {
		errs = append(errs, fmt.Errorf("transformed message (-want +got):\n%s", d))
	}
	return errors.Join(errs...)
}

// The status-change rule's transformer passes the six fields and never
// the execution's input, output, error or cause; each way of letting them
// through is caught.
func TestWebhookStatusChangeTransformer(t *testing.T) {
	if err := checkStatusChangeRule(platformJSON); err != nil {
		t.Fatal(err)
	}
	transformer := func(pj tmpl) tmpl {
		rule, err := statusChangeRule(pj)
		if err != nil {
			t.Fatal(err)
		}
		return asList(props(rule)["Targets"])[0].(tmpl)["InputTransformer"].(tmpl)
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"the input passed on", func(pj tmpl) {
			it := transformer(pj)
			it["InputPathsMap"].(tmpl)["input"] = "$.detail.input"
			it["InputTemplate"] = strings.Replace(it["InputTemplate"].(string), "}", `,"input":<input>}`, 1)
		}, "reaches the execution's input"},
		{"the whole detail passed on", func(pj tmpl) {
			it := transformer(pj)
			it["InputPathsMap"].(tmpl)["name"] = "$.detail"
		}, "CANARY"},
		{"no transformer", func(pj tmpl) {
			rule, _ := statusChangeRule(pj)
			delete(asList(props(rule)["Targets"])[0].(tmpl), "InputTransformer")
		}, "input paths"},
		{"every stage's executions", func(pj tmpl) {
			rule, _ := statusChangeRule(pj)
			props(rule)["EventPattern"].(tmpl)["detail"].(tmpl)["stateMachineArn"] = []any{tmpl{"prefix": "arn:aws:states:"}}
		}, "event pattern"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("%v", r)
					}
				}()
				return checkStatusChangeRule(pj)
			}()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// queueByName returns the template's queue named name.
func queueByName(pj tmpl, name string) (string, tmpl) {
	for id, q := range resources(pj, "AWS::SQS::Queue") {
		if props(q)["QueueName"] == name {
			return symbol(id), q
		}
	}
	return "", nil
}

// checkWebhookQueues: four queues, each encrypted with SQS-managed keys,
// retained, TLS only (its policy denies aws:SecureTransport false), with
// a visibility timeout six times webhook-delivery's timeout; the
// deliveries queue dead-letters after the schedule's attempts and keeps a
// message longer than the schedule; both dead-letter queues keep 14 days;
// webhook-delivery consumes both source queues, reporting failed batch
// items.
func checkWebhookQueues(pj tmpl, stage string, s webhook.Schedule) error {
	var errs []error
	type want struct {
		retention   float64
		dlq         string
		maxReceives float64
	}
	name := func(q string) string { return webhookQueueName(stage, q) }
	wants := map[string]want{
		name("events"):         {retention: 4 * 86400, dlq: name("events-dlq"), maxReceives: 5},
		name("deliveries"):     {retention: webhookRetention(s).Seconds(), dlq: name("deliveries-dlq"), maxReceives: float64(s.Attempts())},
		name("events-dlq"):     {retention: 14 * 86400},
		name("deliveries-dlq"): {retention: 14 * 86400},
	}
	n := 0
	for _, q := range resources(pj, "AWS::SQS::Queue") {
		if strings.HasPrefix(text(props(q)["QueueName"]), webhookQueueName(stage, "")) {
			n++
		}
	}
	if n != len(wants) {
		errs = append(errs, fmt.Errorf("%d webhook queues, want %d", n, len(wants)))
	}
	ids := map[string]string{}
	for _, n := range slices.Sorted(maps.Keys(wants)) {
		id, q := queueByName(pj, n)
		if q == nil {
			errs = append(errs, fmt.Errorf("no queue %s", n))
			continue
		}
		ids[n] = id
		w, p := wants[n], props(q)
		if p["SqsManagedSseEnabled"] != true || q["DeletionPolicy"] != "Retain" {
			errs = append(errs, fmt.Errorf("%s: SqsManagedSseEnabled %v, DeletionPolicy %v: want encrypted and retained", n, p["SqsManagedSseEnabled"], q["DeletionPolicy"]))
		}
		if p["MessageRetentionPeriod"] != w.retention {
			errs = append(errs, fmt.Errorf("%s: retention %v s, want %v", n, p["MessageRetentionPeriod"], w.retention))
		}
		if p["VisibilityTimeout"] != float64(6*60) {
			errs = append(errs, fmt.Errorf("%s: visibility timeout %v s, want 6 × webhook-delivery's 60 s", n, p["VisibilityTimeout"]))
		}
		redrive, _ := p["RedrivePolicy"].(tmpl)
		if w.dlq == "" {
			if redrive != nil {
				errs = append(errs, fmt.Errorf("%s: a dead-letter queue with a redrive policy %s", n, text(redrive)))
			}
		} else if text(redrive["deadLetterTargetArn"]) != "${"+mustQueueID(pj, w.dlq)+".Arn}" || redrive["maxReceiveCount"] != w.maxReceives {
			errs = append(errs, fmt.Errorf("%s: redrive %s, want %s after %v receives", n, text(redrive), w.dlq, w.maxReceives))
		}
	}
	tls := map[string]bool{}
	for _, pol := range resources(pj, "AWS::SQS::QueuePolicy") {
		for _, st := range statements(props(pol)["PolicyDocument"]) {
			if st["Effect"] == "Deny" && text(st["Condition"]) == `{"Bool":{"aws:SecureTransport":"false"}}` && text(st["Action"]) == "sqs:*" {
				tls[text(st["Resource"])] = true
			}
		}
	}
	for n, id := range ids {
		if !tls["${"+id+".Arn}"] {
			errs = append(errs, fmt.Errorf("%s: no policy denies requests without TLS", n))
		}
	}
	var mappings []string
	for _, m := range resources(pj, "AWS::Lambda::EventSourceMapping") {
		p := props(m)
		if !strings.HasPrefix(text(p["EventSourceArn"]), "${Webhook") {
			continue // the inbound queue's (TestInboundQueues)
		}
		mappings = append(mappings, fmt.Sprintf("%s <- %s batch %v %s %s", text(p["FunctionName"]), text(p["EventSourceArn"]), p["BatchSize"],
			text(p["FunctionResponseTypes"]), text(p["ScalingConfig"])))
	}
	slices.Sort(mappings)
	wantMappings := []string{
		"${WebhookDeliveryFunction} <- ${" + ids[name("deliveries")] + ".Arn} batch 10 [\"ReportBatchItemFailures\"] {\"MaximumConcurrency\":8}",
		"${WebhookDeliveryFunction} <- ${" + ids[name("events")] + ".Arn} batch 10 [\"ReportBatchItemFailures\"] {\"MaximumConcurrency\":2}",
	}
	if d := cmp.Diff(wantMappings, mappings); d != "" {
		errs = append(errs, fmt.Errorf("event source mappings (-want +got):\n%s", d))
	}
	return errors.Join(errs...)
}

// mustQueueID is the logical ID (without hash) of the queue named name.
func mustQueueID(pj tmpl, name string) string { id, _ := queueByName(pj, name); return id }

// The queues follow the configured schedule (testConfig: 10s,10m,1h,
// four attempts) and, with no configuration, the default one: eight
// attempts over about 27.5 hours, kept 4 days.
func TestWebhookQueues(t *testing.T) {
	s, err := webhook.ParseSchedule(testConfig().WebhookSchedule)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWebhookQueues(platformJSON, "test", s); err != nil {
		t.Error(err)
	}
	pj, _, err := defaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWebhookQueues(pj, "dev", webhook.DefaultSchedule); err != nil {
		t.Error(err)
	}
	if _, q := queueByName(pj, "toolgate-dev-webhook-deliveries"); q == nil || props(q)["RedrivePolicy"].(tmpl)["maxReceiveCount"] != float64(8) {
		t.Errorf("default deliveries queue: %s, want maxReceiveCount 8 (DefaultSchedule.Attempts())", text(q))
	}
	// The check bites: one attempt fewer than the schedule's.
	bad := clone(platformJSON)
	_, q := queueByName(bad, "toolgate-test-webhook-deliveries")
	props(q)["RedrivePolicy"].(tmpl)["maxReceiveCount"] = float64(3)
	if err := checkWebhookQueues(bad, "test", s); err == nil || !strings.Contains(err.Error(), "after 4 receives") {
		t.Errorf("%v, want the redrive refused", err)
	}
}

// The deliveries queue keeps a message longer than its schedule: 4 days
// for short schedules, the schedule and a day for long ones, never more
// than SQS's 14 days, which the longest schedule (20 × 12 h) stays under.
func TestWebhookRetentionOutlastsTheSchedule(t *testing.T) {
	longest := make(webhook.Schedule, 20) // ParseSchedule's most, each its longest
	for i := range longest {
		longest[i] = 12 * time.Hour
	}
	for _, c := range []struct {
		s    webhook.Schedule
		want time.Duration
	}{
		{webhook.DefaultSchedule, 4 * 24 * time.Hour},
		{webhook.Schedule{12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour}, 4*24*time.Hour + 12*time.Hour},
		{longest, 11 * 24 * time.Hour},
	} {
		got := webhookRetention(c.s)
		if got != c.want || got <= c.s.Total() || got > webhookDLQRetention {
			t.Errorf("webhookRetention(%s) = %s, want %s (over %s, at most 14 days)", c.s, got, c.want, c.s.Total())
		}
	}
}

// The default schedule reaches webhook-delivery in the form ParseSchedule
// reads back.
func TestScheduleTextRoundTrips(t *testing.T) {
	got := scheduleText(webhook.DefaultSchedule)
	if got != "5s,5m,30m,2h,5h,10h,10h" {
		t.Errorf("scheduleText(DefaultSchedule) = %q", got)
	}
	back, err := webhook.ParseSchedule(got)
	if err != nil || !slices.Equal(back, webhook.DefaultSchedule) {
		t.Errorf("ParseSchedule(%q) = %v, %v", got, back, err)
	}
	if got := scheduleText(webhook.Schedule{90 * time.Second, 3*time.Hour + 30*time.Minute}); got != "1m30s,3h30m" {
		t.Errorf("scheduleText = %q, want 1m30s,3h30m", got)
	}
}

// The relay runs every minute on webhook-delivery, whose permission names
// the schedule's rule; the queues' alarms watch each dead-letter queue's
// depth and each source queue's oldest message.
func TestWebhookRelayAndAlarms(t *testing.T) {
	var relay tmpl
	for id, r := range resources(platformJSON, "AWS::Events::Rule") {
		if symbol(id) == "WebhookRelaySchedule" {
			relay = r
		}
	}
	if relay == nil {
		t.Fatal("no WebhookRelaySchedule rule")
	}
	targets := asList(props(relay)["Targets"])
	if props(relay)["ScheduleExpression"] != "rate(1 minute)" || len(targets) != 1 || text(targets[0].(tmpl)["Arn"]) != "${WebhookDeliveryFunction.Arn}" {
		t.Errorf("relay rule %s, want rate(1 minute) on webhook-delivery", text(props(relay)))
	}
	alarms := map[string]string{}
	for _, a := range resources(platformJSON, "AWS::CloudWatch::Alarm") {
		p := props(a)
		if n := text(p["AlarmName"]); strings.HasPrefix(n, "toolgate-test-webhook-events-") || strings.HasPrefix(n, "toolgate-test-webhook-deliveries-") {
			alarms[n] = fmt.Sprintf("%s %s on %s >= %v", text(p["Statistic"]), text(p["MetricName"]), text(p["Dimensions"]), p["Threshold"])
		}
	}
	dim := func(q string) string {
		return `[{"Name":"QueueName","Value":"${` + mustQueueID(platformJSON, "toolgate-test-webhook-"+q) + `.QueueName}"}]`
	}
	want := map[string]string{
		"toolgate-test-webhook-events-dlq":     "Maximum ApproximateNumberOfMessagesVisible on " + dim("events-dlq") + " >= 1",
		"toolgate-test-webhook-deliveries-dlq": "Maximum ApproximateNumberOfMessagesVisible on " + dim("deliveries-dlq") + " >= 1",
		"toolgate-test-webhook-events-age":     "Maximum ApproximateAgeOfOldestMessage on " + dim("events") + " >= 900",
		// testConfig's schedule, 1 h 10 min 10 s, and a quarter of an hour.
		"toolgate-test-webhook-deliveries-age": "Maximum ApproximateAgeOfOldestMessage on " + dim("deliveries") + " >= 5110",
	}
	if d := cmp.Diff(want, alarms); d != "" {
		t.Errorf("webhook alarms (-want +got):\n%s", d)
	}
}

// The webhook configuration is checked with the functions' own parsers,
// each error naming its context key.
func TestConfigChecksWebhooks(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"an admin of no account", func(c *Config) { c.WebhookAdmins = []string{"arn:aws:iam::*:role/ops"} }, "webhookAdmins"},
		{"a public suffix", func(c *Config) { c.WebhookAllow = []string{"*.com"} }, "webhookAllow"},
		{"a delay over 12 h", func(c *Config) { c.WebhookSchedule = "5s,13h" }, `webhookSchedule: schedule: entry 2 "13h"`},
		{"not a duration", func(c *Config) { c.WebhookSchedule = "5s,soon" }, `entry 2 "soon"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			c.mutate(&cfg)
			if err := cfg.check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error naming %q", err, c.want)
			}
		})
	}
	cfg, err := LoadConfig(func(key string) any {
		return map[string]any{
			contextPrefix + "webhookAllow":    "hooks.example.org, *.receivers.example.net",
			contextPrefix + "webhookAdmins":   `["arn:aws:iam::123456789012:role/ops"]`,
			contextPrefix + "webhookSchedule": "5s,1m",
		}[key]
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.WebhookAllow, []string{"hooks.example.org", "*.receivers.example.net"}) ||
		!slices.Equal(cfg.WebhookAdmins, []string{"arn:aws:iam::123456789012:role/ops"}) || cfg.WebhookSchedule != "5s,1m" {
		t.Errorf("LoadConfig: %q %q %q", cfg.WebhookAllow, cfg.WebhookAdmins, cfg.WebhookSchedule)
	}
}
