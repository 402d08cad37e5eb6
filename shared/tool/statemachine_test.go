package tool

import (
	"strings"
	"testing"
)

// StageFromEnv takes a stage StagePattern admits and refuses anything
// else, naming the variable and quoting at most 40 characters of it.
func TestStageFromEnv(t *testing.T) {
	for v, ok := range map[string]bool{"dev": true, "a": true, "prod-2": true, strings.Repeat("a", 20): true,
		"": false, "Dev": false, "dev_2": false, "2dev": false, "dev 2": false, strings.Repeat("a", 21): false} {
		got, err := StageFromEnv(func(name string) string {
			if name != EnvStage {
				t.Fatalf("read %s", name)
			}
			return v
		})
		if ok != (err == nil) || (ok && got != v) {
			t.Errorf("%q: %q, %v", v, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), EnvStage+"=") {
			t.Errorf("%q: %v does not name %s", v, err, EnvStage)
		}
	}
	long := strings.Repeat("x", 40) + "SECRETTAIL"
	if _, err := StageFromEnv(func(string) string { return long }); err == nil || strings.Contains(err.Error(), "SECRETTAIL") {
		t.Fatalf("%v: want the value cut to 40 characters", err)
	}
}
