package functionconfig

import (
	"slices"
	"testing"
)

func TestSplitListSplitsAtCommasAndBlanksAndDropsEmptyFields(t *testing.T) {
	for in, want := range map[string][]string{
		"":                               nil,
		" , \n":                          nil,
		"a.example.com":                  {"a.example.com"},
		"a.example.com,b.example.com":    {"a.example.com", "b.example.com"},
		"a.example.com, b\tc\n,,d:8443 ": {"a.example.com", "b", "c", "d:8443"},
	} {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}
