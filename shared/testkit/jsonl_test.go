package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fatal records LoadJSONL's failure instead of ending the test.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}

func (f *fatal) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(f)
}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

type line struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

func load(t *testing.T, text string) (got []line, failure string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cases.jsonl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fatal{TB: t}
	defer func() {
		if r := recover(); r != nil {
			if r != f {
				panic(r)
			}
			failure = f.msg
		}
	}()
	return LoadJSONL[line](f, path), ""
}

func TestLoadJSONLReadsEveryLineInOrderAndSkipsBlankOnes(t *testing.T) {
	got, failure := load(t, "{\"name\":\"a\",\"n\":1}\n\n  \n{\"name\":\"b\",\"n\":2}")
	if failure != "" || len(got) != 2 || got[0] != (line{"a", 1}) || got[1] != (line{"b", 2}) {
		t.Fatalf("got %+v, failure %q", got, failure)
	}
}

func TestLoadJSONLRefusesWhatTheTypeDoesNotHold(t *testing.T) {
	for name, c := range map[string]struct{ text, want string }{
		"an unknown field":  {"{\"name\":\"a\"}\n{\"name\":\"b\",\"extra\":1}\n", `cases.jsonl:2: json: unknown field "extra"`},
		"a wrong type":      {"{\"n\":\"one\"}\n", "cases.jsonl:1: json: cannot unmarshal"},
		"two values a line": {"{\"n\":1} {\"n\":2}\n", "cases.jsonl:1: more than one JSON value on the line"},
		"no line at all":    {"\n\n", "cases.jsonl holds no lines"},
		"not JSON":          {"name=a\n", "cases.jsonl:1: invalid character"},
		"a line over 1 MiB": {"{\"name\":\"" + strings.Repeat("x", maxLine) + "\"}\n", "token too long"},
	} {
		t.Run(name, func(t *testing.T) {
			got, failure := load(t, c.text)
			if !strings.Contains(failure, c.want) {
				t.Fatalf("got %+v, failure %q, want one naming %q", got, failure, c.want)
			}
		})
	}
}
