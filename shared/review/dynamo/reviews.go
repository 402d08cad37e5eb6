package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// AttrDeadline is a review's own end, in epoch seconds: no decision and
// no use of its approval after it. The item's TTL (expires_at) is the
// deadline while the review is pending and the ledger's retention once it
// is decided, so that a decided review lives as long as the rows of the
// calls it authorised.
const AttrDeadline = "deadline"

// reviewAttr is the expression name of a review item's attribute n (table.Review).
func reviewAttr(n string) expression.NameBuilder { return attr(table.Review, n) }

// beforeDeadline is the condition that the review's deadline has not
// passed at nowS (epoch seconds), for items written before deadline
// existed too, whose expires_at was the deadline:
// deadline > now OR (attribute_not_exists(deadline) AND expires_at > now).
func beforeDeadline(nowS int64) expression.ConditionBuilder {
	now := expression.Value(nowS)
	return reviewAttr(AttrDeadline).GreaterThan(now).
		Or(expression.AttributeNotExists(reviewAttr(AttrDeadline)).And(reviewAttr(table.ExpiresAt).GreaterThan(now)))
}

// asLeased is the condition that the review's decision is being delivered
// under the lease read as leaseUntil: delivery = DELIVERING AND
// delivery_lease_until = leaseUntil (unix ms).
func asLeased(leaseUntil time.Time) expression.ConditionBuilder {
	return reviewAttr("delivery").Equal(expression.Value(review.Delivering)).
		And(reviewAttr("delivery_lease_until").Equal(expression.Value(leaseUntil.UnixMilli())))
}

// askedItem is what a review asks, as Create writes it (table.Review;
// the access CreateReviews): every attribute the pending review has,
// mapped with the SDK's attributevalue. Times are review.TimeFormat
// strings; epoch seconds and byte counts are numbers.
type askedItem struct {
	PK             string   `dynamodbav:"pk"` // REVIEW#<review id>
	SK             string   `dynamodbav:"sk"` // "REVIEW"
	ReviewID       string   `dynamodbav:"review_id"`
	RunID          string   `dynamodbav:"run_id"`
	Step           string   `dynamodbav:"step"`
	Of             string   `dynamodbav:"of"`
	Tool           string   `dynamodbav:"tool"`
	ToolsetID      string   `dynamodbav:"toolset_id"`
	Reviewers      []string `dynamodbav:"reviewers"` // a list, empty when anyone may decide
	Input          string   `dynamodbav:"input"`     // the RFC 8785 JSON under review
	InputDigest    string   `dynamodbav:"input_digest"`
	InputBytes     int      `dynamodbav:"input_bytes"`
	TimeoutSeconds int      `dynamodbav:"timeout_seconds"`
	Requester      string   `dynamodbav:"requester"`
	// TaskToken is absent on the direct lane.
	TaskToken string        `dynamodbav:"task_token,omitempty"`
	Status    review.Status `dynamodbav:"status"`
	CreatedAt string        `dynamodbav:"created_at"` // review.TimeFormat
	// Deadline is the review's own end, epoch seconds (AttrDeadline); nil
	// in items written before it existed, whose ExpiresAt was the deadline.
	Deadline *int64 `dynamodbav:"deadline,omitempty"`
	// ExpiresAt is the item's TTL, epoch seconds: the deadline while the
	// review is pending, the ledger's retention once it is decided.
	ExpiresAt int64  `dynamodbav:"expires_at"`
	ListPK    string `dynamodbav:"review_list_pk"` // REVIEWS#<status>
	ListSK    string `dynamodbav:"review_list_sk"` // "<created_at>#<review id>"
	// Traceparent is the review's place in its run's trace (W3C
	// traceparent, review.Review.PlaceInTrace); absent in items written
	// before it.
	Traceparent string `dynamodbav:"traceparent,omitempty"`
	// Kind is "show" for a review that shows values (tool.ReviewShow);
	// absent for a call review (and in items written before kinds).
	Kind string `dynamodbav:"kind,omitempty"`
	// Ask is the question's JSON Schema as compact JSON, Editable the
	// members the reviewer may replace; both absent when none.
	Ask      string   `dynamodbav:"ask,omitempty"`
	Editable []string `dynamodbav:"editable,omitempty"`
	// OriginHolders are an inbound or scheduled run's origin holders
	// (review.Review.OriginHolders); absent for any other run and in
	// items written before they existed.
	OriginHolders []string `dynamodbav:"origin_holders,omitempty"`
}

