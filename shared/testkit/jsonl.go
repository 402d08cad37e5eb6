package testkit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// maxLine is the longest line LoadJSONL reads, in bytes: the case files'
// lines are well below it.
const maxLine = 1 << 20

// LoadJSONL reads the JSON Lines file at path (one JSON object a line,
// https://jsonlines.org; blank lines are skipped) into one T a line, in
// order. A field T does not have, a value of the wrong type, a line over
// 1 MiB, or a file without a single line fails t, naming path and the
// line number.
func LoadJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		if dec.More() {
			t.Fatalf("%s:%d: more than one JSON value on the line", path, n)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no lines", path)
	}
	return out
}
