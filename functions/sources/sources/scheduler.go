package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

// SchedulerAPI is the EventBridge Scheduler client (service/scheduler):
// the three calls the sources function makes.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

// Retry policy of every schedule's target (EventBridge Scheduler API
// Reference, "RetryPolicy": MaximumRetryAttempts 0 to 185,
// MaximumEventAgeInSeconds 60 to 86400). The target is the inbound queue,
// which refuses a SendMessage only when SQS itself fails for a while: a
// firing is retried as often and as long as EventBridge Scheduler allows
// (185 attempts within 24 hours) before it goes to the inbound dead-letter
// queue, so that an outage of SQS loses no firing. A firing delivered late
// starts its run late, never twice: the run is named after its scheduled
// time (docs/schedules.md).
const (
	SchedulerMaxRetryAttempts = 185
	SchedulerMaxEventAge      = 86400 // seconds
)

// Scheduler creates, updates and deletes the EventBridge Scheduler
// schedules that fire the schedule items (docs/schedules.md): one per
// item, named as the item, in Group, targeting the inbound queue.
type Scheduler struct {
	API SchedulerAPI
	// Group is the schedule group (inboundapi.EnvSchedulerGroup,
	// "toolgate-<stage>"); QueueARN the inbound queue's ARN
	// (EnvInboundQueueARN), the target; RoleARN the role EventBridge
	// Scheduler assumes to send to it (EnvSchedulerRole); DLQARN the
	// inbound dead-letter queue's ARN (EnvInboundDLQARN), where a firing
	// goes once its retries are spent.
	Group, QueueARN, RoleARN, DLQARN string
}

// SchedulerState is an EventBridge Scheduler schedule's state for a
// schedule item's state: ENABLED for "ENABLED", DISABLED for "PAUSED".
func SchedulerState(itemState string) types.ScheduleState {
	if itemState == StatePaused {
		return types.ScheduleStateDisabled
	}
	return types.ScheduleStateEnabled
}

// FiringInput is the target input of schedule name's EventBridge
// Scheduler schedule: the inbound queue message
// {"schedule": name, "scheduled_time": "<aws.scheduler.scheduled-time>"},
// whose placeholder EventBridge Scheduler replaces with the firing's
// scheduled time, RFC 3339 UTC (EventBridge Scheduler User Guide,
// "Adding context attributes").
func FiringInput(name string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)                                                                            // the placeholder's angle brackets as written, not \u003c
	_ = enc.Encode(inboundapi.Message{Schedule: name, ScheduledTime: "<aws.scheduler.scheduled-time>"}) // strings: it cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

// target is schedule name's target: the inbound queue, with the role,
// the input, the retry policy and the dead-letter queue.
func (s *Scheduler) target(name string) *types.Target {
	return &types.Target{Arn: aws.String(s.QueueARN), RoleArn: aws.String(s.RoleARN), Input: aws.String(FiringInput(name)),
		RetryPolicy:      &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(SchedulerMaxRetryAttempts), MaximumEventAgeInSeconds: aws.Int32(SchedulerMaxEventAge)},
		DeadLetterConfig: &types.DeadLetterConfig{Arn: aws.String(s.DLQARN)}}
}

// Create creates schedule name with expression expr (rate(...) or
// cron(...), UTC) in state (a schedule item's, SchedulerState): flexible
// time window OFF, so that each firing is at its scheduled time. When a
// schedule of that name exists already (ConflictException: one left by
// a remove that failed half-way), it is replaced by UpdateSchedule with
// the same fields, since the caller holds the schedule item of that name.
func (s *Scheduler) Create(ctx context.Context, name, expr, state string) error {
	_, err := s.API.CreateSchedule(ctx, &scheduler.CreateScheduleInput{Name: aws.String(name), GroupName: aws.String(s.Group), ScheduleExpression: aws.String(expr),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}, State: SchedulerState(state), Target: s.target(name)})
	var conflict *types.ConflictException
	if errors.As(err, &conflict) {
		return s.Update(ctx, name, expr, state)
	}
	if err != nil {
		return fmt.Errorf("create schedule %s in group %s: %w", name, s.Group, err)
	}
	return nil
}

// Update replaces schedule name with expression expr in state: every
// field again, since UpdateSchedule replaces the whole schedule and
// resets the fields it is not given (EventBridge Scheduler API Reference,
// "UpdateSchedule").
func (s *Scheduler) Update(ctx context.Context, name, expr, state string) error {
	_, err := s.API.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{Name: aws.String(name), GroupName: aws.String(s.Group), ScheduleExpression: aws.String(expr),
		FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}, State: SchedulerState(state), Target: s.target(name)})
	if err != nil {
		return fmt.Errorf("update schedule %s in group %s: %w", name, s.Group, err)
	}
	return nil
}

// Delete deletes schedule name; one that does not exist
// (ResourceNotFoundException) is deleted already.
func (s *Scheduler) Delete(ctx context.Context, name string) error {
	_, err := s.API.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: aws.String(s.Group)})
	var missing *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("delete schedule %s in group %s: %w", name, s.Group, err)
	}
	return nil
}
