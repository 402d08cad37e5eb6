package dynamo_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB JSON is how the low-level API writes an item: each attribute an
// object of one member naming its type ({"S": "x"}, {"N": "1"}, {"BOOL":
// true}, {"NULL": true}, {"L": [...]}, {"M": {...}}); the same shape as
// `aws dynamodb get-item` prints (Amazon DynamoDB Developer Guide,
// "Data type descriptors").

// encodeItem writes item as DynamoDB JSON.
func encodeItem(item map[string]types.AttributeValue) (map[string]any, error) {
	out := make(map[string]any, len(item))
	for k, v := range item {
		e, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = e
	}
	return out, nil
}

func encodeValue(v types.AttributeValue) (any, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}, nil
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": v.Value}, nil
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			var err error
			if l[i], err = encodeValue(e); err != nil {
				return nil, err
			}
		}
		return map[string]any{"L": l}, nil
	case *types.AttributeValueMemberM:
		m, err := encodeItem(v.Value)
		if err != nil {
			return nil, err
		}
		return map[string]any{"M": m}, nil
	}
	return nil, fmt.Errorf("no DynamoDB JSON for %T", v)
}

// decodeItem reads an item written as DynamoDB JSON.
func decodeItem(b json.RawMessage) (map[string]types.AttributeValue, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	out := make(map[string]types.AttributeValue, len(raw))
	for k, r := range raw {
		v, err := decodeValue(r)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func decodeValue(b json.RawMessage) (types.AttributeValue, error) {
	var one map[string]json.RawMessage
	if err := json.Unmarshal(b, &one); err != nil {
		return nil, err
	}
	if len(one) != 1 {
		return nil, fmt.Errorf("%s: a value names one type", b)
	}
	for typ, r := range one {
		switch typ {
		case "S":
			var s string
			err := json.Unmarshal(r, &s)
			return &types.AttributeValueMemberS{Value: s}, err
		case "N":
			var s string
			err := json.Unmarshal(r, &s)
			return &types.AttributeValueMemberN{Value: s}, err
		case "BOOL":
			var v bool
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberBOOL{Value: v}, err
		case "NULL":
			var v bool
			err := json.Unmarshal(r, &v)
			return &types.AttributeValueMemberNULL{Value: v}, err
		case "L":
			var l []json.RawMessage
			if err := json.Unmarshal(r, &l); err != nil {
				return nil, err
			}
			out := &types.AttributeValueMemberL{Value: make([]types.AttributeValue, len(l))}
			for i, e := range l {
				v, err := decodeValue(e)
				if err != nil {
					return nil, err
				}
				out.Value[i] = v
			}
			return out, nil
		case "M":
			m, err := decodeItem(r)
			return &types.AttributeValueMemberM{Value: m}, err
		}
		return nil, fmt.Errorf("type %q is not one the fixtures use", typ)
	}
	panic("unreachable")
}

// fixtureFile is one testdata/ledger-items file: named items of one kind,
// in DynamoDB JSON.
type fixtureFile map[string]json.RawMessage

// encodeFixtures writes named items as a fixture file: an object of the
// names, sorted, each item's attributes sorted, indented two spaces.
func encodeFixtures(items map[string]map[string]types.AttributeValue) ([]byte, error) {
	names := make([]string, 0, len(items))
	for n := range items {
		names = append(names, n)
	}
	sort.Strings(names)
	out := map[string]any{}
	for _, n := range names {
		e, err := encodeItem(items[n])
		if err != nil {
			return nil, fmt.Errorf("item %s: %w", n, err)
		}
		out[n] = e
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
