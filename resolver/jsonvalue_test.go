package resolver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsonTemplate is a Solution in JSON whose pass step's value is @V@, on
// line 5 from column 31.
const jsonTemplate = `{
  "solution": "strict-json",
  "version": 1,
  "steps": [
    {"id": "a", "pass": {"v": @V@}}
  ]
}
`

func withValue(v string) string { return strings.Replace(jsonTemplate, "@V@", v, 1) }

// jsonSolution is jsonTemplate with the value 1: it compiles.
var jsonSolution = withValue("1")

// malformedJSON are .json Solutions that YAML would read, or that are not
// JSON at all, each with the position and the words of its one [syntax]
// diagnostic. FuzzParse takes them as seeds.
var malformedJSON = []struct {
	name string
	src  string
	at   Pos
	says string
}{
	{"trailing comma in an object", withValue(`{"n": 1,}`), Pos{5, 38}, "a comma may not follow the last member of an object"},
	{"trailing comma in an array", withValue(`[1, 2,]`), Pos{5, 36}, "a comma may not follow the last element of an array"},
	{"trailing comma after the last step", strings.Replace(jsonSolution, "}}\n  ]", "}},\n  ]", 1), Pos{5, 34}, "a comma may not follow the last element of an array"},
	{"two commas", withValue(`[1,, 2]`), Pos{5, 34}, "a value is missing before this comma"},
	{"duplicate key", strings.Replace(jsonSolution, `"version": 1,`, `"version": 1, "solution": "again",`, 1), Pos{3, 17}, `key "solution" appears twice in this object (first on line 2)`},
	{"duplicate key written with an escape", withValue(`{"a": 1, "\u0061": 2}`), Pos{5, 40}, `key "a" appears twice`},
	{"empty key", withValue(`{"": 1}`), Pos{5, 32}, "an object's name may not be empty"},
	{"line comment", strings.Replace(jsonSolution, `"version": 1,`, `"version": 1, // the first`, 1), Pos{3, 17}, "JSON has no comments (RFC 8259 §2)"},
	{"block comment", withValue(`/* none */ 1`), Pos{5, 31}, "JSON has no comments"},
	{"hash comment", "# a Solution\n" + jsonSolution, Pos{1, 1}, "JSON has no comments"},
	{"single-quoted string", withValue(`'hello'`), Pos{5, 31}, "JSON strings are in double quotes (RFC 8259 §7)"},
	{"single-quoted name", withValue(`{'n': 1}`), Pos{5, 32}, "JSON strings are in double quotes"},
	{"unquoted name", withValue(`{n: 1}`), Pos{5, 32}, `object names are strings in double quotes (RFC 8259 §4)`},
	{"NaN", withValue(`NaN`), Pos{5, 31}, "NaN is not a JSON number: infinities and NaN have no JSON form (RFC 8259 §6)"},
	{"Infinity", withValue(`Infinity`), Pos{5, 31}, "Infinity is not a JSON number"},
	{"negative infinity", withValue(`-Infinity`), Pos{5, 31}, "-Infinity is not a JSON number"},
	{"leading zero", withValue(`010`), Pos{5, 31}, "JSON numbers have no leading zeros (RFC 8259 §6)"},
	{"negative leading zero", withValue(`-01`), Pos{5, 31}, "JSON numbers have no leading zeros"},
	{"leading plus", withValue(`+1`), Pos{5, 31}, `JSON numbers have no leading "+"`},
	{"leading point", withValue(`.5`), Pos{5, 31}, "JSON numbers have digits before the decimal point"},
	{"trailing point", withValue(`1.`), Pos{5, 31}, "this number is incomplete"},
	{"hexadecimal", withValue(`0x10`), Pos{5, 31}, "JSON numbers are decimal only"},
	{"big integer", withValue(`12345678901234567891`), Pos{5, 31}, `step "a" pass.v: 12345678901234567891 has more digits than an IEEE 754 double holds: JSON parsers read it as 12345678901234567000`},
	{"integer above 2^53", withValue(`9007199254740993`), Pos{5, 31}, "JSON parsers read it as 9007199254740992"},
	{"out of range", withValue(`-1e400`), Pos{5, 31}, "outside the range of an IEEE 754 double"},
	{"byte order mark", "\ufeff" + jsonSolution, Pos{1, 1}, "byte order mark (U+FEFF), which a JSON text may not carry (RFC 8259 §8.1)"},
	{"trailing content", jsonSolution + "x\n", Pos{8, 1}, "text follows the JSON value that ends on line 7"},
	{"a second value", jsonSolution + jsonSolution, Pos{8, 1}, "a .json file holds one JSON value"},
	{"capitalised literal", withValue(`True`), Pos{5, 31}, "JSON writes true, false and null in lower case"},
	{"misspelt literal", withValue(`nul`), Pos{5, 31}, "write true, false or null in full"},
	{"missing colon", withValue(`{"n" 1}`), Pos{5, 36}, `a ":" must follow an object's name`},
	{"missing comma between lines", strings.Replace(jsonSolution, `"version": 1,`, `"version": 1`, 1), Pos{3, 15}, `a "," or "}" must follow this value, in the object that opens on line 1: the next one, on line 4, comes without it`},
	{"unclosed object", strings.TrimSuffix(jsonSolution, "}\n"), Pos{1, 1}, `the "{" on line 1 opens an object that is not closed: the file ends before its "}"`},
	{"unclosed array", withValue(`[1, 2}`), Pos{5, 31}, `the "[" on line 5 opens an array that is not closed: "}" at line 5 column 36 comes before its "]"`},
	{"unclosed string at the end", `{"solution": "x`, Pos{1, 14}, `the string that starts on line 1 is not closed: the file ends before its closing "`},
	{"line break in a string", withValue("\"two\nlines\""), Pos{5, 31}, `the string that starts on line 5 is not closed on its line`},
	{"tab in a string", withValue("\"a\tb\""), Pos{5, 33}, `a JSON string may not hold a tab as it is: write it as \t`},
	{"unknown escape", withValue(`"\x41"`), Pos{5, 32}, `this is not a JSON escape`},
	{"other control character", withValue("\"a\x01b\""), Pos{5, 33}, `the control character U+0001 as it is: write it as \u0001`},
	{"lone surrogate", withValue(`"\ud800"`), Pos{5, 32}, `this \u escape is not one JSON reads`},
	{"closer with nothing open", jsonSolution[:len(jsonSolution)-1] + "}", Pos{7, 2}, "text follows the JSON value"},
	{"empty file", "", Pos{1, 1}, "the file holds no JSON value"},
	{"only whitespace", " \n\t\n", Pos{1, 1}, "the file holds no JSON value"},
	{"invalid UTF-8", withValue("\"\xff\""), Pos{5, 32}, "the file is not valid UTF-8"},
	{"nested too deep", withValue(strings.Repeat("[", 40) + strings.Repeat("]", 40)), Pos{5, 60}, "values nest deeper than 32 levels"},
}

