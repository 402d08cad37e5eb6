package catalog

import (
	"regexp"
	"strings"
	"testing"
)

// countedNamePattern is NamePattern as it was compiled before its bound
// moved out of it: NamePattern must accept exactly the same strings.
var countedNamePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// namePatternCases are names around the 63-character bound: ASCII,
// multibyte runes (é is 2 bytes, 𝄞 is 4), invalid UTF-8, newlines and
// characters outside the class.
func namePatternCases() []string {
	out := []string{"", "a", "A", "0", "-", "a_b", "a\n", "\na", "é", "\xff"}
	for _, n := range []int{61, 62, 63, 64, 65, 200} {
		a := strings.Repeat("a", n)
		for _, tail := range []string{"", "é", "𝄞", "\xff", "\n", "-", "0", "A", "_"} {
			out = append(out, a+tail)
		}
		out = append(out, a[:n-2]+"é")
	}
	return out
}

func checkNamePattern(t *testing.T, s string) {
	t.Helper()
	if got, want := NamePattern.MatchString(s), countedNamePattern.MatchString(s); got != want {
		t.Errorf("NamePattern.MatchString(%q) = %v, the counted form %v", s, got, want)
	}
}

func TestNamePatternAcceptsWhatItsCountedFormAccepts(t *testing.T) {
	if NamePattern.String() != countedNamePattern.String() {
		t.Errorf("NamePattern shows %s, not its counted form %s", NamePattern, countedNamePattern)
	}
	for _, s := range namePatternCases() {
		checkNamePattern(t, s)
	}
}

// FuzzNamePattern holds NamePattern to its counted form on any input.
func FuzzNamePattern(f *testing.F) {
	for _, s := range namePatternCases() {
		f.Add(s)
	}
	f.Fuzz(checkNamePattern)
}
