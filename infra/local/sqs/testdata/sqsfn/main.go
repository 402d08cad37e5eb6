// Command sqsfn is a Lambda function for the Poller's test under the
// Lambda Runtime Interface Emulator: it reports a record whose body is
// "fail" as a batch item failure, fails the whole invocation when a body
// is "crash", and succeeds for any other body.
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		switch r.Body {
		case "crash":
			return events.SQSEventResponse{}, errors.New("crash requested")
		case "fail":
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
