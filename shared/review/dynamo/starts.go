package dynamo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
)

// Start items (table.Start) record who started an execution: as toolgate
// run proved it before the start (RecordRunStart), as a parent's workflow
// step recorded it (RecordChildStart), or, for executions started before
// start records, as their Starter state verified a start proof
// (RecordStart): pk START#<execution ARN>, sk "START". Review
// Tasks of the execution take their requester from it, whatever their
// payload says, so that even a state machine definition written by hand
// cannot name another requester (docs/identity.md).
func startKey(executionARN string) map[string]types.AttributeValue {
	return keyOf(table.Start, executionARN)
}

// StartRetention keeps a start item as long as a review of the execution
// can be asked for: a year (an execution's longest life,
// tool.MaxReviewTimeout) and a day.
const StartRetention = time.Duration(review.MaxTimeout)*time.Second + 24*time.Hour

// startItem is a person's start item (table.Start; the access
// RecordStarts), mapped with the SDK's attributevalue.
type startItem struct {
	PK      string `dynamodbav:"pk"` // START#<execution ARN>
	SK      string `dynamodbav:"sk"` // "START"
	Starter string `dynamodbav:"starter"`
	// ExpiresAt is the item's TTL, epoch seconds: StartRetention after
	// it was recorded.
	ExpiresAt int64 `dynamodbav:"expires_at"`
	// EndUserScope is the run's end-user scope (shared/enduser Scope),
	// absent for none: on a run start, when the end-user mapping let the
	// starter act for the end user asked for; on a child's, its parent's.
	EndUserScope string `dynamodbav:"end_user_scope,omitempty"`
}

// childStartItem is a child run's start item: the parent's starter, and
// what the parent recorded of the child (review.ChildRecord).
type childStartItem struct {
	startItem
	ParentRunID     string `dynamodbav:"parent_run_id"`
	InputDigest     string `dynamodbav:"input_digest"`
	StateMachineARN string `dynamodbav:"state_machine_arn"`
	// ChildStartedAt is the $$.Execution.StartTime of the execution that
	// took the record; only TakeChildStart writes it.
	ChildStartedAt string `dynamodbav:"child_started_at,omitempty"`
	// ReleasedAt is when the parent released the record, RFC 3339: the
	// execution under its name was not the parent's child, and none may
	// take the record after; only ReleaseChildStart writes it.
	ReleasedAt string `dynamodbav:"released_at,omitempty"`
	// ForkedFrom and RerunReads are, on a fork's child's record, the
	// parent's parent's child it is forked from and the parent's
	// rerun_reads (review.ChildRecord Fork); on a fork's run start, its
	// parent and --rerun-reads (runStartItem). Absent otherwise.
	ForkedFrom string `dynamodbav:"forked_from,omitempty"`
	RerunReads bool   `dynamodbav:"rerun_reads,omitempty"`
}

// runStartItem is the start record toolgate run asks for before it starts
// an execution (RecordRunStart): the verified starter, the digest of the
// whole execution input and the deadline for the execution's start.
type runStartItem struct {
	startItem
	InputDigest string `dynamodbav:"input_digest"`
	// Deadline is epoch seconds: the execution must start
	// ($$.Execution.StartTime) at most then.
	Deadline int64 `dynamodbav:"deadline"`
	// EndUser is the end-user id recorded with EndUserScope; absent when
	// none was asked for or it was skipped.
	EndUser string `dynamodbav:"end_user,omitempty"`
	// EndUserSkipped says why the end user asked for was not recorded;
	// absent otherwise.
	EndUserSkipped string `dynamodbav:"end_user_skipped,omitempty"`
	// ForkedFrom is a fork's parent run and RerunReads its
	// --rerun-reads (docs/fork.md); absent for a run that is no fork.
	ForkedFrom string `dynamodbav:"forked_from,omitempty"`
	RerunReads bool   `dynamodbav:"rerun_reads,omitempty"`
	// Origin is an inbound or scheduled run's origin; absent otherwise.
	Origin *originItem `dynamodbav:"origin,omitempty"`
}

// originItem is a start record's origin (M; review.StartOrigin).
// Holders is absent on a record written before holders existed.
type originItem struct {
	Kind    string   `dynamodbav:"kind"`
	Name    string   `dynamodbav:"name"`
	AddedBy string   `dynamodbav:"added_by"`
	Event   string   `dynamodbav:"event"`
	Holders []string `dynamodbav:"holders,omitempty"`
}

