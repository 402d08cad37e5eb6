// Command functionurlfront is a tiny Lambda for the Function URL front's
// tests: it serves its Function URL events through functionurl.Serve with
// a handler that answers what it was given. Three paths are special:
//
//	/fail      the invocation fails (a function error, errorType FrontError)
//	/inferred  the result is {"inferred":true}, no statusCode: Lambda infers the response
//	/binary    the answer is 201, application/octet-stream, the request's exact body
//
// Any other answer is 200 with a JSON document: the method, the escaped
// path, the raw query, the headers and the body (base64) the handler read,
// and the event as the function received it.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/toolgate/toolgate/shared/functionurl"
)

// FrontError is the error /fail returns; the runtime reports its type name
// as errorType.
type FrontError struct{ Msg string }

func (e *FrontError) Error() string { return e.Msg }

// Seen is what the handler answers with.
type Seen struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Query  string          `json:"query"`
	Header http.Header     `json:"header"`
	Body   string          `json:"body"`
	Event  json.RawMessage `json:"event"`
}

func handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	switch ev.RawPath {
	case "/fail":
		return nil, &FrontError{Msg: "the function failed: secret-detail"}
	case "/inferred":
		return json.RawMessage(`{"inferred":true}`), nil
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/binary" {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusCreated)
			w.Write(body)
			return
		}
		w.Header().Add("X-Echo", "a")
		w.Header().Add("X-Echo", "b")
		w.Header().Add("Set-Cookie", "s=1")
		w.Header().Add("Set-Cookie", "t=2; Path=/")
		b, _ := json.Marshal(Seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header,
			Body: base64.StdEncoding.EncodeToString(body), Event: payload})
		functionurl.WriteJSON(w, http.StatusOK, b)
	})
	return functionurl.Serve(ctx, h, ev)
}

func main() { lambda.Start(handle) }
