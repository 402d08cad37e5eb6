package publish

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/publishapi"
)

// Handler is the publish function's Lambda handler: POST /solutions,
// POST /toolsets and GET /toolsets/{id} on its IAM-authorised Function URL
// (the caller proof in publishapi.ProofHeader), or a direct invocation. The event's
// authorizer is never read: the caller proof says who publishes.
type Handler struct {
	Service *Service
}

// Handle is the Lambda handler.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, edge(&Error{Code: publishapi.CodeInvalid, Message: "the request is not a JSON object"})
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.url(ctx, payload)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req publishapi.DirectRequest
	if err := dec.Decode(&req); err != nil || (req.Action != "publish" && req.Action != "register" && req.Action != "show") {
		return nil, edge(&Error{Code: publishapi.CodeInvalid, Message: "a direct invocation is {\"action\": \"publish\", \"file\", \"source\", \"proof\"}, {\"action\": \"register\", \"toolset\", \"proof\"} or {\"action\": \"show\", \"toolset_id\", \"proof\"}"})
	}
	var res any
	var err error
	switch req.Action {
	case "register":
		res, err = h.Service.Register(ctx, RegisterRequest{Toolset: []byte(req.Toolset), Proof: req.Proof})
	case "show":
		res, err = h.Service.ShowToolset(ctx, ShowRequest{ID: req.ToolsetID, Proof: req.Proof})
	default:
		res, err = h.Service.Publish(ctx, Request{File: req.File, Source: []byte(req.Source), Proof: req.Proof})
	}
	if err != nil {
		return nil, edge(err)
	}
	return json.Marshal(res)
}

func body(err error) (*Error, []byte) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: publishapi.CodeUnavailable, Message: "internal error", Err: err}
	}
	var b publishapi.ErrorBody
	b.Error.Code, b.Error.Message, b.Diagnostics = e.Code, e.Message, e.Diagnostics
	out, _ := json.Marshal(b)
	return e, out
}

func edge(err error) error {
	e, b := body(err)
	return messages.InvokeResponse_Error{Type: e.Code, Message: string(b)}
}

func (h *Handler) url(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return respond(nil, &Error{Code: publishapi.CodeInvalid, Message: "the request is not a Function URL request"})
	}
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	path := strings.TrimSuffix(ev.RawPath, "/")
	proof := ""
	for k, v := range ev.Headers {
		if strings.EqualFold(k, publishapi.ProofHeader) {
			proof = v
		}
	}
	if id, ok := strings.CutPrefix(path, "/toolsets/"); ok && method == http.MethodGet {
		return respond(h.Service.ShowToolset(ctx, ShowRequest{ID: id, Proof: proof}))
	}
	if (path != "/solutions" && path != "/toolsets") || method != http.MethodPost {
		return respond(nil, &Error{Code: publishapi.CodeInvalid, Message: "no route: use POST /solutions, POST /toolsets or GET /toolsets/{id}"})
	}
	raw := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return respond(nil, &Error{Code: publishapi.CodeInvalid, Message: "the body is not valid base64"})
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if path == "/toolsets" {
		var b publishapi.RegisterBody
		if err := dec.Decode(&b); err != nil {
			return respond(nil, &Error{Code: publishapi.CodeInvalid, Message: "the body must be {\"toolset\": TEXT}"})
		}
		return respond(h.Service.Register(ctx, RegisterRequest{Toolset: []byte(b.Toolset), Proof: proof}))
	}
	var b publishapi.Body
	if err := dec.Decode(&b); err != nil {
		return respond(nil, &Error{Code: publishapi.CodeInvalid, Message: "the body must be {\"file\": NAME, \"source\": TEXT}"})
	}
	return respond(h.Service.Publish(ctx, Request{File: b.File, Source: []byte(b.Source), Proof: proof}))
}

// status is the Function URL status of a code.
func status(code string) int {
	switch code {
	case publishapi.CodeInvalid:
		return http.StatusBadRequest
	case publishapi.CodeUnauthenticated:
		return http.StatusUnauthorized
	case publishapi.CodeRefused:
		return http.StatusForbidden
	case publishapi.CodeNotFound:
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

func respond(res any, err error) (json.RawMessage, error) {
	resp := events.LambdaFunctionURLResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}}
	if err != nil {
		e, b := body(err)
		resp.StatusCode, resp.Body = status(e.Code), string(b)
	} else {
		b, merr := json.Marshal(res)
		if merr != nil {
			return respond(nil, fmt.Errorf("encode the result: %w", merr))
		}
		resp.Body = string(b)
	}
	return json.Marshal(resp)
}
