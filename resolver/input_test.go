package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestInputLimitPolicy: policy.input_limit_bytes and its bounds, and what
// the definition records.
func TestInputLimitPolicy(t *testing.T) {
	cases := []struct {
		name, policy string
		want         []string // error rules
		limit        int
	}{
		{"default", "", nil, DefaultInputLimitBytes},
		{"set", "input_limit_bytes: 1024", nil, 1024},
		{"one byte", "input_limit_bytes: 1", nil, 1},
		{"the maximum", "input_limit_bytes: 131072", nil, MaxInputLimitBytes},
		{"over the maximum", "input_limit_bytes: 131073", []string{RuleQuota}, 0},
		{"the state quota", "input_limit_bytes: 262144", []string{RuleQuota}, 0},
		{"zero", "input_limit_bytes: 0", []string{RuleInvalidValue}, 0},
		{"negative", "input_limit_bytes: -1", []string{RuleInvalidValue}, 0},
		{"fraction", "input_limit_bytes: 1024.5", []string{RuleInvalidValue}, 0},
		{"exponent", "input_limit_bytes: 1e3", []string{RuleInvalidValue}, 0},
		{"string", `input_limit_bytes: "32k"`, []string{RuleInvalidValue}, 0},
		{"YAML-only number form", "input_limit_bytes: 0x400", []string{RuleSyntax}, 0},
		{"misspelt", "input_limit: 1024", []string{RuleUnknownField}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, "solution: t\nversion: 1\npolicy: {"+c.policy+"}\nsteps:\n  - id: a\n    pass: {x: 1}\n")
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
			if c.want != nil {
				return
			}
			rec, err := ReadInputRecord(res.Definition)
			if err != nil {
				t.Fatal(err)
			}
			if rec.LimitBytes != c.limit || rec.Schema != nil || res.Manifest.InputLimitBytes != c.limit {
				t.Fatalf("record %+v, manifest %d, want limit %d without a schema", rec, res.Manifest.InputLimitBytes, c.limit)
			}
		})
	}
}

// TestInputRecord: the record is the Start state's Comment, never state
// data, and carries the Solution's schema as compact JSON.
func TestInputRecord(t *testing.T) {
	src, err := os.ReadFile(solutionsDir + "/newsletter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := Compile("newsletter.yaml", src, Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	var def struct {
		StartAt string
		States  map[string]map[string]any
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	want := InputRecordPrefix + `{"input_limit_bytes":32768,"input_schema":{"properties":{"recipient":{"type":"string"}},"required":["recipient"],"type":"object"}}`
	if c := def.States[def.StartAt]["Comment"]; c != want {
		t.Fatalf("Start's Comment %q, want %q", c, want)
	}
	for name, st := range def.States {
		b, _ := json.Marshal(st)
		if name != def.StartAt && strings.Contains(string(b), "input_limit_bytes") {
			t.Errorf("state %s carries the record: %s", name, b)
		}
	}
	rec, err := ReadInputRecord(res.Definition)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, input string
		want        []string // InputError lines; nil: accepted
	}{
		{"valid", `{"recipient": "team@example.com"}`, nil},
		{"valid with more", `{"recipient": "x", "note": [1, 2]}`, nil},
		{"missing", `{"recipients": ["SECRET"]}`, []string{`input/ fails "required" (schema /required): want property "recipient"`}},
		{"wrong type", `{"recipient": ["SECRET@example.com"]}`, []string{`input/recipient fails "type" (schema /properties/recipient/type): want string, got array`}},
		{"not an object", `"SECRET"`, []string{`input/ fails "type" (schema /type): want object, got string`}},
		{"null", `null`, []string{`input/ fails "type" (schema /type): want object, got null`}},
		{"over the limit", `{"recipient": "` + strings.Repeat("S", 32768) + `"}`, []string{`the input is 32784 bytes of compact JSON, over the Solution's policy.input_limit_bytes of 32768`}},
		{"at the limit", `{"recipient": "` + strings.Repeat("S", 32768-16) + `"}`, nil},
		// Insignificant white space does not count; "<" is sent as \u003c.
		{"white space", "{\n  \"recipient\":   \"" + strings.Repeat("S", 32768-16) + "\"\n}\n", nil},
		{"escaped on the way", `{"recipient": "` + strings.Repeat("<", 6000) + `"}`, []string{`the input is 36016 bytes of compact JSON, over the Solution's policy.input_limit_bytes of 32768`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := rec.Check([]byte(c.input))
			var ie *InputError
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &ie) {
				t.Fatalf("%v, want an InputError", err)
			}
			if got := ie.Lines(); !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "SSS") {
				t.Fatalf("the message quotes the input: %s", err)
			}
		})
	}
	for _, bad := range []string{``, `{`, `{"recipient": "x"} {}`, `{"recipient": "x"} x`} {
		var ie *InputError
		if err := rec.Check([]byte(bad)); err == nil || errors.As(err, &ie) {
			t.Errorf("%q: %v, want an error that is not an InputError", bad, err)
		}
	}
}

