package observed

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/testkit"
	"github.com/toolgate/toolgate/shared/tool"
)

// countedPatterns are the package's Patterns beside their counted forms,
// compiled as they were before the counts moved out of them: each Pattern
// must accept exactly the same strings, with the same submatches.
var countedPatterns = []testkit.Counted{
	{Name: "HostPattern", P: HostPattern, Regexp: regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9.-]{0,252}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(?::[0-9]{1,5})?$`)},
	{Name: "IdentifierPattern", P: IdentifierPattern, Regexp: regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)},
}

// patternCases are strings around each bound (names of 254 bytes,
// bracketed addresses of 45 characters, ports of 5 digits, identifiers of
// 64 characters): with and without ports, multibyte runes, invalid
// UTF-8, newlines, and brackets and colons where they do not belong.
func patternCases() []string {
	out := []string{"", "a", "A", "_", "a.b", "a-b", "-a", "a-", "a:1", "a:", ":1", "[::1]", "[::1]:443", "[:]", "[]", "[::1", "::1]",
		"a]:1", "[a]b", "é", "\xff", "a\n", "1.2.3.4:65535", "1.2.3.4:655350", "[::1]:123456", "a:1:2", "[::1]:", "a_b", "[A::1]"}
	for _, n := range []int{43, 44, 45, 46, 62, 63, 64, 65, 252, 253, 254, 255, 300} {
		a := strings.Repeat("a", n)
		h := strings.Repeat("f", n)
		out = append(out, a, "_"+a, a+"_", a+"é", a+"\xff", a+"\n", a+":1", a+":12345", a+":123456", a+".", "a."+a, a+"-"+"b",
			"["+h+"]", "["+h+"]:1", "["+h+"]:123456", "["+h[:max(n-1, 0)]+":]", "["+h+"]"+a, "A"+a, a+"Z")
	}
	return out
}

func TestPatternsAcceptWhatTheirCountedFormsAccept(t *testing.T) {
	testkit.SameAsCounted(t, countedPatterns, patternCases()...)
}

// The file's toolset and tool-name checks are shared/tool's, which its
// counted forms of a toolset id and of a tool name a toolset may pin
// accept exactly.
func TestFileNamesAreToolsetIDsAndPinnableToolNames(t *testing.T) {
	toolName := regexp.MustCompile(`^(?:[a-z][a-z0-9_-]{0,62}|[a-z][a-z0-9-]{0,30}\.[A-Za-z0-9_.-]{1,128})$`)
	cases := append(patternCases(), "send-email", "github.get_issue", "a.b.c", "a_b.c", "A.b", strings.Repeat("a", 31)+".x", strings.Repeat("a", 32)+".x",
		"a."+strings.Repeat("b", 128), "a."+strings.Repeat("b", 129), "ts_"+strings.Repeat("0", 32), "ts_"+strings.Repeat("0", 31), "ts_"+strings.Repeat("A", 32))
	for _, s := range cases {
		if got, want := tool.ValidToolName(s), toolName.MatchString(s); got != want {
			t.Errorf("tool.ValidToolName(%q) = %v, the file's tool-name form %v", s, got, want)
		}
	}
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