// reviewItem is a review's item as the reads map it (Get, GetApproval,
// List): what was asked and, once decided, what review-decision wrote
// (Decide, ClaimDelivery, FinishDelivery, NoteSelfApproval), and the
// binding of an approval bound before bindings had items of their own.
// A read with a projection leaves the rest zero.
type reviewItem struct {
	askedItem
	Approver      string `dynamodbav:"approver"`
	Authenticated bool   `dynamodbav:"authenticated"`
	DecidedAt     string `dynamodbav:"decided_at"` // review.TimeFormat
	Reason        string `dynamodbav:"reason"`
	DecisionToken string `dynamodbav:"decision_token"` // 32 hex digits
	// Delivery is a review.Delivery; DeliveryLeaseUntil unix ms (0 when
	// released; Go's zero time, -62135596800000, for NO_TASK).
	Delivery             review.Delivery `dynamodbav:"delivery"`
	DeliveryLeaseUntil   int64           `dynamodbav:"delivery_lease_until"`
	DeliveredAt          string          `dynamodbav:"delivered_at"` // review.TimeFormat
	DeliveryError        string          `dynamodbav:"delivery_error"`
	SelfApprovalRefusals int             `dynamodbav:"self_approval_refusals"`
	// BoundKey and BoundAt are a legacy binding (before binding items).
	BoundKey string `dynamodbav:"bound_key"`
	BoundAt  string `dynamodbav:"bound_at"` // review.TimeFormat
	// Answer (JSON), Edits (an RFC 8785 JSON object) and ApprovedDigest
	// (the digest of the input with the edits merged) are an approval's,
	// absent when it had none (Decide).
	Answer         string `dynamodbav:"answer"`
	Edits          string `dynamodbav:"edits"`
	ApprovedDigest string `dynamodbav:"approved_digest"`
}

// asked is the item Create writes for pending review r, created at now
// (UTC, whole ms). Its deadline and its expires_at are both r.ExpiresAt:
// the deadline is the review's own end (no decision, no use of its
// approval after it), expires_at only the item's TTL, which Decide moves
// to the ledger's retention.
func asked(r *review.Review, now time.Time) askedItem {
	deadline := r.ExpiresAt.Unix()
	return askedItem{
		PK: table.Review.Key(r.ID), SK: table.Review.SKValue, ReviewID: r.ID, RunID: r.RunID, Step: r.Step, Of: r.Of,
		Tool: r.Tool, ToolsetID: r.ToolsetID, Reviewers: append([]string{}, r.Reviewers...), Input: string(r.Input),
		InputDigest: r.InputDigest, InputBytes: len(r.Input), TimeoutSeconds: r.TimeoutSeconds, Requester: r.Requester,
		TaskToken: r.TaskToken, Status: review.Pending, CreatedAt: review.FormatTime(now), Deadline: &deadline,
		ExpiresAt: deadline, ListPK: listPK(review.Pending), ListSK: review.FormatTime(now) + "#" + r.ID,
		Traceparent: r.Traceparent, Kind: writtenKind(r.Kind), Ask: string(r.Ask), Editable: r.Editable,
		OriginHolders: nonEmpty(r.OriginHolders),
	}
}

// writtenKind is the kind attribute a review item of kind k holds:
// "show" for tool.ReviewShow, and none ("": absent) for a call review,
// whose item is then as before kinds existed.
func writtenKind(k tool.ReviewKind) string {
	if k == tool.ReviewShow {
		return string(k)
	}
	return ""
}

// decodeReview maps a review's item with the SDK's attributevalue: an
// attribute its field cannot hold (a string where a number or a bool is
// read) is an error, never a zero value; a number read into a string
// field is its digits.
func decodeReview(it map[string]types.AttributeValue) (*review.Review, error) {
	var i reviewItem
	if err := attributevalue.UnmarshalMap(it, &i); err != nil {
		return nil, fmt.Errorf("a review's item: %w", err)
	}
	return i.toReview(), nil
}

