package tool

import (
	"fmt"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Edge converts any error into what a Lambda handler returns: a
// messages.InvokeResponse_Error value whose Type is exactly the code and
// whose Message is the safe message. aws-lambda-go passes such a value
// through unchanged (lambda/errors.go), so the caller sees errorType ==
// code and Step Functions' ErrorEquals can match it. Return it as it is,
// never wrapped.
func Edge(err error) error {
	if err == nil {
		return nil
	}
	te := Classify(err)
	msg := te.Message
	if te.RetryAfter > 0 {
		msg = fmt.Sprintf("%s (retry after %ds)", msg, int(te.RetryAfter.Seconds()+0.5))
	}
	return messages.InvokeResponse_Error{Type: string(te.Code), Message: msg}
}
