package ledger

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Toolset items: pk "TOOLSET#<id>", sk "TOOLSET", body = the toolset's
// RFC 8785 form. They are immutable and never expire: a run keeps its
// toolset for its whole life.
const toolsetSK = "TOOLSET"

func toolsetKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str("TOOLSET#" + id), AttrSK: str(toolsetSK)}
}

// RegisterToolset stores a toolset under its id. Registering the same
// content again writes nothing and reports created false; different content
// under an existing id is refused. The id must be the digest of the content.
func (s *Store) RegisterToolset(ctx context.Context, ts *toolset.Toolset) (created bool, err error) {
	id, err := ts.ComputeID()
	if err != nil {
		return false, err
	}
	if id != ts.ID {
		return false, fmt.Errorf("toolset %s: its content digests to %s", ts.ID, id)
	}
	body, err := ts.Canonical()
	if err != nil {
		return false, err
	}
	if err := ts.CheckAgainst(catalog.Default()); err != nil {
		return false, err
	}
	// Every pinned schema must compile now: a schema that fails only after
	// a tool ran would turn a side effect into an unexplained failure.
	for name, t := range ts.Tools {
		for kind, doc := range map[string][]byte{"input": t.InputSchema, "output": t.OutputSchema} {
			if _, err := schema.Compile(doc); err != nil {
				return false, fmt.Errorf("toolset %s: tool %s %s schema: %w", id, name, kind, err)
			}
		}
	}
	item := toolsetKey(id)
	item["body"] = str(string(body))
	item["registered_at"] = str(s.now().UTC().Format("2006-01-02T15:04:05.000Z"))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		return true, nil
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
	})
	if err != nil {
		return nil, fmt.Errorf("get toolset %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("toolset %s: %w", id, ErrNotFound)
	}
	body := getS(out.Item, "body")
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("toolset %s: the stored item has no toolset body: %w", id, ErrCorrupt)
	}
	return []byte(body), nil
}

// Toolset loads a registered toolset and checks that its content still
// digests to its id. A missing toolset is ErrNotFound.
func (s *Store) Toolset(ctx context.Context, id string) (*toolset.Toolset, error) {
	body, err := s.toolsetBody(ctx, id)
	if err != nil {
		return nil, err
	}
	ts, err := toolset.Parse(append([]byte(`{"id":"`+id+`",`), body[1:]...))
	if err != nil {
		return nil, fmt.Errorf("stored toolset %s: %v: %w", id, err, ErrCorrupt)
	}
	return ts, nil
}
