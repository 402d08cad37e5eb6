package request_test

import (
	"os/exec"
	"strings"
	"testing"
)

// review-request checks a child's input with shared/inputrecord, as
// toolgate run does, and never links the compiler (resolver/...) to do it.
func TestLinksNoCompiler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/toolgate/toolgate/resolver") {
			t.Errorf("functions/review-request links %s", dep)
		}
	}
	if !strings.Contains(string(out), "github.com/toolgate/toolgate/shared/inputrecord\n") {
		t.Error("functions/review-request does not link shared/inputrecord")
	}
}
