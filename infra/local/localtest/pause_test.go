package localtest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
)

// The paused call has done its work when Reached closes and returns only
// once resumed; another caller's calls, and later calls of the operation,
// pass meanwhile.
func TestPauseAfterHoldsTheFirstCallOnceItReturned(t *testing.T) {
	db := local.DynamoDB(localtest.Dynalite(t).Endpoint())
	if err := ledger.CreateTable(t.Context(), db, "pause"); err != nil {
		t.Fatal(err)
	}
	p := localtest.PauseAfter("PutItem")
	paused := dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, p.Option()) })
	put := func(c *dynamodb.Client, pk string) error {
		_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("pause"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "x"}}})
		return err
	}
	returned := make(chan error, 1)
	go func() { returned <- put(paused, "first") }()
	<-p.Reached()
	// Held: the item is written, the caller has no answer yet.
	got, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String("pause"), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "first"}, "sk": &types.AttributeValueMemberS{Value: "x"}}})
	if err != nil || got.Item == nil {
		t.Fatalf("the paused PutItem has not written its item: %v", err)
	}
	select {
	case err := <-returned:
		t.Fatalf("the paused PutItem returned before Resume: %v", err)
	default:
	}
	if err := put(paused, "second"); err != nil {
		t.Fatalf("a later PutItem through the same client: %v", err)
	}
	p.Resume()
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	p.Resume()
}
