package inputrecord

import (
	"errors"
	"testing"
)

// FuzzRead: Read never panics; a record it accepts has a limit in bounds,
// encodes back to a Comment it reads alike, and checks any input without
// panicking.
func FuzzRead(f *testing.F) {
	f.Add(definition(Prefix+`{"input_limit_bytes":32768,"input_schema":{"type":"object","required":["title"]}}`), []byte(`{"title":"t"}`))
	f.Add(definition(Prefix+`{"input_limit_bytes":7}`), []byte(`"123456"`))
	f.Add(definition(`toolgate:input:v2 {}`), []byte(`1`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Comment":"toolgate:input:v1 {\"input_limit_bytes\":1,\"input_schema\":{\"pattern\":\"^(a+)+$\"}}"}}}`), []byte(`"aaaa!"`))
	f.Fuzz(func(t *testing.T, def, input []byte) {
		r, err := Read(def)
		if err != nil {
			return
		}
		if r.LimitBytes < 1 || r.LimitBytes > MaxLimitBytes {
			t.Fatalf("accepted a limit of %d", r.LimitBytes)
		}
		c, err := r.Comment()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Read(definition(c))
		if err != nil || again.LimitBytes != r.LimitBytes {
			t.Fatalf("%q read back as %+v, %v", c, again, err)
		}
		if err := r.Check(input); err != nil {
			var e *Error
			if errors.As(err, &e) && len(e.Lines()) == 0 {
				t.Fatalf("a refusal without a reason: %v", err)
			}
		}
	})
}
