package toolset

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

// sizedToolset is platformToolset with create-ticket's description padded
// so that the toolset's RFC 8785 form is exactly size bytes.
func sizedToolset(t *testing.T, size int) *Toolset {
	t.Helper()
	ts := platformToolset(t, nil)
	body, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return platformToolset(t, func(_ *Toolset, pt *Tool) { pt.Description += strings.Repeat("x", size-len(body)) })
}

// The registration check takes a toolset whose RFC 8785 form is at
// MaxBodyBytes and refuses one byte more for RuleSize, naming the largest
// parts.
func TestVerifySizeBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{
		{"at the bound", MaxBodyBytes, true},
		{"one byte over", MaxBodyBytes + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := sizedToolset(t, tc.size)
			if body, _ := ts.Canonical(); len(body) != tc.size {
				t.Fatalf("fixture is %d bytes, want %d", len(body), tc.size)
			}
			err := ts.Verify(catalog.Default())
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleSize || ref.ToolsetID != ts.ID {
				t.Fatalf("%v, want a refusal for %s", err, RuleSize)
			}
			if want := "largest: create-ticket description ("; !strings.Contains(ref.Reason, want) {
				t.Errorf("reason %q does not say %q", ref.Reason, want)
			}
		})
	}
}

// LargestParts orders schemas and descriptions by size, largest first,
// then by tool name, input schema, output schema, description.
func TestLargestParts(t *testing.T) {
	ts := &Toolset{Tools: map[string]Tool{
		"b": {InputSchema: []byte(`{"type":"object"}`), OutputSchema: []byte(`{}`), Description: "seventeen bytes.."},
		"a": {InputSchema: []byte(`{"type":"string"}`), OutputSchema: []byte(`{"type":"object","minProperties":1}`)},
	}}
	var got []string
	for _, s := range ts.LargestParts(4) {
		got = append(got, s.String())
	}
	want := "a output_schema (35 bytes), a input_schema (17 bytes), b input_schema (17 bytes), b description (17 bytes)"
	if strings.Join(got, ", ") != want {
		t.Fatalf("got %s\nwant %s", strings.Join(got, ", "), want)
	}
	if n := len(ts.LargestParts(10)); n != 6 {
		t.Fatalf("%d parts, want all 6", n)
	}
}