func originOf(o *review.StartOrigin) *originItem {
	if o == nil {
		return nil
	}
	return &originItem{Kind: o.Kind, Name: o.Name, AddedBy: o.AddedBy, Event: o.Event, Holders: nonEmpty(o.Holders)}
}

// nonEmpty is l, or nil when l has no member, so that a record read back
// compares equal to the entry it was written from.
func nonEmpty(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	return append([]string(nil), l...)
}

func (o *originItem) origin() *review.StartOrigin {
	if o == nil {
		return nil
	}
	return &review.StartOrigin{Kind: o.Kind, Name: o.Name, AddedBy: o.AddedBy, Event: o.Event, Holders: nonEmpty(o.Holders)}
}

// startAttr is the expression name of a start item's attribute n (table.Start).
func startAttr(n string) expression.NameBuilder { return attr(table.Start, n) }

// newStart is executionARN's start item for starter, recorded at now.
func newStart(executionARN, starter string, now time.Time) startItem {
	return startItem{PK: table.Start.Key(executionARN), SK: table.Start.SKValue, Starter: starter,
		ExpiresAt: now.Add(StartRetention).Unix()}
}

// storedStart is a start item of any kind as getStart reads it: a
// child's members (ParentRunID, InputDigest, StateMachineARN, …), empty
// on a person's; and a run start's Deadline (runStartItem), 0 on a
// child's and on one RecordStart wrote.
type storedStart struct {
	childStartItem
	Deadline int64 `dynamodbav:"deadline"`
	// EndUser, EndUserSkipped and Origin are a run start's (runStartItem).
	EndUser        string      `dynamodbav:"end_user,omitempty"`
	EndUserSkipped string      `dynamodbav:"end_user_skipped,omitempty"`
	Origin         *originItem `dynamodbav:"origin,omitempty"`
}

// getStart reads executionARN's start item, whatever its kind
// (consistent read, one GetItem): review.ErrNotFound when there is none.
func (s *Store) getStart(ctx context.Context, executionARN string) (storedStart, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: startKey(executionARN)})
	if err != nil {
		return storedStart{}, fmt.Errorf("get start of %s: %w", executionARN, err)
	}
	if out.Item == nil {
		return storedStart{}, review.ErrNotFound
	}
	var c storedStart
	if err := attributevalue.UnmarshalMap(out.Item, &c); err != nil {
		return storedStart{}, fmt.Errorf("read start of %s: %w", executionARN, err)
	}
	return c, nil
}

// RecordStart records starter as the starter of executionARN (one
// conditional PutItem); recording the same starter again is a no-op.
func (s *Store) RecordStart(ctx context.Context, executionARN, starter string) error {
	item, err := attributevalue.MarshalMap(newStart(executionARN, starter, s.now()))
	if err != nil {
		return fmt.Errorf("start item of %s: %w", executionARN, err)
	}
	// attribute_not_exists(pk) OR starter = starter.
	err = s.put(ctx, item, notExists().Or(startAttr("starter").Equal(expression.Value(starter))), "")
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put start of %s: %w", executionARN, err)
	}
	return nil
}

// RecordRunStart records, for the execution toolgate run is about to
// start, its verified starter, the digest of its whole execution input
// and its deadline, review.StartDeadline after now, with its end user
// (eu: the id and scope, or why it was skipped; zero for none asked for)
// (one PutItem, attribute_not_exists(pk)). Anything already recorded for
// executionARN, even the same again, is review.ErrStartConflict: an
// execution name is recorded once (docs/identity.md, "Four eyes").
func (s *Store) RecordRunStart(ctx context.Context, executionARN, starter, inputDigest string, eu review.EndUserRecord) error {
	return s.RecordForkStart(ctx, executionARN, starter, inputDigest, eu, review.ForkOrigin{})
}

// RecordForkStart is RecordRunStart of a fork: the record also names the
// parent run it forks and its rerun_reads (fork; zero: no fork), which
// the caller has checked against the parent's fork item (docs/fork.md).
func (s *Store) RecordForkStart(ctx context.Context, executionARN, starter, inputDigest string, eu review.EndUserRecord, fork review.ForkOrigin) error {
	return s.putRunStart(ctx, executionARN, review.RunStartEntry{Starter: starter, InputDigest: inputDigest, EndUser: eu, Fork: fork})
}

