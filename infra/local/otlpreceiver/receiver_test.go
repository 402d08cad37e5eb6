package otlpreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func start(t *testing.T) *Receiver {
	t.Helper()
	r, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// post sends body to the receiver's path with the header fields kv and
// returns the status, the Content-Type and the body answered.
func post(t *testing.T, r *Receiver, method, path string, body []byte, kv ...string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, r.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// runTrace is the trace testdata/toolgate-run.json holds a run of.
const runTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

func TestListensOnLoopbackOnly(t *testing.T) {
	r := start(t)
	u, err := url.Parse(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" || u.Path != "" {
		t.Fatalf("URL %s: want http://127.0.0.1:<port chosen>, no path", r.URL())
	}
}

// testdata/toolgate-run.json is written by hand after the OTLP
// specification's "JSON Protobuf Encoding" and opentelemetry-proto's
// examples/trace.json: hex ids in either case, 64-bit integers as strings
// and as numbers, enums as integers (and once as a name, which protojson
// also reads), a member the proto does not know, every attribute type.
func TestJSONBodyIsAnsweredEmptyResponseAndEverySpanKept(t *testing.T) {
	r := start(t)
	status, ctype, answer := post(t, r, http.MethodPost, TracesPath, readFile(t, "toolgate-run.json"), "Content-Type", "application/json; charset=utf-8")
	if status != http.StatusOK || ctype != ContentTypeJSON || string(answer) != "{}" {
		t.Fatalf("answered %d %s %s, want 200 application/json {}", status, ctype, answer)
	}
	spans := r.Spans()
	if len(spans) != 6 {
		t.Fatalf("%d spans kept, want 6", len(spans))
	}
	at := func(ns int64) time.Time { return time.Unix(0, ns).UTC() }
	wantStep := Span{
		TraceID: runTrace, SpanID: "b7ad6b7169203331", ParentSpanID: "00f067aa0ba902b7",
		Name: "toolgate.step fetch", Kind: trace.SpanKindServer,
		Start: at(1796212800100000000), End: at(1796212800220500000), Status: codes.Ok,
		Attributes: map[string]string{"toolgate.outcome": "ok", "toolgate.seq": "3", "toolgate.replayed": "false", "toolgate.ratio": "0.25",
			"toolgate.lanes": `["sfn",2]`, "toolgate.limits": `{"lane":"sfn","retries":2}`, "toolgate.digest": "3q2+7w==", "toolgate.empty": ""},
		Service: "structured-data-fetch", Scope: "github.com/toolgate/toolgate/shared/tracing",
	}
	if diff := cmp.Diff(wantStep, spans[1]); diff != "" {
		t.Errorf("the step span (-want +got):\n%s", diff)
	}
	wantRun := Span{TraceID: runTrace, SpanID: "00f067aa0ba902b7", Name: "toolgate.run", Kind: trace.SpanKindInternal,
		Start: at(1796212800000000000), End: at(1796212800412000000), Status: codes.Ok,
		Attributes: map[string]string{"toolgate.outcome": "succeeded", "toolgate.run": "digest-2026-12-02"},
		Service:    "toolgate", Scope: "github.com/toolgate/toolgate/resolver/cli", ScopeVersion: "0.9.0"}
	if diff := cmp.Diff(wantRun, spans[0]); diff != "" {
		t.Errorf("the run span, upper-case hex ids (-want +got):\n%s", diff)
	}
	retried := spans[2]
	if retried.Status != codes.Error || retried.StatusMessage != "upstream answered 503" || retried.Kind != trace.SpanKindClient ||
		!cmp.Equal(retried.Events, []Event{{Name: "retry", Time: at(1796212800119000000), Attributes: map[string]string{"toolgate.wait_ms": "80"}}}) {
		t.Errorf("the failed attempt: %+v", retried)
	}
	second := spans[3]
	if second.Kind != trace.SpanKindClient || second.Status != codes.Ok ||
		!cmp.Equal(second.Links, []Link{{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331", Attributes: map[string]string{"toolgate.link": "first attempt"}}}) {
		t.Errorf("the second attempt, kind and status by name, a link: %+v", second)
	}
	if got := r.Trace(strings.ToUpper(runTrace)); len(got) != 5 {
		t.Errorf("Trace of the run: %d spans, want 5 (another trace's left out)", len(got))
	}
}

func TestTreeOfARunNestsByParentAndShowsOrphansAsRoots(t *testing.T) {
	r := start(t)
	if status, _, _ := post(t, r, http.MethodPost, TracesPath, readFile(t, "toolgate-run.json"), "Content-Type", ContentTypeJSON); status != http.StatusOK {
		t.Fatalf("answered %d", status)
	}
	golden(t, "toolgate-run.tree", r.Tree(runTrace))
}

// The OpenTelemetry SDK's own OTLP/HTTP exporter sends binary Protobuf,
// plain and gzipped: what the receiver keeps is what the SDK recorded.
func TestSpansExportedByTheOpenTelemetrySDKAreKept(t *testing.T) {
	for _, c := range []struct {
		name        string
		compression otlptracehttp.Compression
	}{{"protobuf", otlptracehttp.NoCompression}, {"protobuf gzipped", otlptracehttp.GzipCompression}} {
		t.Run(c.name, func(t *testing.T) {
			r := start(t)
			exp, err := otlptracehttp.New(t.Context(), otlptracehttp.WithEndpointURL(r.URL()+TracesPath),
				otlptracehttp.WithCompression(c.compression), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
			if err != nil {
				t.Fatal(err)
			}
			recorder := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(recorder),
				sdktrace.WithResource(resource.NewSchemaless(attribute.String(ServiceNameKey, "http"))))
			tracer := tp.Tracer("toolgate-test", trace.WithInstrumentationVersion("1.2.3"))

			ctx, step := tracer.Start(t.Context(), "toolgate.step post", trace.WithSpanKind(trace.SpanKindServer))
			_, attempt := tracer.Start(ctx, "toolgate.attempt http", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.Int64("toolgate.seq", 2), attribute.StringSlice("toolgate.hosts", []string{"a", "b"})))
			attempt.AddEvent("answered", trace.WithAttributes(attribute.Int("http.status", 429)))
			attempt.SetAttributes(attribute.String(OutcomeKey, "retryable"))
			attempt.SetStatus(codes.Error, "429")
			attempt.End()
			step.SetStatus(codes.Ok, "")
			step.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatalf("the SDK's export: %v", err)
			}

			ended := recorder.Ended()
			got := r.Spans()
			if len(got) != len(ended) || len(got) != 2 {
				t.Fatalf("%d spans kept, the SDK ended %d", len(got), len(ended))
			}
			for i, want := range ended {
				g := got[i]
				if g.TraceID != want.SpanContext().TraceID().String() || g.SpanID != want.SpanContext().SpanID().String() ||
					g.Name != want.Name() || g.Kind != want.SpanKind() || !g.Start.Equal(want.StartTime()) || !g.End.Equal(want.EndTime()) ||
					g.Status != want.Status().Code || g.StatusMessage != want.Status().Description || g.Service != "http" ||
					g.Scope != "toolgate-test" || g.ScopeVersion != "1.2.3" {
					t.Errorf("span %d kept as %+v, the SDK ended %s %s %s", i, g, want.Name(), want.SpanContext().SpanID(), want.Status())
				}
			}
			attemptKept, stepKept := got[0], got[1]
			if attemptKept.ParentSpanID != stepKept.SpanID || stepKept.ParentSpanID != "" {
				t.Errorf("parents: attempt's %q, step's %q; want the step's span id and none", attemptKept.ParentSpanID, stepKept.ParentSpanID)
			}
			wantAttrs := map[string]string{"toolgate.seq": "2", "toolgate.hosts": `["a","b"]`, OutcomeKey: "retryable"}
			if !cmp.Equal(attemptKept.Attributes, wantAttrs) || len(attemptKept.Events) != 1 || attemptKept.Events[0].Attributes["http.status"] != "429" {
				t.Errorf("attempt's attributes %v, events %+v", attemptKept.Attributes, attemptKept.Events)
			}
			tree := regexp.MustCompile(`[0-9.]+ms`).ReplaceAllString(r.Tree(stepKept.TraceID), "Nms")
			if want := "toolgate.step post Nms Ok\n  toolgate.attempt http Nms Error toolgate.outcome=\"retryable\"\n"; tree != want {
				t.Errorf("tree:\n%s\nwant:\n%s", tree, want)
			}
		})
	}
}

func TestWaitReturnsOnceSpansArrive(t *testing.T) {
	r := start(t)
	done := make(chan []Span)
	go func() {
		spans, err := r.Wait(t.Context(), 6)
		if err != nil {
			t.Error(err)
		}
		done <- spans
	}()
	post(t, r, http.MethodPost, TracesPath, readFile(t, "toolgate-run.json"), "Content-Type", ContentTypeJSON)
	if spans := <-done; len(spans) != 6 {
		t.Errorf("Wait returned %d spans, want 6", len(spans))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Wait(ctx, 7); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait for more than came, cancelled: %v", err)
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// span is one span's JSON with the ids given, in a whole request.
func span(traceID, spanID, parent string) []byte {
	return []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"` + spanID + `","parentSpanId":"` + parent + `","name":"x"}]}]}]}`)
}

// marker is in bodies refused below: no answer or refusal may quote it.
const marker = "sekrit-marker"

func TestRefusedRequestsAreAnsweredAndRecordedWithoutTheBody(t *testing.T) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tooLong := append([]byte(`{"resourceSpans":[],"x":"`), bytes.Repeat([]byte("a"), MaxBody)...)
	cases := []struct {
		name         string
		method, path string
		body         []byte
		header       []string
		status       int
		reason       string
	}{
		{"not JSON", "POST", TracesPath, []byte(`{"resourceSpans": [` + marker), []string{"Content-Type", ContentTypeJSON}, 400, "not JSON"},
		{"two JSON values", "POST", TracesPath, []byte(`{} {"` + marker + `":1}`), []string{"Content-Type", ContentTypeJSON}, 400, "more than one JSON value"},
		{"a member of the wrong type", "POST", TracesPath, []byte(`{"resourceSpans": "` + marker + `"}`), []string{"Content-Type", ContentTypeJSON}, 400, "at line 1:"},
		{"a name of the wrong type", "POST", TracesPath, bytes.Replace(span(traceID, spanID, ""), []byte(`"name":"x"`), []byte(`"name":["`+marker+`"]`), 1), []string{"Content-Type", ContentTypeJSON}, 400, "not an ExportTraceServiceRequest in OTLP JSON"},
		{"a base64 trace id", "POST", TracesPath, span("S/kvNXezTaajzpKdDg5HNg==", spanID, ""), []string{"Content-Type", ContentTypeJSON}, 400, "resourceSpans[0].scopeSpans[0].spans[0].traceId is not hex"},
		{"a short trace id", "POST", TracesPath, span("4bf92f35", spanID, ""), []string{"Content-Type", ContentTypeJSON}, 400, "traceId is not 16 bytes"},
		{"an all-zero trace id", "POST", TracesPath, span(strings.Repeat("0", 32), spanID, ""), []string{"Content-Type", ContentTypeJSON}, 400, "traceId is not 16 bytes with one not zero"},
		{"no span id", "POST", TracesPath, span(traceID, "", ""), []string{"Content-Type", ContentTypeJSON}, 400, "spanId is not 8 bytes"},
		{"a long parent span id", "POST", TracesPath, span(traceID, spanID, traceID), []string{"Content-Type", ContentTypeJSON}, 400, "parentSpanId is 16 bytes, not 8 or none"},
		{"a link's id not hex", "POST", TracesPath, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"` + spanID + `","links":[{"traceId":"zz","spanId":"` + spanID + `"}]}]}]}]}`), []string{"Content-Type", ContentTypeJSON}, 400, "spans[0].links[0].traceId is not hex"},
		{"binary not Protobuf", "POST", TracesPath, []byte{0x0a, 0xff, 's', 'e', 'k'}, []string{"Content-Type", ContentTypeProtobuf}, 400, "binary Protobuf"},
		{"gzip that is not", "POST", TracesPath, []byte(marker), []string{"Content-Type", ContentTypeJSON, "Content-Encoding", "gzip"}, 400, "not gzip"},
		{"another content type", "POST", TracesPath, span(traceID, spanID, ""), []string{"Content-Type", "text/plain"}, 415, "Content-Type is not"},
		{"no content type", "POST", TracesPath, span(traceID, spanID, ""), nil, 415, "Content-Type is not"},
		{"another content coding", "POST", TracesPath, span(traceID, spanID, ""), []string{"Content-Type", ContentTypeJSON, "Content-Encoding", "br"}, 415, "Content-Encoding is not gzip"},
		{"a body too long", "POST", TracesPath, tooLong, []string{"Content-Type", ContentTypeJSON}, 413, "longer than"},
		{"a gzipped body too long", "POST", TracesPath, gzipped(t, tooLong), []string{"Content-Type", ContentTypeJSON, "Content-Encoding", "gzip"}, 413, "longer than"},
		{"another path", "POST", "/v1/logs", span(traceID, spanID, ""), []string{"Content-Type", ContentTypeJSON}, 404, "only /v1/traces"},
		{"another method", "GET", TracesPath, nil, nil, 405, "takes POST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := start(t)
			status, ctype, answer := post(t, r, c.method, c.path, c.body, c.header...)
			if status != c.status {
				t.Fatalf("answered %d %s, want %d", status, answer, c.status)
			}
			if ctype == ContentTypeJSON {
				var st statusAnswer
				if err := json.Unmarshal(answer, &st); err != nil || !strings.Contains(st.Message, c.reason) || st.Code == 0 {
					t.Errorf("answer %s (%v): want a google.rpc.Status saying %q", answer, err, c.reason)
				}
			} else if ctype != ContentTypeProtobuf {
				t.Errorf("answered Content-Type %q", ctype)
			}
			refusals := r.Refusals()
			if len(refusals) != 1 || refusals[0].Status != c.status || !strings.Contains(refusals[0].Reason, c.reason) {
				t.Errorf("refusals %+v, want one %d saying %q", refusals, c.status, c.reason)
			}
			if strings.Contains(string(answer), marker) || strings.Contains(refusals[0].Reason, marker) {
				t.Errorf("the body is quoted: %s / %s", answer, refusals[0].Reason)
			}
			if n := len(r.Spans()); n != 0 {
				t.Errorf("%d spans kept from a refused request", n)
			}
		})
	}
}

// statusAnswer is a google.rpc.Status in protojson.
type statusAnswer struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func TestProtobufRefusalIsABinaryStatus(t *testing.T) {
	r := start(t)
	code, ctype, answer := post(t, r, http.MethodPost, TracesPath, []byte{0x0a, 0xff}, "Content-Type", ContentTypeProtobuf)
	if code != 400 || ctype != ContentTypeProtobuf {
		t.Fatalf("answered %d %s", code, ctype)
	}
	var st status.Status
	if err := proto.Unmarshal(answer, &st); err != nil || st.GetCode() != 3 || !strings.Contains(st.GetMessage(), "binary Protobuf") {
		t.Errorf("answer %v (%v), want INVALID_ARGUMENT naming binary Protobuf", protojson.Format(&st), err)
	}
}

func TestEmptyRequestIsAcceptedWithNoSpans(t *testing.T) {
	r := start(t)
	for _, c := range []struct{ ctype, body, answer string }{{ContentTypeJSON, "{}", "{}"}, {ContentTypeProtobuf, "", ""}} {
		code, ctype, answer := post(t, r, http.MethodPost, TracesPath, []byte(c.body), "Content-Type", c.ctype)
		if code != 200 || ctype != c.ctype || string(answer) != c.answer {
			t.Errorf("%s: answered %d %s %q", c.ctype, code, ctype, answer)
		}
	}
	if len(r.Spans()) != 0 || len(r.Refusals()) != 0 {
		t.Errorf("spans %v, refusals %v", r.Spans(), r.Refusals())
	}
}

func TestSpansReturnsCopies(t *testing.T) {
	r := start(t)
	post(t, r, http.MethodPost, TracesPath, readFile(t, "toolgate-run.json"), "Content-Type", ContentTypeJSON)
	r.Spans()[0].Attributes[OutcomeKey] = "changed"
	if got := r.Spans()[0].Attributes[OutcomeKey]; got != "succeeded" {
		t.Errorf("a caller changed a kept span: %q", got)
	}
}
