package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/schedule"
)

// A schedule item's states (docs/schedules.md): a paused schedule's
// firings start no run.
const (
	StateEnabled = inboundapi.StateEnabled
	StatePaused  = inboundapi.StatePaused
)

// MaxScheduleInputBytes bounds a schedule's input, the run input each
// firing starts its run with: inboundapi.MaxScheduleInputBytes (32 KiB),
// kept whole in the schedule item.
const MaxScheduleInputBytes = inboundapi.MaxScheduleInputBytes

// MaxSchedules bounds the schedules: the table keeps all of them in one
// partition, read by one Query (the local ticker's and list's).
const MaxSchedules = 100

// parseExpression parses expr as EventBridge Scheduler's rate(...) or
// cron(...) (schedule.Parse); without EventBridge Scheduler (the local
// stack) also rate(N seconds) (schedule.ParseLocal). An expression with
// no firing after now (a cron whose years are past, or whose date no
// month has: cron(0 0 31 2 ? *)) is refused too: its schedule would
// never start a run, and say nothing.
func (s *Service) parseExpression(expr string) error {
	parse := schedule.Parse
	if s.Scheduler == nil {
		parse = schedule.ParseLocal
	}
	e, err := parse(expr)
	if err != nil {
		return invalid("expression: %v", err)
	}
	if e.Next(s.now()).IsZero() {
		return invalid("expression: %s has no firing after now (its years are past, or no month has its date)", expr)
	}
	return nil
}

// checkInput refuses an input that is not one JSON value of at most
// MaxScheduleInputBytes, naming the rule, never a byte of the input.
func checkInput(input json.RawMessage) error {
	switch {
	case len(input) == 0 || string(bytes.TrimSpace(input)) == "null":
		return invalid("input: give the run's input, a JSON value other than null (a Solution without inputs takes {})")
	case len(input) > MaxScheduleInputBytes:
		return invalid("input: %d bytes, over %d", len(input), MaxScheduleInputBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return invalid("input: not one JSON value")
	}
	return nil
}

// AddSchedule adds schedule r.Name for an inbound operator whose proof is
// bound to r (inboundapi.AddScheduleBinding): the name inbound.CheckName's,
// the expression parseExpression's, the Solution published, the input one
// JSON value of at most MaxScheduleInputBytes and of the Solution's
// policy.input_limit_bytes, the end user enduser.CheckID's when set. The
// input's check against the Solution's input record is the consumer's, at
// each firing, against the version then published (docs/schedules.md).
//
// The schedule item is written first (conditional: a name in use is
// SOURCES_CONFLICT), ENABLED, then its EventBridge Scheduler schedule is
// created; when that fails, the item is deleted again, so that the add
// can be repeated, and the answer is SOURCES_INVALID when EventBridge
// Scheduler refused the schedule (ValidationException, its message
// given), else SOURCES_UNAVAILABLE. Without
// EventBridge Scheduler (the local stack) the item is all.
func (s *Service) AddSchedule(ctx context.Context, r inboundapi.AddScheduleRequest, proof string) (*inboundapi.AddScheduleResult, error) {
	if err := checkName("name", r.Name); err != nil {
		return nil, err
	}
	if err := s.parseExpression(r.Expression); err != nil {
		return nil, err
	}
	if err := checkInput(r.Input); err != nil {
		return nil, err
	}
	if err := checkEndUser(r.EndUser); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, inboundapi.AddScheduleBinding(r))
	if err != nil {
		return nil, err
	}
	p, err := s.published(ctx, r.Solution)
	if err != nil {
		return nil, err
	}
	if p.InputLimitBytes > 0 && len(r.Input) > p.InputLimitBytes {
		return nil, &Error{Code: inboundapi.CodeRefused, Message: fmt.Sprintf("input: %d bytes, over solution %s's policy.input_limit_bytes (%d)", len(r.Input), r.Solution, p.InputLimitBytes)}
	}
	all, err := s.Store.Schedules(ctx)
	if err != nil {
		return nil, unavailable("the schedules could not be read", err)
	}
	for _, sc := range all {
		if sc.Name == r.Name {
			return nil, scheduleConflict(r.Name)
		}
	}
	if len(all) >= MaxSchedules {
		return nil, &Error{Code: inboundapi.CodeRefused, Message: fmt.Sprintf("%d schedules exist, the most there may be: remove one first (toolgate schedule remove)", len(all))}
	}
	now := s.now()
	sc := store.Schedule{Name: r.Name, Solution: r.Solution, Expression: r.Expression, EndUser: r.EndUser, AddedBy: who, State: StateEnabled,
		Input: r.Input, AddedAt: now, UpdatedAt: now, Version: 1}
	if err := s.Store.PutSchedule(ctx, sc); errors.Is(err, store.ErrExists) {
		return nil, scheduleConflict(r.Name)
	} else if err != nil {
		return nil, unavailable("the schedule could not be stored", err)
	}
	if s.Scheduler != nil {
		if err := s.Scheduler.Create(ctx, r.Name, r.Expression, StateEnabled); err != nil {
			if derr := s.Store.DeleteSchedule(ctx, r.Name); derr != nil && !errors.Is(derr, store.ErrNotFound) {
				return nil, unavailable(fmt.Sprintf("EventBridge Scheduler refused or failed, and the schedule item could not be deleted again: remove %s (toolgate schedule remove), then add it again", r.Name), errors.Join(err, derr))
			}
			var refused *schedtypes.ValidationException
			if errors.As(err, &refused) {
				return nil, &Error{Code: inboundapi.CodeInvalid, Message: fmt.Sprintf("EventBridge Scheduler refused the schedule (%.200s): nothing was added", refused.ErrorMessage()), Err: err}
			}
			return nil, unavailable("EventBridge Scheduler failed: nothing was added; repeat the request", err)
		}
	}
	s.log().InfoContext(ctx, "schedule added", "schedule", r.Name, "solution", r.Solution, "expression", r.Expression, "by", who)
	return &inboundapi.AddScheduleResult{Schedule: scheduleInfo(sc)}, nil
}

