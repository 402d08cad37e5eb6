package solutioncomment

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

const testToolset = "ts_0123456789abcdef0123456789abcdef"

// Parse reads what Format writes, and nothing else.
func TestParseReadsOnlyWhatFormatWrites(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
		want Comment
		ok   bool
	}{
		{"formatted", Format("refunds", 3, testToolset), Comment{"refunds", 3, testToolset}, true},
		{"largest version", Format("a", 2147483647, testToolset), Comment{"a", 2147483647, testToolset}, true},
		{"version over 2^31-1", Format("a", 2147483648, testToolset), Comment{}, false},
		{"version 0", Format("a", 0, testToolset), Comment{}, false},
		{"leading zero", "toolgate Solution a version 01 (toolset " + testToolset + ")", Comment{}, false},
		{"signed version", "toolgate Solution a version +1 (toolset " + testToolset + ")", Comment{}, false},
		{"upper-case name", Format("Refunds", 1, testToolset), Comment{}, false},
		{"name with _", Format("re_funds", 1, testToolset), Comment{}, false},
		{"name of 51", Format("a"+strings.Repeat("b", 50), 1, testToolset), Comment{}, false},
		{"other toolset id", Format("a", 1, "ts"), Comment{}, false},
		{"trailing text", Format("a", 1, testToolset) + " ", Comment{}, false},
		{"leading text", "x" + Format("a", 1, testToolset), Comment{}, false},
		{"a state's comment", "state data: {input, steps, reviews, meta}", Comment{}, false},
		{"empty", "", Comment{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Parse(c.text)
			if got != c.want || ok != c.ok {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v, %v", c.text, got, ok, c.want, c.ok)
			}
			if ok && got.String() != c.text {
				t.Fatalf("%+v formats as %q, not %q", got, got.String(), c.text)
			}
		})
	}
}

// Read takes the definition's top-level Comment only, whatever comes
// before it; a definition without one, or with another, names none; text
// that is not a JSON object is ErrNotObject.
func TestReadTakesTheTopLevelCommentOnly(t *testing.T) {
	stamp := `"` + Format("refunds", 2, testToolset) + `"`
	for _, c := range []struct {
		name string
		def  string
		ok   bool
		err  error
	}{
		{"first member", `{"Comment":` + stamp + `,"StartAt":"A","States":{}}`, true, nil},
		{"after the states", `{"StartAt":"A","States":{"A":{"Type":"Pass","Comment":"x","Parameters":{"Comment":"y","l":[1,{"a":[]}]},"End":true}},"Comment":` + stamp + `}`, true, nil},
		{"only a state's", `{"StartAt":"A","States":{"A":{"Type":"Pass","Comment":` + stamp + `,"End":true}}}`, false, nil},
		{"lower-case name", `{"comment":` + stamp + `}`, false, nil},
		{"none", `{"StartAt":"A","States":{}}`, false, nil},
		{"another text", `{"Comment":"a hand-written state machine"}`, false, nil},
		{"not a string", `{"Comment":{"Solution":"refunds"}}`, false, nil},
		{"the first of two", `{"Comment":"other","Comment":` + stamp + `}`, false, nil},
		{"stops at the Comment", `{"Comment":` + stamp + `, not JSON after it`, true, nil},
		{"an array", `[` + stamp + `]`, false, ErrNotObject},
		{"empty", ``, false, ErrNotObject},
		{"cut short", `{"StartAt":"A","Sta`, false, ErrNotObject},
		{"not JSON", `{"StartAt" "A"}`, false, ErrNotObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := Read(strings.NewReader(c.def))
			if ok != c.ok || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
				t.Fatalf("Read = %+v, %v, %v; want ok %v, error %v", got, ok, err, c.ok, c.err)
			}
			if ok && got != (Comment{"refunds", 2, testToolset}) {
				t.Fatalf("Read = %+v", got)
			}
		})
	}
}

// An error of the reader itself is returned as it is, not as ErrNotObject.
func TestReadReturnsTheReadersError(t *testing.T) {
	broken := errors.New("connection reset")
	_, _, err := Read(io.MultiReader(strings.NewReader(`{"StartAt":"A",`), iotest.ErrReader(broken)))
	if !errors.Is(err, broken) || errors.Is(err, ErrNotObject) {
		t.Fatalf("Read = %v, want the reader's error", err)
	}
}