// A .json Solution is read as strict JSON: each malformed text gets one
// [syntax] diagnostic, in words, at the fault or at the construct left
// open, and compiles to nothing.
func TestJSONRefusals(t *testing.T) {
	for _, c := range malformedJSON {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("s.json", []byte(c.src), Options{})
			if len(res.Diagnostics) != 1 {
				t.Fatalf("%d diagnostics, want 1: %v", len(res.Diagnostics), res.Diagnostics)
			}
			d := res.Diagnostics[0]
			if d.Rule != RuleSyntax || d.Severity != SeverityError || (Pos{d.Line, d.Column}) != c.at || !strings.Contains(d.Message, c.says) {
				t.Errorf("got  %s\nwant s.json:%d:%d: error: [syntax] …%s…", d, c.at.Line, c.at.Column, c.says)
			}
			if res.Definition != nil {
				t.Error("a refused Solution produced a definition")
			}
		})
	}
}

// The same Solution text compiles under a .yaml name where the JSON rules
// refuse it: the file's name, not its content, chooses the grammar.
func TestFileNameChoosesTheFormat(t *testing.T) {
	lenient := withValue(`{"n": 1,}`)
	if res := Compile("lenient.yaml", []byte(lenient), Options{}); !res.OK() {
		t.Errorf("read as YAML: %v", res.Diagnostics)
	}
	for _, name := range []string{"lenient.json", "LENIENT.JSON", "dir/lenient.Json"} {
		if res := Compile(name, []byte(lenient), Options{}); res.OK() {
			t.Errorf("%s compiles: a .json name must be read as JSON", name)
		}
	}
	for name, want := range map[string]format{
		"a.json": formatJSON, "a.JSON": formatJSON, "crm.toolset.json": formatJSON, "schemas/in.json": formatJSON,
		"a.yaml": formatYAML, "a.yml": formatYAML, "a": formatYAML, "a.json.yaml": formatYAML, "json": formatYAML, "a.jsonc": formatYAML,
	} {
		if got := formatOf(name); got != want {
			t.Errorf("formatOf(%q) = %v, want %v", name, got, want)
		}
	}
}

