package sources

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// addSchedule adds r as user who, directly.
func (e *env) addSchedule(t *testing.T, who string, r inboundapi.AddScheduleRequest) (inboundapi.AddScheduleResult, string, string) {
	t.Helper()
	out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionAddSchedule, AddSchedule: &r, Proof: e.proof(t, who, inboundapi.AddScheduleBinding(r))})
	var res inboundapi.AddScheduleResult
	if code == "" {
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
	}
	return res, code, msg
}

// onSchedule runs action on schedule name as user who, directly.
func (e *env) onSchedule(t *testing.T, who, action, name string) (json.RawMessage, string, string) {
	t.Helper()
	b := map[string]func(string) caller.Binding{inboundapi.ActionPauseSchedule: inboundapi.PauseScheduleBinding,
		inboundapi.ActionResumeSchedule: inboundapi.ResumeScheduleBinding, inboundapi.ActionRemoveSchedule: inboundapi.RemoveScheduleBinding}[action](name)
	return e.direct(t, inboundapi.DirectRequest{Action: action, Name: name, Proof: e.proof(t, who, b)})
}

// On AWS, add writes the schedule item and creates its EventBridge
// Scheduler schedule: named as the item, in the stage's group, flexible
// time window OFF, ENABLED, targeting the inbound queue with the
// scheduler's role, the firing message as its input, the documented
// retry policy and the inbound dead-letter queue. Pause and resume
// update it with every field again, DISABLED and ENABLED; remove deletes
// it, then the item.
func TestScheduleOnAWSFollowsItsItemInEventBridgeScheduler(t *testing.T) {
	e := newEnv(t, true)
	r := inboundapi.AddScheduleRequest{Name: "nightly", Solution: solution, Expression: "cron(0 18 ? * MON-FRI *)", Input: json.RawMessage(`{"report":"daily"}`), EndUser: "cust-1"}
	res, code, msg := e.addSchedule(t, operator, r)
	if code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	want := inboundapi.ScheduleInfo{Name: "nightly", Solution: solution, Expression: r.Expression, EndUser: "cust-1", State: inboundapi.StateEnabled, InputBytes: len(r.Input),
		AddedBy: "arn:aws:iam::000000000000:user/ops", AddedAt: rfc3339(e.clock.Now()), UpdatedAt: rfc3339(e.clock.Now()), Version: 1}
	if res.Schedule != want {
		t.Fatalf("answered %+v, want %+v", res.Schedule, want)
	}
	sc, err := e.st.Schedule(t.Context(), "nightly")
	if err != nil || string(sc.Input) != `{"report":"daily"}` || sc.State != inboundapi.StateEnabled {
		t.Fatalf("item %+v, %v", sc, err)
	}
	check := func(state schedtypes.ScheduleState) {
		t.Helper()
		got, ok := e.sched.get("nightly")
		if !ok {
			t.Fatal("no EventBridge Scheduler schedule")
		}
		tg := got.Target
		if aws.ToString(got.ScheduleExpression) != r.Expression || got.State != state || got.FlexibleTimeWindow.Mode != schedtypes.FlexibleTimeWindowModeOff ||
			aws.ToString(tg.Arn) != queueARN || aws.ToString(tg.RoleArn) != schedulerRole || aws.ToString(tg.DeadLetterConfig.Arn) != dlqARN ||
			aws.ToInt32(tg.RetryPolicy.MaximumRetryAttempts) != SchedulerMaxRetryAttempts || aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != SchedulerMaxEventAge {
			t.Fatalf("schedule %+v, target %+v", got, tg)
		}
		if aws.ToString(tg.Input) != `{"schedule":"nightly","scheduled_time":"<aws.scheduler.scheduled-time>"}` {
			t.Fatalf("target input %s", aws.ToString(tg.Input))
		}
	}
	check(schedtypes.ScheduleStateEnabled)
	out, code, msg := e.onSchedule(t, operator, inboundapi.ActionPauseSchedule, "nightly")
	if code != "" || !strings.Contains(string(out), `"changed":true`) {
		t.Fatalf("pause: %s %s %s", out, code, msg)
	}
	check(schedtypes.ScheduleStateDisabled)
	if sc, _ := e.st.Schedule(t.Context(), "nightly"); sc.State != inboundapi.StatePaused || sc.Version != 2 {
		t.Fatalf("after pause: %+v", sc)
	}
	// A pause repeated changes no item and sends the schedule again.
	if out, code, _ := e.onSchedule(t, operator, inboundapi.ActionPauseSchedule, "nightly"); code != "" || !strings.Contains(string(out), `"changed":false`) {
		t.Fatalf("pause again: %s %s", out, code)
	}
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionResumeSchedule, "nightly"); code != "" {
		t.Fatalf("resume: %s", code)
	}
	check(schedtypes.ScheduleStateEnabled)
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionRemoveSchedule, "nightly"); code != "" {
		t.Fatalf("remove: %s", code)
	}
	if _, ok := e.sched.get("nightly"); ok {
		t.Fatal("the EventBridge Scheduler schedule is still there")
	}
	if _, err := e.st.Schedule(t.Context(), "nightly"); err == nil {
		t.Fatal("the item is still there")
	}
	if got := strings.Join(e.sched.calls, ","); got != "create nightly,update nightly,update nightly,update nightly,delete nightly" {
		t.Fatalf("calls %s", got)
	}
	if strings.Contains(e.logs.String(), "daily") {
		t.Fatal("the log holds the schedule's input")
	}
}

