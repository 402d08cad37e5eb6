// Command answer is a test platform tool: it answers its input's "answer"
// object as its whole answer, or fails with an unhandled error when the
// input's "fail" is true.
package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, req struct {
		Input struct {
			Answer json.RawMessage `json:"answer"`
			Fail   bool            `json:"fail"`
		} `json:"input"`
	}) (json.RawMessage, error) {
		if req.Input.Fail {
			return nil, errors.New("the answer function failed")
		}
		return req.Input.Answer, nil
	})
}
