package otlpreceiver

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The body encodings OTLP/HTTP defines (OTLP specification, "OTLP/HTTP
// Request"): binary Protobuf and JSON Protobuf.
const (
	ContentTypeJSON     = "application/json"
	ContentTypeProtobuf = "application/x-protobuf"
)

// ServiceNameKey is the resource attribute that names the service that
// emitted a span (OpenTelemetry semantic conventions, "Service").
const ServiceNameKey = "service.name"

// OutcomeKey is the span attribute toolgate's spans give their outcome in;
// Tree shows it next to the status code.
const OutcomeKey = "toolgate.outcome"

// Span is one span as received, with OTLP's fields kept as Go values.
type Span struct {
	// TraceID (32) and SpanID (16) are lower-case hex; ParentSpanID is
	// lower-case hex (16) or "" for a span that names no parent.
	TraceID, SpanID, ParentSpanID string
	// TraceState is the span's W3C tracestate, as sent.
	TraceState string
	Name       string
	// Kind is the span's kind; OTLP's SPAN_KIND_* numbers are
	// OpenTelemetry Go's trace.SpanKind values.
	Kind trace.SpanKind
	// Start and End are the span's times (UTC); the zero time when the
	// span did not say.
	Start, End time.Time
	// Status is the span's status code as OpenTelemetry Go names it
	// (OTLP's STATUS_CODE_OK is codes.Ok, STATUS_CODE_ERROR codes.Error),
	// StatusMessage its message.
	Status        codes.Code
	StatusMessage string
	// Attributes are the span's attributes flattened to strings (Flatten).
	Attributes map[string]string
	Events     []Event
	Links      []Link
	// Service is the resource's ServiceNameKey attribute; "" when absent.
	Service string
	// Scope is the instrumentation scope's name, ScopeVersion its version.
	Scope, ScopeVersion string
}

// Duration is End - Start; zero when either is absent or End is before
// Start.
func (s Span) Duration() time.Duration {
	if s.Start.IsZero() || s.End.IsZero() || s.End.Before(s.Start) {
		return 0
	}
	return s.End.Sub(s.Start)
}

// Outcome is the span's status code and, when the span has one, its
// OutcomeKey attribute: "Ok", "Error toolgate.outcome=retryable".
func (s Span) Outcome() string {
	out := s.Status.String()
	if v, ok := s.Attributes[OutcomeKey]; ok {
		out += " " + OutcomeKey + "=" + strconv.Quote(v)
	}
	return out
}

// Event is one of a span's events.
type Event struct {
	Name       string
	Time       time.Time
	Attributes map[string]string
}

// Link is one of a span's links: the span context it names (lower-case
// hex) and its attributes.
type Link struct {
	TraceID, SpanID string
	TraceState      string
	Attributes      map[string]string
}

// Decode decodes an OTLP/HTTP trace export request body of the given
// content type (ContentTypeJSON or ContentTypeProtobuf, parameters
// allowed) into its spans, in the order the body holds them.
//
// Binary bodies are Protobuf ExportTraceServiceRequest messages, decoded
// with google.golang.org/protobuf into go.opentelemetry.io/proto/otlp's
// TracesData, whose wire format is the request's (opentelemetry-proto,
// trace.proto). JSON bodies follow the OTLP specification's "JSON
// Protobuf Encoding": the protobuf JSON mapping (protojson), except that
// trace and span ids are case-insensitive hex rather than base64; fields
// this version of the proto does not know are ignored, as the
// specification asks of receivers. Decode turns the hex ids into base64
// (only in spans and their links, where OTLP has ids) and then decodes with
// protojson.
//
// Every span must carry a trace id of 16 bytes and a span id of 8, neither
// all zero (W3C Trace Context, "trace-id" and "parent-id"), and a parent
// span id of 8 bytes or none. The error names the span by its place in the
// body (resourceSpans[0].scopeSpans[1].spans[2]) and the rule, never a
// value from the body.
func Decode(contentType string, body []byte) ([]Span, error) {
	var data tracepb.TracesData
	switch contentType {
	case ContentTypeProtobuf:
		if err := proto.Unmarshal(body, &data); err != nil {
			return nil, fmt.Errorf("the body is not an ExportTraceServiceRequest in binary Protobuf: %w", err)
		}
	case ContentTypeJSON:
		b, err := hexIDsToBase64(body)
		if err != nil {
			return nil, err
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &data); err != nil {
			return nil, fmt.Errorf("the body is not an ExportTraceServiceRequest in OTLP JSON%s", position(err))
		}
	default:
		return nil, fmt.Errorf("content type %q is not %s or %s", contentType, ContentTypeJSON, ContentTypeProtobuf)
	}
	return spansOf(&data)
}

// protojsonPosition finds the "(line L:C)" protojson's errors give; the
// rest of their text quotes the body.
var protojsonPosition = regexp.MustCompile(`\(line \d+:\d+\)`)

// position is ", at line L:C" from a protojson error, or "".
func position(err error) string {
	if p := protojsonPosition.FindString(err.Error()); p != "" {
		return ", at " + strings.Trim(p, "()")
	}
	return ""
}

// The JSON names of the fields that hold ids and lead to them; protojson
// accepts a field's proto name as well as its JSON name, and so does
// hexIDsToBase64.
var (
	resourceSpansNames = []string{"resourceSpans", "resource_spans"}
	scopeSpansNames    = []string{"scopeSpans", "scope_spans"}
	spanIDNames        = [][]string{{"traceId", "trace_id"}, {"spanId", "span_id"}, {"parentSpanId", "parent_span_id"}}
	linkIDNames        = [][]string{{"traceId", "trace_id"}, {"spanId", "span_id"}}
)

// hexIDsToBase64 rewrites an OTLP JSON body so that protojson can decode
// it: the ids of spans and links, hex in OTLP JSON, become the base64 the
// protobuf JSON mapping gives bytes fields. Anything that is not where an
// id belongs is left for protojson to judge; numbers keep their text.
func hexIDsToBase64(body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, errors.New("the body is not JSON")
	}
	if len(bytes.Trim(body[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, errors.New("the body holds more than one JSON value")
	}
	for i, rs := range arrayMember(root, resourceSpansNames) {
		for j, ss := range arrayMember(rs, scopeSpansNames) {
			for k, span := range arrayMember(ss, []string{"spans"}) {
				at := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				if err := rewriteIDs(span, spanIDNames, at); err != nil {
					return nil, err
				}
				for l, link := range arrayMember(span, []string{"links"}) {
					if err := rewriteIDs(link, linkIDNames, fmt.Sprintf("%s.links[%d]", at, l)); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return json.Marshal(root)
}

// arrayMember is the array v holds under the first of names it has, when v is
// an object and that member an array; nil otherwise.
func arrayMember(v any, names []string) []any {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, n := range names {
		if a, ok := obj[n].([]any); ok {
			return a
		}
	}
	return nil
}

// rewriteIDs turns the hex strings v holds under names into base64; at
// names v in errors.
func rewriteIDs(v any, names [][]string, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, field := range names {
		for _, n := range field {
			s, ok := obj[n].(string)
			if !ok {
				continue
			}
			b, err := hex.DecodeString(s)
			if err != nil {
				return fmt.Errorf("%s.%s is not hex (OTLP JSON gives ids in hex)", at, field[0])
			}
			obj[n] = base64.StdEncoding.EncodeToString(b)
		}
	}
	return nil
}

// spansOf flattens data into Spans, checking every span's ids.
func spansOf(data *tracepb.TracesData) ([]Span, error) {
	var out []Span
	for i, rs := range data.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == ServiceNameKey {
				service = Flatten(kv.GetValue())
			}
		}
		for j, ss := range rs.GetScopeSpans() {
			for k, sp := range ss.GetSpans() {
				at := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				if err := checkIDs(sp.GetTraceId(), sp.GetSpanId(), at); err != nil {
					return nil, err
				}
				if p := sp.GetParentSpanId(); len(p) != 0 && len(p) != 8 {
					return nil, fmt.Errorf("%s.parentSpanId is %d bytes, not 8 or none", at, len(p))
				}
				s := Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), TraceState: sp.GetTraceState(),
					Name: sp.GetName(), Kind: trace.SpanKind(sp.GetKind()),
					Start: unixNano(sp.GetStartTimeUnixNano()), End: unixNano(sp.GetEndTimeUnixNano()),
					Status: statusCode(sp.GetStatus().GetCode()), StatusMessage: sp.GetStatus().GetMessage(),
					Attributes: flattenAll(sp.GetAttributes()), Service: service,
					Scope: ss.GetScope().GetName(), ScopeVersion: ss.GetScope().GetVersion(),
				}
				for _, e := range sp.GetEvents() {
					s.Events = append(s.Events, Event{Name: e.GetName(), Time: unixNano(e.GetTimeUnixNano()), Attributes: flattenAll(e.GetAttributes())})
				}
				for l, ln := range sp.GetLinks() {
					if err := checkIDs(ln.GetTraceId(), ln.GetSpanId(), fmt.Sprintf("%s.links[%d]", at, l)); err != nil {
						return nil, err
					}
					s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(ln.GetTraceId()), SpanID: hex.EncodeToString(ln.GetSpanId()),
						TraceState: ln.GetTraceState(), Attributes: flattenAll(ln.GetAttributes())})
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// checkIDs holds a span context's ids to W3C Trace Context's lengths and
// its rule that neither is all zero.
func checkIDs(traceID, spanID []byte, at string) error {
	if len(traceID) != 16 || allZero(traceID) {
		return fmt.Errorf("%s.traceId is not 16 bytes with one not zero (W3C Trace Context, trace-id)", at)
	}
	if len(spanID) != 8 || allZero(spanID) {
		return fmt.Errorf("%s.spanId is not 8 bytes with one not zero (W3C Trace Context, parent-id)", at)
	}
	return nil
}

func allZero(b []byte) bool { return !slices.ContainsFunc(b, func(x byte) bool { return x != 0 }) }

// unixNano is OTLP's fixed64 nanoseconds since the Unix epoch as a UTC
// time; 0 (unset) is the zero time, and a count past Go's int64 range
// the latest time it holds.
func unixNano(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(min(n, 1<<63-1))).UTC()
}

// statusCode maps OTLP's status codes (UNSET 0, OK 1, ERROR 2) to
// OpenTelemetry Go's (Unset 0, Error 1, Ok 2); an unknown code is Unset.
func statusCode(c tracepb.Status_StatusCode) codes.Code {
	switch c {
	case tracepb.Status_STATUS_CODE_OK:
		return codes.Ok
	case tracepb.Status_STATUS_CODE_ERROR:
		return codes.Error
	}
	return codes.Unset
}

// flattenAll flattens attributes; a key given twice keeps its last value.
func flattenAll(kvs []*commonpb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = Flatten(kv.GetValue())
	}
	return out
}

// Flatten renders an OTLP attribute value as a string: a string as it is,
// a bool as true or false, an int in decimal, a double in Go's shortest
// 'g' form, bytes in standard base64, no value (or a profile's
// string-table index, which spans do not use) as "", and an array or a
// key-value list as one JSON value (jsonValue) whose members keep their
// JSON types: ["sfn",2], {"lane":"sfn","retries":2}.
func Flatten(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue, *commonpb.AnyValue_KvlistValue:
		b, err := json.Marshal(jsonValue(v))
		if err != nil {
			return ""
		}
		return string(b)
	}
	return ""
}

// jsonValue is v as a value encoding/json encodes: strings, bools and
// ints as themselves, a double as a number (as a string when JSON has no
// number for it: NaN, ±Inf), bytes as a base64 string, arrays and lists
// nested (a list's key given twice keeps its last value; encoding/json
// sorts keys), no value as null. Nesting values rather than flattened
// strings keeps the text linear in the value's size.
func jsonValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return json.Number(strconv.FormatInt(x.IntValue, 10))
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		}
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		elems := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			elems = append(elems, jsonValue(e))
		}
		return elems
	case *commonpb.AnyValue_KvlistValue:
		m := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			m[kv.GetKey()] = jsonValue(kv.GetValue())
		}
		return m
	}
	return nil
}

// cloneSpan is s with its maps and slices copied, so that a caller cannot
// change what the receiver keeps.
func cloneSpan(s Span) Span {
	s.Attributes = maps.Clone(s.Attributes)
	s.Events = slices.Clone(s.Events)
	for i := range s.Events {
		s.Events[i].Attributes = maps.Clone(s.Events[i].Attributes)
	}
	s.Links = slices.Clone(s.Links)
	for i := range s.Links {
		s.Links[i].Attributes = maps.Clone(s.Links[i].Attributes)
	}
	return s
}