// When EventBridge Scheduler refuses or fails the create, the item is
// deleted again and the add can be repeated; a schedule of the name left
// in EventBridge Scheduler (by a remove that failed after it) is
// replaced by the next add; a remove whose DeleteSchedule fails keeps
// the item, and its repeat completes.
func TestScheduleWritesLeaveNothingHalfDone(t *testing.T) {
	e := newEnv(t, true)
	r := inboundapi.AddScheduleRequest{Name: "hourly", Solution: solution, Expression: "rate(1 hour)", Input: json.RawMessage(`{}`)}
	for _, c := range []struct {
		fail error
		code string
	}{
		{errors.New("throttled"), inboundapi.CodeUnavailable},
		{&schedtypes.ValidationException{Message: aws.String("Invalid Schedule Expression")}, inboundapi.CodeInvalid},
	} {
		e.sched.fail = c.fail
		if _, code, msg := e.addSchedule(t, operator, r); code != c.code || (c.code == inboundapi.CodeInvalid && !strings.Contains(msg, "Invalid Schedule Expression")) {
			t.Fatalf("a create failing with %v: %s %s, want %s", c.fail, code, msg, c.code)
		}
		if _, err := e.st.Schedule(t.Context(), "hourly"); err == nil {
			t.Fatal("the item stayed after the create failed")
		}
	}
	e.sched.fail = nil
	// A schedule of that name left behind in EventBridge Scheduler.
	if err := (&Scheduler{API: e.sched, Group: "toolgate-test", QueueARN: queueARN, RoleARN: schedulerRole, DLQARN: dlqARN}).Create(t.Context(), "hourly", "rate(5 minutes)", StatePaused); err != nil {
		t.Fatal(err)
	}
	if _, code, msg := e.addSchedule(t, operator, r); code != "" {
		t.Fatalf("add again: %s %s", code, msg)
	}
	if got, _ := e.sched.get("hourly"); aws.ToString(got.ScheduleExpression) != "rate(1 hour)" || got.State != schedtypes.ScheduleStateEnabled {
		t.Fatalf("the left schedule was not replaced: %+v", got)
	}
	e.sched.fail = errors.New("throttled")
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionRemoveSchedule, "hourly"); code != inboundapi.CodeUnavailable {
		t.Fatalf("a failing delete: %s", code)
	}
	if _, err := e.st.Schedule(t.Context(), "hourly"); err != nil {
		t.Fatalf("the item went while its schedule stayed: %v", err)
	}
	e.sched.fail = nil
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionRemoveSchedule, "hourly"); code != "" {
		t.Fatalf("remove again: %s", code)
	}
	if _, ok := e.sched.get("hourly"); ok {
		t.Fatal("the schedule is still there")
	}
}

