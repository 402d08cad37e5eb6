package tool

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/testkit"
)

// countedPatterns are the package's Patterns beside their counted forms,
// compiled as they were before the counts moved out of them: each Pattern
// must accept exactly the same strings, with the same submatches.
var countedPatterns = []testkit.Counted{
	{Name: "NamePattern", P: NamePattern, Regexp: regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)},
	{Name: "MCPServerPattern", P: MCPServerPattern, Regexp: regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)},
	{Name: "MCPToolNamePattern", P: MCPToolNamePattern, Regexp: regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)},
}

// patternCases are strings around each bound (31, 63, 128): ASCII,
// multibyte runes (é is 2 bytes, 𝄞 is 4), invalid UTF-8, newlines and
// characters outside the classes.
func patternCases() []string {
	out := []string{"", "a", "A", "0", "-", "_", ".", "a.b", "A-b_c.d", "a\n", "\na", "a b", "é", "\xff", "a\x00"}
	for _, n := range []int{29, 30, 31, 32, 61, 62, 63, 64, 126, 127, 128, 129, 300} {
		a := strings.Repeat("a", n)
		out = append(out, a, "a"+a, a+"é", "a"+a[:max(n-2, 0)]+"é", a+"𝄞", a+"\xff", a+"\n", a+"-", a+"_", a+".", "A"+a, a+"Z")
	}
	return out
}

func TestPatternsAcceptWhatTheirCountedFormsAccept(t *testing.T) {
	testkit.SameAsCounted(t, countedPatterns, patternCases()...)
}

// FuzzPatterns holds each Pattern to its counted form on any input.
func FuzzPatterns(f *testing.F) {
	for _, s := range patternCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		testkit.SameAsCounted(t, countedPatterns, s)
	})
}
