package ledger

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/toolgate/toolgate/shared/seal"
)

// FuzzCompactItem reads arbitrary call items in the compact layout, as
// anyone allowed to write call items could put them (docs/ledger.md, "The
// call item on the wire"): decoding never panics, a record is the key's
// own and of this layout, its rows are one per attempt, and no item made
// without the function's key has a seal that verifies.
func FuzzCompactItem(f *testing.F) {
	for _, s := range []string{
		`{"c":{}}`,
		`{"c":{"a":[]}}`,
		`{"c":{"a":[{"s":1,"t":"x"}],"st":"COMPLETED"},"r":"{}"}`,
		`{"c":{"a":[{"s":1,"o":{"st":""}}],"tool":"t","m":"AAAA"},"r":null}`,
		`{"c":"string"}`,
		`{"c":{"a":[{"s":-9223372036854775808,"o":{"st":"FAILED","x":"TOOL_X"}}],"l":1e30}}`,
	} {
		f.Add(s)
	}
	key := func() seal.Key {
		k, err := seal.NewKey(make([]byte, 32))
		if err != nil {
			f.Fatal(err)
		}
		return k
	}()
	s := (&Store{}).WithMAC(key)
	const callKey = "arn:aws:states:us-east-1:000000000000:execution:sm:run/1"
	f.Fuzz(func(t *testing.T, doc string) {
		var m map[string]any
		if json.Unmarshal([]byte(doc), &m) != nil {
			return
		}
		it, err := attributevalue.MarshalMap(m)
		if err != nil || !isCompact(it) {
			return
		}
		r, err := s.recordFromItem(callKey, it)
		if err != nil {
			return
		}
		if r.Key != callKey || r.Layout != LayoutCompact || r.Attempts < 1 {
			t.Fatalf("record %+v of %s: want key %s, the compact layout and an attempt", r, doc, callKey)
		}
		if r.Seal == seal.Valid {
			t.Fatalf("an item made without the function's key verifies: %s", doc)
		}
		c, _, _, err := decodeCompact(it)
		if err != nil {
			t.Fatalf("recordFromItem read %s, decodeCompact refuses it: %v", doc, err)
		}
		if rows := c.rows(r.RunID, r.Seq); len(rows) != r.Attempts {
			t.Fatalf("%d rows for %d attempts of %s", len(rows), r.Attempts, doc)
		}
	})
}
