package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/functionurl"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Handler is the webhooks function's Lambda handler: the routes of its
// IAM-authorised Function URL, each with the caller proof in
// webhookapi.ProofHeader, or a direct invocation (webhookapi.DirectRequest).
// The event's authorizer is never read: the caller proof says who calls.
type Handler struct {
	service *Service
	url     http.Handler
}

// NewHandler returns the webhooks function's handler for s. Its Function
// URL routes are POST /subscriptions (a webhookapi.SubscribeRequest), GET
// /subscriptions, POST /subscriptions/{id}/rotate-secret, POST
// /subscriptions/{id}/disable, GET /deliveries?event=ID, GET /dlq and
// POST /dlq/redrive, each with or without a trailing slash and the method
// in any letter case (functionurl.Routes); anything else is refused with
// WEBHOOKS_INVALID.
func NewHandler(s *Service) *Handler {
	h := &Handler{service: s}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /subscriptions", h.subscribe)
	mux.HandleFunc("GET /subscriptions", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.List(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("POST /subscriptions/{id}/rotate-secret", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.RotateSecret(r.Context(), r.PathValue("id"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("POST /subscriptions/{id}/disable", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.Disable(r.Context(), r.PathValue("id"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("GET /deliveries", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.Deliveries(r.Context(), r.URL.Query().Get("event"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("GET /dlq", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.DLQList(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("POST /dlq/redrive", func(w http.ResponseWriter, r *http.Request) {
		res, err := s.Redrive(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("/", noRoute)
	h.url = functionurl.Routes(mux, noRoute)
	return h
}

func proofOf(r *http.Request) string { return r.Header.Get(webhookapi.ProofHeader) }

// knownActions are the direct invocation's actions.
var knownActions = []string{webhookapi.ActionSubscribe, webhookapi.ActionList, webhookapi.ActionRotateSecret, webhookapi.ActionDisable,
	webhookapi.ActionDeliveries, webhookapi.ActionDLQList, webhookapi.ActionDLQRedrive}

// Handle is the Lambda handler.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, edge(&Error{Code: webhookapi.CodeInvalid, Message: "the request is not a JSON object"})
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.serveURL(ctx, payload)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req webhookapi.DirectRequest
	if err := dec.Decode(&req); err != nil || !slices.Contains(knownActions, req.Action) || (req.Action == webhookapi.ActionSubscribe && req.Subscribe == nil) {
		return nil, edge(&Error{Code: webhookapi.CodeInvalid, Message: "a direct invocation is {\"action\": \"subscribe\", \"subscribe\", \"proof\"}, {\"action\": \"list\" (dlq.list, dlq.redrive), \"proof\"}, {\"action\": \"rotate-secret\" (disable), \"subscription\", \"proof\"} or {\"action\": \"deliveries\", \"event\", \"proof\"}"})
	}
	s := h.service
	var res any
	var err error
	switch req.Action {
	case webhookapi.ActionSubscribe:
		res, err = s.Subscribe(ctx, *req.Subscribe, req.Proof)
	case webhookapi.ActionList:
		res, err = s.List(ctx, req.Proof)
	case webhookapi.ActionRotateSecret:
		res, err = s.RotateSecret(ctx, req.Subscription, req.Proof)
	case webhookapi.ActionDisable:
		res, err = s.Disable(ctx, req.Subscription, req.Proof)
	case webhookapi.ActionDeliveries:
		res, err = s.Deliveries(ctx, req.Event, req.Proof)
	case webhookapi.ActionDLQList:
		res, err = s.DLQList(ctx, req.Proof)
	default:
		res, err = s.Redrive(ctx, req.Proof)
	}
	if err != nil {
		h.logFailure(ctx, err)
		return nil, edge(err)
	}
	return json.Marshal(res)
}

// logFailure logs a refused or failed request: its code and message
// (safe to show), and for a failure of the function's own (DynamoDB, KMS,
// SQS, STS) its cause, which the answer leaves out. Without the cause a
// missing grant on AWS would show nowhere. Causes name ids and AWS error
// codes, never a secret (shared/webhook/store's errors name no key byte).
func (h *Handler) logFailure(ctx context.Context, err error) {
	e := errorOf(err)
	if e.Err == nil {
		h.service.log().InfoContext(ctx, "webhooks request refused", "code", e.Code, "message", e.Message)
		return
	}
	h.service.log().WarnContext(ctx, "webhooks request failed", "code", e.Code, "message", e.Message, "error", e.Err.Error())
}

// body is err's *Error and its ErrorBody.
func body(err error) (*Error, []byte) {
	e := errorOf(err)
	var b webhookapi.ErrorBody
	b.Error.Code, b.Error.Message = e.Code, e.Message
	out, _ := json.Marshal(b)
	return e, out
}

// edge is err as a direct invocation's error: its code as the errorType,
// its ErrorBody as the message.
func edge(err error) error {
	e, b := body(err)
	return messages.InvokeResponse_Error{Type: e.Code, Message: string(b)}
}

// serveURL serves a Function URL request with the routes.
func (h *Handler) serveURL(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	return functionurl.ServePayload(ctx, h.url, payload, func() (int, []byte) {
		return failure(&Error{Code: webhookapi.CodeInvalid, Message: "the request is not a Function URL request"})
	})
}

// noRoute refuses any other request.
func noRoute(w http.ResponseWriter, _ *http.Request) {
	writeAnswer(w, nil, &Error{Code: webhookapi.CodeInvalid, Message: "no route: use POST /subscriptions, GET /subscriptions, POST /subscriptions/{id}/rotate-secret, POST /subscriptions/{id}/disable, GET /deliveries?event=ID, GET /dlq or POST /dlq/redrive"})
}

// subscribe serves POST /subscriptions.
func (h *Handler) subscribe(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	var b webhookapi.SubscribeRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err != nil || dec.Decode(&b) != nil {
		h.respond(w, r, nil, &Error{Code: webhookapi.CodeInvalid, Message: "the body must be {\"url\", \"events\": [PATTERN...], \"solution\"} (webhookapi.SubscribeRequest)"})
		return
	}
	res, err := h.service.Subscribe(r.Context(), b, proofOf(r))
	h.respond(w, r, res, err)
}

// status is the Function URL status of a code (functionurl.Codes).
var status = functionurl.Codes{Invalid: webhookapi.CodeInvalid, Unauthenticated: webhookapi.CodeUnauthenticated,
	Refused: webhookapi.CodeRefused, NotFound: webhookapi.CodeNotFound}.Status

// respond writes a Function URL answer to r (functionurl.Answer), and
// logs a failure (logFailure).
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, res any, err error) {
	if err != nil {
		h.logFailure(r.Context(), err)
	}
	writeAnswer(w, res, err)
}

// writeAnswer writes a Function URL answer (functionurl.Answer).
func writeAnswer(w http.ResponseWriter, res any, err error) {
	st, b := functionurl.Answer(res, err, failure)
	functionurl.WriteJSON(w, st, b)
}

// failure is the Function URL answer to err: its code's status and its
// ErrorBody.
func failure(err error) (int, []byte) {
	e, b := body(err)
	return status(e.Code), b
}
