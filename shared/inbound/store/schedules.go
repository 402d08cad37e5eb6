package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
)

// Schedule is a schedule as stored: which Solution runs when, with what
// input.
type Schedule struct {
	// Name is the schedule's name (inbound.CheckName).
	Name string
	// Solution is the Solution each firing starts a run of.
	Solution string
	// Expression is rate(...) or cron(...), checked by the caller
	// (shared/schedule) before PutSchedule; the store only requires one.
	Expression string
	// EndUser, when set, is the end-user id the runs act for.
	EndUser string
	// AddedBy is the verified adder's ARN.
	AddedBy string
	// State is inboundapi.StateEnabled (PutSchedule's default) or
	// inboundapi.StatePaused.
	State string
	// Input is the run's input: a JSON value of at most
	// inboundapi.MaxScheduleInputBytes.
	Input json.RawMessage
	// AddedAt and UpdatedAt are whole seconds, UTC; PutSchedule stamps
	// them when zero.
	AddedAt, UpdatedAt time.Time
	// Version is 1 at PutSchedule, then one more at each SetScheduleState.
	Version int
}

// scheduleItem is a table.Schedule item as written and read.
type scheduleItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Solution   string `dynamodbav:"solution"`
	Expression string `dynamodbav:"expression"`
	Input      string `dynamodbav:"input"`
	EndUser    string `dynamodbav:"end_user,omitempty"`
	State      string `dynamodbav:"state"`
	AddedBy    string `dynamodbav:"added_by"`
	AddedAt    string `dynamodbav:"added_at"`
	UpdatedAt  string `dynamodbav:"updated_at"`
	Version    int    `dynamodbav:"version"`
}

func (it scheduleItem) schedule() (Schedule, error) {
	name, ok := strings.CutPrefix(it.SK, table.ScheduleSKPrefix)
	if !ok || it.PK != table.SchedulesPK() {
		return Schedule{}, fmt.Errorf("item %s/%s is not a schedule", it.PK, it.SK)
	}
	return Schedule{Name: name, Solution: it.Solution, Expression: it.Expression, EndUser: it.EndUser, AddedBy: it.AddedBy,
		State: it.State, Input: json.RawMessage(it.Input), AddedAt: parseStamp(it.AddedAt), UpdatedAt: parseStamp(it.UpdatedAt),
		Version: it.Version}, nil
}

func scheduleKey(name string) map[string]types.AttributeValue {
	return key(table.SchedulesPK(), table.ScheduleSK(name))
}

// checkState refuses a state that is neither enabled nor paused.
func checkState(state string) error {
	if state != inboundapi.StateEnabled && state != inboundapi.StatePaused {
		return fmt.Errorf("state must be %s or %s: %w", inboundapi.StateEnabled, inboundapi.StatePaused, ErrInvalid)
	}
	return nil
}

