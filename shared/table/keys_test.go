package table

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

// The sort keys are the shapes docs/ledger.md gives ("Sort keys in call
// order"), and the lengths the cost model counts are theirs.
func TestSortKeys(t *testing.T) {
	for _, tc := range []struct {
		name, seq, want string
	}{
		{"a top-level call is as before for_each", "4", "CALL#0000000000000000004"},
		{"a call inside a for_each pads each component", "4.17.2", "CALL#0000000000000000004.0000000000000000017.0000000000000000002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sk := CallSK(tool.Seq(tc.seq).SortKey())
			if sk != tc.want {
				t.Fatalf("CallSK = %q, want %q", sk, tc.want)
			}
			parts, err := tool.ParseSeq(tc.seq)
			if err != nil {
				t.Fatal(err)
			}
			if n := CallSKBytes(len(parts)); n != len(sk) {
				t.Errorf("CallSKBytes = %d, want %d", n, len(sk))
			}
			row := RowSK(tool.Seq(tc.seq).SortKey(), 1700000000123456789, [4]byte{0xde, 0xad, 0, 1})
			if want := sk + "#1700000000123456789#dead0001"; row != want {
				t.Errorf("RowSK = %q, want %q", row, want)
			}
			if n := len(RowSK(tool.Seq(tc.seq).SortKey(), 1, [4]byte{})) - len(sk); n != RowSKTailBytes {
				t.Errorf("a row's sort key adds %d bytes, RowSKTailBytes is %d", n, RowSKTailBytes)
			}
		})
	}
}

// RowSKStart reads back the start RowSK writes, and refuses a key of
// another shape.
func TestRowSKStartReadsTheStartRowSKWrites(t *testing.T) {
	sk := RowSK("0000000000000000003", 1796281201000000001, [4]byte{1, 2, 3, 4})
	if ns, ok := RowSKStart(sk); !ok || ns != 1796281201000000001 {
		t.Fatalf("RowSKStart(%s) = %d, %v", sk, ns, ok)
	}
	for _, bad := range []string{"", CallSK("0000000000000000003"), CoverSKPrefix + "x#sha256:aa", CallSK("3") + "#-796281201000000001#01020304",
		CallSK("3") + "#17962812010000000x1#01020304"} {
		if _, ok := RowSKStart(bad); ok {
			t.Errorf("RowSKStart(%q) accepted", bad)
		}
	}
}

// A child pointer's sort key places it by step and loop index path, then
// seq: the pointers of one step at one path share a prefix no other
// step's or path's starts with, and its seq's sort key is read back.
func TestChildPointerSortKeysPlaceByStepAndPath(t *testing.T) {
	seq := "0000000000000000004.0000000000000000017.0000000000000000002"
	sk := ChildPointerSK("open", []int64{17}, seq)
	if want := "CHILD#open#0000000000000000017#" + seq; sk != want {
		t.Fatalf("ChildPointerSK = %q, want %q", sk, want)
	}
	if got, ok := ChildPointerSeqSortKey(sk); !ok || got != seq {
		t.Fatalf("ChildPointerSeqSortKey(%q) = %q, %v", sk, got, ok)
	}
	if top := ChildPointerPlaceSK("open", nil); top != "CHILD#open##" || strings.HasPrefix(sk, top) {
		t.Fatalf("the top level's place %q", top)
	}
	for _, other := range []string{ChildPointerPlaceSK("ope", []int64{17}), ChildPointerPlaceSK("open", []int64{1}), ChildPointerPlaceSK("open", []int64{17, 0})} {
		if strings.HasPrefix(sk, other) {
			t.Errorf("%q starts with another place's prefix %q", sk, other)
		}
	}
	for _, bad := range []string{"START", "CHILD#open#" + seq, "CALL#" + seq} {
		if _, ok := ChildPointerSeqSortKey(bad); ok {
			t.Errorf("ChildPointerSeqSortKey(%q) read a seq", bad)
		}
	}
}
