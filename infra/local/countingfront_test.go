package local_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
)

// sentBytes counts the request body bytes an SDK client sends
// (Content-Length), as the client itself knows them.
type sentBytes struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (s *sentBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(r.ContentLength)
	return s.next.RoundTrip(r)
}

func TestCountingFrontCountsWhatTheClientSentAndForwardsIt(t *testing.T) {
	t.Parallel()
	d := localtest.Dynalite(t)
	f := localtest.CountingFront(t, d.Endpoint())
	checkLoopbackOnly(t, f.Process)
	ctx := t.Context()
	sent := &sentBytes{next: http.DefaultTransport}
	db := local.DynamoDB(f.Endpoint(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: sent} })
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("front"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	before, err := f.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent.n.Store(0)
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("front"), Item: map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "a"}, "v": &ddbtypes.AttributeValueMemberS{Value: "through the front"}}}); err != nil {
		t.Fatal(err)
	}
	after, err := f.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := after.Less(before)
	if got.Requests != 1 || got.BodyBytes != sent.n.Load() || got.HeaderBytes <= 0 {
		t.Errorf("counted %+v for one PutItem whose body was %d bytes", got, sent.n.Load())
	}
	if op := after.Ops["PutItem"]; op.Requests != 1 || op.BodyBytes != sent.n.Load() {
		t.Errorf("PutItem counted %+v", op)
	}
	// Forwarded: dynalite itself holds the item.
	out, err := local.DynamoDB(d.Endpoint()).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("front"),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "a"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Item["v"].(*ddbtypes.AttributeValueMemberS); v == nil || v.Value != "through the front" {
		t.Errorf("dynalite holds %v", out.Item)
	}
}