// putRunStart writes e as executionARN's run start record, its deadline
// review.StartDeadline after now (one PutItem, attribute_not_exists(pk)):
// review.ErrStartConflict when anything is recorded for executionARN.
func (s *Store) putRunStart(ctx context.Context, executionARN string, e review.RunStartEntry) error {
	now := s.now()
	start := newStart(executionARN, e.Starter, now)
	start.EndUserScope = e.EndUser.Scope
	item, err := attributevalue.MarshalMap(runStartItem{startItem: start,
		InputDigest: e.InputDigest, Deadline: now.Add(review.StartDeadline).Unix(), EndUser: e.EndUser.ID, EndUserSkipped: e.EndUser.Skipped,
		ForkedFrom: e.Fork.From, RerunReads: e.Fork.RerunReads, Origin: originOf(e.Origin)})
	if err != nil {
		return fmt.Errorf("start item of %s: %w", executionARN, err)
	}
	err = s.put(ctx, item, notExists(), "")
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put start of %s: %w", executionARN, err)
	}
	return nil
}

// RecordOrRefreshRunStart is the start lane's record of a run start
// (docs/identity.md, "Four eyes"): e as executionARN's start record, as
// RecordForkStart writes it, with e.Origin (nil: none). When a record
// exists already, it is refreshed instead if it is a run start record
// holding exactly e (same starter, input digest, end user, fork and
// origin): a retried start of the same run by the same starter (toolgate
// run again after a failure, or inbound-start's retried message). The
// refresh is a consistent GetItem that finds the record holds e, then one
// conditional UpdateItem (deadline = the deadline read) that sets its
// deadline review.StartDeadline after now; nothing else of the record
// changes. It reports whether it refreshed. Any other record (another starter or
// input, a child's, one a Starter wrote from a start proof, or one of the
// same starter and input that records something else) is
// review.ErrStartConflict, and nothing is written.
func (s *Store) RecordOrRefreshRunStart(ctx context.Context, executionARN string, e review.RunStartEntry) (refreshed bool, err error) {
	err = s.putRunStart(ctx, executionARN, e)
	if !errors.Is(err, review.ErrStartConflict) {
		return false, err
	}
	// A concurrent refresh of the same start moves the deadline between
	// the read and the update: read again, a few times.
	for range refreshAttempts {
		c, err := s.getStart(ctx, executionARN)
		switch {
		case errors.Is(err, review.ErrNotFound):
			// Gone since the put (its TTL): a retry records it anew.
			return false, review.ErrStartConflict
		case err != nil:
			return false, err
		case !c.holds(e):
			return false, review.ErrStartConflict
		}
		// The record read holds e, and a run start record's starter,
		// input, end user, fork and origin never change after its put:
		// the deadline it had when read, still there, says it is the same
		// record. The condition names the deadline only, so that the
		// role's grant (table.StartRefreshed) names neither starter nor
		// input.
		cond := startAttr("deadline").Equal(expression.Value(c.Deadline))
		deadline := s.now().Add(review.StartDeadline).Unix()
		err = s.update(ctx, startKey(executionARN), expression.Set(startAttr("deadline"), expression.Value(deadline)), cond)
		if tabledef.IsConditionFailed(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("refresh start of %s: %w", executionARN, err)
		}
		return true, nil
	}
	return false, review.ErrStartConflict
}

// refreshAttempts bounds RecordOrRefreshRunStart's read-then-update
// rounds against concurrent refreshes of the same start.
const refreshAttempts = 3

// holds reports whether c is a run start record (a deadline, no parent)
// of exactly e.
func (c storedStart) holds(e review.RunStartEntry) bool {
	return c.ParentRunID == "" && c.Deadline != 0 && c.Starter == e.Starter && c.InputDigest == e.InputDigest &&
		c.EndUser == e.EndUser.ID && c.EndUserScope == e.EndUser.Scope && c.EndUserSkipped == e.EndUser.Skipped &&
		c.ForkedFrom == e.Fork.From && c.RerunReads == e.Fork.RerunReads && reflect.DeepEqual(c.Origin, originOf(e.Origin))
}

// RunStart returns the start record toolgate run wrote for executionARN
// (consistent read): review.ErrNotFound when nothing is recorded, or only
// a record of another kind: a child's (a parent's workflow step wrote it)
// or one an earlier Starter Task wrote from a start proof (no deadline).
func (s *Store) RunStart(ctx context.Context, executionARN string) (review.RunStartRecord, error) {
	c, err := s.getStart(ctx, executionARN)
	if err != nil {
		return review.RunStartRecord{}, err
	}
	if c.ParentRunID != "" || c.Deadline == 0 || c.InputDigest == "" {
		return review.RunStartRecord{}, review.ErrNotFound
	}
	return review.RunStartRecord{Starter: c.Starter, InputDigest: c.InputDigest, Deadline: time.Unix(c.Deadline, 0), EndUserScope: c.EndUserScope,
		Fork: review.ForkOrigin{From: c.ForkedFrom, RerunReads: c.RerunReads}, Origin: c.Origin.origin()}, nil
}

