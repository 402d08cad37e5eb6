// Stub for the functions branch; replaced by the real package at merge.

package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
)

var errStub = errors.New("webhook store: stub")

type Subscription struct {
	ID, URL                                     string
	Events                                      []string
	Solution, Status, DisabledReason, CreatedBy string
	CreatedAt, UpdatedAt                        time.Time
	Version                                     int64
	Secrets                                     []SealedSecret
}

type SealedSecret struct {
	vault.Sealed
	CreatedAt time.Time
	RetiresAt time.Time
}

// AttemptRow's fields are not fixed by the spec: the delivery listing
// reads them in one place (admin's deliveryOf).
type AttemptRow struct {
	EventID, SubscriptionID string
	N                       int
	At                      time.Time
	Attempt                 webhook.Attempt
}

type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

type Store struct{}

func New(db DB, table string, now func() time.Time) *Store { return &Store{} }

func (s *Store) Subscribe(ctx context.Context, sub Subscription) error     { return errStub }
func (s *Store) Subscriptions(ctx context.Context) ([]Subscription, error) { return nil, errStub }
func (s *Store) Subscription(ctx context.Context, id string) (Subscription, bool, error) {
	return Subscription{}, false, errStub
}
func (s *Store) Rotate(ctx context.Context, id string, next SealedSecret, grace time.Duration, version int64) error {
	return errStub
}
func (s *Store) Disable(ctx context.Context, id, reason string) error { return errStub }
func (s *Store) RecordEvent(ctx context.Context, e webhook.Event) (bool, error) {
	return false, errStub
}
func (s *Store) MarkSent(ctx context.Context, id string) error { return errStub }
func (s *Store) Event(ctx context.Context, id string) (webhook.Event, bool, error) {
	return webhook.Event{}, false, errStub
}
func (s *Store) RecordAttempt(ctx context.Context, eventID, subID string, n int, a webhook.Attempt) error {
	return errStub
}
func (s *Store) Attempts(ctx context.Context, eventID string) ([]AttemptRow, error) {
	return nil, errStub
}

func SealSecret(ctx context.Context, k vault.KMS, keyID, subID string, key []byte) (vault.Sealed, error) {
	return vault.Sealed{}, errStub
}
func OpenSecret(ctx context.Context, k vault.KMS, subID string, s vault.Sealed) ([]byte, error) {
	return nil, errStub
}

type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

func Relay(ctx context.Context, s *Store, q Queue, queueURL string, now time.Time, after time.Duration) (int, error) {
	return 0, errStub
}
