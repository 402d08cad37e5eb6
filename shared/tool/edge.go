package tool

import (
	"fmt"
	"unicode/utf8"

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
	return messages.InvokeResponse_Error{Type: string(te.Code), Message: CapMessage(msg)}
}

// CapMessage cuts an error message to at most MaxMessageBytes at a
// character boundary, ending it with "..." when cut: the state data keeps
// a Task's error message, and the resolver bounds the state with
// MaxMessageBytes (docs/solutions.md, "State size").
func CapMessage(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	cut := MaxMessageBytes - 3
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}
