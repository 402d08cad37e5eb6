package tool

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Edge converts any error into what a Lambda handler returns: a
// messages.InvokeResponse_Error value whose Type is exactly the code (one
// of Codes, CallParked, ApprovalExpired or CallReconciledNoResult) and whose Message is the safe message. aws-lambda-go passes such a value
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

// CapMessage cuts an error message so that its JSON string, as
// aws-lambda-go writes it (encoding/json, with \u003c for "<" and the
// like), is at most MaxMessageBytes, at a character boundary and ending
// in "..." when cut: the state data keeps a Task's error message, and the
// resolver bounds the state with MaxMessageBytes (docs/solutions.md,
// "State size").
func CapMessage(msg string) string {
	if jsonLen(msg) <= MaxMessageBytes {
		return msg
	}
	// Each character takes 1 to 12 bytes in JSON ("\ud83d\ude00" at
	// most); cut at the last boundary that fits.
	n, cut := 2+3, 0 // the quotes and "..."
	for i, r := range msg {
		w := jsonLen(string(r)) - 2
		if n+w > MaxMessageBytes {
			break
		}
		n += w
		cut = i + utf8.RuneLen(r)
	}
	return msg[:cut] + "..."
}

// jsonLen is the length of s as a JSON string written by encoding/json.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}
