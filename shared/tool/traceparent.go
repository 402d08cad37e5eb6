package tool

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Traceparent is a W3C traceparent (https://www.w3.org/TR/trace-context/,
// §3.2) that a compiled Task carries from the run's $.meta.traceparent:
// the review Task's (ReviewTask) and the workflow step's start-record
// Task's (ChildStart). The run has none when toolgate run was given none:
// the Task then sends null (docs/solutions.md, "The execution input").
//
// It is read leniently, as TraceContext is: any JSON value decodes, null
// included; only a string of at most MaxTraceparentLength characters is
// kept, anything else is "" and never an error nor echoed. What it holds
// is not yet checked against the W3C grammar: shared/tracecontext Parse
// drops a value the grammar refuses.
type Traceparent string

// UnmarshalJSON keeps a string of at most MaxTraceparentLength
// characters and drops anything else.
func (t *Traceparent) UnmarshalJSON(data []byte) error {
	*t = ""
	var s string
	if json.Unmarshal(data, &s) == nil && len(s) <= MaxTraceparentLength {
		*t = Traceparent(s)
	}
	return nil
}

// Context is t as a trace member (TraceContext), without a tracestate.
func (t Traceparent) Context() TraceContext { return TraceContext{Traceparent: string(t)} }

// Nullable reports whether v's JSON member name may be null in a compiled
// Task's payload, which the strict decoders (shared/review) otherwise
// refuse: its field is a Traceparent, which a run without a trace context
// sends as null.
func Nullable(v any, name string) bool {
	for _, f := range jsonFields(reflect.TypeOf(v)) {
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
			return f.Type == reflect.TypeFor[Traceparent]()
		}
	}
	return false
}
