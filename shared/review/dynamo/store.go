package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
)

// API is the part of the DynamoDB client the review store uses: the same
// item-level actions as the ledger's, all implemented by dynalite.
type API = tabledef.API

// MaxList bounds one listing.
const MaxList = 1000

// Store reads and writes review items in the ledger table: pk
// "REVIEW#<review_id>", sk "REVIEW" (docs/reviews.md).
type Store struct {
	db    API
	table string
	now   func() time.Time
	// retention keeps a decided review as long as the ledger's rows
	// (tabledef.DefaultRetention).
	retention time.Duration
}

// AttrDeadline is a review's own end, in epoch seconds: no decision and
// no use of its approval after it. The item's TTL (expires_at) is the
// deadline while the review is pending and the ledger's retention once it
// is decided, so that a decided review lives as long as the rows of the
// calls it authorised.
const AttrDeadline = "deadline"

// beforeDeadline is the condition "the review's deadline has not passed",
// for items written before deadline existed too (their expires_at was the
// deadline). It reads #deadline, #expires_at and :now_s.
const beforeDeadline = "(#deadline > :now_s OR (attribute_not_exists(#deadline) AND #expires_at > :now_s))"

// deadline reads an item's deadline (expires_at for items written before
// it existed).
func deadline(it map[string]types.AttributeValue) int64 {
	if _, ok := it[AttrDeadline]; ok {
		return getN(it, AttrDeadline)
	}
	return getN(it, tabledef.AttrExpiresAt)
}

// Transient reports whether a DynamoDB failure may pass if the same
// request is made again: throttling, a server fault, or no answer at all
// (a network error, a cancelled or timed-out request); not a client fault
// such as a ValidationException (AWS SDK for Go v2, smithy.APIError).
func Transient(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return true
	}
	switch ae.ErrorCode() {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded", "LimitExceededException":
		return true
	}
	return ae.ErrorFault() != smithy.FaultClient
}

// NewStore returns a Store on the named table.
func NewStore(db API, table string) *Store {
	return &Store{db: db, table: table, now: time.Now, retention: tabledef.DefaultRetention}
}

// WithClock returns a copy of the store that reads time from now (tests).
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.now = now
	return &c
}

// Now returns the store's clock.
func (s *Store) Now() time.Time { return s.now() }

const reviewSK = "REVIEW"

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tabledef.AttrPK: str("REVIEW#" + id), tabledef.AttrSK: str(reviewSK)}
}

func listPK(st review.Status) string { return "REVIEWS#" + string(st) }

// The reviews-by-status index (docs/reviews.md) lists reviews without a
// Scan. Only review items carry its keys, so the index holds nothing else;
// it projects the attributes a listing shows, never a review's inputs,
// reason or task token.
// (table.ReviewsByStatus).
const (
	IndexName  = "reviews-by-status"
	AttrListPK = "review_list_pk" // "REVIEWS#<status>"
	AttrListSK = "review_list_sk" // "<created_at, RFC 3339 UTC ms>#<review_id>"
)

// CreateTable creates the ledger table with the reviews-by-status index,
// for the local stack and tests (tabledef.CreateTable).
func CreateTable(ctx context.Context, db interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}, table string) error {
	return tabledef.CreateTable(ctx, db, table)
}

// Attribute values (shared/ledger/tabledef).
var (
	str  = tabledef.S
	getS = tabledef.GetS
	getN = tabledef.GetN
)

