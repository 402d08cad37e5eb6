// Package functionurl serves an http.Handler behind a Lambda Function URL
// whose invoke mode is BUFFERED, the mode toolgate's Function URLs use:
// Serve turns one events.LambdaFunctionURLRequest (payload format 2.0)
// into an *http.Request and the handler's answer into one
// events.LambdaFunctionURLResponse. aws-lambda-go's lambdaurl serves only
// the RESPONSE_STREAM mode (AWS Lambda Developer Guide, "Invoking Lambda
// function URLs": invoke modes and payload format).
package functionurl
