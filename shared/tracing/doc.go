// Package tracing opens a function's spans and exports them as OTLP/HTTP
// JSON (docs/tracing.md).
//
// A Tracer is built once per container from TOOLGATE_TRACING
// (functionconfig.ParseTracing). With tracing off it starts no
// OpenTelemetry SDK: a span is then a non-recording one that still has a
// valid, new span context, so a call carries its context to the server it
// calls whether or not toolgate exports. With export on, spans go through
// the OpenTelemetry Go SDK's batch span processor to Exporter, which
// POSTs them in the OTLP/HTTP JSON encoding (OpenTelemetry protocol
// specification, "OTLP/HTTP", "JSON Protobuf Encoding"): no protobuf and
// no gRPC in the functions. A Lambda function is frozen once it returns,
// so a handler calls Flush before returning, bounded by FlushTimeout.
//
// What a span may hold is the caller's rule: names, step ids, tool names,
// seqs, outcomes, error codes and external keys, never an input, output,
// recipient, secret, proof, task token, URL query or header value.
package tracing
