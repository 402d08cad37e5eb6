package tracecontext_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

var secret = bytes.Repeat([]byte{7}, 32)

// Values the W3C grammar refuses are dropped: no span context, no error.
func TestParseDropsWhatTheW3CGrammarRefuses(t *testing.T) {
	for _, bad := range []string{
		"",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper-case hex
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
		strings.Repeat("0", 56),
	} {
		if sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: bad}); ok || sc.IsValid() {
			t.Fatalf("Parse(%q) = %v, want none", bad, sc)
		}
	}
	sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: parent, Tracestate: "Vendor=a"})
	if !ok || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.TraceState().Len() != 0 {
		t.Fatalf("Parse kept %v (ok %v), want the traceparent without the invalid tracestate", sc, ok)
	}
}

// Format writes back what Parse read.
func TestFormatRoundTripsAParsedContext(t *testing.T) {
	in := tool.TraceContext{Traceparent: parent, Tracestate: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}
	sc, ok := tracecontext.Parse(in)
	if !ok {
		t.Fatal("valid context refused")
	}
	if out := tracecontext.Format(sc); out != in {
		t.Fatalf("Format(Parse(%+v)) = %+v", in, out)
	}
	if (tracecontext.Format(trace.SpanContext{}) != tool.TraceContext{}) {
		t.Fatal("an invalid span context formatted as something")
	}
}

// Every attempt of a call, in any function, derives the same step span;
// another seq, run or secret derives another.
func TestForCallDerivesOneStepSpanPerCall(t *testing.T) {
	run := "arn:aws:states:us-east-1:123456789012:execution:sm:run-1"
	a := tracecontext.ForCall(secret, run, "3", tool.TraceContext{})
	b := tracecontext.ForCall(secret, run, "3", tool.TraceContext{Traceparent: "garbage"})
	if !a.Step.Equal(b.Step) || b.Parent.IsValid() || !a.Step.IsValid() || a.Parent.IsValid() || !a.Step.IsSampled() {
		t.Fatalf("two attempts placed differently: %+v and %+v", a, b)
	}
	for _, other := range []tracecontext.Call{
		tracecontext.ForCall(secret, run, "4", tool.TraceContext{}),
		tracecontext.ForCall(secret, run+"x", "3", tool.TraceContext{}),
		tracecontext.ForCall(bytes.Repeat([]byte{8}, 32), run, "3", tool.TraceContext{}),
	} {
		if other.Step.SpanID() == a.Step.SpanID() {
			t.Fatalf("%+v has the step span of %+v", other, a)
		}
	}
	if tracecontext.ForCall(secret, run, "4", tool.TraceContext{}).Step.TraceID() != a.Step.TraceID() {
		t.Fatal("two calls of one run in two traces")
	}
}

// A derived trace id is not the HMAC the external key's opaque run id is
// cut from: a server that sees both learns nothing of one from the other.
func TestTraceIDIsNotTheExternalKeysHMAC(t *testing.T) {
	run := "arn:aws:states:us-east-1:123456789012:execution:sm:run-1"
	bare := hmacOf(secret, run)
	id := tracecontext.TraceID(secret, run)
	if bytes.Equal(id[:], bare[:16]) {
		t.Fatal("the trace id is the external key's HMAC")
	}
	if !bytes.Equal(id[:], hmacOf(secret, tracecontext.TraceLabel+run)[:16]) {
		t.Fatalf("the trace id %s is not the labelled HMAC's first 16 bytes", id)
	}
	span := tracecontext.StepSpanID(secret, id, run, "4.2.1")
	if !bytes.Equal(span[:], hmacOf(secret, tracecontext.SpanLabel+string(id[:])+run+"\x004.2.1\x00")[:8]) {
		t.Fatalf("the step span id %s is not the labelled HMAC's first 8 bytes", span)
	}
}

func hmacOf(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// A carried context gives its trace id and is the step span's parent; an
// unsampled flag is not copied.
func TestForCallJoinsACarriedTrace(t *testing.T) {
	unsampled := strings.TrimSuffix(parent, "01") + "00"
	c := tracecontext.ForCall(secret, "run", "1", tool.TraceContext{Traceparent: unsampled})
	if c.Step.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || c.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("carried context not joined: %+v", c)
	}
	if !c.Step.IsSampled() {
		t.Fatal("the caller's flag decided the step span's")
	}
}

// FuzzParse: any input gives a valid span context or none, never a
// panic, and a valid one formats to a traceparent Parse reads back.
func FuzzParse(f *testing.F) {
	f.Add(parent, "a=1")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", strings.Repeat("k=v,", 40))
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "")
	f.Fuzz(func(t *testing.T, traceparent, tracestate string) {
		sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: traceparent, Tracestate: tracestate})
		if ok != sc.IsValid() {
			t.Fatalf("ok %v but valid %v", ok, sc.IsValid())
		}
		if !ok {
			return
		}
		out := tracecontext.Format(sc)
		if len(out.Traceparent) != tool.MaxTraceparentLength {
			t.Fatalf("formatted %q", out.Traceparent)
		}
		back, ok := tracecontext.Parse(out)
		if !ok || back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() {
			t.Fatalf("%q did not read back", out.Traceparent)
		}
	})
}
