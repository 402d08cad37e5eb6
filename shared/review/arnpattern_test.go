package review

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The patterns as they were before the name lengths moved out of them
// (docs/performance.md, "Cold init of the tool functions"): the checks that
// replace them must accept exactly the same strings, with the same parts.
var (
	countedExecutionARN    = regexp.MustCompile(`^arn:(aws[a-z-]*):states:([a-z0-9-]+):([0-9]{12}):execution:([^:/\s]{1,80}):([^:/\s]{1,80})$`)
	countedStateMachineARN = regexp.MustCompile(`^arn:(aws[a-z-]*):states:([a-z0-9-]+):([0-9]{12}):stateMachine:([^:/\s]{1,80})(?::([1-9][0-9]{0,9}))?$`)
)

// arnNameCases are names around the 80-rune limit: ASCII, multibyte runes
// (é is 2 bytes, 𝄞 is 4), invalid UTF-8 (each bad byte is one rune to RE2),
// and characters the name excludes.
func arnNameCases() []string {
	a := func(n int) string { return strings.Repeat("a", n) }
	return []string{"", "a", a(79), a(80), a(81), a(200),
		a(79) + "é", a(80) + "é", a(78) + "é" + "é",
		a(79) + "𝄞", a(80) + "𝄞", strings.Repeat("𝄞", 80), strings.Repeat("𝄞", 81),
		a(79) + "\xff", a(80) + "\xff", strings.Repeat("\xff", 80), strings.Repeat("\xff", 81),
		a(78) + "\xe2\x82", a(79) + "\xe2\x82", "\xf0\x9d\x84",
		a(10) + "\n", a(79) + "\n", "\n", a(5) + " " + a(5), a(5) + "\t", "a/b", "a:b", "a\u00a0b", a(79) + "\u2028"}
}

func arnExecutionCases() []string {
	var out []string
	names := arnNameCases()
	for _, sm := range names {
		for _, n := range []string{"run", strings.Repeat("b", 80), strings.Repeat("b", 81)} {
			out = append(out, "arn:aws:states:us-east-1:123456789012:execution:"+sm+":"+n)
		}
	}
	for _, n := range names {
		out = append(out, "arn:aws:states:us-east-1:123456789012:execution:flow:"+n,
			"arn:aws-us-gov:states:us-gov-west-1:123456789012:execution:flow:"+n+"\n")
	}
	return append(out, "", "arn:aws:states:us-east-1:123456789012:execution:flow",
		"arn:aws:states:us-east-1:123456789012:execution:flow:run:x",
		"arn:aws:states:us-east-1:12345678901:execution:flow:run",
		"arn:aws:states:us-east-1:123456789012:stateMachine:flow",
		"xarn:aws:states:us-east-1:123456789012:execution:flow:run")
}

func arnStateMachineCases() []string {
	var out []string
	for _, n := range arnNameCases() {
		for _, v := range []string{"", ":1", ":0", ":1234567890", ":12345678901", ":", ":x", "\n"} {
			out = append(out, "arn:aws:states:us-east-1:123456789012:stateMachine:"+n+v)
		}
	}
	return append(out, "", "arn:aws:states:us-east-1:123456789012:stateMachine:",
		"arn:aws:states:us-east-1:123456789012:execution:flow:run")
}

func TestExecutionARNCheckAcceptsWhatTheCountedPatternAccepts(t *testing.T) {
	for _, s := range arnExecutionCases() {
		checkExecutionARN(t, s)
	}
}

func TestStateMachineARNCheckAcceptsWhatTheCountedPatternAccepts(t *testing.T) {
	for _, s := range arnStateMachineCases() {
		checkStateMachineARN(t, s)
	}
}

func checkExecutionARN(t *testing.T, s string) {
	t.Helper()
	if got, want := matchExecutionARN(s), countedExecutionARN.FindStringSubmatch(s); !reflect.DeepEqual(got, want) {
		t.Errorf("execution ARN %q: matched %q, the counted pattern %q", s, got, want)
	}
}

func checkStateMachineARN(t *testing.T, s string) {
	t.Helper()
	if got, want := matchStateMachineARN(s), countedStateMachineARN.FindStringSubmatch(s); !reflect.DeepEqual(got, want) {
		t.Errorf("state machine ARN %q: matched %q, the counted pattern %q", s, got, want)
	}
}

// FuzzARNPatterns holds the length-checked ARN patterns to the counted
// ones on any input, as an ARN and as its name part.
func FuzzARNPatterns(f *testing.F) {
	for _, s := range arnExecutionCases() {
		f.Add(s)
	}
	for _, s := range arnNameCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkExecutionARN(t, s)
		checkStateMachineARN(t, s)
		checkExecutionARN(t, "arn:aws:states:us-east-1:123456789012:execution:"+s)
		checkExecutionARN(t, "arn:aws:states:us-east-1:123456789012:execution:flow:"+s)
		checkStateMachineARN(t, "arn:aws:states:us-east-1:123456789012:stateMachine:"+s)
	})
}