func getTime(it map[string]types.AttributeValue, k string) time.Time {
	t, err := time.Parse(review.TimeFormat, getS(it, k))
	if err != nil {
		return time.Time{}
	}
	return t
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Create stores a pending review (one conditional PutItem): CreatedAt is
// now, ExpiresAt CreatedAt + TimeoutSeconds. When a review with r's id
// exists already, it is returned with created false; the caller compares.
func (s *Store) Create(ctx context.Context, r *review.Review) (created bool, existing *review.Review, err error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	r.Status, r.CreatedAt = review.Pending, now
	r.ExpiresAt = time.Unix(now.Unix()+int64(r.TimeoutSeconds), 0).UTC()
	reviewers := make([]types.AttributeValue, 0, len(r.Reviewers))
	for _, p := range r.Reviewers {
		reviewers = append(reviewers, str(p))
	}
	item := key(r.ID)
	item["review_id"] = str(r.ID)
	item["run_id"] = str(r.RunID)
	item["step"] = str(r.Step)
	item["of"] = str(r.Of)
	item["tool"] = str(r.Tool)
	item["toolset_id"] = str(r.ToolsetID)
	item["reviewers"] = &types.AttributeValueMemberL{Value: reviewers}
	item["input"] = str(string(r.Input))
	item["input_digest"] = str(r.InputDigest)
	item["input_bytes"] = tabledef.N(int64(len(r.Input)))
	item["timeout_seconds"] = tabledef.N(int64(r.TimeoutSeconds))
	item["requester"] = str(r.Requester)
	item["status"] = str(string(review.Pending))
	item["created_at"] = str(review.FormatTime(now))
	// deadline is the review's own end (no decision, no use of its
	// approval after it); expires_at is only the item's TTL: the deadline
	// while pending, the ledger's retention once decided (Decide).
	item[AttrDeadline] = tabledef.N(r.ExpiresAt.Unix())
	item[tabledef.AttrExpiresAt] = tabledef.N(r.ExpiresAt.Unix())
	item[AttrListPK] = str(listPK(review.Pending))
	item[AttrListSK] = str(review.FormatTime(now) + "#" + r.ID)
	if r.TaskToken != "" {
		item["task_token"] = str(r.TaskToken)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		return true, nil, nil
	}
	if !tabledef.IsConditionFailed(err) {
		return false, nil, fmt.Errorf("put review %s: %w", r.ID, err)
	}
	existing, err = s.Get(ctx, r.ID)
	if err != nil {
		return false, nil, err
	}
	return false, existing, nil
}

// Get reads a review with a consistent read; ErrNotFound when there is
// none.
func (s *Store) Get(ctx context.Context, id string) (*review.Review, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get review %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("review %s: %w", id, review.ErrNotFound)
	}
	return fromItem(out.Item), nil
}

func fromItem(it map[string]types.AttributeValue) *review.Review {
	r := &review.Review{
		ID:                   getS(it, "review_id"),
		RunID:                getS(it, "run_id"),
		Step:                 getS(it, "step"),
		Of:                   getS(it, "of"),
		Tool:                 getS(it, "tool"),
		ToolsetID:            getS(it, "toolset_id"),
		InputDigest:          getS(it, "input_digest"),
		TaskToken:            getS(it, "task_token"),
		Requester:            getS(it, "requester"),
		SelfApprovalRefusals: int(getN(it, "self_approval_refusals")),
		TimeoutSeconds:       int(getN(it, "timeout_seconds")),
		Status:               review.Status(getS(it, "status")),
		CreatedAt:            getTime(it, "created_at"),
		ExpiresAt:            time.Unix(deadline(it), 0).UTC(),
		Approver:             getS(it, "approver"),
		DecidedAt:            getTime(it, "decided_at"),
		Reason:               getS(it, "reason"),
		Delivery:             review.Delivery(getS(it, "delivery")),
		DeliveryError:        getS(it, "delivery_error"),
		DeliveryLeaseUntil:   time.UnixMilli(getN(it, "delivery_lease_until")),
		BoundKey:             getS(it, "bound_key"),
		BoundAt:              getTime(it, "bound_at"),
		DecisionToken:        getS(it, "decision_token"),
	}
	if v, ok := it["authenticated"].(*types.AttributeValueMemberBOOL); ok {
		r.Authenticated = v.Value
	}
	if in := getS(it, "input"); in != "" {
		r.Input = json.RawMessage(in)
	}
	if l, ok := it["reviewers"].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				r.Reviewers = append(r.Reviewers, s.Value)
			}
		}
	}
	return r
}

