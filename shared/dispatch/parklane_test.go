package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/tool"
)

// withParkID is payload with the park_id member v (JSON).
func withParkID(payload []byte, v string) []byte {
	return []byte(strings.Replace(string(payload), `"attempt":1`, `"attempt":1,"park_id":`+v, 1))
}

// Only a compiled state machine parks a call: a direct call that names a
// park, even null, is refused before anything is read or written.
func TestDirectLaneRefusesParkID(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls), func(c *Config) { c.Lane = lane.Direct })
	for _, v := range []string{`null`, `"pk_abcdefghijklmnopqrstuvwxyz"`} {
		payload := withParkID(envelopeFor("test-echo", e.ts.ID, "direct/arn:aws:iam::000000000000:user/ann/r1", 1, `{"text":"hi"}`), v)
		e.db.reset()
		_, err := d.Handle(context.Background(), payload)
		if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), "park_id") {
			t.Fatalf("direct call with park_id %s: %v", v, err)
		}
		if e.db.writes() != 0 || calls.Load() != 0 {
			t.Fatalf("%d writes, %d calls", e.db.writes(), calls.Load())
		}
	}
}
