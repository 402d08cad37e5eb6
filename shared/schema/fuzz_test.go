package schema

import (
	"regexp"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzPattern feeds untrusted pattern text (schemas come from platform
// teams and third-party servers; the "regex" format compiles instance
// strings) through the regexp hook and a schema: no panic, RE2 whenever it
// compiles the pattern, with its answer, and a schema that compiles
// decides every value or refuses it with a PatternLimitError.
func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{`^(?=.*@).+$`, "a@b"},
		{`^(a+)+$`, "aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"},
		{`^(?=(a+)+$)`, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"},
		{`(?<=\$)\d+`, "$12"},
		{`^(?<y>\d{2})-\k<y>$`, "12-12"},
		{`^\p{Script=Greek}+$`, "αβγ"},
		{`^\u{1F600}$`, "😀"},
		{`[^]`, "\n"},
		{`\cJ`, "\n"},
		{`(?<=a`, ""},
		{`\1(a)`, "a"},
		{`(?i)abc`, "ABC"},
		{`[\d-z]`, "-"},
		{`a{2147483647}`, "a"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 4096 || len(s) > 4096 {
			return
		}
		start := time.Now()
		defer func() {
			// One match at most MatchTimeout (about 3 clock ticks), a
			// validation at most ValidationBudget and one more match.
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("%q on %q took %v", pattern, s, took)
			}
		}()
		p := &patterns{}
		re, err := p.compile(pattern)
		if err != nil {
			if re != nil {
				t.Fatal("a refused pattern came back")
			}
			return
		}
		got := re.MatchString(s)
		if r2, err := regexp.Compile(pattern); err == nil {
			if p.re2 != 1 || p.ecmaCount != 0 {
				t.Fatalf("%q: RE2 compiles it, but the hook used the ECMA-262 engine", pattern)
			}
			if got != r2.MatchString(s) {
				t.Fatalf("%q on %q: %v, RE2 says %v", pattern, s, got, !got)
			}
		} else if p.ecmaCount != 1 {
			t.Fatalf("%q: counted RE2 %d, ECMA-262 %d", pattern, p.re2, p.ecmaCount)
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) {
			return // not JSON text
		}
		sch, err := CompileValue(map[string]any{"pattern": pattern})
		if err != nil {
			return // the metaschema may refuse what the hook compiles alone
		}
		verr := sch.Validate(s)
		ps := Problems(verr, nil)
		if verr != nil && len(ps) == 0 {
			t.Fatalf("%q on %q: %v without problems", pattern, s, verr)
		}
	})
}
