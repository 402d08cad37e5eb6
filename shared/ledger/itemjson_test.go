package ledger_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// itemsDir holds the ledger items as earlier code wrote them
// (testdata/ledger-items/README.md).
var itemsDir = filepath.Join("..", "..", "testdata", "ledger-items")

// This file stands alone (the review store's tests have their own
// DynamoDB JSON reader): testdata/ledger-items/gen/gen.sh copies it into
// earlier commits, whose packages hold no such reader, to write their
// items.

// Item is one DynamoDB item in DynamoDB JSON, the form the low-level API
// and `aws dynamodb get-item` print ({"pk": {"S": "RUN#..."}, ...}).
type Item = map[string]types.AttributeValue

// readItems reads testdata/ledger-items/<file>: a JSON object of named
// items in DynamoDB JSON.
func readItems(file string) (map[string]Item, error) {
	b, err := os.ReadFile(filepath.Join(itemsDir, file))
	if err != nil {
		return nil, err
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := make(map[string]Item, len(raw))
	for name, attrs := range raw {
		it := make(Item, len(attrs))
		for k, v := range attrs {
			if it[k], err = avFromJSON(v); err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %w", file, name, k, err)
			}
		}
		out[name] = it
	}
	return out, nil
}

// writeItems writes named items to testdata/ledger-items/<file>, keys
// sorted, one attribute per line.
func writeItems(file string, items map[string]Item) error {
	out := make(map[string]map[string]any, len(items))
	for name, it := range items {
		out[name] = itemJSON(it)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(itemsDir, file), append(b, '\n'), 0o644)
}

func itemJSON(it Item) map[string]any {
	out := make(map[string]any, len(it))
	for k, v := range it {
		out[k] = avJSON(v)
	}
	return out
}

// avJSON is v in DynamoDB JSON.
func avJSON(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": itemJSON(v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			l[i] = avJSON(e)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": sorted(v.Value)}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": sorted(v.Value)}
	}
	panic(fmt.Sprintf("no DynamoDB JSON for %T", v))
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// avFromJSON reads one attribute value in DynamoDB JSON.
func avFromJSON(b json.RawMessage) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("an attribute value has one type, not %d", len(m))
	}
	for t, raw := range m {
		switch t {
		case "S", "N":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			if t == "S" {
				return &types.AttributeValueMemberS{Value: s}, nil
			}
			return &types.AttributeValueMemberN{Value: s}, nil
		case "B":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
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
				if out[k], err = avFromJSON(v); err != nil {
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
				if out[i], err = avFromJSON(e); err != nil {
					return nil, fmt.Errorf("[%d]: %w", i, err)
				}
			}
			return &types.AttributeValueMemberL{Value: out}, nil
		case "SS", "NS":
			var s []string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			if t == "SS" {
				return &types.AttributeValueMemberSS{Value: s}, nil
			}
			return &types.AttributeValueMemberNS{Value: s}, nil
		}
		return nil, fmt.Errorf("attribute type %q is not one DynamoDB JSON has", t)
	}
	panic("unreachable")
}
