// Package otlpreceiver is a local OTLP/HTTP trace receiver for tests: a
// net/http server run in-process on a free 127.0.0.1 port (never another
// interface) that keeps every span exported to it, so that a test can read
// the trace a run left.
//
//	r, err := otlpreceiver.Start()
//	...
//	defer r.Close()
//	env["TOOLGATE_TRACING"] = "otlp:" + r.URL() // functionconfig.ParseTracing
//	// ... run something that exports spans ...
//	fmt.Print(r.Tree(traceID))
//
// # Requests
//
// It serves POST /v1/traces as the OTLP specification's "OTLP/HTTP"
// describes a server: a body of Content-Type application/json (OTLP's
// "JSON Protobuf Encoding") or application/x-protobuf (binary Protobuf),
// optionally with Content-Encoding gzip, each of at most MaxBody bytes,
// decoded as an ExportTraceServiceRequest with the OpenTelemetry project's
// generated types (go.opentelemetry.io/proto/otlp) and
// google.golang.org/protobuf (Decode). A body that decodes is answered 200
// with an empty ExportTraceServiceResponse ({} in JSON); a body that does
// not, 400; another content type or coding, 415; a body too long, 413;
// another path, 404; another method, 405. A refusal's answer is a
// google.rpc.Status and is kept (Refusals), its reason quoting nothing
// from the request.
//
// # Spans
//
// Each span is kept as a Span: its trace, span and parent span ids in
// lower-case hex, name, kind, start and end times, status code and
// message, attributes flattened to strings (Flatten), events and links,
// its resource's service.name and its instrumentation scope. Spans returns
// them in the order they arrived; Trace returns one trace's by start time;
// Wait blocks until some number have arrived, so that tests never sleep.
//
// # Trees
//
// Tree renders one trace as an indented tree, one line per span: its name,
// its duration in milliseconds, its status code and its toolgate.outcome
// attribute when it has one; children under their parent by start time,
// and spans whose parent is not in the trace as roots:
//
//	toolgate.run 412.000ms Ok toolgate.outcome="succeeded"
//	  toolgate.step fetch 120.500ms Ok toolgate.outcome="ok"
//	    toolgate.attempt structured-data-fetch 118.000ms Error toolgate.outcome="retryable"
package otlpreceiver
