package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// compileTest compiles a schema document written as JSON.
func compileTest(t *testing.T, doc string) *Schema {
	t.Helper()
	s, err := CompileValue(decode(t, doc))
	if err != nil {
		t.Fatalf("compile %s: %v", doc, err)
	}
	return s
}

func decode(t *testing.T, doc string) any {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return v
}

func patternSchema(pattern string) string {
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string", "pattern": pattern}}})
	return string(b)
}

// TestECMAPatterns: patterns Go's regexp refuses compile as ECMA-262 and
// match as ECMA-262 says (JSON Schema 2020-12 §6.3.3, Core §6.4).
func TestECMAPatterns(t *testing.T) {
	cases := []struct {
		name, pattern string
		match, fail   []string
	}{
		{"lookahead", `^(?=.*@).+$`, []string{"a@b", "@"}, []string{"ab", ""}},
		{"negative lookahead", `^(?!admin$)[a-z]+$`, []string{"alice", "admins"}, []string{"admin", "Alice"}},
		{"lookbehind", `(?<=\$)\d+$`, []string{"$12", "cost $3"}, []string{"12", "€12"}},
		{"negative lookbehind", `^\w+(?<!_tmp)$`, []string{"report", "tmp_x"}, []string{"report_tmp"}},
		{"backreference", `^(["'])\w+\1$`, []string{`"a"`, `'b'`}, []string{`"a'`, `a`}},
		{"named group and backreference", `^(?<y>\d{2})-\k<y>$`, []string{"12-12"}, []string{"12-13"}},
		{"Unicode property classes", `^(?=\p{Lu})\p{L}+$`, []string{"Élan", "Ωmega"}, []string{"élan", "A1"}},
		{"Unicode script with the u flag", `^\p{Script=Greek}+$`, []string{"αβγ"}, []string{"abc"}},
		{"astral code point", `^\u{1F600}$`, []string{"😀"}, []string{"\\u{1F600}", ":)"}},
		{"control escape", `^\cJ$`, []string{"\n"}, []string{"cJ"}},
		{"class of anything", `^[^]{2}$`, []string{"a\n", "ab"}, []string{"a", "abc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := regexp.Compile(c.pattern); err == nil {
				t.Fatalf("RE2 compiles %q: the case does not test the ECMA-262 engine", c.pattern)
			}
			s := compileTest(t, patternSchema(c.pattern))
			if s.p.ecmaCount == 0 {
				t.Fatal("no pattern on the ECMA-262 engine")
			}
			for _, v := range c.match {
				if err := s.Validate(map[string]any{"v": v}); err != nil {
					t.Errorf("%q refused: %v", v, err)
				}
			}
			for _, v := range c.fail {
				err := s.Validate(map[string]any{"v": v})
				ps := Problems(err, nil)
				if err == nil || len(ps) != 1 || ps[0].Location != "/v" || ps[0].Keyword != "pattern" || ps[0].KeywordLocation != "/properties/v/pattern" || ps[0].Limit != "" {
					t.Errorf("%q: %v, problems %+v", v, err, ps)
				}
			}
		})
	}
}

