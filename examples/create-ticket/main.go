// Command create-ticket is an example platform tool: a team's own Lambda
// function that toolgate's proxy (functions/lambda-tool) invokes for the
// create-ticket tool of a registered toolset. It reads the proxy's
// request, creates a ticket through the ticket service's HTTP API under
// the call's idempotency key, and answers the ticket or the documented
// error shape (docs/tools.md, "Platform tools"). It continues the call's
// trace from the request's trace member with one span of its own. The
// only toolgate code it uses is that span's tracer and exporter
// (shared/tracing), which the OpenTelemetry SDK and any of its exporters
// would replace; docs/tools.md shows a team's function doing it that way.
//
// Configuration: TICKETS_URL, the ticket service's base URL (required);
// TOOLGATE_TRACING, "off" (the default) or "otlp:" and an OTLP/HTTP
// receiver's base URL (functionconfig.ParseTracing).
package main

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/toolgate/toolgate/shared/tracing"
)

func main() {
	base := os.Getenv("TICKETS_URL")
	if base == "" {
		log.Fatal("TICKETS_URL is not set")
	}
	tracer, err := tracing.FromEnv(os.Getenv, "create-ticket")
	if err != nil {
		log.Fatal(err)
	}
	h := &Handler{Base: base, Client: &http.Client{Timeout: 10 * time.Second}, Tracer: tracer}
	lambda.Start(h.Handle)
}
