package publish

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
)

// A publish answer lists at most resolver.MaxDiagnostics diagnostics, the
// last counting those left out; a shorter list is kept whole.
func TestPublishAnswerCapsItsDiagnostics(t *testing.T) {
	var list []string
	for i := range resolver.MaxDiagnostics + 7 {
		list = append(list, fmt.Sprintf("d%d", i))
	}
	got := capDiagnostics(list)
	if len(got) != resolver.MaxDiagnostics || got[len(got)-2] != fmt.Sprintf("d%d", resolver.MaxDiagnostics-2) ||
		!strings.HasPrefix(got[len(got)-1], "8 more diagnostic(s)") {
		t.Fatalf("capped to %d, ending %q", len(got), got[len(got)-2:])
	}
	if short := capDiagnostics(list[:3]); len(short) != 3 {
		t.Fatalf("a short list cut to %d", len(short))
	}
}