// scheduleConflict is SOURCES_CONFLICT for a schedule name in use.
func scheduleConflict(name string) error {
	return &Error{Code: inboundapi.CodeConflict, Message: fmt.Sprintf("schedule %s exists already (toolgate schedule list): remove it first", name)}
}

// scheduleInfo is sc as a listing shows it: never its input, which may
// hold what its runs work on; InputBytes says how long it is.
func scheduleInfo(sc store.Schedule) inboundapi.ScheduleInfo {
	return inboundapi.ScheduleInfo{Name: sc.Name, Solution: sc.Solution, Expression: sc.Expression, EndUser: sc.EndUser, State: sc.State,
		InputBytes: len(sc.Input), AddedBy: sc.AddedBy, AddedAt: rfc3339(sc.AddedAt), UpdatedAt: rfc3339(sc.UpdatedAt), Version: sc.Version}
}

// ListSchedules lists every schedule, never an input.
func (s *Service) ListSchedules(ctx context.Context, proof string) (*inboundapi.ListSchedulesResult, error) {
	if _, err := s.authorize(ctx, proof, inboundapi.ListSchedulesBinding()); err != nil {
		return nil, err
	}
	all, err := s.Store.Schedules(ctx)
	if err != nil {
		return nil, unavailable("the schedules could not be read", err)
	}
	out := &inboundapi.ListSchedulesResult{Schedules: []inboundapi.ScheduleInfo{}}
	for _, sc := range all {
		out.Schedules = append(out.Schedules, scheduleInfo(sc))
	}
	return out, nil
}

// schedule reads schedule name, or answers NOT_FOUND.
func (s *Service) schedule(ctx context.Context, name string) (store.Schedule, error) {
	sc, err := s.Store.Schedule(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return sc, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("no schedule %s (toolgate schedule list)", name)}
	case err != nil:
		return sc, unavailable("the schedule could not be read", err)
	}
	return sc, nil
}