// TestRE2First: a pattern RE2 compiles stays on RE2, with RE2's reading
// where the two differ, and never touches the ECMA-262 engine.
func TestRE2First(t *testing.T) {
	s := compileTest(t, `{"properties":{"ws":{"pattern":"^\\s$"},"dot":{"pattern":"^.$"},"cat":{"pattern":"^(a+)+$"}},
		"patternProperties":{"^x[0-9]+$":{"type":"integer"}}}`)
	if s.p.ecmaCount != 0 || len(s.p.ecma) != 0 || s.p.re2 < 4 {
		t.Fatalf("engines: RE2 %d, ECMA-262 %d", s.p.re2, s.p.ecmaCount)
	}
	// ECMA-262's \s holds U+00A0 and its "." refuses U+2028; RE2's do not.
	for _, c := range []struct {
		v    map[string]any
		want bool
	}{
		{map[string]any{"ws": " "}, true},
		{map[string]any{"ws": "\u00a0"}, false},
		{map[string]any{"dot": "\u2028"}, true},
	} {
		if err := s.Validate(c.v); (err == nil) != c.want {
			t.Errorf("%q: %v, want valid %v", c.v, err, c.want)
		}
	}
	// The same classes on the ECMA-262 engine (a lookahead forces it).
	e := compileTest(t, `{"properties":{"ws":{"pattern":"^(?=\\s)\\s$"},"dot":{"pattern":"^(?=.).$"}}}`)
	if e.Validate(map[string]any{"ws": "\u00a0"}) != nil || e.Validate(map[string]any{"dot": "\u2028"}) == nil {
		t.Error("the ECMA-262 engine reads \\s and . as RE2 does")
	}
	// The catastrophic pattern of every backtracking engine is linear on RE2.
	start := time.Now()
	err := s.Validate(map[string]any{"cat": strings.Repeat("a", 100_000) + "!"})
	var ple *PatternLimitError
	if err == nil || errors.As(err, &ple) || time.Since(start) > time.Second {
		t.Fatalf("^(a+)+$ on RE2: %v after %v", err, time.Since(start))
	}
}

// catastrophic backtracks exponentially on the ECMA-262 engine: it is
// ^(a+)+$ in a lookahead, which RE2 refuses.
const catastrophic = `^(?=(a+)+$)`

var slow = strings.Repeat("a", 40) + "!"

// TestPatternTimeout: a match that does not finish refuses the value,
// quickly, and names the keyword's location and the timeout, never the
// value.
func TestPatternTimeout(t *testing.T) {
	s := compileTest(t, patternSchema(catastrophic))
	start := time.Now()
	err := s.Validate(map[string]any{"v": slow})
	took := time.Since(start)
	var ple *PatternLimitError
	if !errors.As(err, &ple) || len(ple.Limits) != 1 || ple.Limits[0].Reason != reasonTimeout || ple.Limits[0].KeywordLocation != "/properties/v/pattern" {
		t.Fatalf("%v", err)
	}
	if took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
	ps := Problems(err, nil)
	if len(ps) != 1 || ps[0].Location != "/v" || ps[0].Keyword != "pattern" || ps[0].KeywordLocation != "/properties/v/pattern" || !strings.Contains(ps[0].Limit, "timeout") {
		t.Fatalf("problems %+v", ps)
	}
	want := `/v fails "pattern" (schema /properties/v/pattern): the ECMA-262 match did not finish within its 100ms timeout`
	if got := ps[0].Redacted(); got != want {
		t.Fatalf("redacted %q, want %q", got, want)
	}
	for _, text := range []string{err.Error(), ps[0].Message, ps[0].Redacted()} {
		if strings.Contains(text, "aaaa") {
			t.Errorf("the value is quoted: %s", text)
		}
	}
	// The same schema still decides what it can, at once.
	if err := s.Validate(map[string]any{"v": "aaaa"}); err != nil {
		t.Fatalf("a short value: %v", err)
	}
	if err := s.Validate(map[string]any{"v": "b"}); err == nil || errors.As(err, &ple) {
		t.Fatalf("a plain mismatch: %v", err)
	}
}

// TestPatternBudget: many values that each time out end within the
// validation's budget, not one timeout each.
func TestPatternBudget(t *testing.T) {
	s := compileTest(t, `{"type":"array","items":{"type":"string","pattern":"`+catastrophic+`"}}`)
	items := make([]any, 200)
	for i := range items {
		items[i] = strings.Repeat("a", 40+i) + "!" // distinct: one limit each
	}
	start := time.Now()
	err := s.Validate(items)
	took := time.Since(start)
	if took > ValidationBudget+time.Second {
		t.Fatalf("200 catastrophic values took %v; the budget is %v", took, ValidationBudget)
	}
	var ple *PatternLimitError
	if !errors.As(err, &ple) {
		t.Fatalf("%v", err)
	}
	reasons := map[string]int{}
	for _, l := range ple.Limits {
		reasons[l.Reason]++
	}
	if reasons[reasonTimeout] == 0 || reasons[reasonBudget] == 0 || len(ple.Limits) != len(items) {
		t.Fatalf("limits %v", reasons)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("and %d more", len(items)-maxLimits)) || len(msg) > 4096 {
		t.Fatalf("message of %d bytes: %.300s", len(msg), msg)
	}
	ps := Problems(err, nil)
	if len(ps) != len(items) {
		t.Fatalf("%d problems", len(ps))
	}
	for _, p := range ps {
		if p.Limit == "" {
			t.Errorf("problem without its limit: %+v", p)
		}
	}
	t.Logf("%d values in %v: %v", len(items), took, reasons)
	// The next validation has a budget of its own.
	if err := s.Validate([]any{"aaa"}); err != nil {
		t.Fatalf("after a spent budget: %v", err)
	}
}

