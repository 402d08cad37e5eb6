package otlpreceiver

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// FuzzDecode holds Decode, on any body in either encoding, to its
// promises: it returns spans or an error, never panics; every span it
// returns has ids of the lengths it checks, in lower-case hex; an error
// quotes no run of the body; and Tree shows every span.
func FuzzDecode(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "toolgate-run.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(true, seed)
	f.Add(true, span("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "00f067aa0ba902b8"))
	f.Add(true, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`))
	f.Add(false, []byte{0x0a, 0x02, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, json bool, body []byte) {
		ctype := ContentTypeProtobuf
		if json {
			ctype = ContentTypeJSON
		}
		spans, err := Decode(ctype, body)
		if err != nil {
			if len(body) >= 12 && strings.Contains(err.Error(), string(body)) {
				t.Errorf("the error quotes the body: %v", err)
			}
			return
		}
		for _, s := range spans {
			if len(s.TraceID) != 32 || len(s.SpanID) != 16 || (s.ParentSpanID != "" && len(s.ParentSpanID) != 16) ||
				strings.ToLower(s.TraceID+s.SpanID+s.ParentSpanID) != s.TraceID+s.SpanID+s.ParentSpanID {
				t.Errorf("span ids %q %q %q", s.TraceID, s.SpanID, s.ParentSpanID)
			}
		}
		var names []Span
		for _, s := range spans {
			s.Name = "s" // one line per span, whatever the name holds
			names = append(names, s)
		}
		if lines := strings.Count(Tree(names), "\n"); lines != len(spans) {
			t.Errorf("Tree shows %d lines for %d spans", lines, len(spans))
		}
	})
}

func TestFlatten(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	dbl := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	deep := str(`"\`)
	for range 64 {
		deep = arr(deep)
	}
	cases := []struct {
		name string
		v    *commonpb.AnyValue
		want string
	}{
		{"nil", nil, ""},
		{"a string as it is", str(`a "b"`), `a "b"`},
		{"a double", dbl(1e21), "1e+21"},
		{"NaN in an array is a string", arr(dbl(math.NaN()), dbl(math.Inf(-1)), dbl(2)), `["NaN","-Inf",2]`},
		{"nested arrays are escaped once", deep, strings.Repeat("[", 64) + `"\"\\"` + strings.Repeat("]", 64)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Flatten(c.v); got != c.want {
				t.Errorf("Flatten: %s, want %s", got, c.want)
			}
		})
	}
}
