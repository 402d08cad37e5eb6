package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// sizedToolset is a toolset with one platform tool whose description pads
// its RFC 8785 form to exactly size bytes.
func sizedToolset(t *testing.T, size int) *toolset.Toolset {
	t.Helper()
	build := func(pad int) *toolset.Toolset {
		ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts.Tools["create-ticket"] = toolset.Tool{Description: strings.Repeat("x", pad), InputSchema: json.RawMessage(`{"type":"object"}`),
			OutputSchema: json.RawMessage(`{"type":"object"}`), Policy: catalog.AtMostOnce, Function: "${FunctionCreateTicket}", TimeoutSeconds: 30}
		if ts.ID, err = ts.ComputeID(); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	body, err := build(0).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	ts := build(size - len(body))
	if body, _ := ts.Canonical(); len(body) != size {
		t.Fatalf("fixture is %d bytes, want %d", len(body), size)
	}
	return ts
}

// On dynalite, which enforces DynamoDB's 400 KB item limit: a toolset at
// toolset.MaxBodyBytes is written (the item's key and other attributes fit
// in the headroom), and one byte more is refused by the registration check
// for toolset-size, with nothing written.
func TestRegisterToolsetSizeBound(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	at := sizedToolset(t, toolset.MaxBodyBytes)
	if created, err := s.RegisterToolset(ctx, at); !created || err != nil {
		t.Fatalf("at the bound: created %v, %v", created, err)
	}
	if _, err := s.Toolset(ctx, at.ID); err != nil {
		t.Fatalf("load at the bound: %v", err)
	}
	over := sizedToolset(t, toolset.MaxBodyBytes+1)
	_, err := s.RegisterToolset(ctx, over)
	var ref *toolset.Refusal
	if !errors.As(err, &ref) || ref.Rule != toolset.RuleSize {
		t.Fatalf("one byte over: %v, want a refusal for %s", err, toolset.RuleSize)
	}
	if _, err := s.Toolset(ctx, over.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("one byte over was written: %v", err)
	}
}

// padded adds a 20 KB attribute to every toolset item it puts: an item
// the registration check let through but the table refuses.
type padded struct{ *dynamodb.Client }

func (p padded) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item[AttrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, "TOOLSET#") {
		in.Item["pad"] = str(strings.Repeat("p", 20_000))
	}
	return p.Client.PutItem(ctx, in, opts...)
}

// When DynamoDB refuses the write itself for its size (a
// ValidationException, as dynalite answers it), the registration is
// refused for toolset-size, not failed as if the table were unavailable:
// repeating it cannot help.
func TestRegisterToolsetItemRefusedForSize(t *testing.T) {
	plain, client := newStore(t)
	s := New(padded{client}, plain.Table())
	ctx := context.Background()
	ts := sizedToolset(t, toolset.MaxBodyBytes)
	_, err := s.RegisterToolset(ctx, ts)
	var ref *toolset.Refusal
	if !errors.As(err, &ref) || ref.Rule != toolset.RuleSize || !strings.Contains(ref.Reason, "the table refused its item") {
		t.Fatalf("%v, want a refusal for %s by the table", err, toolset.RuleSize)
	}
	if _, err := plain.Toolset(ctx, ts.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused item was written: %v", err)
	}
	// The classification, on dynalite's own answer and on another
	// ValidationException.
	item := toolsetKey(ts.ID)
	item["pad"] = str(strings.Repeat("p", 410_000))
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &plain.table, Item: item})
	if !IsItemTooLarge(err) {
		t.Fatalf("dynalite's refusal of a 410 KB item: %v, not recognised as too large", err)
	}
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &plain.table, Item: map[string]types.AttributeValue{AttrPK: str("x")}})
	if err == nil || IsItemTooLarge(err) {
		t.Fatalf("an item without its sort key: %v, want another ValidationException", err)
	}
}