// PutSchedule stores sch as a new schedule: one PutItem conditional on
// attribute_not_exists(pk), so a name already taken is ErrExists. sch
// needs a name (inbound.CheckName), a Solution, an expression, an adder
// and an input that is one JSON value of at most
// inboundapi.MaxScheduleInputBytes. Zero fields take their defaults:
// State inboundapi.StateEnabled, AddedAt now, UpdatedAt AddedAt, Version 1.
func (st *Store) PutSchedule(ctx context.Context, sch Schedule) error {
	if err := checkName("schedule", sch.Name); err != nil {
		return fmt.Errorf("put schedule: %w", err)
	}
	if sch.State == "" {
		sch.State = inboundapi.StateEnabled
	}
	switch {
	case sch.Solution == "":
		return fmt.Errorf("put schedule %s: no solution: %w", sch.Name, ErrInvalid)
	case sch.Expression == "":
		return fmt.Errorf("put schedule %s: no expression: %w", sch.Name, ErrInvalid)
	case sch.AddedBy == "":
		return fmt.Errorf("put schedule %s: no added_by: %w", sch.Name, ErrInvalid)
	case len(sch.Input) > inboundapi.MaxScheduleInputBytes:
		return fmt.Errorf("put schedule %s: input of %d bytes, at most %d: %w", sch.Name, len(sch.Input), inboundapi.MaxScheduleInputBytes, ErrInvalid)
	case !json.Valid(sch.Input):
		return fmt.Errorf("put schedule %s: input is not one JSON value: %w", sch.Name, ErrInvalid)
	}
	if err := checkState(sch.State); err != nil {
		return fmt.Errorf("put schedule %s: %w", sch.Name, err)
	}
	if sch.AddedAt.IsZero() {
		sch.AddedAt = time.Now()
	}
	if sch.UpdatedAt.IsZero() {
		sch.UpdatedAt = sch.AddedAt
	}
	if sch.Version == 0 {
		sch.Version = 1
	}
	item, err := attributevalue.MarshalMap(scheduleItem{
		PK: table.SchedulesPK(), SK: table.ScheduleSK(sch.Name), Solution: sch.Solution, Expression: sch.Expression,
		Input: string(sch.Input), EndUser: sch.EndUser, State: sch.State, AddedBy: sch.AddedBy,
		AddedAt: stamp(sch.AddedAt), UpdatedAt: stamp(sch.UpdatedAt), Version: sch.Version,
	})
	if err != nil {
		return fmt.Errorf("put schedule %s: %w", sch.Name, err)
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("put schedule %s: %w", sch.Name, ErrExists)
	case err != nil:
		return fmt.Errorf("put schedule %s: %w", sch.Name, err)
	}
	return nil
}

// Schedule reads schedule name whole: a consistent GetItem; ErrNotFound
// when there is none.
func (st *Store) Schedule(ctx context.Context, name string) (Schedule, error) {
	if err := checkName("schedule", name); err != nil {
		return Schedule{}, fmt.Errorf("read schedule: %w", err)
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.table), Key: scheduleKey(name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Schedule{}, fmt.Errorf("read schedule %s: %w", name, err)
	}
	if len(out.Item) == 0 {
		return Schedule{}, fmt.Errorf("read schedule %s: %w", name, ErrNotFound)
	}
	var it scheduleItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Schedule{}, fmt.Errorf("read schedule %s: %w", name, err)
	}
	return it.schedule()
}

// Schedules lists every schedule in name order: a Query of their one
// partition, page after page.
func (st *Store) Schedules(ctx context.Context) ([]Schedule, error) {
	out, err := listPartition(ctx, st, table.SchedulesPK(), scheduleItem.schedule)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// SetScheduleState pauses or resumes schedule name (state
// inboundapi.StatePaused or StateEnabled), stamping updated_at now: one
// UpdateItem adding 1 to its version, conditional on version being the
// one read (ErrConflict; ErrNotFound when the schedule is gone).
func (st *Store) SetScheduleState(ctx context.Context, name, state string, version int, now time.Time) error {
	if err := checkName("schedule", name); err != nil {
		return fmt.Errorf("set schedule state: %w", err)
	}
	if err := checkState(state); err != nil {
		return fmt.Errorf("set state of schedule %s: %w", name, err)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: scheduleKey(name),
		UpdateExpression:         aws.String("SET #state = :state, #updated = :now ADD #version :one"),
		ConditionExpression:      aws.String("#version = :version"),
		ExpressionAttributeNames: map[string]string{"#state": "state", "#updated": "updated_at", "#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":state": s(state), ":now": s(stamp(now)), ":one": n(1), ":version": n(int64(version)),
		},
	})
	if isConditionFailed(err) {
		if _, gerr := st.Schedule(ctx, name); gerr != nil {
			return fmt.Errorf("set schedule state: %w", gerr)
		}
		return fmt.Errorf("set state of schedule %s: version %d: %w", name, version, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("set state of schedule %s: %w", name, err)
	}
	return nil
}

// DeleteSchedule deletes schedule name: one DeleteItem conditional on the
// item existing (ErrNotFound). Its firings' events stay until their
// expires_at.
func (st *Store) DeleteSchedule(ctx context.Context, name string) error {
	if err := checkName("schedule", name); err != nil {
		return fmt.Errorf("delete schedule: %w", err)
	}
	return st.deleteOne(ctx, scheduleKey(name), "schedule "+name)
}
