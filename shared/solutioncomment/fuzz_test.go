package solutioncomment

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRead: Read never panics; a Comment it accepts formats back to the
// text it was read from, reads alike from a definition of its own, and
// names a version of 1 to 2^31-1.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"Comment":"toolgate Solution refunds version 3 (toolset ts_0123456789abcdef0123456789abcdef)","StartAt":"A","States":{}}`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}},"Comment":"toolgate Solution a version 1 (toolset ts_0123456789abcdef0123456789abcdef)"}`))
	f.Add([]byte(`{"Comment":"toolgate Solution a version 01 (toolset ts_0123456789abcdef0123456789abcdef)"}`))
	f.Add([]byte(`{"Comment":1,"Comment":"x"}`))
	f.Add([]byte(`[{"Comment":"x"}]`))
	f.Fuzz(func(t *testing.T, def []byte) {
		c, ok, err := Read(bytes.NewReader(def))
		if err != nil || !ok {
			if ok {
				t.Fatalf("Read = %+v, true, %v", c, err)
			}
			return
		}
		if c.Version < 1 || c.Version > 1<<31-1 {
			t.Fatalf("accepted version %d", c.Version)
		}
		again, ok := Parse(c.String())
		if !ok || again != c {
			t.Fatalf("%q parses as %+v, %v", c.String(), again, ok)
		}
		own, _ := json.Marshal(map[string]any{"Comment": c.String(), "StartAt": "A"})
		if got, ok, err := Read(bytes.NewReader(own)); err != nil || !ok || got != c {
			t.Fatalf("%s reads as %+v, %v, %v", own, got, ok, err)
		}
	})
}
