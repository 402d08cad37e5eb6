// Package tabledef is the ledger table's layout on DynamoDB (docs/ledger.md):
// its key and TTL attributes, its indexes, the retention of its items and
// the part of the DynamoDB client its users need. It holds no items'
// logic, so that a package keeping its own items in the table
// (shared/review/dynamo) needs nothing else of the ledger.
package tabledef

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// API is the part of the DynamoDB client the table's users need: item-level requests, all implemented by dynalite.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Key attribute names of the table (shared/table).
const (
	AttrPK        = table.PK
	AttrSK        = table.SK
	AttrExpiresAt = table.ExpiresAt // epoch seconds; the table's TTL attribute
)

// DefaultRetention is how long records and rows are kept before their TTL
// (expires_at) ends them.
const DefaultRetention = 90 * 24 * time.Hour

// IsConditionFailed reports a failed conditional write.
func IsConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// CreateTable creates the ledger table with on-demand capacity and every
// index the declaration has (table.Indexes), for the local stack and
// tests; on AWS the infrastructure creates it (infra/ledger.go, from the
// same declaration). An existing table is left as it is.
func CreateTable(ctx context.Context, db interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}, name string) error {
	defs := []types.AttributeDefinition{
		{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(AttrSK), AttributeType: types.ScalarAttributeTypeS},
	}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range table.Indexes {
		pkType, skType := ix.KeyTypes()
		keys := []types.KeySchemaElement{{AttributeName: aws.String(ix.PK), KeyType: types.KeyTypeHash}}
		defs = define(defs, ix.PK, pkType)
		if ix.SK != "" {
			keys = append(keys, types.KeySchemaElement{AttributeName: aws.String(ix.SK), KeyType: types.KeyTypeRange})
			defs = define(defs, ix.SK, skType)
		}
		projection := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
		if len(ix.Projects) > 0 {
			projection = &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: ix.Projects}
		}
		gsis = append(gsis, types.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: keys, Projection: projection})
	}
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
		BillingMode:            types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	return nil
}

// S is a string attribute value.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a whole-number attribute value.
func N[T int | int64](v T) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v), 10)}
}

// GetS reads a string attribute of an item; "" when it is absent or of
// another type.
func GetS(item map[string]types.AttributeValue, k string) string {
	if v, ok := item[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetN reads a whole-number attribute of an item; 0 when it is absent, of
// another type, or not a 64-bit integer.
func GetN(item map[string]types.AttributeValue, k string) int64 {
	if v, ok := item[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// define appends the definition of key attribute name of type t to defs,
// unless defs has it: two indexes may share a key (parks-by-status and
// parks-by-scope sort on park_list_sk), and CreateTable refuses an
// attribute defined twice.
func define(defs []types.AttributeDefinition, name string, t table.Type) []types.AttributeDefinition {
	for _, d := range defs {
		if aws.ToString(d.AttributeName) == name {
			return defs
		}
	}
	return append(defs, types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeType(t)})
}
