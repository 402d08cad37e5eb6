package review

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
)

// A review Task's traceparent is read leniently: null (a run given no
// context), absent (a definition published before it), malformed or not
// a string, the Task decodes, with no traceparent; a traceparent is
// never in an error.
func TestDecodeTaskReadsTheTraceparentLeniently(t *testing.T) {
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for member, want := range map[string]string{
		``:                                   "",
		`,"traceparent":null`:                "",
		`,"traceparent":"` + carried + `"`:   carried,
		`,"traceparent":7`:                   "",
		`,"traceparent":"` + carried + `-0"`: "", // over 55 characters
	} {
		r, err := DecodeTask([]byte(strings.TrimSuffix(goodTask, "}") + member + "}"))
		if err != nil || r.Traceparent != want {
			t.Errorf("traceparent member %s: %v, %q, want %q", member, err, r.Traceparent, want)
		}
	}
	// Null stays refused for every other member.
	if _, err := DecodeTask([]byte(strings.Replace(goodTask, `"step":"approve"`, `"step":null`, 1))); err == nil || !strings.Contains(err.Error(), "must not be null") {
		t.Fatalf("a null step: %v", err)
	}
}

// A review's place in its run's trace is a span under the context its
// Task carried, when it parses; else a span of the trace derived from its
// run id. Its span id is derived from the review step's id, so two
// reviews of a run (two steps', or one step's in a for_each: two task
// tokens) share the trace and not the span, and no call's step span is a
// review's.
func TestPlaceInTraceIsASpanUnderACarriedContextOrOfTheDerivedTrace(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var parent trace.SpanContext
	place := func(token, tp string) string {
		r, err := DecodeTask([]byte(strings.TrimSuffix(strings.Replace(goodTask, `"task_token":"AQCEAAAAKgAAAAMAAAAAAAAAAf"`, `"task_token":"`+token+`"`, 1), "}") + `,"traceparent":"` + tp + `"}`))
		if err != nil {
			t.Fatal(err)
		}
		parent = r.PlaceInTrace(secret)
		return r.Traceparent
	}
	got, _ := tracecontext.Parse(tool.TraceContext{Traceparent: place("AQCEAAAAKgAAAAMAAAAAAAAAAf", carried)})
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || parent.SpanID().String() != "00f067aa0ba902b7" || got.SpanID() == parent.SpanID() {
		t.Fatalf("under the carried context: the review's span %v, its parent %v", got, parent)
	}
	a, b := place("AQCEAAAAKgAAAAMAAAAAAAAAAf", "garbage"), place("AQCEAAAAKgAAAAMAAAAAAAAAAg", "")
	if parent.IsValid() {
		t.Fatalf("a derived place has the parent %v", parent)
	}
	run := "arn:aws:states:us-east-1:123456789012:execution:weekly-digest:r1"
	sa, okA := tracecontext.Parse(tool.TraceContext{Traceparent: a})
	sb, okB := tracecontext.Parse(tool.TraceContext{Traceparent: b})
	if !okA || !okB || sa.TraceID() != tracecontext.TraceID(secret, run) || sb.TraceID() != sa.TraceID() || sa.SpanID() == sb.SpanID() || !sa.IsSampled() {
		t.Fatalf("derived places %q and %q", a, b)
	}
	if id := IDForToken("AQCEAAAAKgAAAAMAAAAAAAAAAf"); sa.SpanID() != tracecontext.StepSpanID(secret, sa.TraceID(), run, tool.Seq("review/"+id)) {
		t.Fatalf("span %s is not the one derived from review/%s", sa.SpanID(), id)
	}
	for _, seq := range []tool.Seq{"0", "1", "2"} {
		if tracecontext.ForCall(secret, run, seq, tool.TraceContext{}).Step.SpanID() == sa.SpanID() {
			t.Fatalf("the review's span is call %s's", seq)
		}
	}
}
