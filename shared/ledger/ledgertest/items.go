package ledgertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Items reads file, one of testdata/ledger-items (its README.md): a JSON
// object of named items in DynamoDB JSON, as `aws dynamodb get-item`
// prints them, failing t on any error. shared/ledger's own tests read the same files
// with a reader that stands alone (itemjson_test.go), which the fixture
// generators copy into earlier commits.
func Items(t testing.TB, file string) map[string]map[string]types.AttributeValue {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := make(map[string]map[string]types.AttributeValue, len(raw))
	for name, attrs := range raw {
		it := make(map[string]types.AttributeValue, len(attrs))
		for k, v := range attrs {
			if it[k], err = value(v); err != nil {
				t.Fatalf("%s: %s.%s: %v", file, name, k, err)
			}
		}
		out[name] = it
	}
	return out
}

// value reads one attribute value in DynamoDB JSON.
func value(b json.RawMessage) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("an attribute value has one type, not %d", len(m))
	}
	for t, raw := range m {
		switch t {
		case "S", "N", "B":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			switch t {
			case "S":
				return &types.AttributeValueMemberS{Value: s}, nil
			case "N":
				return &types.AttributeValueMemberN{Value: s}, nil
			}
			v, err := base64.StdEncoding.DecodeString(s)
			return &types.AttributeValueMemberB{Value: v}, err
		case "BOOL", "NULL":
			var v bool
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			if t == "BOOL" {
				return &types.AttributeValueMemberBOOL{Value: v}, nil
			}
			return &types.AttributeValueMemberNULL{Value: v}, nil
		case "M":
			var attrs map[string]json.RawMessage
			if err := json.Unmarshal(raw, &attrs); err != nil {
				return nil, err
			}
			out := make(map[string]types.AttributeValue, len(attrs))
			for k, v := range attrs {
				var err error
				if out[k], err = value(v); err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
			}
			return &types.AttributeValueMemberM{Value: out}, nil
		case "L":
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				return nil, err
			}
			out := make([]types.AttributeValue, len(elems))
			for i, e := range elems {
				var err error
				if out[i], err = value(e); err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		}
		return nil, fmt.Errorf("attribute type %q is not one these items use", t)
	}
	panic("unreachable")
}
