package dispatch

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// itemSize is an item's size as DynamoDB bills it (the DynamoDB Developer
// Guide, "Item sizes and formats"): each attribute's name and value; a
// string or binary its bytes; a number about one byte per two significant
// digits, plus one; a boolean or null one byte; a list or map 3 bytes and,
// for each element, its name (in a map), its value and one byte.
func itemSize(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		d := strings.Trim(strings.TrimLeft(strings.ReplaceAll(v.Value, ".", ""), "-"), "0")
		return (len(d)+1)/2 + 1
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	}
	return 0
}

// writeUnits are the write request units of a write of an item of n bytes
// (1 KB each, at least 1).
func writeUnits(n int) int { return max(1, (n+1023)/1024) }

func TestItemSizeCountsAsDynamoDBBills(t *testing.T) {
	it := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "RUN#x"}, // 2 + 5
		"n":  &types.AttributeValueMemberN{Value: "1500"},  // 1 + 2 + 1
		"c": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{ // 1 + 3 + (1 + 2 + 1) + (1 + (3 + 1 + 1) + 1)
			"d": &types.AttributeValueMemberB{Value: []byte{1, 2}},
			"a": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: true}}},
		}},
	}
	if got, want := itemSize(it), 7+3+(1+3+4+7); got != want {
		t.Errorf("itemSize = %d, want %d", got, want)
	}
	if writeUnits(1024) != 1 || writeUnits(1025) != 2 || writeUnits(0) != 1 {
		t.Error("write units are not 1 KB each, at least 1")
	}
}
