package park_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// shared/tool checks an envelope's park_id against its own copy of
// IDPattern (it cannot import this package): every id ID derives is
// accepted, and a value IDPattern refuses is refused.
func TestParkIDForm(t *testing.T) {
	const envelope = `{"tool":"t","toolset_id":"ts_0123456789abcdef0123456789abcdef","run_id":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1","seq":"2","step":"s","idempotency_key":"arn:aws:states:us-east-1:123456789012:execution:toolgate-x:r1/2","attempt":1,"tolerate_duplicates":false,"input":{},"park_id":"ID"}`
	values := []string{"pk_", "pk_abcdefghijklmnopqrstuvwxy1", "PK_abcdefghijklmnopqrstuvwxyz", "pk_abcdefghijklmnopqrstuvwxyza"}
	for i := range 32 {
		values = append(values, park.ID("RUN#r", "CALL#"+strings.Repeat("0", i)))
	}
	for _, v := range values {
		_, err := tool.DecodeEnvelope([]byte(strings.Replace(envelope, "ID", v, 1)))
		if accepted, want := err == nil, park.IDPattern.MatchString(v); accepted != want {
			t.Fatalf("park_id %q: accepted %v (%v), park.IDPattern says %v", v, accepted, err, want)
		}
	}
}
