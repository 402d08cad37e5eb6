package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter is an OpenTelemetry SDK span exporter that POSTs spans to an
// OTLP/HTTP receiver in the JSON encoding of ExportTraceServiceRequest
// (OpenTelemetry protocol specification 1.x, "OTLP/HTTP" and "JSON
// Protobuf Encoding": ids as lower-case hex, 64-bit integers as decimal
// strings, enums as integers, lowerCamelCase member names). OTLP
// receivers (the OpenTelemetry Collector, the AWS Distro for
// OpenTelemetry collector layer) accept it with Content-Type
// application/json. A receiver's answer other than 2xx is an error naming
// the status only.
type Exporter struct {
	// Endpoint is the full URL spans are POSTed to: the receiver's base
	// URL and "/v1/traces".
	Endpoint string
	// Client sends the requests; nil: a client whose timeout is
	// FlushTimeout.
	Client *http.Client
}

// ExportSpans POSTs spans in one request.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(Encode(spans))
	if err != nil {
		return fmt.Errorf("tracing: encoding spans: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("tracing: the OTLP endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := e.Client
	if client == nil {
		client = &http.Client{Timeout: FlushTimeout}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("tracing: sending spans: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("tracing: the OTLP receiver answered %s", resp.Status)
	}
	return nil
}

// Shutdown has nothing to release.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// Request is ExportTraceServiceRequest in the OTLP JSON encoding.
type Request struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans are the spans of one resource (one function).
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans"`
}

// Resource is the resource's attributes (service.name).
type Resource struct {
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// ScopeSpans are the spans of one instrumentation scope.
type ScopeSpans struct {
	Scope Scope  `json:"scope"`
	Spans []Span `json:"spans"`
}

// Scope names an instrumentation scope.
type Scope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Span is one span. Kind is OTLP's SpanKind (1 internal, 2 server, 3
// client, 4 producer, 5 consumer); times are Unix nanoseconds as decimal
// strings.
type Span struct {
	TraceID           string     `json:"traceId"`
	SpanID            string     `json:"spanId"`
	TraceState        string     `json:"traceState,omitempty"`
	ParentSpanID      string     `json:"parentSpanId,omitempty"`
	Name              string     `json:"name"`
	Kind              int        `json:"kind"`
	StartTimeUnixNano string     `json:"startTimeUnixNano"`
	EndTimeUnixNano   string     `json:"endTimeUnixNano"`
	Attributes        []KeyValue `json:"attributes,omitempty"`
	Events            []Event    `json:"events,omitempty"`
	Status            Status     `json:"status"`
}

// Event is a span event.
type Event struct {
	TimeUnixNano string     `json:"timeUnixNano"`
	Name         string     `json:"name"`
	Attributes   []KeyValue `json:"attributes,omitempty"`
}

// Status is a span's status: Code 0 unset, 1 ok, 2 error (OTLP's
// numbering, not the Go API's).
type Status struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// KeyValue is an attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute's value: exactly one member is set.
type AnyValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *string     `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
}

// ArrayValue is an attribute's array value.
type ArrayValue struct {
	Values []AnyValue `json:"values"`
}

// Encode is spans as one request, grouped by resource and scope in the
// order they come.
func Encode(spans []sdktrace.ReadOnlySpan) Request {
	var req Request
	resources := map[string]int{}    // encoded resource: index in ResourceSpans
	scopes := map[[2]string][2]int{} // resource and scope name: indexes
	for _, s := range spans {
		res, scope := s.Resource(), s.InstrumentationScope()
		resKey := res.Encoded(attribute.DefaultEncoder())
		r, ok := resources[resKey]
		if !ok {
			req.ResourceSpans = append(req.ResourceSpans, ResourceSpans{Resource: Resource{Attributes: keyValues(res.Attributes())}})
			r = len(req.ResourceSpans) - 1
			resources[resKey] = r
		}
		at, ok := scopes[[2]string{resKey, scope.Name}]
		if !ok {
			rs := &req.ResourceSpans[r]
			rs.ScopeSpans = append(rs.ScopeSpans, ScopeSpans{Scope: Scope{Name: scope.Name, Version: scope.Version}})
			at = [2]int{r, len(rs.ScopeSpans) - 1}
			scopes[[2]string{resKey, scope.Name}] = at
		}
		ss := &req.ResourceSpans[at[0]].ScopeSpans[at[1]]
		ss.Spans = append(ss.Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) Span {
	sc := s.SpanContext()
	out := Span{
		TraceID:           sc.TraceID().String(),
		SpanID:            sc.SpanID().String(),
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              int(s.SpanKind()),
		StartTimeUnixNano: strconv.FormatInt(s.StartTime().UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		Attributes:        keyValues(s.Attributes()),
	}
	if out.Kind == 0 {
		out.Kind = 1 // SPAN_KIND_INTERNAL
	}
	if p := s.Parent(); p.IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, Event{TimeUnixNano: strconv.FormatInt(ev.Time.UnixNano(), 10), Name: ev.Name, Attributes: keyValues(ev.Attributes)})
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		out.Status = Status{Code: 1}
	case codes.Error:
		out.Status = Status{Code: 2, Message: st.Description}
	}
	return out
}

func keyValues(attrs []attribute.KeyValue) []KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return AnyValue{BoolValue: &b}
	case attribute.INT64:
		i := strconv.FormatInt(v.AsInt64(), 10)
		return AnyValue{IntValue: &i}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return AnyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return arrayValue(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayValue(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayValue(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayValue(v.AsStringSlice(), attribute.StringValue)
	}
	s := v.Emit()
	return AnyValue{StringValue: &s}
}

// arrayValue is an attribute's slice value as an OTLP array of its
// elements' values.
func arrayValue[T any](elems []T, value func(T) attribute.Value) AnyValue {
	a := ArrayValue{Values: make([]AnyValue, 0, len(elems))}
	for _, e := range elems {
		a.Values = append(a.Values, anyValue(value(e)))
	}
	return AnyValue{ArrayValue: &a}
}
