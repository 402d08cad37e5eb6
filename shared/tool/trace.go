package tool

import (
	"encoding/json"
	"strings"
)

// Bounds of the envelope's trace member (docs/tracing.md, "What a call
// carries"). W3C Trace Context Level 1 §3.2: a version-00 traceparent is
// exactly 55 characters; §3.3.1.1 and §3.3.1.5: a tracestate holds at
// most 32 list members, and a vendor may drop a tracestate over 512
// characters.
const (
	MaxTraceparentLength = 55
	MaxTracestateLength  = 512
	MaxTracestateMembers = 32
)

// TraceContext is the envelope's trace member: the W3C trace context
// (https://www.w3.org/TR/trace-context/) of the run or of the caller, as
// the HTTP headers of the same names carry it. Both members are strings;
// either may be absent.
//
// A malformed value is never an error and is never echoed: UnmarshalJSON
// keeps a member only when it is a string within the bounds above and
// drops everything else, and shared/tracecontext drops a value the W3C
// grammar refuses; the dispatcher then uses the context it derives from
// the run id (docs/tracing.md, "A run's trace").
type TraceContext struct {
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// UnmarshalJSON reads a trace member leniently: any JSON value is
// accepted; only an object's string members "traceparent" (at most
// MaxTraceparentLength characters) and "tracestate" (at most
// MaxTracestateLength characters and MaxTracestateMembers list members)
// are kept, and only when the traceparent is kept too.
func (t *TraceContext) UnmarshalJSON(data []byte) error {
	*t = TraceContext{}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var tp Traceparent // its own lenient reading
	if raw, ok := m["traceparent"]; ok {
		_ = json.Unmarshal(raw, &tp)
	}
	if t.Traceparent = string(tp); t.Traceparent == "" {
		return nil
	}
	var ts string
	if json.Unmarshal(m["tracestate"], &ts) == nil && len(ts) <= MaxTracestateLength && strings.Count(ts, ",") < MaxTracestateMembers {
		t.Tracestate = ts
	}
	return nil
}