// toReview is the review the item holds: ExpiresAt its deadline (expires_at
// for an item written before deadline existed), absent times zero, an
// absent lease 0 ms.
func (i *reviewItem) toReview() *review.Review {
	deadline := i.ExpiresAt
	if i.Deadline != nil {
		deadline = *i.Deadline
	}
	r := &review.Review{
		ID: i.ReviewID, RunID: i.RunID, Step: i.Step, Of: i.Of, Tool: i.Tool, ToolsetID: i.ToolsetID,
		InputDigest: i.InputDigest, TaskToken: i.TaskToken, Requester: i.Requester, SelfApprovalRefusals: i.SelfApprovalRefusals,
		TimeoutSeconds: i.TimeoutSeconds, Status: i.Status, CreatedAt: parseTime(i.CreatedAt), ExpiresAt: time.Unix(deadline, 0).UTC(),
		Approver: i.Approver, Authenticated: i.Authenticated, DecidedAt: parseTime(i.DecidedAt), Reason: i.Reason,
		Delivery: i.Delivery, DeliveryError: i.DeliveryError, DeliveryLeaseUntil: time.UnixMilli(i.DeliveryLeaseUntil),
		BoundKey: i.BoundKey, BoundAt: parseTime(i.BoundAt), DecisionToken: i.DecisionToken, Traceparent: i.Traceparent,
		Kind: tool.ReviewKind(i.Kind), Editable: i.Editable, ApprovedDigest: i.ApprovedDigest,
		OriginHolders: i.OriginHolders,
	}
	switch {
	case r.Kind != "":
	case i.Of == "" && i.Tool == "" && i.ReviewID != "":
		// The reviews-by-status index projects no kind: a review that
		// names no tool step and no tool is one that shows values (a
		// call review names both, review.New).
		r.Kind = tool.ReviewShow
	default:
		r.Kind = tool.ReviewOfCall
	}
	if i.Input != "" {
		r.Input = json.RawMessage(i.Input)
	}
	for _, a := range []struct {
		s   string
		dst *json.RawMessage
	}{{i.Ask, &r.Ask}, {i.Answer, &r.Answer}, {i.Edits, &r.Edits}} {
		if a.s != "" {
			*a.dst = json.RawMessage(a.s)
		}
	}
	if len(i.Reviewers) > 0 {
		r.Reviewers = i.Reviewers
	}
	return r
}

// key is the key of review id's item (table.Review): pk
// REVIEW#<review id>, sk "REVIEW".
func key(id string) map[string]types.AttributeValue { return keyOf(table.Review, id) }

// listPK is the reviews-by-status partition key of the reviews of status
// st: REVIEWS#<status> (table.ReviewsByStatus).
func listPK(st review.Status) string { return table.ReviewsByStatus.PKPrefix + string(st) }

// The reviews-by-status index (docs/reviews.md) lists reviews without a
// Scan. Only review items carry its keys, so the index holds nothing else;
// it projects the attributes a listing shows, never a review's inputs,
// reason or task token. These are the declaration's
// (table.ReviewsByStatus), named here for the code that names them
// through this package.
var (
	IndexName  = table.ReviewsByStatus.Name
	AttrListPK = table.ReviewsByStatus.PK // REVIEWS#<status>
	AttrListSK = table.ReviewsByStatus.SK // "<created_at, RFC 3339 UTC ms>#<review_id>"
)

