package park_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/park"
)

// A park's id is derived from its row's key alone: the same row gives the
// same id, another row another, and every id has IDPattern's shape.
func TestIDDerivesFromTheParkedRowsKey(t *testing.T) {
	a := park.ID("RUN#arn:aws:states:eu-west-1:123456789012:execution:m:r", "CALL#000001#1764700000000000000#0a1b2c3d")
	if a != park.ID("RUN#arn:aws:states:eu-west-1:123456789012:execution:m:r", "CALL#000001#1764700000000000000#0a1b2c3d") {
		t.Fatal("one row, two ids")
	}
	for _, other := range []string{
		park.ID("RUN#arn:aws:states:eu-west-1:123456789012:execution:m:r", "CALL#000001#1764700000000000001#0a1b2c3d"),
		park.ID("RUN#arn:aws:states:eu-west-1:123456789012:execution:m:r2", "CALL#000001#1764700000000000000#0a1b2c3d"),
		// The separator keeps the two parts apart.
		park.ID("RUN#a\nCALL#1", ""),
	} {
		if other == a {
			t.Errorf("another row has id %s too", a)
		}
		if !park.IDPattern.MatchString(other) {
			t.Errorf("id %q does not match IDPattern", other)
		}
	}
	if !park.IDPattern.MatchString(a) {
		t.Fatalf("id %q does not match IDPattern", a)
	}
}

// A server names its schema's members as it likes, and each changed
// member is a pointer the PARKED row, the park item and every park.list
// answer carry: 32 pointers of a 5 MiB listing's long names would take a
// row past DynamoDB's 400 KB item. SortedPointers cuts each pointer to
// park.MaxPointerBytes of valid UTF-8, and keeps them sorted and unique.
func TestSortedPointersBoundsEachPointersBytes(t *testing.T) {
	long := func(c string) string { return "/inputSchema/properties/" + strings.Repeat(c, 100_000) }
	in := []string{long("é"), long("b"), long("b"), "/description"}
	got := park.SortedPointers(in)
	if len(got) != 3 {
		t.Fatalf("%d pointers, want 3", len(got))
	}
	for _, p := range got {
		if len(p) > park.MaxPointerBytes || !utf8.ValidString(p) {
			t.Errorf("pointer of %d bytes (valid UTF-8 %v), want at most %d", len(p), utf8.ValidString(p), park.MaxPointerBytes)
		}
	}
	if !slices.IsSorted(got) || got[0] != "/description" {
		t.Errorf("pointers %q not sorted", got)
	}
}
