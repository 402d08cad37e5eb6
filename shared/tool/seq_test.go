package tool

import "testing"

func TestSeqOfSortKeyIsSortKeysInverse(t *testing.T) {
	for _, s := range []Seq{"1", "4", "4.0.1", "4.17.2", "9223372036854775807", "3.0.1.12.5"} {
		got, err := SeqOfSortKey(s.SortKey())
		if err != nil || got != s {
			t.Errorf("SeqOfSortKey(%q) = %q, %v; want %q", s.SortKey(), got, err, s)
		}
	}
	for _, k := range []string{"", "4", "0000000000000000004.", "000000000000000000x", "0000000000000000000", "0000000000000000004.0000000000000000001"} {
		if got, err := SeqOfSortKey(k); err == nil {
			t.Errorf("SeqOfSortKey(%q) = %q, want an error", k, got)
		}
	}
}

// A seq's loop index path is its item indexes, the components at odd
// positions: none at the top level, one per enclosing loop.
func TestSeqLoopPathIsItsItemIndexes(t *testing.T) {
	for s, want := range map[Seq][]int64{"3": nil, "4.17.2": {17}, "4.0.1": {0}, "3.0.1.12.5": {0, 12}, "": nil, "4.17": nil} {
		got := s.LoopPath()
		if len(got) != len(want) {
			t.Errorf("%q.LoopPath() = %v, want %v", s, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q.LoopPath() = %v, want %v", s, got, want)
			}
		}
	}
}