// parseTime reads a review.TimeFormat time; the zero time when s is
// empty or not one.
func parseTime(s string) time.Time {
	t, err := time.Parse(review.TimeFormat, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Create stores a pending review (one conditional PutItem): CreatedAt is
// now, ExpiresAt CreatedAt + TimeoutSeconds. When a review with r's id
// exists already, it is returned with created false; the caller compares.
func (s *Store) Create(ctx context.Context, r *review.Review) (created bool, existing *review.Review, err error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	r.Status, r.CreatedAt = review.Pending, now
	r.ExpiresAt = time.Unix(now.Unix()+int64(r.TimeoutSeconds), 0).UTC()
	item, err := attributevalue.MarshalMap(asked(r, now))
	if err != nil {
		return false, nil, fmt.Errorf("review %s's item: %w", r.ID, err)
	}
	err = s.put(ctx, item, notExists(), "")
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
	r, err := decodeReview(out.Item)
	if err != nil {
		return nil, fmt.Errorf("read review %s: %w", id, err)
	}
	return r, nil
}

// Decide records a verdict on a review read as r (one conditional
// UpdateItem): only while it is PENDING and unexpired. A review with a task
// token is left DELIVERING, its delivery leased to this caller for lease;
// one without is NO_TASK. It reports applied false, with the review as it
// now is, when the condition failed (decided meanwhile, or expired).
func (s *Store) Decide(ctx context.Context, r *review.Review, v review.Verdict, approver string, authenticated bool, reason string, lease time.Duration) (applied bool, cur *review.Review, err error) {
	return s.DecideWith(ctx, r, v, approver, authenticated, reason, Approval{}, lease)
}

// Approval is what an approval records besides its verdict
// (docs/reviews.md): the answer (compact JSON), the edits (an RFC 8785
// JSON object) and the digest of the input with the edits merged
// (review.CheckAnswer, review.CheckEdits); each empty when none, and then
// not written.
type Approval struct {
	Answer, Edits  json.RawMessage
	ApprovedDigest string
}

// DecideWith is Decide, recording a's answer, edits and approved digest
// in the same UpdateItem (attributes answer, edits, approved_digest).
func (s *Store) DecideWith(ctx context.Context, r *review.Review, v review.Verdict, approver string, authenticated bool, reason string, a Approval, lease time.Duration) (applied bool, cur *review.Review, err error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	token := newToken()
	delivery, leaseUntil := review.NoTask, time.Time{}
	if r.TaskToken != "" {
		delivery, leaseUntil = review.Delivering, now.Add(lease)
	}
	st := review.StatusOf(v)
	// Only while pending and before the deadline; the item's TTL moves to
	// the ledger's retention, the deadline stays.
	cond := reviewAttr("status").Equal(expression.Value(review.Pending)).And(beforeDeadline(now.Unix()))
	u := expression.Set(reviewAttr("status"), expression.Value(st)).
		Set(reviewAttr(AttrListPK), expression.Value(listPK(st))).
		Set(reviewAttr("approver"), expression.Value(approver)).
		Set(reviewAttr("authenticated"), expression.Value(authenticated)).
		Set(reviewAttr("decided_at"), expression.Value(review.FormatTime(now))).
		Set(reviewAttr("reason"), expression.Value(reason)).
		Set(reviewAttr("delivery"), expression.Value(delivery)).
		Set(reviewAttr("delivery_lease_until"), expression.Value(leaseUntil.UnixMilli())).
		Set(reviewAttr("decision_token"), expression.Value(token)).
		Set(reviewAttr(table.ExpiresAt), expression.Value(now.Add(s.retention).Unix()))
	if len(a.Answer) > 0 {
		u = u.Set(reviewAttr("answer"), expression.Value(string(a.Answer)))
	}
	if len(a.Edits) > 0 {
		u = u.Set(reviewAttr("edits"), expression.Value(string(a.Edits))).
			Set(reviewAttr("approved_digest"), expression.Value(a.ApprovedDigest))
	}
	err = s.update(ctx, key(r.ID), u, cond)
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
	u := expression.Set(reviewAttr("delivery_lease_until"), expression.Value(until.UnixMilli()))
	err := s.update(ctx, key(r.ID), u, asLeased(r.DeliveryLeaseUntil))
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
	// Releasing sets the lease to 0 ms; an end sets delivery and
	// delivered_at, and delivery_error when Step Functions named one.
	u := expression.Set(reviewAttr("delivery_lease_until"), expression.Value(int64(0)))
	if d != review.Delivering {
		u = expression.Set(reviewAttr("delivery"), expression.Value(d)).Set(reviewAttr("delivered_at"), expression.Value(review.FormatTime(s.now())))
		if errName != "" {
			u = u.Set(reviewAttr("delivery_error"), expression.Value(errName))
		}
	}
	err := s.update(ctx, key(r.ID), u, asLeased(r.DeliveryLeaseUntil))
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

// List returns the reviews with the given status, oldest first, through
// the reviews-by-status index (eventually consistent; no Scan). The
// reviews carry only the projected attributes: no Input, Reason or
// TaskToken. At most MaxList are returned.
//
// keep, when not nil, selects the reviews to return; only those count
// toward MaxList, so that older reviews the caller may not see never hide
// newer ones it may.
func (s *Store) List(ctx context.Context, st review.Status, keep func(*review.Review) bool) ([]*review.Review, error) {
	// The index's partition key is the status's: review_list_pk =
	// REVIEWS#<status>; the index's own projection.
	ix := table.ReviewsByStatus
	ex, err := expression.NewBuilder().WithKeyCondition(expression.Key(ix.PK).Equal(expression.Value(listPK(st)))).Build()
	if err != nil {
		return nil, fmt.Errorf("list %s reviews: build the key condition: %w", st, err)
	}
	var out []*review.Review
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(ix.Name), KeyConditionExpression: ex.KeyCondition(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list %s reviews: %w", st, err)
		}
		for _, it := range res.Items {
			// Only review items are reviews: an item of another kind that
			// carries the index's attributes (written by a role that may
			// write its own items whole) is skipped, never listed.
			id, ok := reviewItemID(it)
			if !ok {
				continue
			}
			r, err := decodeReview(it)
			if err != nil {
				return nil, fmt.Errorf("list %s reviews: review %s: %w", st, id, err)
			}
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
	// ADD self_approval_refusals 1, on an existing review only.
	u := expression.Add(reviewAttr("self_approval_refusals"), expression.Value(1))
	if err := s.update(ctx, key(id), u, expression.AttributeExists(expression.Name(table.PK))); err != nil {
		return fmt.Errorf("update review %s: %w", id, err)
	}
	return nil
}

// ApprovalAttributes are the only attributes of a review the dispatcher
// reads (GetApproval): the declaration's table.ApprovalAttributes, what
// CheckApproval compares, never the inputs, the task token, the reason or
// the requester. Tool roles may read no other (docs/infra.md). bound_key
// is among them: an approval bound before bindings had items of their own
// holds its binding there, and stays bound to that call.
var ApprovalAttributes = table.ApprovalAttributes

// approvalProjection is ApprovalAttributes as a ProjectionExpression,
// built once.
var approvalProjection = func() expression.Expression {
	names := make([]expression.NameBuilder, len(ApprovalAttributes))
	for i, a := range ApprovalAttributes {
		names[i] = reviewAttr(a)
	}
	ex, err := expression.NewBuilder().WithProjection(expression.NamesList(names[0], names[1:]...)).Build()
	if err != nil {
		panic("dynamo: build the approval projection: " + err.Error())
	}
	return ex
}()

// GetApproval reads the attributes of a review an approval check needs
// (ApprovalAttributes), with a consistent read; ErrNotFound when there is
// none.
func (s *Store) GetApproval(ctx context.Context, id string) (*review.Review, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: approvalProjection.Projection(), ExpressionAttributeNames: approvalProjection.Names(),
	})
	if err != nil {
		return nil, fmt.Errorf("get review %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("review %s: %w", id, review.ErrNotFound)
	}
	r, err := decodeReview(out.Item)
	if err != nil {
		return nil, fmt.Errorf("read review %s: %w", id, err)
	}
	return r, nil
}

// reviewItemID returns the review id of an item, and whether it is a
// review item at all (table.Review): pk REVIEW#<review id>, sk "REVIEW",
// and review_id the same id, each a string.
func reviewItemID(it map[string]types.AttributeValue) (string, bool) {
	var k struct {
		PK       string `dynamodbav:"pk"`
		SK       string `dynamodbav:"sk"`
		ReviewID string `dynamodbav:"review_id"`
	}
	if attributevalue.UnmarshalMap(it, &k) != nil {
		return "", false
	}
	id, ok := table.Review.ID(k.PK)
	return id, ok && review.ValidID(id) && k.SK == table.Review.SKValue && k.ReviewID == id
}
