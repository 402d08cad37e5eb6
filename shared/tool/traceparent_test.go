package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

// A Traceparent keeps a string within MaxTraceparentLength and drops
// anything else without an error; only its fields are Nullable.
func TestTraceparentDecodesLeniently(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for in, want := range map[string]tool.Traceparent{
		`"` + tp + `"`: tp, `null`: "", `1`: "", `{"a":"b"}`: "", `"` + strings.Repeat("a", 56) + `"`: "", `"x"`: "x",
	} {
		got := tool.Traceparent("before")
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
	if !tool.Nullable(tool.ReviewTask{}, "traceparent") || !tool.Nullable(tool.ChildStart{}, "traceparent") || tool.Nullable(tool.ReviewTask{}, "step") {
		t.Fatal("Nullable names the wrong members")
	}
}
