package cost

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/table"
)

// Every attribute a call or row item may hold (shared/table) is sized, or
// listed in callsPrevious (the layout before the compact one) or, for a
// row, in rowsUnsized: an attribute added to the declaration
// fails here until the estimate says how big it is.
func TestEveryDeclaredAttributeIsSized(t *testing.T) {
	finished, failed := fetch(), with(fetch(), func(c *Call) { c.OutputBytes, c.ErrorCode = 0, "TOOL_TIMEOUT" })
	for _, tc := range []struct {
		kind   *table.Kind
		values []map[string]int
		skip   []string
	}{
		{table.Call, []map[string]int{callValues(RecordItem, finished), callValues(RecordItem, failed)}, callsPrevious},
		{table.Row, []map[string]int{rowValues(with(failed, func(c *Call) { c.OutputBytes = 1 }))}, rowsUnsized},
	} {
		t.Run(tc.kind.Name, func(t *testing.T) {
			for _, name := range tc.kind.AllNames() {
				sized := slices.Contains(tc.skip, name)
				for _, v := range tc.values {
					_, ok := v[name]
					sized = sized || ok
				}
				if !sized {
					t.Errorf("item kind %s declares %s, which the estimate does not size", tc.kind.Name, name)
				}
			}
		})
	}
}

// itemSize counts each value as its declared type says, and panics on a
// value for an attribute the kind does not declare.
func TestItemSize(t *testing.T) {
	// "pk" and 10 bytes; "attempts" and 1 byte per two digits, plus 1;
	// "result", a string.
	if n, want := itemSize(table.Call, map[string]int{table.PK: 10, "attempts": 4, "result": 5}), 2+10+8+2+1+6+5; n != want {
		t.Errorf("itemSize = %d, want %d", n, want)
	}
	if n, want := itemSize(table.Row, map[string]int{"retryable": 99}), len("retryable")+1; n != want {
		t.Errorf("a boolean counts %d bytes, want %d", n, want)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `item kind call has no attribute "nope"`) {
			t.Fatalf("recover() = %v", r)
		}
	}()
	itemSize(table.Call, map[string]int{"run_id": 1, "nope": 1})
}
