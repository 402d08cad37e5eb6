package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Every item type maps onto the item kind the table declares for it: each
// attribute it writes or reads is declared, with the type it stores.
func TestItemTypesConformToTheirKinds(t *testing.T) {
	for _, c := range []struct {
		kind *table.Kind
		item any
	}{
		{table.Call, callItem{}},
		{table.Row, rowItem{}},
		{table.Toolset, toolsetItem{}},
		{table.Published, publishedItem{}},
		{table.Proof, proofItem{}},
		{table.Key, keyItem{}},
		{table.Cover, coverItem{}},
	} {
		t.Run(c.kind.Name, func(t *testing.T) {
			if err := table.Conform(c.kind, c.item); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A published or proof item holding an attribute of another type than its
// writer gives it is an error, never a zero value; a toolset whose body is
// not a string is refused (toolset.ParseStored), never a ledger failure.
func TestMistypedItemsOfTheOtherKinds(t *testing.T) {
	s, client := newStore(t)
	ctx := context.Background()
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	put(map[string]types.AttributeValue{AttrPK: str(table.Published.Key("bad")), AttrSK: str(table.Published.SKValue),
		"version_arn": str("arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev_bad:1"), "version": str("one"),
		"output_bound_bytes": tabledef.N(1), "input_limit_bytes": tabledef.N(1)})
	if _, err := s.PublishedSolution(ctx, "bad"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("a published item with a string version: %v", err)
	}
	put(map[string]types.AttributeValue{AttrPK: str(table.Proof.Key("ab")), AttrSK: str(table.Proof.SKValue),
		"binding": str("b"), "arn": &types.AttributeValueMemberBOOL{Value: true}, AttrExpiresAt: tabledef.N(1)})
	if _, _, err := (ProofTable{DB: client, Table: s.Table()}).Record(ctx, caller.ProofRecord{ID: "ab", Binding: "b"}); err == nil {
		t.Error("a proof item with a boolean arn read")
	}
	id := "ts_0123456789abcdef0123456789abcdef"
	put(map[string]types.AttributeValue{AttrPK: str(table.Toolset.Key(id)), AttrSK: str(table.Toolset.SKValue),
		"body": &types.AttributeValueMemberBOOL{Value: true}})
	var ref *toolset.Refusal
	if _, err := s.Toolset(ctx, id); !errors.As(err, &ref) {
		t.Errorf("a toolset item with a boolean body: %v, want a refusal", err)
	}
}
