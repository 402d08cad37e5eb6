package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
)

// Binding items (table.Binding) hold which call an approval authorised,
// apart from the review: pk BIND#<review_id>, sk "BIND". A tool function
// writes only these (and reads reviews through GetApproval), never a
// review item: an UpdateItem on a review, even one naming only the
// binding's attributes, could return the whole review when its condition
// fails (ReturnValuesOnConditionCheckFailure, which no IAM condition key
// governs).
func bindKey(id string) map[string]types.AttributeValue { return keyOf(table.Binding, id) }

// bindingItem is a binding item (table.Binding; the access BindApprovals),
// mapped with the SDK's attributevalue.
type bindingItem struct {
	PK       string `dynamodbav:"pk"` // BIND#<review id>
	SK       string `dynamodbav:"sk"` // "BIND"
	BoundKey string `dynamodbav:"bound_key"`
	BoundAt  string `dynamodbav:"bound_at"` // review.TimeFormat
	// ExpiresAt is the item's TTL, epoch seconds: the ledger's retention,
	// as long as the rows of the call it bound.
	ExpiresAt int64 `dynamodbav:"expires_at"`
	// MAC is the binding function's seal over the review id and the bound
	// key (bindingSeal); "" in the previous layout, and from a store
	// without a key.
	MAC string `dynamodbav:"mac,omitempty"`
}

// bindingSeal is the seal of a binding of review id to key under k.
func bindingSeal(k seal.Key, id, key string) string { return k.Sum(seal.Binding, id, key) }

// decodeBinding maps a binding item; nil maps to the zero binding (none).
func decodeBinding(it map[string]types.AttributeValue) (bindingItem, error) {
	var b bindingItem
	if err := attributevalue.UnmarshalMap(it, &b); err != nil {
		return bindingItem{}, fmt.Errorf("a binding item: %w", err)
	}
	return b, nil
}

// Bind binds an approval read as r (and checked: CheckApproval) to the
// idempotency key of the one call it authorises: one conditional PutItem
// of its binding item (attribute_not_exists(pk)). It reports false, with
// r's BoundKey set to the key bound first, when another call bound it; a
// binding to key itself (a retry, or a write whose answer was lost)
// counts as bound. The binding it wrote is sealed with the store's key
// (WithMAC) and reported seal.Valid; a store without a key writes none
// and reports seal.Absent, as a reader would find it. The one it found
// is checked (review.Review.BindingSeal of the review it returns), and
// the caller decides (seal.Accept).
func (s *Store) Bind(ctx context.Context, r *review.Review, idemKey string) (bool, *review.Review, error) {
	now := s.now()
	b := bindingItem{PK: table.Binding.Key(r.ID), SK: table.Binding.SKValue, BoundKey: idemKey,
		BoundAt: review.FormatTime(now), ExpiresAt: now.Add(s.retention).Unix()}
	written := seal.Absent
	if s.mac.Valid() {
		b.MAC, written = bindingSeal(s.mac, r.ID, idemKey), seal.Valid
	}
	item, err := attributevalue.MarshalMap(b)
	if err != nil {
		return false, nil, fmt.Errorf("review %s's binding item: %w", r.ID, err)
	}
	// Only the first binding is written; when another is there, DynamoDB
	// answers with it (ALL_OLD).
	err = s.put(ctx, item, notExists(), types.ReturnValuesOnConditionCheckFailureAllOld)
	if err == nil {
		r.BoundKey, r.BoundAt, r.BindingSeal = idemKey, now.UTC().Truncate(time.Millisecond), written
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
	found, err := decodeBinding(old)
	if err != nil {
		return false, nil, fmt.Errorf("bind review %s: %w", r.ID, err)
	}
	cur := *r
	cur.BoundKey, cur.BoundAt = found.BoundKey, parseTime(found.BoundAt)
	cur.BindingSeal = s.mac.Check(found.MAC, seal.Binding, r.ID, found.BoundKey)
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
	b, err := decodeBinding(it)
	if err != nil {
		return "", fmt.Errorf("read the binding of review %s: %w", id, err)
	}
	return b.BoundKey, nil
}
