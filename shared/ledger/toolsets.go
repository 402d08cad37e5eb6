package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// toolsetKey is the key of toolset id's item (table.Toolset: pk
// TOOLSET#<id>, sk "TOOLSET"; body, the toolset's RFC 8785 form). They
// are immutable and never expire: a run keeps its toolset for its whole
// life.
func toolsetKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(table.Toolset.Key(id)), AttrSK: str(table.Toolset.SKValue)}
}

// RegisterToolset stores a toolset under its id after the registration
// check (toolset.Verify against the catalog: a failure is a
// *toolset.Refusal and nothing is written). A write DynamoDB refuses as
// over its item size limit is a *toolset.Refusal for toolset.RuleSize
// too, never a failure worth repeating. Registering the same content
// again writes nothing and reports created false; different content under
// an existing id is refused. Registration is the deployment operator's
// (docs/ledger.md): no policy for people allows the PutItem.
func (s *Store) RegisterToolset(ctx context.Context, ts *toolset.Toolset) (created bool, err error) {
	if err := ts.Verify(catalog.Default()); err != nil {
		return false, err
	}
	id := ts.ID
	body, err := ts.Canonical()
	if err != nil {
		return false, err
	}
	item, err := attributevalue.MarshalMap(toolsetItem{PK: table.Toolset.Key(id), SK: table.Toolset.SKValue,
		Body: string(body), RegisteredAt: registeredAt(s.now())})
	if err != nil {
		return false, fmt.Errorf("encode toolset %s: %w", id, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		return true, nil
	}
	if IsItemTooLarge(err) {
		// CheckSize keeps a body under the limit; the table is the last word.
		return false, &toolset.Refusal{ToolsetID: id, Rule: toolset.RuleSize,
			Reason: "the table refused its item as over DynamoDB's item size limit: " + toolset.SizeReason(len(body), ts.LargestParts(3))}
	}
	if !IsConditionFailed(err) {
		return false, fmt.Errorf("put toolset %s: %w", id, err)
	}
	stored, err := s.toolsetBody(ctx, id)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(stored, body) {
		return false, fmt.Errorf("toolset %s is already registered with different content", id)
	}
	return false, nil
}

func (s *Store) toolsetBody(ctx context.Context, id string) ([]byte, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: toolsetKey(id), ConsistentRead: aws.Bool(true),
		// An operator's read: ReadAttributes' "body" only.
		ProjectionExpression: aws.String("#body"), ExpressionAttributeNames: map[string]string{"#body": "body"},
	})
	if err != nil {
		return nil, fmt.Errorf("get toolset %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("toolset %s: %w", id, ErrNotFound)
	}
	// A body that is missing or not a string reads as empty (a number as
	// its digits), which toolset.ParseStored refuses: a refusal of the
	// toolset, never a failure of the ledger.
	var it toolsetItem
	if attributevalue.UnmarshalMap(out.Item, &it) != nil {
		return nil, nil
	}
	return []byte(it.Body), nil
}

// Toolset loads a registered toolset: the one function every loader (the
// dispatcher in every tool function, review-request, the CLI) goes
// through. It runs the registration check on every load, so that an item
// written around registration, or changed since, is never used: a missing
// toolset (or an id that is not one) is ErrNotFound; a stored body that is
// not exactly the RFC 8785 form of a toolset (toolset.ParseStored: so that
// a body naming another id cannot load under this one), or that fails
// toolset.Verify (the key's id is not its digest, a tool is weaker than
// the catalog, a schema does not compile), is a *toolset.Refusal naming
// the rule and the key's id. A caller refuses the call for either
// and runs nothing.
func (s *Store) Toolset(ctx context.Context, id string) (*toolset.Toolset, error) {
	if !tool.ToolsetIDPattern.MatchString(id) {
		return nil, fmt.Errorf("%.40q is not a toolset id: %w", id, ErrNotFound)
	}
	body, err := s.toolsetBody(ctx, id)
	if err != nil {
		return nil, err
	}
	ts, err := toolset.ParseStored(id, body)
	if err != nil {
		return nil, err
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		return nil, err
	}
	return ts, nil
}

// IsItemTooLarge reports a write DynamoDB refused because the item is over
// its 400 KB item size limit: a ValidationException whose message says
// "Item size" (DynamoDB's "Item size has exceeded the maximum allowed
// size", which dynalite answers too). Repeating the write cannot help.
func IsItemTooLarge(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(api.ErrorMessage(), "Item size")
}