// TestReadInputRecordRefuses: a definition without a readable record is
// never run unchecked.
func TestReadInputRecordRefuses(t *testing.T) {
	def := func(comment string) []byte {
		b, _ := json.Marshal(map[string]any{"StartAt": "Start", "States": map[string]any{"Start": map[string]any{"Type": "Pass", "Comment": comment, "End": true}}})
		return b
	}
	for _, c := range []struct {
		name string
		def  []byte
		want string
	}{
		{"no comment", def(""), "no input record"},
		{"the old comment", def("the execution input must be {input, meta}"), "publish the Solution again"},
		{"a newer version", def(`toolgate:input:v2 {"input_limit_bytes":1}`), `version "v2"`},
		{"not JSON", def(InputRecordPrefix + `{"input_limit_bytes":`), "input record"},
		{"unknown field", def(InputRecordPrefix + `{"input_limit_bytes":1,"limit":2}`), "unknown field"},
		{"limit zero", def(InputRecordPrefix + `{"input_limit_bytes":0}`), "outside 1..131072"},
		{"limit over", def(InputRecordPrefix + `{"input_limit_bytes":131073}`), "outside 1..131072"},
		{"no definition", []byte(`not json`), "not JSON"},
		{"record on another state", []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Comment":"` + InputRecordPrefix + `{\"input_limit_bytes\":1}"}}}`), "no input record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ReadInputRecord(c.def); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
	if r, err := ReadInputRecord(def(InputRecordPrefix + `{"input_limit_bytes":7}`)); err != nil || r.LimitBytes != 7 || r.Check([]byte(`"12345"`)) != nil || r.Check([]byte(`"123456"`)) == nil {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestInputRecordSize: a schema too large for the Start state's Comment is
// refused with [quota] at the input; one that fits is recorded whole.
func TestInputRecordSize(t *testing.T) {
	solution := func(descBytes int) string {
		return fmt.Sprintf("solution: t\nversion: 1\ninput: {type: object, description: %q}\nsteps:\n  - id: a\n    pass: {x: 1}\n", strings.Repeat("d", descBytes))
	}
	overhead := len(InputRecordPrefix + `{"input_limit_bytes":32768,"input_schema":{"description":"","type":"object"}}`)
	fits := compileString(t, solution(MaxInputRecordBytes-overhead))
	if !fits.OK() {
		t.Fatalf("a record of exactly %d bytes: %v", MaxInputRecordBytes, fits.Diagnostics)
	}
	if rec, err := ReadInputRecord(fits.Definition); err != nil || !strings.Contains(string(rec.Schema), strings.Repeat("d", 1000)) {
		t.Fatalf("%v", err)
	}
	over := compileString(t, solution(MaxInputRecordBytes-overhead+1))
	if got := errorRules(over); !slices.Equal(got, []string{RuleQuota}) || over.Diagnostics[0].Line != 3 || !strings.Contains(over.Diagnostics[0].Message, "65537 bytes") {
		t.Fatalf("%v", over.Diagnostics)
	}
	// The record counts towards the 1 MiB definition, escaped as the
	// definition's JSON escapes it: a schema of quotes takes twice its
	// Comment's size there.
	// The 960 000 bytes of literals are on six exclusive branches, so that
	// each path's state data fits (resolver: [state-size]).
	big := func(desc string) *Result {
		var b strings.Builder
		fmt.Fprintf(&b, "solution: t\nversion: 1\ninput: {description: %q}\nsteps:\n  - id: route\n    choice:\n", strings.Repeat(desc, 30_000))
		for i := range 6 {
			fmt.Fprintf(&b, "      - when: {value: \"${input.n}\", equals: %d}\n        next: p%d\n", i, i)
		}
		b.WriteString("    default: end\n")
		for i := range 6 {
			fmt.Fprintf(&b, "  - id: p%d\n    pass: {x: %q}\n", i, strings.Repeat("p", 160_000))
		}
		return compileString(t, b.String())
	}
	if res := big(`"`); !slices.Equal(errorRules(res), []string{RuleQuota}) || !strings.Contains(res.Diagnostics[0].Message, "once deployed") {
		t.Fatalf("%v", res.Diagnostics)
	}
	if res := big("d"); !res.OK() {
		t.Fatalf("without the escapes it fits: %v", res.Diagnostics)
	}
}

