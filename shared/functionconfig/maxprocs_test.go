package functionconfig

import "testing"

func TestGoMaxProcsIsOneUpToOneVCPUOfMemory(t *testing.T) {
	for _, c := range []struct {
		memoryMB int
		want     string
	}{{128, "1"}, {512, "1"}, {OneVCPUMemoryMB, "1"}, {OneVCPUMemoryMB + 1, ""}, {10240, ""}} {
		if got := GoMaxProcs(c.memoryMB); got != c.want {
			t.Errorf("GoMaxProcs(%d) = %q, want %q", c.memoryMB, got, c.want)
		}
	}
}