// Decide records a verdict on a review read as r (one conditional
// UpdateItem): only while it is PENDING and unexpired. A review with a task
// token is left DELIVERING, its delivery leased to this caller for lease;
// one without is NO_TASK. It reports applied false, with the review as it
// now is, when the condition failed (decided meanwhile, or expired).
func (s *Store) Decide(ctx context.Context, r *review.Review, v review.Verdict, approver string, authenticated bool, reason string, lease time.Duration) (applied bool, cur *review.Review, err error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	token := newToken()
	delivery, leaseUntil := review.NoTask, time.Time{}
	if r.TaskToken != "" {
		delivery, leaseUntil = review.Delivering, now.Add(lease)
	}
	st := review.StatusOf(v)
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(r.ID),
		ConditionExpression: aws.String("#status = :pending AND " + beforeDeadline),
		UpdateExpression: aws.String("SET #status = :status, #list_pk = :list_pk, approver = :approver, authenticated = :auth, " +
			"decided_at = :at, reason = :reason, delivery = :delivery, delivery_lease_until = :lease, decision_token = :token, " +
			"#expires_at = :keep"),
		ExpressionAttributeNames: map[string]string{
			"#status": "status", "#expires_at": tabledef.AttrExpiresAt, "#deadline": AttrDeadline, "#list_pk": AttrListPK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pending":  str(string(review.Pending)),
			":now_s":    tabledef.N(now.Unix()),
			":keep":     tabledef.N(now.Add(s.retention).Unix()),
			":status":   str(string(st)),
			":list_pk":  str(listPK(st)),
			":approver": str(approver),
			":auth":     &types.AttributeValueMemberBOOL{Value: authenticated},
			":at":       str(review.FormatTime(now)),
			":reason":   str(reason),
			":delivery": str(string(delivery)),
			":lease":    tabledef.N(leaseUntil.UnixMilli()),
			":token":    str(token),
		},
	})
	if err != nil && !tabledef.IsConditionFailed(err) {
		return false, nil, fmt.Errorf("decide review %s: %w", r.ID, err)
	}
	cur, gerr := s.Get(ctx, r.ID)
	if gerr != nil {
		return false, nil, gerr
	}
	// A write applied whose response was lost (and retried by the SDK)
	// shows our own token.
	return err == nil || cur.DecisionToken == token, cur, nil
}

// ClaimDelivery takes over the delivery of a decision read as r
// (DELIVERING, its lease expired or released) for lease: one conditional
// UpdateItem on the lease as read. It reports false when another request
// holds or took it.
func (s *Store) ClaimDelivery(ctx context.Context, r *review.Review, lease time.Duration) (bool, error) {
	until := s.now().Add(lease)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(r.ID),
		ConditionExpression: aws.String("delivery = :delivering AND delivery_lease_until = :old"),
		UpdateExpression:    aws.String("SET delivery_lease_until = :until"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":delivering": str(string(review.Delivering)),
			":old":        tabledef.N(r.DeliveryLeaseUntil.UnixMilli()),
			":until":      tabledef.N(until.UnixMilli()),
		},
	})
	if tabledef.IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim delivery of review %s: %w", r.ID, err)
	}
	r.DeliveryLeaseUntil = time.UnixMilli(until.UnixMilli())
	return true, nil
}

