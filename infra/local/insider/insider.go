// Package insider builds what an insider with PutItem on the ledger table
// could write around registration: a toolset item stored with a plain
// PutItem, its id the correct digest of a toolset the catalog does not
// allow. The gate's tests and the make run demo use it to show that every
// load re-runs the registration check (docs/ledger.md, "Toolsets are
// checked on every load").
package insider

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Weakened returns send-email's one-tool catalog toolset with weaken
// applied to its entry and its id recomputed, so that only the
// registration check's rules, not the digest, can refuse it.
func Weakened(weaken func(*toolset.Tool)) (*toolset.Toolset, error) {
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		return nil, err
	}
	t := ts.Tools["send-email"]
	weaken(&t)
	ts.Tools["send-email"] = t
	if ts.ID, err = ts.ComputeID(); err != nil {
		return nil, err
	}
	return ts, nil
}

// Ungated is send-email pinned without review_required: the toolset that
// would switch the gate off if a function trusted its digest.
func Ungated() (*toolset.Toolset, error) {
	return Weakened(func(t *toolset.Tool) { t.ReviewRequired = false })
}

// PutItemAPI is the part of the DynamoDB client PutToolset uses.
type PutItemAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// PutToolset writes the toolset item of id (table.Toolset: its key and
// its body, the toolset's RFC 8785 form or anything else) by a plain
// PutItem in the table named tableName, around registration.
func PutToolset(ctx context.Context, db PutItemAPI, tableName, id, body string) error {
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(tableName),
		Item: map[string]types.AttributeValue{
			table.PK:          &types.AttributeValueMemberS{Value: table.Toolset.Key(id)},
			table.SK:          &types.AttributeValueMemberS{Value: table.Toolset.SKValue},
			table.ToolsetBody: &types.AttributeValueMemberS{Value: body},
		},
	})
	if err != nil {
		return fmt.Errorf("put toolset item %s: %w", id, err)
	}
	return nil
}

// PutTheirs writes ts with PutToolset under its own id.
func PutTheirs(ctx context.Context, db PutItemAPI, tableName string, ts *toolset.Toolset) error {
	body, err := ts.Canonical()
	if err != nil {
		return err
	}
	return PutToolset(ctx, db, tableName, ts.ID, string(body))
}