// A JSON text that is valid reads, through the JSON parser, into the very
// tree (values, keys and the line and column of each) that the YAML parser
// reads from it, so every later diagnostic points at the same place in a
// .json file.
func TestJSONReadsAsYAMLDoes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(solutionsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{
		"nested values":          `{"a": [1, -2.5e3, true, false, null, "s", {"b": []}, {}], "c": {"d": {"e": "f"}}}`,
		"escapes":                `{"t\u00e9": "a\"b\\c\/d\n\u00e9\ud83d\ude00"}`,
		"characters before":      "{\"é€😀\": {\"ü\": [1, 2, {\"x\": 1e400}]}}",
		"indented across lines":  "{\n  \"a\":\n    [\n      1,\n      2\n    ]\n}\r\n",
		"a value that is a list": `[{"id": "a"}, 2]`,
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".asl.json") || strings.HasSuffix(f, ".toolset.json") || strings.HasPrefix(filepath.Base(f), "refuse-json-") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(f)] = string(src)
	}
	if len(srcs) < 7 {
		t.Fatalf("only %d JSON texts", len(srcs))
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			y, _, err := parseValue([]byte(src), formatYAML)
			if err != nil {
				t.Fatalf("YAML: %v", err)
			}
			j, _, err := parseValue([]byte(src), formatJSON)
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			if d := cmp.Diff(y, j, cmp.AllowUnexported(value{}, field{})); d != "" {
				t.Errorf("the JSON tree differs from the YAML one (-yaml +json):\n%s", d)
			}
		})
	}
}

// Numbers are kept as written, so that a big integer is not rounded on the
// way in: a .json Solution's numbers reach the definition as written, and
// one a double does not hold is refused as in YAML.
func TestJSONNumbersAsWritten(t *testing.T) {
	for _, lit := range []string{"9007199254740992", "0.1", "1.50", "1E3", "-0", "100000000000000000000000", "5e-324"} {
		res := Compile("n.json", []byte(withValue(lit)), Options{})
		if !res.OK() {
			t.Errorf("%s refused: %v", lit, res.Diagnostics)
			continue
		}
		if !strings.Contains(string(res.Definition), `"v": `+lit+"\n") {
			t.Errorf("%s is not in the definition as written:\n%s", lit, res.Definition)
		}
	}
}

// A toolset file and a platform tool's schema file named .json are read as
// JSON too.
func TestJSONToolsetAndSchemaFiles(t *testing.T) {
	res := CompileToolset("crm.json", []byte(`{"toolset": "crm", "tools": {"send-email": {},}}`), ToolsetOptions{})
	if len(res.Diagnostics) == 0 || res.Diagnostics[0].Rule != RuleSyntax || res.Diagnostics[0].Line != 1 || res.Diagnostics[0].Column != 46 {
		t.Errorf("toolset file: %v", res.Diagnostics)
	}
	schema := map[string]string{"in.json": `{"type": "object",}`, "in.yaml": `{"type": "object",}`}
	src := "toolset: crm\ntools:\n  create-ticket:\n    function: ${FunctionCreateTicket}\n    input_schema: @F@\n    output_schema: {type: object}\n    idempotent: true\n    policy: at_least_once\n"
	for file, want := range map[string]string{"in.json": `the file "in.json" is not one YAML or JSON value: 1:18: a comma may not follow`, "in.yaml": ""} {
		res := CompileToolset("crm.yaml", []byte(strings.Replace(src, "@F@", file, 1)), ToolsetOptions{
			ReadFile: func(name string) ([]byte, error) { return []byte(schema[name]), nil },
		})
		got := ""
		for _, d := range res.Diagnostics {
			if d.Rule == RuleToolSchema {
				got = d.Message
			}
		}
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q", file, got, want)
		}
	}
}
