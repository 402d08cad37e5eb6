package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/table"
)

// A subscription's status.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// Subscription is a webhook subscription as stored: where to POST which
// events, and its signing secrets, sealed.
type Subscription struct {
	// ID is "sub_" and 26 lower-case base32 characters (NewSubscriptionID).
	ID string
	// URL is the endpoint, checked by the caller (webhook.EndpointRules)
	// before Subscribe.
	URL string
	// Events are the type patterns it receives (webhook.ParsePatterns):
	// at least one.
	Events []string
	// Solution, when set, limits it to that Solution's events.
	Solution string
	// Status is StatusActive (Subscribe's default) or StatusDisabled, and
	// DisabledReason why ("410 Gone", an admin's reason).
	Status, DisabledReason string
	// CreatedBy is the verified subscriber's ARN.
	CreatedBy string
	// CreatedAt and UpdatedAt are whole seconds, UTC; Subscribe stamps
	// them when zero.
	CreatedAt, UpdatedAt time.Time
	// Version is 1 at Subscribe, then one more at each Rotate and Disable.
	Version int64
	// Secrets are the signing secrets, sealed (SealSecret), the current
	// one (RetiresAt zero) last.
	Secrets []SealedSecret
}

// SealedSecret is one signing secret as stored: sealed, when it was
// created, and when it stops signing (zero: it is the current one).
type SealedSecret struct {
	vault.Sealed
	CreatedAt time.Time
	// RetiresAt is when a rotated-out secret stops signing; zero: current.
	RetiresAt time.Time
}

// Signing returns the secrets that still sign at now: the current one and
// every rotated-out one whose RetiresAt is after now, in stored order.
func (sub Subscription) Signing(now time.Time) []SealedSecret {
	var out []SealedSecret
	for _, sec := range sub.Secrets {
		if sec.RetiresAt.IsZero() || sec.RetiresAt.After(now) {
			out = append(out, sec)
		}
	}
	return out
}

// NewSubscriptionID returns a fresh subscription id: "sub_" and 16
// random bytes in 26 lower-case base32 characters, no padding.
func NewSubscriptionID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new subscription id: %w", err)
	}
	return "sub_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

// subscriptionItem is a table.WebhookSubscription item as written and
// read.
type subscriptionItem struct {
	PK             string       `dynamodbav:"pk"`
	SK             string       `dynamodbav:"sk"`
	URL            string       `dynamodbav:"url"`
	Events         []string     `dynamodbav:"events"`
	Solution       string       `dynamodbav:"solution,omitempty"`
	Status         string       `dynamodbav:"status"`
	DisabledReason string       `dynamodbav:"disabled_reason,omitempty"`
	CreatedAt      string       `dynamodbav:"created_at"`
	CreatedBy      string       `dynamodbav:"created_by,omitempty"`
	UpdatedAt      string       `dynamodbav:"updated_at"`
	Version        int64        `dynamodbav:"version"`
	Secrets        []secretItem `dynamodbav:"secrets"`
}

// secretItem is one member of a subscription's secrets list.
type secretItem struct {
	CT        []byte `dynamodbav:"ct"`
	Nonce     []byte `dynamodbav:"nonce"`
	EDK       []byte `dynamodbav:"edk"`
	KeyID     string `dynamodbav:"key_id"`
	CreatedAt string `dynamodbav:"created_at"`
	RetiresAt string `dynamodbav:"retires_at,omitempty"`
}

func secretItems(secrets []SealedSecret) []secretItem {
	out := make([]secretItem, len(secrets))
	for i, sec := range secrets {
		out[i] = secretItem{CT: sec.Ciphertext, Nonce: sec.Nonce, EDK: sec.EncryptedKey, KeyID: sec.KeyID, CreatedAt: stamp(sec.CreatedAt)}
		if !sec.RetiresAt.IsZero() {
			out[i].RetiresAt = stamp(sec.RetiresAt)
		}
	}
	return out
}

func (it subscriptionItem) subscription() (Subscription, error) {
	id, ok := strings.CutPrefix(it.SK, table.WebhookSubscriptionSKPrefix)
	if !ok || it.PK != subscriptionsKey() {
		return Subscription{}, fmt.Errorf("item %s/%s is not a subscription", it.PK, it.SK)
	}
	sub := Subscription{ID: id, URL: it.URL, Events: it.Events, Solution: it.Solution, Status: it.Status,
		DisabledReason: it.DisabledReason, CreatedBy: it.CreatedBy, CreatedAt: parseStamp(it.CreatedAt),
		UpdatedAt: parseStamp(it.UpdatedAt), Version: it.Version}
	for _, sec := range it.Secrets {
		sub.Secrets = append(sub.Secrets, SealedSecret{
			Sealed:    vault.Sealed{Ciphertext: sec.CT, Nonce: sec.Nonce, EncryptedKey: sec.EDK, KeyID: sec.KeyID},
			CreatedAt: parseStamp(sec.CreatedAt), RetiresAt: parseStamp(sec.RetiresAt),
		})
	}
	return sub, nil
}

