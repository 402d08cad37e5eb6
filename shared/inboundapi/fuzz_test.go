package inboundapi_test

import (
	"testing"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

// FuzzDecodeMessage: whatever a queue message holds, DecodeMessage does not
// panic, and a message it accepts is valid (Check) and encodes to a
// message it reads back the same.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"source":"billing","event_id":"evt_1"}`,
		`{"schedule":"nightly","scheduled_time":"2026-12-03T18:00:00Z"}`,
		`{"source":"billing","source":"b","event_id":"e"}`,
		`{"source":"a","event_id":"\u00e9"}`,
		`{}`, `[]`, `null`, `{"schedule":"n","scheduled_time":"2026-02-30T00:00:00Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := inboundapi.DecodeMessage(b)
		if err != nil {
			return
		}
		if err := m.Check(); err != nil {
			t.Fatalf("accepted %q, which Check refuses: %v", b, err)
		}
		again, err := inboundapi.DecodeMessage(m.Encode())
		if err != nil || again != m {
			t.Fatalf("%q: its encoding %s reads as %+v, %v", b, m.Encode(), again, err)
		}
	})
}
