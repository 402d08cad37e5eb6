// Command create-ticket is an example platform tool: a team's own Lambda
// function that toolgate's proxy (functions/lambda-tool) invokes for the
// create-ticket tool of a registered toolset. It holds no toolgate code:
// it reads the proxy's request, creates a ticket through the ticket
// service's HTTP API under the call's idempotency key, and answers the
// ticket or the documented error shape (docs/tools.md, "Platform tools").
//
// Configuration: TICKETS_URL, the ticket service's base URL (required).
package main

import (
	"log"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	base := os.Getenv("TICKETS_URL")
	if base == "" {
		log.Fatal("TICKETS_URL is not set")
	}
	h := &Handler{Base: base, Client: &http.Client{Timeout: 10 * time.Second}}
	lambda.Start(h.Handle)
}
