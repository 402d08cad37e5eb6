package toolset

import (
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/testkit"
)

// countedPatterns are the package's tool.Patterns beside their counted
// forms, compiled as they were before the counts moved out of them: each
// must accept exactly the same strings, with the same submatches.
var countedPatterns = []testkit.Counted{
	{Name: "FunctionPattern", P: FunctionPattern, Regexp: regexp.MustCompile(`^\$\{(Function[A-Z][A-Za-z0-9]{0,62})\}$`)},
	{Name: "LambdaARNPattern", P: LambdaARNPattern, Regexp: regexp.MustCompile(`^arn:aws[a-zA-Z-]*:lambda:[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:\d{12}:function:[a-zA-Z0-9-_]{1,64}(:(\$LATEST|[a-zA-Z0-9-_]{1,128}))?$`)},
	{Name: "NamePattern", P: NamePattern, Regexp: regexp.MustCompile(`^[a-z][a-z0-9-]{0,49}$`)},
}

// patternCases are strings around each bound (50 name bytes, 62 key
// characters, a 64-byte function name, a 128-byte qualifier): ASCII,
// multibyte runes (é is 2 bytes, 𝄞 is 4), invalid UTF-8, newlines and
// characters outside the classes.
func patternCases() []string {
	const arn = "arn:aws:lambda:us-east-1:123456789012:function:"
	out := []string{"", "a", "${Function}", "${FunctionA}", "${Functiona}", arn, arn + "f", arn + "f:", arn + "f:$LATEST", arn + "f:$LATEST\n",
		arn + "f:1:2", "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f", "arn:aws:lambda:us-isob-east-1:123456789012:function:f:v1"}
	for _, n := range []int{48, 49, 50, 51, 60, 61, 62, 63, 64, 65, 126, 127, 128, 129, 200} {
		a := strings.Repeat("a", n)
		for _, tail := range []string{"", "é", "𝄞", "\xff", "\n", "-", "_", "Z", ":"} {
			out = append(out, a+tail, "${FunctionA"+a+tail+"}", "${FunctionA"+a+"}"+tail,
				arn+a+tail, arn+"f:"+a+tail, arn+a+tail+":v1", arn+a+":"+a+tail)
		}
		if n >= 2 {
			out = append(out, a[:n-2]+"é", arn+a[:n-2]+"é", arn+"f:"+a[:n-2]+"é")
		}
	}
	return out
}

func TestPatternsAcceptWhatTheirCountedFormsAccept(t *testing.T) {
	testkit.SameAsCounted(t, countedPatterns, patternCases()...)
}

// FuzzPatterns holds each Pattern to its counted form on any input, alone
// and as a Lambda ARN's function name or qualifier.
func FuzzPatterns(f *testing.F) {
	for _, s := range patternCases() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		testkit.SameAsCounted(t, countedPatterns, s, "${Function"+s+"}", "arn:aws:lambda:us-east-1:123456789012:function:"+s,
			"arn:aws:lambda:us-east-1:123456789012:function:f:"+s)
	})
}
