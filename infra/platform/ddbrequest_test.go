package platform

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// ddbRequest is one DynamoDB request as IAM authorises it: the action, the
// resource, and the values of DynamoDB's condition keys.
type ddbRequest struct {
	What        string // the code that made it
	Action      string
	Resource    string   // the table's or an index's ARN, as the template renders it
	LeadingKeys []string // the partition key value
	Attributes  []string // every top-level attribute the request names
	// Whole: a read without a projection (no ProjectionExpression, no
	// AttributesToGet), which returns every attribute of the item.
	// dynamodb:Attributes "represents a list of the attribute names in a
	// request, or the attributes that are returned from a request"
	// (DynamoDB Developer Guide, "Using IAM policy conditions for
	// fine-grained access control"): so a statement that lists attributes
	// allows no whole read, whatever the item holds.
	Whole bool
	// ReturnValues of a write (NONE when it sends none); "" for a read.
	ReturnValues string
	Select       string // a Query's, when it sends one
}

func (r ddbRequest) String() string {
	whole := ""
	if r.Whole {
		whole = " (whole item)"
	}
	return fmt.Sprintf("%s: %s on %s %v naming %v%s (ReturnValues %q, Select %q)", r.What, r.Action,
		strings.TrimPrefix(r.Resource, tableARN), r.LeadingKeys, r.Attributes, whole, r.ReturnValues, r.Select)
}

// recorder is a DynamoDB client that records each request as IAM sees it
// and answers as little as the code needs; fail makes the next requests
// fail with a conditional check failure, for the code's paths after one.
type recorder struct {
	what string
	reqs []ddbRequest
	fail int
	item map[string]types.AttributeValue // what reads and ALL_NEW answer
	// found is what the next Query answers (then nothing).
	found []map[string]types.AttributeValue
}

func (r *recorder) record(q ddbRequest) error {
	q.What = r.what
	slices.Sort(q.Attributes)
	q.Attributes = slices.Compact(q.Attributes)
	r.reqs = append(r.reqs, q)
	if r.fail > 0 {
		r.fail--
		return &types.ConditionalCheckFailedException{Message: new(string)}
	}
	return nil
}

func (r *recorder) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	names := keyNames(in.Key)
	names = append(names, in.AttributesToGet...)
	names = append(names, table.ExpressionAttributes(in.ProjectionExpression, in.ExpressionAttributeNames)...)
	whole := in.ProjectionExpression == nil && len(in.AttributesToGet) == 0
	err := r.record(ddbRequest{Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: leadingKey(in.Key), Attributes: names, Whole: whole})
	return &dynamodb.GetItemOutput{Item: r.item}, err
}

func (r *recorder) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	names := slices.Collect(maps.Keys(in.Item))
	names = append(names, table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames)...)
	err := r.record(ddbRequest{Action: "dynamodb:PutItem", Resource: tableARN, LeadingKeys: leadingKey(in.Item),
		Attributes: names, ReturnValues: returnValues(string(in.ReturnValues))})
	return &dynamodb.PutItemOutput{}, err
}

func (r *recorder) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	names := keyNames(in.Key)
	names = append(names, table.ExpressionAttributes(in.UpdateExpression, in.ExpressionAttributeNames)...)
	names = append(names, table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames)...)
	err := r.record(ddbRequest{Action: "dynamodb:UpdateItem", Resource: tableARN, LeadingKeys: leadingKey(in.Key),
		Attributes: names, ReturnValues: returnValues(string(in.ReturnValues))})
	return &dynamodb.UpdateItemOutput{Attributes: r.item}, err
}

func (r *recorder) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	resource := tableARN
	if in.IndexName != nil {
		resource = tableARN + "/index/" + *in.IndexName
	}
	var names []string
	for _, e := range []*string{in.KeyConditionExpression, in.FilterExpression, in.ProjectionExpression} {
		names = append(names, table.ExpressionAttributes(e, in.ExpressionAttributeNames)...)
	}
	var keys []string
	if v, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS); ok {
		keys = []string{v.Value}
	}
	err := r.record(ddbRequest{Action: "dynamodb:Query", Resource: resource, LeadingKeys: keys, Attributes: names, Select: string(in.Select)})
	found := r.found
	r.found = nil
	return &dynamodb.QueryOutput{Items: found}, err
}

func (r *recorder) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	names := keyNames(in.Key)
	names = append(names, table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames)...)
	err := r.record(ddbRequest{Action: "dynamodb:DeleteItem", Resource: tableARN, LeadingKeys: leadingKey(in.Key),
		Attributes: names, ReturnValues: returnValues(string(in.ReturnValues))})
	return &dynamodb.DeleteItemOutput{}, err
}

// BatchGetItem records one request for all its keys on the table: IAM
// authorises a BatchGetItem once, with dynamodb:LeadingKeys every key's
// partition key.
func (r *recorder) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	var names, keys []string
	whole := false
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			names = append(names, keyNames(k)...)
			keys = append(keys, leadingKey(k)...)
		}
		names = append(names, ka.AttributesToGet...)
		names = append(names, table.ExpressionAttributes(ka.ProjectionExpression, ka.ExpressionAttributeNames)...)
		whole = whole || ka.ProjectionExpression == nil && len(ka.AttributesToGet) == 0
	}
	slices.Sort(keys)
	err := r.record(ddbRequest{Action: "dynamodb:BatchGetItem", Resource: tableARN, LeadingKeys: slices.Compact(keys), Attributes: names, Whole: whole})
	return &dynamodb.BatchGetItemOutput{}, err
}

func keyNames(key map[string]types.AttributeValue) []string { return slices.Collect(maps.Keys(key)) }

func leadingKey(item map[string]types.AttributeValue) []string {
	if v, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		return []string{v.Value}
	}
	return nil
}

// returnValues is a write's ReturnValues as IAM sees it: NONE unless sent.
func returnValues(v string) string {
	if v == "" {
		return "NONE"
	}
	return v
}
