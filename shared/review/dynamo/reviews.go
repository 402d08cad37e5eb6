package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
)

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

// key is the key of review id's item (table.Review): pk
// "REVIEW#<review id>", sk "REVIEW".
func key(id string) map[string]types.AttributeValue { return keyOf(table.Review, id) }

// listPK is the reviews-by-status partition key of the reviews of status
// st: "REVIEWS#<status>" (table.ReviewsByStatus).
func listPK(st review.Status) string { return table.ReviewsByStatus.PKPrefix + string(st) }

// The reviews-by-status index (docs/reviews.md) lists reviews without a
// Scan. Only review items carry its keys, so the index holds nothing else;
// it projects the attributes a listing shows, never a review's inputs,
// reason or task token. These are the declaration's
// (table.ReviewsByStatus), named here for the code that names them
// through this package.
var (
	IndexName  = table.ReviewsByStatus.Name
	AttrListPK = table.ReviewsByStatus.PK // "REVIEWS#<status>"
	AttrListSK = table.ReviewsByStatus.SK // "<created_at, RFC 3339 UTC ms>#<review_id>"
)

func getTime(it map[string]types.AttributeValue, k string) time.Time {
	t, err := time.Parse(review.TimeFormat, getS(it, k))
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

// ApprovalAttributes are the only attributes of a review the dispatcher
// reads (GetApproval): the declaration's table.ApprovalAttributes, what
// CheckApproval compares, never the inputs, the task token, the reason or
// the requester. Tool roles may read no other (docs/infra.md). bound_key
// is among them: an approval bound before bindings had items of their own
// holds its binding there, and stays bound to that call.
var ApprovalAttributes = table.ApprovalAttributes

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

// isReviewItem reports whether an item is a review item (table.Review):
// pk "REVIEW#<review id>", sk "REVIEW", and review_id the same id.
func isReviewItem(it map[string]types.AttributeValue) bool {
	id, ok := table.Review.ID(getS(it, table.PK))
	return ok && review.ValidID(id) && getS(it, table.SK) == table.Review.SKValue && getS(it, "review_id") == id
}
