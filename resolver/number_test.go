package resolver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// numberPlaces are Solutions with one number literal written at @N@, one
// for every kind of place a number can be written. Each compiles with N=2
// but two: the tool input, whose schema wants a string there
// ([tool-input]), and the step without an id ([missing-field]). The number
// check runs before either, so a refused literal is the only diagnostic.
var numberPlaces = []struct {
	name, field, src string
	with2            string // the error rule with N=2; "" when it compiles
}{
	{"version", "version", "solution: t\nversion: @N@\nsteps:\n  - id: a\n    pass: {}\n", ""},
	{"run timeout", "policy.run_timeout_seconds", "solution: t\nversion: 1\npolicy: {run_timeout_seconds: @N@}\nsteps:\n  - id: a\n    pass: {}\n", ""},
	{"tool timeout", `step "f" timeout_seconds`, "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    timeout_seconds: @N@\n", ""},
	{"retry max attempts", `step "f" retry.max_attempts`, "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    retry: {max_attempts: @N@}\n", ""},
	{"retry interval", `step "f" retry.interval_seconds`, "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    retry: {interval_seconds: @N@}\n", ""},
	{"backoff rate", `step "f" retry.backoff_rate`, "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    retry: {backoff_rate: @N@}\n", ""},
	{"tool input", `step "v" with.solution`, "solution: t\nversion: 1\nsteps:\n  - id: v\n    tool: workflow-validator\n    with: {solution: @N@}\n", RuleToolInput},
	{"pass value", `step "a" pass.x`, "solution: t\nversion: 1\nsteps:\n  - id: a\n    pass: {x: @N@}\n", ""},
	{"pass list item", `step "a" pass.x.y[1]`, "solution: t\nversion: 1\nsteps:\n  - id: a\n    pass:\n      x: {y: [1, @N@]}\n", ""},
	{"step without id", "step 1 pass.x", "solution: t\nversion: 1\nsteps:\n  - pass: {x: @N@}\n", RuleMissingField},
	{"choice operand", `step "c" choice[0].when.greater_than`, "solution: t\nversion: 1\nsteps:\n  - id: c\n    choice:\n      - when: {value: \"${input.n}\", greater_than: @N@}\n        next: end\n", ""},
	{"review timeout", `step "r" review.timeout_seconds`, "solution: t\nversion: 1\nsteps:\n  - id: r\n    review: {of: s, timeout_seconds: @N@}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", ""},
	{"input schema", `input.properties["a b"].maximum`, "solution: t\nversion: 1\ninput: {type: object, properties: {\"a b\": {maximum: @N@}}}\nsteps:\n  - id: a\n    pass: {}\n", ""},
	{"json source", `step "a" pass.x`, "{\"solution\": \"t\", \"version\": 1, \"steps\": [{\"id\": \"a\", \"pass\": {\"x\": @N@}}]}\n", ""},
}

// at returns the 1-based line and column of the first @N@ in src.
func at(src string) Pos {
	i := strings.Index(src, "@N@")
	line := strings.Count(src[:i], "\n") + 1
	return Pos{line, i - strings.LastIndex(src[:i], "\n")}
}

// Every number literal JSON (RFC 8259 §6) does not have, or that no IEEE
// 754 double holds as written, is refused in every place a number can be
// written: one [syntax] diagnostic at the literal, naming the field and
// saying why.
func TestNumberLiteralsRefused(t *testing.T) {
	variants := []struct {
		lit, why string
	}{
		{"+1", `JSON has no leading "+" (RFC 8259 §6); write 1`},
		{"+0", `JSON has no leading "+" (RFC 8259 §6); write 0`},
		{"+1.5", `JSON has no leading "+" (RFC 8259 §6); write 1.5`},
		{"+1e3", `JSON has no leading "+" (RFC 8259 §6); write 1e3`},
		{"0x10", "base 16, JSON numbers are decimal only (RFC 8259 §6); write 16"},
		{"-0x10", "base 16, JSON numbers are decimal only (RFC 8259 §6); write -16"},
		{"0o17", "base 8, JSON numbers are decimal only (RFC 8259 §6); write 15"},
		{"0b11", "base 2, JSON numbers are decimal only (RFC 8259 §6); write 3"},
		{"010", "YAML 1.1 reads a leading 0 as octal, YAML 1.2 as decimal"},
		{"1_000", "JSON has no separators (RFC 8259 §6); write 1000"},
		{".5", "digits on both sides of the decimal point (RFC 8259 §6); write 0.5"},
		{"-.5", "digits on both sides of the decimal point (RFC 8259 §6); write -0.5"},
		{"1.", "digits on both sides of the decimal point (RFC 8259 §6); write 1.0"},
		{"1.e3", "digits on both sides of the decimal point (RFC 8259 §6); write 1.0e3"},
		{"+.5", `JSON has no leading "+" and JSON needs digits on both sides of the decimal point (RFC 8259 §6); write 0.5`},
		{"1e400", "outside the range of an IEEE 754 double"},
		{"-1e400", "outside the range of an IEEE 754 double"},
		{"1E400", "outside the range of an IEEE 754 double"},
		{"1.8e308", "outside the range of an IEEE 754 double"},
		{"1e-400", "closer to 0 than the smallest non-zero IEEE 754 double (5e-324): JSON parsers read it as 0 (RFC 8259 §6); write 0"},
		{"-1e-400", "closer to 0 than the smallest non-zero IEEE 754 double"},
		{"2e-324", "closer to 0 than the smallest non-zero IEEE 754 double"},
		{"1e99999999999", "exponent beyond what JSON parsers carry"},
		{"9007199254740993", "read it as 9007199254740992 (RFC 8259 §6); write 9007199254740992"},
		{"3.141592653589793238462643383279", "read it as 3.141592653589793"},
		{"0.10000000000000000555", "read it as 0.1"},
		{".inf", "infinities and NaN have no JSON form"},
		{".Inf", "infinities and NaN have no JSON form"},
		{"-.inf", "infinities and NaN have no JSON form"},
		{"+.inf", "infinities and NaN have no JSON form"},
		{".nan", "infinities and NaN have no JSON form"},
		{".NaN", "infinities and NaN have no JSON form"},
	}
	for _, p := range numberPlaces {
		t.Run(p.name, func(t *testing.T) {
			if got := errorRules(compileString(t, strings.Replace(p.src, "@N@", "2", 1))); strings.Join(got, " ") != p.with2 {
				t.Fatalf("with 2 the errors are %v, want %q", got, p.with2)
			}
			want := at(p.src)
			for _, v := range variants {
				res := compileString(t, strings.Replace(p.src, "@N@", v.lit, 1))
				if len(res.Diagnostics) != 1 {
					t.Errorf("%s: %d diagnostics, want 1: %v", v.lit, len(res.Diagnostics), res.Diagnostics)
					continue
				}
				d := res.Diagnostics[0]
				prefix := p.field + ": " + v.lit + " "
				if d.Severity != SeverityError || d.Rule != RuleSyntax || d.Line != want.Line || d.Column != want.Column ||
					!strings.HasPrefix(d.Message, prefix) || !strings.Contains(d.Message, v.why) {
					t.Errorf("%s: got %s\nwant t.yaml:%d:%d: error: [syntax] %s… %s", v.lit, d, want.Line, want.Column, prefix, v.why)
				}
				if res.Definition != nil || res.Toolset != nil {
					t.Errorf("%s: a refused Solution produced output", v.lit)
				}
			}
		})
	}
}