// A malformed schedule is SOURCES_INVALID naming its field; an input over
// the Solution's policy.input_limit_bytes is SOURCES_REFUSED; an
// unpublished Solution SOURCES_NOT_FOUND; a stranger SOURCES_REFUSED; a
// proof made for another input SOURCES_UNAUTHENTICATED. Nothing is
// stored, nothing reaches EventBridge Scheduler, and no message quotes
// the input.
func TestAddScheduleRefusesBadRequests(t *testing.T) {
	e := newEnv(t, true)
	ok := inboundapi.AddScheduleRequest{Name: "nightly", Solution: solution, Expression: "rate(1 day)", Input: json.RawMessage(`{"canary":"input-value"}`)}
	big := `{"canary":"` + strings.Repeat("x", MaxScheduleInputBytes) + `"}`
	for _, c := range []struct {
		name  string
		edit  func(r *inboundapi.AddScheduleRequest)
		code  string
		field string
	}{
		{"a bad name", func(r *inboundapi.AddScheduleRequest) { r.Name = "Nightly" }, inboundapi.CodeInvalid, "name"},
		{"rate with a plural 1", func(r *inboundapi.AddScheduleRequest) { r.Expression = "rate(1 days)" }, inboundapi.CodeInvalid, "expression"},
		{"seconds on AWS", func(r *inboundapi.AddScheduleRequest) { r.Expression = "rate(5 seconds)" }, inboundapi.CodeInvalid, "expression"},
		{"cron with two day fields", func(r *inboundapi.AddScheduleRequest) { r.Expression = "cron(0 18 * * * *)" }, inboundapi.CodeInvalid, "expression"},
		{"cron whose years are past", func(r *inboundapi.AddScheduleRequest) { r.Expression = "cron(0 18 * * ? 2020)" }, inboundapi.CodeInvalid, "expression"},
		{"cron of a date no month has", func(r *inboundapi.AddScheduleRequest) { r.Expression = "cron(0 0 31 2 ? *)" }, inboundapi.CodeInvalid, "expression"},
		{"no input", func(r *inboundapi.AddScheduleRequest) { r.Input = nil }, inboundapi.CodeInvalid, "input"},
		{"an input over 32 KiB", func(r *inboundapi.AddScheduleRequest) { r.Input = json.RawMessage(big) }, inboundapi.CodeInvalid, "input"},
		{"an input over the Solution's limit", func(r *inboundapi.AddScheduleRequest) {
			r.Input = json.RawMessage(`{"canary":"` + strings.Repeat("x", inputLimit) + `"}`)
		}, inboundapi.CodeRefused, "input"},
		{"a bad end user", func(r *inboundapi.AddScheduleRequest) { r.EndUser = "a b" }, inboundapi.CodeInvalid, "end_user"},
		{"an unpublished Solution", func(r *inboundapi.AddScheduleRequest) { r.Solution = "nope" }, inboundapi.CodeNotFound, "solution"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			_, code, msg := e.addSchedule(t, operator, r)
			if code != c.code || !strings.HasPrefix(msg, c.field) || strings.Contains(msg, "input-value") {
				t.Fatalf("%s %q, want %s naming %s", code, msg, c.code, c.field)
			}
		})
	}
	other := ok
	other.Input = json.RawMessage(`{"canary":"another"}`)
	if _, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionAddSchedule, AddSchedule: &ok, Proof: e.proof(t, operator, inboundapi.AddScheduleBinding(other))}); code != inboundapi.CodeUnauthenticated {
		t.Fatalf("a proof for another input: %s", code)
	}
	if _, code, _ := e.addSchedule(t, stranger, ok); code != inboundapi.CodeRefused {
		t.Fatalf("a stranger: %s", code)
	}
	if all, err := e.st.Schedules(t.Context()); err != nil || len(all) != 0 || len(e.sched.calls) != 0 {
		t.Fatalf("stored %+v (%v), scheduler calls %v", all, err, e.sched.calls)
	}
	if strings.Contains(e.logs.String(), "input-value") {
		t.Fatal("the log holds the input")
	}
}

// Without EventBridge Scheduler (the local stack) a schedule is its item
// alone, and rate(N seconds) is accepted for tests; pause and resume
// change the item's state; list shows every schedule without its input.
func TestScheduleWithoutEventBridgeSchedulerIsItsItem(t *testing.T) {
	e := newEnv(t, false)
	r := inboundapi.AddScheduleRequest{Name: "fast", Solution: "digest", Expression: "rate(5 seconds)", Input: json.RawMessage(`{"canary":"input-value"}`)}
	if _, code, msg := e.addSchedule(t, operator, r); code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	if _, code, _ := e.addSchedule(t, operator, r); code != inboundapi.CodeConflict {
		t.Fatalf("a name in use: %s", code)
	}
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionPauseSchedule, "fast"); code != "" {
		t.Fatalf("pause: %s", code)
	}
	if sc, _ := e.st.Schedule(t.Context(), "fast"); sc.State != inboundapi.StatePaused {
		t.Fatalf("state %s", sc.State)
	}
	out, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionListSchedules, Proof: e.proof(t, operator, inboundapi.ListSchedulesBinding())})
	var list inboundapi.ListSchedulesResult
	if code != "" || json.Unmarshal(out, &list) != nil || len(list.Schedules) != 1 || list.Schedules[0].State != inboundapi.StatePaused || strings.Contains(string(out), "input-value") {
		t.Fatalf("list: %s %s", out, code)
	}
	if _, code, _ := e.onSchedule(t, stranger, inboundapi.ActionResumeSchedule, "fast"); code != inboundapi.CodeRefused {
		t.Fatalf("a stranger's resume: %s", code)
	}
	if _, code, _ := e.onSchedule(t, operator, inboundapi.ActionRemoveSchedule, "none"); code != inboundapi.CodeNotFound {
		t.Fatalf("remove of no schedule: %s", code)
	}
}