// subscriptionsKey is the one partition of every subscription.
func subscriptionsKey() string { return table.WebhookSubscription.Key(table.WebhookSubscriptionsID) }

func subscriptionKey(id string) map[string]types.AttributeValue {
	return key(subscriptionsKey(), table.WebhookSubscriptionSK(id))
}

// checkSealed refuses a sealed secret that could not open.
func checkSealed(sec SealedSecret) error {
	if len(sec.Ciphertext) == 0 || len(sec.Nonce) == 0 || len(sec.EncryptedKey) == 0 || sec.KeyID == "" {
		return errors.New("a sealed secret is incomplete")
	}
	return nil
}

// Subscribe stores sub as a new subscription: one PutItem conditional on
// attribute_not_exists(pk), so an id already taken is ErrExists. sub needs
// an id (NewSubscriptionID), a URL, at least one event pattern, and
// exactly one current secret (RetiresAt zero), which must be its last.
// Zero fields take their defaults: Status StatusActive, CreatedAt now,
// UpdatedAt CreatedAt, Version 1.
func (st *Store) Subscribe(ctx context.Context, sub Subscription) error {
	if err := checkSubscriptionID(sub.ID); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	switch {
	case sub.URL == "":
		return fmt.Errorf("subscribe %s: no URL", sub.ID)
	case len(sub.Events) == 0:
		return fmt.Errorf("subscribe %s: no event patterns", sub.ID)
	case len(sub.Secrets) == 0 || !sub.Secrets[len(sub.Secrets)-1].RetiresAt.IsZero():
		return fmt.Errorf("subscribe %s: the last secret must be the current one (no retires_at)", sub.ID)
	}
	for _, sec := range sub.Secrets {
		if err := checkSealed(sec); err != nil {
			return fmt.Errorf("subscribe %s: %w", sub.ID, err)
		}
	}
	if sub.Status == "" {
		sub.Status = StatusActive
	}
	if sub.Status != StatusActive && sub.Status != StatusDisabled {
		return fmt.Errorf("subscribe %s: status %q: want %s or %s", sub.ID, sub.Status, StatusActive, StatusDisabled)
	}
	if sub.CreatedAt.IsZero() {
		sub.CreatedAt = st.now()
	}
	if sub.UpdatedAt.IsZero() {
		sub.UpdatedAt = sub.CreatedAt
	}
	if sub.Version == 0 {
		sub.Version = 1
	}
	for i := range sub.Secrets {
		if sub.Secrets[i].CreatedAt.IsZero() {
			sub.Secrets[i].CreatedAt = sub.CreatedAt
		}
	}
	item, err := attributevalue.MarshalMap(subscriptionItem{
		PK: subscriptionsKey(), SK: table.WebhookSubscriptionSK(sub.ID), URL: sub.URL, Events: sub.Events, Solution: sub.Solution,
		Status: sub.Status, DisabledReason: sub.DisabledReason, CreatedAt: stamp(sub.CreatedAt), CreatedBy: sub.CreatedBy,
		UpdatedAt: stamp(sub.UpdatedAt), Version: sub.Version, Secrets: secretItems(sub.Secrets),
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", sub.ID, err)
	}
	_, err = st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("subscribe %s: %w", sub.ID, ErrExists)
	case err != nil:
		return fmt.Errorf("subscribe %s: %w", sub.ID, err)
	}
	return nil
}