// Numbers that a double holds as written compile and reach the definition
// exactly as written.
func TestNumberLiteralsAccepted(t *testing.T) {
	for _, lit := range []string{"0", "-0", "2", "-7", "0.1", "1.50", "1e3", "1E3", "1e+3", "-1.5e-3", "0e5",
		"5e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "-1.7976931348623157e308",
		"9007199254740992", "12345678901234567e-16", "100000000000000000000000"} {
		res := compileString(t, "solution: t\nversion: 1\nsteps:\n  - id: a\n    pass: {x: "+lit+"}\n")
		if !res.OK() {
			t.Errorf("%s refused: %v", lit, res.Diagnostics)
			continue
		}
		if !bytes.Contains(res.Definition, []byte(`"x": `+lit+"\n")) {
			t.Errorf("%s is not in the definition as written:\n%s", lit, res.Definition)
		}
	}
}

// YAML 1.2's core schema reads inf, nan, Infinity and NaN (without the
// leading dot) as strings, and so does the resolver: in a pass step they are
// strings, and where a number is required they are refused as strings.
// Quoted, any literal is a string.
func TestNumberLikeStrings(t *testing.T) {
	for _, s := range []string{"inf", "-inf", "nan", "NaN", "Infinity", "-Infinity", `"1e400"`, `"+1"`, `'.5'`, `"0x10"`} {
		res := compileString(t, "solution: t\nversion: 1\nsteps:\n  - id: a\n    pass: {x: "+s+"}\n")
		if !res.OK() {
			t.Errorf("%s refused: %v", s, res.Diagnostics)
			continue
		}
		want, _ := json.Marshal(strings.Trim(s, `"'`))
		if !bytes.Contains(res.Definition, []byte(`"x": `+string(want))) {
			t.Errorf("%s is not the string %s in the definition", s, want)
		}
		res = compileString(t, "solution: t\nversion: "+s+"\nsteps:\n  - id: a\n    pass: {}\n")
		if got := errorRules(res); len(got) != 1 || got[0] != RuleInvalidValue ||
			!strings.Contains(res.Diagnostics[0].Message, "version must be a whole number, not a string") {
			t.Errorf("version: %s: %v", s, res.Diagnostics)
		}
	}
}

// Every refused number is reported, not only the first, each at its own
// position and in source order.
func TestEveryRefusedNumberReported(t *testing.T) {
	src := "solution: t\nversion: +1\nsteps:\n  - id: a\n    pass: {x: 1e400, y: [.5, 1, 1e-400]}\n"
	var got []string
	for _, d := range compileString(t, src).Diagnostics {
		got = append(got, fmt.Sprintf("%d:%d %s", d.Line, d.Column, d.Message[:strings.Index(d.Message, " is")]))
	}
	want := []string{"2:10 version: +1", `5:15 step "a" pass.x: 1e400`, `5:26 step "a" pass.y[0]: .5`, `5:33 step "a" pass.y[2]: 1e-400`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// Every finite double, written as Go or JavaScript prints it, is accepted,
// and one more significant digit than a double keeps is refused.
func TestEveryDoubleAccepted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		for _, lit := range []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', -1, 64), shortest(f)} {
			if jsonNumber.MatchString(lit) && refusedNumber(lit) != "" {
				t.Fatalf("%s (%v) refused: %s", lit, f, refusedNumber(lit))
			}
		}
		// 17 significant digits and a 1 after them: between two doubles.
		e := strconv.FormatFloat(math.Abs(f), 'e', 16, 64)
		mant, exp, _ := strings.Cut(e, "e")
		if f == 0 || strings.HasSuffix(mant, "0") {
			continue
		}
		if lit := mant + "1e" + exp; refusedNumber(lit) == "" {
			t.Fatalf("%s accepted; the nearest double is %v", lit, f)
		}
	}
}