// TestPatternLimitFailsClosed: an undecided match refuses the value even
// where a failing keyword would let it through.
func TestPatternLimitFailsClosed(t *testing.T) {
	cases := []struct {
		name, schema string
		instance     any
		keywordLoc   string
	}{
		{"patternProperties key", `{"type":"object","patternProperties":{"` + catastrophic + `":{"type":"integer"}}}`,
			map[string]any{slow: "x"}, "/patternProperties/" + catastrophic},
		{"patternProperties key with additionalProperties", `{"patternProperties":{"` + catastrophic + `":{"type":"string"}},"additionalProperties":{"type":"string"}}`,
			map[string]any{slow: "x"}, "/patternProperties/" + catastrophic},
		{"under not", `{"not":{"pattern":"` + catastrophic + `"}}`, slow, "/not/pattern"},
		{"in an anyOf", `{"anyOf":[{"pattern":"` + catastrophic + `"},{"type":"string"}]}`, slow, "/anyOf/0/pattern"},
		{"through $ref", `{"$defs":{"p":{"pattern":"` + catastrophic + `"}},"properties":{"a":{"$ref":"#/$defs/p"}}}`,
			map[string]any{"a": slow}, "/$defs/p/pattern"},
		{"property names", `{"propertyNames":{"pattern":"` + catastrophic + `"}}`, map[string]any{slow: 1}, "/propertyNames/pattern"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compileTest(t, c.schema)
			err := s.Validate(c.instance)
			var ple *PatternLimitError
			if !errors.As(err, &ple) {
				t.Fatalf("%v", err)
			}
			ps := Problems(err, nil)
			found := false
			for _, p := range ps {
				if p.KeywordLocation == c.keywordLoc && p.Limit != "" {
					found = true
				}
				if strings.Contains(p.Redacted(), "aaaa!") || strings.Contains(p.Message, "aaaa!") {
					t.Errorf("the value is quoted: %+v", p)
				}
			}
			if !found {
				t.Fatalf("no limit at %s: %+v", c.keywordLoc, ps)
			}
		})
	}
}

// TestConcurrentValidations: validations of one schema with ECMA-262
// patterns, at once, each get their own result.
func TestConcurrentValidations(t *testing.T) {
	s := compileTest(t, patternSchema(`^(?=.*@).+$`))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, want := "a@b", true
			if i%2 == 1 {
				v, want = "ab", false
			}
			if err := s.Validate(map[string]any{"v": v}); (err == nil) != want {
				errs <- fmt.Errorf("%q: %v", v, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPatternRefused: a pattern neither engine compiles is a compile error
// naming its location; so is an ECMA-262 pattern over the size bound.
func TestPatternRefused(t *testing.T) {
	for _, c := range []struct{ name, schema, want string }{
		{"invalid in both", patternSchema(`^(?<=a`), "/properties/v/pattern"},
		{"octal escape (Annex B, not with the u flag)", patternSchema(`^\01(?=a)$`), "/properties/v/pattern"},
		{"patternProperties key", `{"patternProperties":{"(?=":{}}}`, "patternProperties"},
		{"too long", patternSchema(`(?=a)` + strings.Repeat("a", MaxECMAPatternBytes)), "may be at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CompileValue(decode(t, c.schema))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}