// PauseSchedule pauses schedule name: PAUSED (and its EventBridge
// Scheduler schedule DISABLED). See setState.
func (s *Service) PauseSchedule(ctx context.Context, name, proof string) (*inboundapi.ScheduleStateResult, error) {
	return s.setState(ctx, name, StatePaused, proof, inboundapi.PauseScheduleBinding(name))
}

// ResumeSchedule resumes schedule name: ENABLED (and its EventBridge
// Scheduler schedule ENABLED). See setState.
func (s *Service) ResumeSchedule(ctx context.Context, name, proof string) (*inboundapi.ScheduleStateResult, error) {
	return s.setState(ctx, name, StateEnabled, proof, inboundapi.ResumeScheduleBinding(name))
}

// setState sets schedule name's state. The item is written first
// (conditional on its version; unchanged when it is in state already),
// then the EventBridge Scheduler schedule is updated with every field
// again, also when the item was in state already, so that a repeat
// completes a change that failed half-way. The item is what the
// consumer honours: a firing of a paused schedule starts no run, so a
// pause holds from its item's write even when EventBridge Scheduler still
// fires.
func (s *Service) setState(ctx context.Context, name, state, proof string, b caller.Binding) (*inboundapi.ScheduleStateResult, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, b)
	if err != nil {
		return nil, err
	}
	sc, err := s.schedule(ctx, name)
	if err != nil {
		return nil, err
	}
	changed := sc.State != state
	if changed {
		switch err := s.Store.SetScheduleState(ctx, name, state, sc.Version, s.now()); {
		case errors.Is(err, store.ErrConflict):
			return nil, &Error{Code: inboundapi.CodeConflict, Message: fmt.Sprintf("schedule %s changed meanwhile: repeat the request", name)}
		case errors.Is(err, store.ErrNotFound):
			return nil, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("schedule %s was removed meanwhile", name)}
		case err != nil:
			return nil, unavailable("the schedule's state could not be written", err)
		}
	}
	if s.Scheduler != nil {
		if err := s.Scheduler.Update(ctx, name, sc.Expression, state); err != nil {
			return nil, unavailable(fmt.Sprintf("schedule %s is recorded %s, but EventBridge Scheduler was not updated: repeat the request", name, state), err)
		}
	}
	if changed {
		s.log().InfoContext(ctx, "schedule state set", "schedule", name, "state", state, "by", who)
	}
	return &inboundapi.ScheduleStateResult{Schedule: name, State: state, Changed: changed}, nil
}

// RemoveSchedule deletes schedule name: its EventBridge Scheduler
// schedule first (one already gone is fine), then its item, so that
// nothing fires for a schedule no item describes for longer than a
// failure between the two, which a repeat of the remove completes.
// Firings already queued find no item and start no run.
func (s *Service) RemoveSchedule(ctx context.Context, name, proof string) (*inboundapi.RemoveResult, error) {
	if err := checkName("name", name); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, inboundapi.RemoveScheduleBinding(name))
	if err != nil {
		return nil, err
	}
	if s.Scheduler != nil {
		if err := s.Scheduler.Delete(ctx, name); err != nil {
			return nil, unavailable("EventBridge Scheduler failed: nothing was removed; repeat the request", err)
		}
	}
	if err := s.Store.DeleteSchedule(ctx, name); errors.Is(err, store.ErrNotFound) {
		return nil, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("no schedule %s (toolgate schedule list)", name)}
	} else if err != nil {
		return nil, unavailable("the schedule item could not be deleted (its EventBridge Scheduler schedule is): repeat the request", err)
	}
	s.log().InfoContext(ctx, "schedule removed", "schedule", name, "by", who)
	return &inboundapi.RemoveResult{Name: name, Removed: true}, nil
}