// FinishDelivery records the end of a delivery: DELIVERED, or TASK_ENDED
// with the Step Functions error name; or, for d == Delivering, releases
// the lease so that the same decision repeated delivers at once.
func (s *Store) FinishDelivery(ctx context.Context, r *review.Review, d review.Delivery, errName string) error {
	vals := map[string]types.AttributeValue{
		":delivering": str(string(review.Delivering)),
		":lease":      tabledef.N(r.DeliveryLeaseUntil.UnixMilli()),
	}
	update := "SET delivery_lease_until = :zero"
	if d == review.Delivering {
		vals[":zero"] = tabledef.N(0)
	} else {
		update = "SET delivery = :d, delivered_at = :at"
		vals[":d"] = str(string(d))
		vals[":at"] = str(review.FormatTime(s.now()))
		if errName != "" {
			update += ", delivery_error = :err"
			vals[":err"] = str(errName)
		}
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(r.ID),
		ConditionExpression:       aws.String("delivery = :delivering AND delivery_lease_until = :lease"),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeValues: vals,
	})
	if tabledef.IsConditionFailed(err) {
		return fmt.Errorf("finish delivery of review %s: another request took the delivery over", r.ID)
	}
	if err != nil {
		return fmt.Errorf("finish delivery of review %s: %w", r.ID, err)
	}
	if d != review.Delivering {
		r.Delivery, r.DeliveryError = d, errName
	}
	return nil
}

// Binding items hold which call an approval authorised, apart from the
// review: pk "BIND#<review_id>", sk "BIND". A tool function writes only
// these (and reads reviews through GetApproval), never a review item: an
// UpdateItem on a review, even one naming only the binding's attributes,
// could return the whole review when its condition fails
// (ReturnValuesOnConditionCheckFailure, which no IAM condition key
// governs).
const (
	bindPrefix = "BIND#"
	bindSK     = "BIND"
)

func bindKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tabledef.AttrPK: str(bindPrefix + id), tabledef.AttrSK: str(bindSK)}
}

// Bind binds an approval read as r (and checked: CheckApproval) to the
// idempotency key of the one call it authorises: one conditional PutItem
// of its binding item (attribute_not_exists(pk)). It reports false, with
// r's BoundKey set to the key bound first, when another call bound it; a
// binding to key itself (a retry, or a write whose answer was lost)
// counts as bound.
func (s *Store) Bind(ctx context.Context, r *review.Review, idemKey string) (bool, *review.Review, error) {
	now := s.now()
	item := bindKey(r.ID)
	item["bound_key"], item["bound_at"] = str(idemKey), str(review.FormatTime(now))
	item[tabledef.AttrExpiresAt] = tabledef.N(now.Add(s.retention).Unix())
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		r.BoundKey, r.BoundAt = idemKey, now.UTC().Truncate(time.Millisecond)
		return true, r, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return false, nil, fmt.Errorf("bind review %s: %w", r.ID, err)
	}
	old := ccf.Item
	if old == nil { // dynalite leaves the old item out
		if old, err = s.binding(ctx, r.ID); err != nil {
			return false, nil, err
		}
	}
	cur := *r
	cur.BoundKey, cur.BoundAt = getS(old, "bound_key"), getTime(old, "bound_at")
	return cur.BoundKey == idemKey, &cur, nil
}

// binding reads a review's binding item (consistent read); nil when there
// is none.
func (s *Store) binding(ctx context.Context, id string) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: bindKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get the binding of review %s: %w", id, err)
	}
	return out.Item, nil
}

// BoundKey returns the idempotency key review id's approval authorised,
// or "" while it has authorised none.
func (s *Store) BoundKey(ctx context.Context, id string) (string, error) {
	it, err := s.binding(ctx, id)
	if err != nil {
		return "", err
	}
	return getS(it, "bound_key"), nil
}