// Subscriptions returns every subscription, active and disabled, in id
// order: one consistent Query of their partition, paged.
func (st *Store) Subscriptions(ctx context.Context) ([]Subscription, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(st.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :sk)"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK, "#sk": table.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(subscriptionsKey()), ":sk": s(table.WebhookSubscriptionSKPrefix),
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []Subscription
	for {
		page, err := st.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list webhook subscriptions: %w", err)
		}
		for _, raw := range page.Items {
			var it subscriptionItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("list webhook subscriptions: %w", err)
			}
			sub, err := it.subscription()
			if err != nil {
				return nil, fmt.Errorf("list webhook subscriptions: %w", err)
			}
			out = append(out, sub)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Subscription returns the subscription id names (a consistent GetItem),
// and false when there is none.
func (st *Store) Subscription(ctx context.Context, id string) (Subscription, bool, error) {
	if err := checkSubscriptionID(id); err != nil {
		return Subscription{}, false, fmt.Errorf("read subscription: %w", err)
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.table), Key: subscriptionKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Subscription{}, false, fmt.Errorf("read subscription %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return Subscription{}, false, nil
	}
	var it subscriptionItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Subscription{}, false, fmt.Errorf("read subscription %s: %w", id, err)
	}
	sub, err := it.subscription()
	if err != nil {
		return Subscription{}, false, fmt.Errorf("read subscription %s: %w", id, err)
	}
	return sub, true, nil
}

// Rotate makes next the subscription's current secret: the one current
// until now keeps signing until now+grace (its retires_at; with grace 0
// or less it is dropped at once), every secret rotated out before is
// dropped, even within its grace (at most two secrets sign), and next is
// appended. It reads the
// subscription (GetItem) and writes its secrets with one UpdateItem
// conditional on version, the version the caller read: a version that
// is not the stored one, before or at the write, is ErrConflict; no
// subscription is ErrNotFound. The grace is webhook.RotationGrace by
// default (docs/webhooks.md): Standard Webhooks lets a signature header
// carry several signatures, so a receiver verifies with either secret
// meanwhile.
func (st *Store) Rotate(ctx context.Context, id string, next SealedSecret, grace time.Duration, version int64) error {
	if err := checkSealed(next); err != nil {
		return fmt.Errorf("rotate secret of %s: %w", id, err)
	}
	if !next.RetiresAt.IsZero() {
		return fmt.Errorf("rotate secret of %s: the new secret has a retires_at", id)
	}
	cur, ok, err := st.Subscription(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("rotate secret: %w", err)
	case !ok:
		return fmt.Errorf("rotate secret of %s: %w", id, ErrNotFound)
	case cur.Version != version:
		return fmt.Errorf("rotate secret of %s: version %d, read %d: %w", id, cur.Version, version, ErrConflict)
	}
	now := st.now()
	// Only the secret current until now goes on signing: one rotated out
	// before, still in its grace, is dropped, so that at most two secrets
	// sign (docs/webhooks.md, "Rotating the secret").
	var secrets []SealedSecret
	for _, sec := range cur.Secrets {
		if !sec.RetiresAt.IsZero() {
			continue
		}
		if sec.RetiresAt = now.Add(grace); sec.RetiresAt.After(now) {
			secrets = append(secrets, sec)
		}
	}
	if next.CreatedAt.IsZero() {
		next.CreatedAt = now
	}
	secrets = append(secrets, next)
	list, err := attributevalue.Marshal(secretItems(secrets))
	if err != nil {
		return fmt.Errorf("rotate secret of %s: %w", id, err)
	}
	_, err = st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: subscriptionKey(id),
		UpdateExpression:         aws.String("SET #secrets = :secrets, #updated = :now ADD #version :one"),
		ConditionExpression:      aws.String("#version = :version"),
		ExpressionAttributeNames: map[string]string{"#secrets": "secrets", "#updated": "updated_at", "#version": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":secrets": list, ":now": s(stamp(now)), ":one": n(1), ":version": n(version),
		},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("rotate secret of %s: %w", id, ErrConflict)
	case err != nil:
		return fmt.Errorf("rotate secret of %s: %w", id, err)
	}
	return nil
}

// Disable disables the subscription id names, saying why (reason, e.g.
// "410 Gone"): one UpdateItem of its status, disabled_reason and
// updated_at, adding 1 to its version, conditional on the item existing
// (ErrNotFound). A disabled subscription receives nothing; its URL,
// patterns and secrets stay.
func (st *Store) Disable(ctx context.Context, id, reason string) error {
	if err := checkSubscriptionID(id); err != nil {
		return fmt.Errorf("disable subscription: %w", err)
	}
	if reason == "" {
		return fmt.Errorf("disable subscription %s: no reason", id)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: subscriptionKey(id),
		UpdateExpression:    aws.String("SET #status = :disabled, #reason = :reason, #updated = :now ADD #version :one"),
		ConditionExpression: aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#reason": "disabled_reason", "#updated": "updated_at",
			"#version": "version", "#pk": table.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":disabled": s(StatusDisabled), ":reason": s(reason), ":now": s(stamp(st.now())), ":one": n(1),
		},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("disable subscription %s: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("disable subscription %s: %w", id, err)
	}
	return nil
}
