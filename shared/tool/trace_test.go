package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

const validTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func envelopeWithTrace(trace string) []byte {
	return []byte(`{"tool":"send-email","toolset_id":"ts_0123456789abcdef0123456789abcdef","run_id":"r","seq":"1","step":"s",` +
		`"idempotency_key":"r/1","attempt":1,"tolerate_duplicates":false,"input":{},"trace":` + trace + `}`)
}

// A trace member of any shape decodes: a malformed one is dropped, never
// refused and never quoted.
func TestEnvelopeTraceMemberMalformedIsDroppedNotRefused(t *testing.T) {
	for _, c := range []struct {
		member     string
		parent, st string
	}{
		{`{"traceparent":"` + validTraceparent + `","tracestate":"a=1,b=2"}`, validTraceparent, "a=1,b=2"},
		{`{"traceparent":"` + validTraceparent + `"}`, validTraceparent, ""},
		{`null`, "", ""},
		{`"` + validTraceparent + `"`, "", ""},
		{`42`, "", ""},
		{`[]`, "", ""},
		{`{"traceparent":7}`, "", ""},
		{`{"traceparent":"` + validTraceparent + `x"}`, "", ""},
		{`{"tracestate":"a=1"}`, "", ""},
		{`{"traceparent":"` + validTraceparent + `","tracestate":"` + strings.Repeat("a", 513) + `"}`, validTraceparent, ""},
		{`{"traceparent":"` + validTraceparent + `","tracestate":"` + strings.Repeat("a=1,", 32) + `a=1"}`, validTraceparent, ""},
		{`{"traceparent":"` + validTraceparent + `","tracestate":"` + strings.Repeat("a=1,", 31) + `a=1"}`, validTraceparent, strings.Repeat("a=1,", 31) + "a=1"},
	} {
		e, err := tool.DecodeEnvelope(envelopeWithTrace(c.member))
		if err != nil {
			t.Fatalf("trace %s: refused: %v", c.member, err)
		}
		var got tool.TraceContext
		if e.Trace != nil {
			got = *e.Trace
		}
		if got.Traceparent != c.parent || got.Tracestate != c.st {
			t.Fatalf("trace %s: kept %+v, want traceparent %q tracestate %q", c.member, got, c.parent, c.st)
		}
	}
}

// FuzzTraceContext: any trace member decodes without error, and what it
// keeps is within the contract's bounds.
func FuzzTraceContext(f *testing.F) {
	f.Add(`{"traceparent":"` + validTraceparent + `","tracestate":"a=1"}`)
	f.Add(`{"traceparent":"00-00000000000000000000000000000000-0000000000000000-00"}`)
	f.Add(`null`)
	f.Add(`{"traceparent":"` + validTraceparent + `","tracestate":"` + strings.Repeat("k=v,", 40) + `"}`)
	f.Fuzz(func(t *testing.T, member string) {
		var tc tool.TraceContext
		if err := json.Unmarshal([]byte(member), &tc); err != nil && json.Valid([]byte(member)) {
			t.Fatalf("%q: %v", member, err)
		}
		if len(tc.Traceparent) > tool.MaxTraceparentLength || len(tc.Tracestate) > tool.MaxTracestateLength ||
			strings.Count(tc.Tracestate, ",") >= tool.MaxTracestateMembers || (tc.Traceparent == "" && tc.Tracestate != "") {
			t.Fatalf("%q kept %+v, outside the bounds", member, tc)
		}
	})
}