// RecordChildStart records, for a child execution a parent's workflow
// step is about to start, the parent's verified starter, the parent's run
// id, the digest of the child's input, the parent's end-user scope and,
// for a fork's child, the child it is forked from and rerun_reads
// (rec.Fork) (one conditional PutItem on the child's start item). Recording the
// same again is a no-op (a retried Task); anything else already recorded
// for that ARN is review.ErrStartConflict.
func (s *Store) RecordChildStart(ctx context.Context, childARN string, rec review.ChildRecord) error {
	start := newStart(childARN, rec.Starter, s.now())
	start.EndUserScope = rec.EndUserScope
	item, err := attributevalue.MarshalMap(childStartItem{startItem: start,
		ParentRunID: rec.ParentRunID, InputDigest: rec.InputDigest, StateMachineARN: rec.StateMachineARN,
		ForkedFrom: rec.Fork.From, RerunReads: rec.Fork.RerunReads})
	if err != nil {
		return fmt.Errorf("child start item of %s: %w", childARN, err)
	}
	// A retried record Task writes the same again; once a child took the
	// record (child_started_at) or the parent released it (released_at),
	// nothing replaces it.
	sameEndUser := expression.AttributeNotExists(startAttr("end_user_scope"))
	if rec.EndUserScope != "" {
		sameEndUser = startAttr("end_user_scope").Equal(expression.Value(rec.EndUserScope))
	}
	sameFork := expression.AttributeNotExists(startAttr("forked_from"))
	if rec.Fork.From != "" {
		sameFork = startAttr("forked_from").Equal(expression.Value(rec.Fork.From))
	}
	sameRerun := expression.AttributeNotExists(startAttr("rerun_reads"))
	if rec.Fork.RerunReads {
		sameRerun = startAttr("rerun_reads").Equal(expression.Value(true))
	}
	same := startAttr("starter").Equal(expression.Value(rec.Starter)).And(
		startAttr("parent_run_id").Equal(expression.Value(rec.ParentRunID)),
		startAttr("input_digest").Equal(expression.Value(rec.InputDigest)),
		startAttr("state_machine_arn").Equal(expression.Value(rec.StateMachineARN)),
		sameEndUser, sameFork, sameRerun,
		expression.AttributeNotExists(startAttr("child_started_at")),
		expression.AttributeNotExists(startAttr("released_at")))
	err = s.put(ctx, item, notExists().Or(same), "")
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put child start of %s: %w", childARN, err)
	}
	return nil
}

// ChildStart returns what a parent recorded for the child execution
// childARN (consistent read): review.ErrNotFound when nothing is recorded,
// or only a person's start (no parent).
func (s *Store) ChildStart(ctx context.Context, childARN string) (review.ChildRecord, error) {
	c, err := s.getStart(ctx, childARN)
	if err != nil {
		return review.ChildRecord{}, err
	}
	if c.ParentRunID == "" {
		return review.ChildRecord{}, review.ErrNotFound
	}
	return review.ChildRecord{Starter: c.Starter, ParentRunID: c.ParentRunID, InputDigest: c.InputDigest,
		StateMachineARN: c.StateMachineARN, StartedAt: c.ChildStartedAt, EndUserScope: c.EndUserScope,
		Fork: review.ForkOrigin{From: c.ForkedFrom, RerunReads: c.RerunReads}}, nil
}

// TakeChildStart marks the parent's record for childARN as taken by the
// execution that started at startTime (one conditional UpdateItem of
// child_started_at): the same execution again (a retried start Task) is a
// no-op; any other, or any after the parent released the record
// (ReleaseChildStart), is review.ErrChildTaken.
func (s *Store) TakeChildStart(ctx context.Context, childARN, startTime string) error {
	// SET child_started_at = startTime, on a parent's record
	// (attribute_exists(parent_run_id)) not released and not taken, or
	// taken by startTime.
	t := expression.Value(startTime)
	cond := expression.AttributeExists(startAttr("parent_run_id")).
		And(expression.AttributeNotExists(startAttr("released_at")),
			expression.AttributeNotExists(startAttr("child_started_at")).Or(startAttr("child_started_at").Equal(t)))
	err := s.update(ctx, startKey(childARN), expression.Set(startAttr("child_started_at"), t), cond)
	if tabledef.IsConditionFailed(err) {
		return review.ErrChildTaken
	}
	if err != nil {
		return fmt.Errorf("take child start of %s: %w", childARN, err)
	}
	return nil
}

