package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// tableName is the ledger table the tests create on dynalite.
const tableName = "toolgate-ledger"

// ledgerTable is a fresh dynalite holding the ledger table (with its
// index), a client of it and a review store on it.
type ledgerTable struct {
	db    *dynamodb.Client
	store *dynamo.Store
}

// newLedgerTable starts dynalite for t and creates the table on it.
func newLedgerTable(t *testing.T) *ledgerTable {
	t.Helper()
	p := localtest.Dynalite(t)
	db := local.DynamoDB(p.Endpoint())
	if err := dynamo.CreateTable(context.Background(), db, tableName); err != nil {
		t.Fatal(err)
	}
	return &ledgerTable{db: db, store: dynamo.NewStore(db, tableName)}
}

// put writes item as it is, outside the store.
func (l *ledgerTable) put(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := l.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tableName), Item: item}); err != nil {
		t.Fatalf("put item %v: %v", item["pk"], err)
	}
}

// raw reads the item of partition key pk and sort key sk as DynamoDB
// holds it (consistent read), or fails t when there is none.
func (l *ledgerTable) raw(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := l.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tableName), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatalf("get item %s %s: %v", pk, sk, err)
	}
	if out.Item == nil {
		t.Fatalf("no item %s %s", pk, sk)
	}
	return out.Item
}

// mustGet reads review id through Store.Get, failing t with the error
// (never a nil review to dereference).
func mustGet(t *testing.T, s *dynamo.Store, id string) *review.Review {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

// mustGetApproval reads review id through Store.GetApproval, failing t
// with the error.
func mustGetApproval(t *testing.T, s *dynamo.Store, id string) *review.Review {
	t.Helper()
	r, err := s.GetApproval(context.Background(), id)
	if err != nil {
		t.Fatalf("GetApproval(%s): %v", id, err)
	}
	return r
}

// mustList lists the reviews of status st through Store.List and returns
// the one of id, failing t when the listing fails or does not hold it once.
func mustList(t *testing.T, s *dynamo.Store, st review.Status, id string) *review.Review {
	t.Helper()
	list, err := s.List(context.Background(), st, func(r *review.Review) bool { return r.ID == id })
	if err != nil {
		t.Fatalf("List(%s): %v", st, err)
	}
	if len(list) != 1 {
		t.Fatalf("List(%s) holds review %s %d times, want once", st, id, len(list))
	}
	return list[0]
}
