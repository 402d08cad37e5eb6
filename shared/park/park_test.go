package park_test

import (
	"testing"

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