// List returns the reviews with the given status, oldest first, through
// the reviews-by-status index (eventually consistent; no Scan). The
// reviews carry only the projected attributes: no Input, Reason or
// TaskToken. At most MaxList are returned.
//
// keep, when not nil, selects the reviews to return; only those count
// toward MaxList, so that older reviews the caller may not see never hide
// newer ones it may.
func (s *Store) List(ctx context.Context, st review.Status, keep func(*review.Review) bool) ([]*review.Review, error) {
	var out []*review.Review
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(s.table),
			IndexName:                aws.String(IndexName),
			KeyConditionExpression:   aws.String("#pk = :pk"),
			ExpressionAttributeNames: map[string]string{"#pk": AttrListPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(listPK(st)),
			},
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list %s reviews: %w", st, err)
		}
		for _, it := range res.Items {
			// Only review items are reviews: an item of another kind that
			// carries the index's attributes (written by a role that may
			// write its own items whole) is skipped, never listed.
			if !isReviewItem(it) {
				continue
			}
			r := fromItem(it)
			if keep != nil && !keep(r) {
				continue
			}
			out = append(out, r)
			if len(out) == MaxList {
				return out, nil
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// NoteSelfApproval counts a refused attempt of a review's requester to
// decide it (attribute self_approval_refusals), so the review shows it.
func (s *Store) NoteSelfApproval(ctx context.Context, id string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(id),
		UpdateExpression:          aws.String("ADD self_approval_refusals :one"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": tabledef.N(1)},
	})
	if err != nil {
		return fmt.Errorf("update review %s: %w", id, err)
	}
	return nil
}

// Start items record who started an execution, as its Starter state
// proved it: pk "START#<execution ARN>", sk "START". Review Tasks of the
// execution take their requester from it, whatever their payload says, so
// that even a state machine definition written by hand cannot name another
// requester (docs/identity.md).
const (
	startPrefix = "START#"
	startSK     = "START"
	// StartRetention keeps a start item as long as a review of the
	// execution can be asked for: a year (an execution's longest life,
	// tool.MaxReviewTimeout) and a day.
	StartRetention = time.Duration(review.MaxTimeout)*time.Second + 24*time.Hour
)

// RecordStart records starter as the starter of executionARN (one
// conditional PutItem); recording the same starter again is a no-op.
func (s *Store) RecordStart(ctx context.Context, executionARN, starter string) error {
	key := map[string]types.AttributeValue{tabledef.AttrPK: str(startPrefix + executionARN), tabledef.AttrSK: str(startSK)}
	item := map[string]types.AttributeValue{tabledef.AttrPK: key[tabledef.AttrPK], tabledef.AttrSK: key[tabledef.AttrSK],
		"starter": str(starter), tabledef.AttrExpiresAt: tabledef.N(s.now().Add(StartRetention).Unix())}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR starter = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(starter)}})
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put start of %s: %w", executionARN, err)
	}
	return nil
}

// RecordChildStart records, for a child execution a parent's workflow
// step is about to start, the parent's verified starter, the parent's run
// id and the digest of the child's input (one conditional PutItem on the
// child's start item). Recording the same again is a no-op (a retried
// Task); anything else already recorded for that ARN is
// review.ErrStartConflict.
func (s *Store) RecordChildStart(ctx context.Context, childARN string, rec review.ChildRecord) error {
	key := map[string]types.AttributeValue{tabledef.AttrPK: str(startPrefix + childARN), tabledef.AttrSK: str(startSK)}
	item := map[string]types.AttributeValue{tabledef.AttrPK: key[tabledef.AttrPK], tabledef.AttrSK: key[tabledef.AttrSK],
		"starter": str(rec.Starter), "parent_run_id": str(rec.ParentRunID), "input_digest": str(rec.InputDigest),
		"state_machine_arn": str(rec.StateMachineARN), tabledef.AttrExpiresAt: tabledef.N(s.now().Add(StartRetention).Unix())}
	// A retried record Task writes the same again; once a child took the
	// record (child_started_at), nothing replaces it.
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk) OR (starter = :s AND parent_run_id = :p AND input_digest = :d AND state_machine_arn = :m AND attribute_not_exists(child_started_at))"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": str(rec.Starter), ":p": str(rec.ParentRunID), ":d": str(rec.InputDigest), ":m": str(rec.StateMachineARN)}})
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
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tabledef.AttrPK: str(startPrefix + childARN), tabledef.AttrSK: str(startSK)}})
	if err != nil {
		return review.ChildRecord{}, fmt.Errorf("get start of %s: %w", childARN, err)
	}
	rec := review.ChildRecord{Starter: getS(out.Item, "starter"), ParentRunID: getS(out.Item, "parent_run_id"), InputDigest: getS(out.Item, "input_digest"),
		StateMachineARN: getS(out.Item, "state_machine_arn"), StartedAt: getS(out.Item, "child_started_at")}
	if out.Item == nil || rec.ParentRunID == "" {
		return review.ChildRecord{}, review.ErrNotFound
	}
	return rec, nil
}

