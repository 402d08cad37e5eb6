package inputrecord

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// definition is a one-state definition whose Start state's Comment is
// comment.
func definition(comment string) []byte {
	b, _ := json.Marshal(map[string]any{"StartAt": "Start", "States": map[string]any{"Start": map[string]any{"Type": "Pass", "Comment": comment, "End": true}}})
	return b
}

// TestCommentRoundTrip: what the resolver writes (Comment) is what Read
// reads back, the schema as compact JSON without HTML escaping.
func TestCommentRoundTrip(t *testing.T) {
	r := Record{LimitBytes: 1024, Schema: json.RawMessage(`{"type":"object","description":"a <b> & c"}`)}
	c, err := r.Comment()
	if err != nil {
		t.Fatal(err)
	}
	if want := Prefix + `{"input_limit_bytes":1024,"input_schema":{"type":"object","description":"a <b> & c"}}`; c != want {
		t.Fatalf("Comment %q, want %q", c, want)
	}
	got, err := Read(definition(c))
	if err != nil || got.LimitBytes != r.LimitBytes || string(got.Schema) != string(r.Schema) {
		t.Fatalf("Read: %+v %v, want %+v", got, err, r)
	}
}

// TestReadRefuses: a definition without a readable record is an error,
// and the two a caller words its own advice for are told apart.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct {
		name     string
		def      []byte
		want     string
		noRecord bool
		version  string
	}{
		{"no comment", definition(""), "no input record", true, ""},
		{"another comment", definition("the execution input must be {input, meta}"), "publish the Solution again", true, ""},
		{"a newer version", definition(`toolgate:input:v2 {"input_limit_bytes":1}`), `version "v2", and this toolgate reads "v1"`, false, "v2"},
		{"not JSON", definition(Prefix + `{"input_limit_bytes":`), "input record", false, ""},
		{"unknown field", definition(Prefix + `{"input_limit_bytes":1,"limit":2}`), "unknown field", false, ""},
		{"limit zero", definition(Prefix + `{"input_limit_bytes":0}`), "outside 1..131072", false, ""},
		{"limit over", definition(Prefix + `{"input_limit_bytes":131073}`), "outside 1..131072", false, ""},
		{"no definition", []byte(`not json`), "not JSON", false, ""},
		{"record on another state", []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Comment":"` + Prefix + `{\"input_limit_bytes\":1}"}}}`), "no input record", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(c.def)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if errors.Is(err, ErrNoRecord) != c.noRecord {
				t.Errorf("errors.Is(%v, ErrNoRecord) = %v", err, !c.noRecord)
			}
			var ve *VersionError
			if errors.As(err, &ve) != (c.version != "") || ve != nil && ve.Version != c.version {
				t.Errorf("%v: VersionError %+v, want version %q", err, ve, c.version)
			}
		})
	}
}

// TestCheck: the size first, then the schema; a refusal is an *Error
// whose text names pointers and keywords, never the input's values.
func TestCheck(t *testing.T) {
	r := &Record{LimitBytes: 64, Schema: json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":1}}}`)}
	for _, c := range []struct {
		name, input string
		want        []string // Error lines; nil: accepted
	}{
		{"valid", `{"title": "SECRET"}`, nil},
		{"empty", `{"title": ""}`, []string{`input/title fails "minLength" (schema /properties/title/minLength): want at least 1 characters`}},
		{"missing", `{"name": "SECRET"}`, []string{`input/ fails "required" (schema /required): want property "title"`}},
		{"over the limit", `{"title": "` + strings.Repeat("S", 60) + `"}`, []string{"the input is 72 bytes of compact JSON, over the Solution's policy.input_limit_bytes of 64"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.Check([]byte(c.input))
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !slices.Equal(e.Lines(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "SSS") {
				t.Fatalf("the message quotes the input: %s", err)
			}
		})
	}
	for _, bad := range []string{``, `{`, `{} {}`, "\"\xff\""} {
		var e *Error
		if err := r.Check([]byte(bad)); err == nil || errors.As(err, &e) {
			t.Errorf("%q: %v, want an error that is not an *Error", bad, err)
		}
	}
	if err := (&Record{LimitBytes: 16}).Check([]byte(`[1, 2]`)); err != nil {
		t.Errorf("a record without a schema checks the size only: %v", err)
	}
}

// TestSizeCountsNumbers: a number counts at the longest form Step
// Functions may write it back in, NumberBytes for any but a short integer.
func TestSizeCountsNumbers(t *testing.T) {
	for in, want := range map[string]int{`[7]`: 3 + 4, `[1e20]`: 2 + NumberBytes, `{"a":"<"}`: 14} {
		if got, err := Size([]byte(in)); err != nil || got != want {
			t.Errorf("Size(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// The package is what a Lambda function links to check an input: never
// the compiler, never an AWS service SDK.
func TestLinksNoCompiler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/toolgate/toolgate/resolver") || strings.Contains(dep, "github.com/aws/aws-sdk-go-v2/service/") {
			t.Errorf("shared/inputrecord links %s", dep)
		}
	}
}