// TestECMAInputSchema: the schema compiles, and toolgate run's
// check applies it with ECMA-262 semantics and bounds.
func TestECMAInputSchema(t *testing.T) {
	res := compileString(t, `solution: t
version: 1
input:
  type: object
  required: [email]
  properties:
    email: {type: string, pattern: "^(?=.*@).+$"}
    name: {type: string, pattern: "^(?<first>\\p{Lu}\\p{Ll}*)(?: \\k<first>)?$"}
    code: {type: string, pattern: "^(?=(a+)+$)"}
  patternProperties:
    "^x-(?!internal)": {type: integer}
steps:
  - id: a
    pass: {to: "${input.email}"}
`)
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	rec, err := ReadInputRecord(res.Definition)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, input string
		want        string // a line of the InputError; "" accepted
	}{
		{"valid", `{"email": "a@example.com", "name": "Ada Ada", "x-team": 3, "x-internal": "s"}`, ""},
		{"lookahead", `{"email": "SECRET"}`, `input/email fails "pattern" (schema /properties/email/pattern)`},
		{"named backreference", `{"email": "a@b", "name": "Ada Bob"}`, `input/name fails "pattern" (schema /properties/name/pattern)`},
		{"pattern property", `{"email": "a@b", "x-team": "SECRET"}`, `input/x-team fails "type" (schema /patternProperties/^x-(?!internal)/type): want integer, got string`},
		{"catastrophic", `{"email": "a@b", "code": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}`,
			`input/code fails "pattern" (schema /properties/code/pattern): the ECMA-262 match did not finish within its 100ms timeout`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := rec.Check([]byte(c.input))
			if time.Since(start) > 2*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !slices.Contains(ie.Lines(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "aaaa") {
				t.Fatalf("the message quotes the input: %s", err)
			}
		})
	}
}

// The input record is written into the definition as it is, and
// publishing replaces every deployment placeholder it holds with an ARN:
// a schema holding one would be recorded (and checked by toolgate run) as
// something the author did not write.
func TestInputRecordHoldsNoDeploymentPlaceholder(t *testing.T) {
	src := "solution: t\nversion: 1\ninput: {type: object, properties: {to: {const: \"${FunctionSendEmail}\"}}}\nsteps:\n  - id: s\n    tool: send-email\n    with: {to: [\"${input.to}\"], subject: s, text: t}\n"
	res := compileString(t, strings.Replace(src, "steps:\n", "steps:\n  - id: r\n    review: {of: s}\n    on_approve: s\n", 1))
	if got := errorRules(res); !slices.Equal(got, []string{RuleInputSchema}) {
		t.Fatalf("errors %v, want [%s]: %v", got, RuleInputSchema, res.Diagnostics)
	}
}

// A number in the input is counted at the longest form Step Functions may
// write it back in: "1e20" may come back as 21 digits, so an input of
// exponents cannot grow past input_limit_bytes in the state data.
func TestInputSizeCountsNumbersAsStepFunctionsMayWriteThem(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{"a":"x"}`, 9},
		{`[7]`, 3 + 4},                    // "7.0"
		{`[-123456789012345]`, 18 + 4},    // 15 digits: exact in a double
		{`[1e20]`, 2 + 24},                // "100000000000000000000"
		{`[1234567890123456789]`, 2 + 24}, // 19 digits: no longer exact, counted at 24
		{`[0.5, 2]`, 2 + 24 + 1 + 1 + 4},
	} {
		got, err := InputSize([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("InputSize(%s) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	var in []byte
	in = append(in, '[')
	for k := range 1000 {
		if k > 0 {
			in = append(in, ',')
		}
		in = append(in, "1e20"...)
	}
	in = append(in, ']')
	if n, _ := InputSize(in); n < 21*1000 {
		t.Errorf("a thousand 1e20s count %d bytes; Step Functions may write them as 21 000", n)
	}
	if _, err := InputSize([]byte(`[1] [2]`)); err == nil {
		t.Error("two values measured as an input")
	}
}