// TakeChildStart marks the parent's record for childARN as taken by the
// execution that started at startTime (one conditional UpdateItem of
// child_started_at): the same execution again (a retried start Task) is a
// no-op; any other is review.ErrChildTaken.
func (s *Store) TakeChildStart(ctx context.Context, childARN, startTime string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key:                       map[string]types.AttributeValue{tabledef.AttrPK: str(startPrefix + childARN), tabledef.AttrSK: str(startSK)},
		UpdateExpression:          aws.String("SET child_started_at = :t"),
		ConditionExpression:       aws.String("attribute_exists(parent_run_id) AND (attribute_not_exists(child_started_at) OR child_started_at = :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(startTime)}})
	if tabledef.IsConditionFailed(err) {
		return review.ErrChildTaken
	}
	if err != nil {
		return fmt.Errorf("take child start of %s: %w", childARN, err)
	}
	return nil
}

// Starter returns the recorded starter of executionARN (consistent read),
// or ErrNotFound.
func (s *Store) Starter(ctx context.Context, executionARN string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{tabledef.AttrPK: str(startPrefix + executionARN), tabledef.AttrSK: str(startSK)}})
	if err != nil {
		return "", fmt.Errorf("get start of %s: %w", executionARN, err)
	}
	if out.Item == nil {
		return "", review.ErrNotFound
	}
	return getS(out.Item, "starter"), nil
}

// ApprovalAttributes are the only attributes of a review the dispatcher
// reads (GetApproval): what CheckApproval compares, never the inputs, the
// task token, the reason or the requester. Tool roles may read no other
// (docs/infra.md).
var ApprovalAttributes = []string{
	tabledef.AttrPK, tabledef.AttrSK, "review_id", "run_id", "step", "of", "tool", "toolset_id", "input_digest", "status",
	AttrDeadline, tabledef.AttrExpiresAt, "approver", "authenticated", "decided_at", "delivery", "delivery_error",
	// An approval bound before bindings had items of their own holds its
	// binding here: it stays bound to that call (CheckApproval).
	"bound_key",
}

// approvalProjection is ApprovalAttributes as a ProjectionExpression.
var approvalProjection, approvalNames = func() (*string, map[string]string) {
	names := map[string]string{}
	parts := make([]string, len(ApprovalAttributes))
	for i, a := range ApprovalAttributes {
		n := fmt.Sprintf("#a%d", i)
		names[n], parts[i] = a, n
	}
	return aws.String(strings.Join(parts, ", ")), names
}()

// GetApproval reads the attributes of a review an approval check needs
// (ApprovalAttributes), with a consistent read; ErrNotFound when there is
// none.
func (s *Store) GetApproval(ctx context.Context, id string) (*review.Review, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: approvalProjection, ExpressionAttributeNames: approvalNames,
	})
	if err != nil {
		return nil, fmt.Errorf("get review %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("review %s: %w", id, review.ErrNotFound)
	}
	return fromItem(out.Item), nil
}

// isReviewItem reports whether an item is a review item: pk
// "REVIEW#<review id>", sk "REVIEW", and review_id the same id.
func isReviewItem(it map[string]types.AttributeValue) bool {
	id, ok := strings.CutPrefix(getS(it, tabledef.AttrPK), "REVIEW#")
	return ok && review.ValidID(id) && getS(it, tabledef.AttrSK) == reviewSK && getS(it, "review_id") == id
}