// ReleaseChildStart releases parentRunID's record for childARN, which no
// execution took, so that none can take it after (one conditional
// UpdateItem of released_at): the execution holding that name is not the
// parent's child, and the parent names another (docs/solutions.md,
// "Workflow steps"). Releasing a released record again is a no-op (a
// retried Task). It is review.ErrChildTaken when an execution took the
// record before: that execution is the parent's child; and
// review.ErrNotFound when parentRunID recorded nothing for childARN.
func (s *Store) ReleaseChildStart(ctx context.Context, childARN, parentRunID string) error {
	// SET released_at = if_not_exists(released_at, now), on parentRunID's
	// record (parent_run_id = parentRunID) not taken.
	now := expression.Value(s.now().UTC().Format(time.RFC3339Nano))
	cond := startAttr("parent_run_id").Equal(expression.Value(parentRunID)).
		And(expression.AttributeNotExists(startAttr("child_started_at")))
	err := s.update(ctx, startKey(childARN), expression.Set(startAttr("released_at"), expression.IfNotExists(startAttr("released_at"), now)), cond)
	if !tabledef.IsConditionFailed(err) {
		if err != nil {
			return fmt.Errorf("release child start of %s: %w", childARN, err)
		}
		return nil
	}
	rec, err := s.ChildStart(ctx, childARN)
	switch {
	case err != nil:
		return err
	case rec.ParentRunID != parentRunID:
		return review.ErrNotFound
	case rec.StartedAt != "":
		return review.ErrChildTaken
	}
	return fmt.Errorf("release child start of %s: the record changed while it was released", childARN)
}

// Start returns executionARN's start record, whatever its kind: its
// starter, end-user scope and forked_from (consistent read), or
// ErrNotFound. A workflow step's child takes the first two from its
// parent's, and is forked from a child of the parent's forked_from.
func (s *Store) Start(ctx context.Context, executionARN string) (review.StartRecord, error) {
	c, err := s.getStart(ctx, executionARN)
	if err != nil {
		return review.StartRecord{}, err
	}
	return review.StartRecord{Starter: c.Starter, EndUserScope: c.EndUserScope, EndUser: c.EndUser,
		Fork: review.ForkOrigin{From: c.ForkedFrom, RerunReads: c.RerunReads}}, nil
}

// StarterAndOrigin returns the starter executionARN's start item records
// and, for an inbound or scheduled run's start record, its origin (nil
// for any other) (one consistent GetItem, as Starter): review-request's
// read when a review Task arrives, so that the review names the origin's
// holders beside its requester (docs/identity.md, "Four eyes").
// review.ErrNotFound when there is none.
func (s *Store) StarterAndOrigin(ctx context.Context, executionARN string) (string, *review.StartOrigin, error) {
	c, err := s.getStart(ctx, executionARN)
	if err != nil {
		return "", nil, err
	}
	if c.ParentRunID != "" || c.Deadline == 0 {
		return c.Starter, nil, nil
	}
	return c.Starter, c.Origin.origin(), nil
}

// MaxOriginHops bounds RootOrigin's walk up a child run's parents.
const MaxOriginHops = 16

// RootOrigin returns the origin of the run whose start executionARN's
// start item descends from: the item's own origin for a run start
// record, and for a child's record (a workflow step's child, which
// inherits its parent's starter) its parent's, and so on, at most
// MaxOriginHops GetItems (consistent reads). nil when the first run
// start record found has none, or when the walk meets a record that is
// neither (one a Starter wrote from a start proof) or exceeds the bound
// (the caller refuses then what needs one). review.ErrNotFound when a
// start item of the chain is missing.
func (s *Store) RootOrigin(ctx context.Context, executionARN string) (*review.StartOrigin, error) {
	arn := executionARN
	for range MaxOriginHops {
		c, err := s.getStart(ctx, arn)
		if err != nil {
			return nil, err
		}
		if c.ParentRunID == "" {
			if c.Deadline == 0 {
				return nil, nil
			}
			return c.Origin.origin(), nil
		}
		arn = c.ParentRunID
	}
	return nil, nil
}

// Starter returns the recorded starter of executionARN (consistent read),
// or ErrNotFound.
func (s *Store) Starter(ctx context.Context, executionARN string) (string, error) {
	c, err := s.getStart(ctx, executionARN)
	if err != nil {
		return "", err
	}
	return c.Starter, nil
}
