package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/functionurl"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// Handler is the sources function's Lambda handler: the routes of its
// IAM-authorised Function URL, each with the caller proof in
// inboundapi.ProofHeader, or a direct invocation
// (inboundapi.DirectRequest, the local stack). The event's authorizer is
// never read: the caller proof says who calls.
type Handler struct {
	service *Service
	url     http.Handler
}

// maxRequestBytes bounds a request body: a schedule's input
// (MaxScheduleInputBytes) and its other members fit well within it.
const maxRequestBytes = 64 << 10

// NewHandler returns the sources function's handler for s. Its Function
// URL routes are inboundapi's (POST /sources, GET /sources, POST
// /sources/{name}/rotate-secret, retire-secrets and remove; POST
// /schedules, GET /schedules, POST /schedules/{name}/pause, resume and
// remove; GET /dlq and POST /dlq/redrive), each with or without a
// trailing slash and the method in any letter case (functionurl.Routes);
// anything else is refused with SOURCES_INVALID.
func NewHandler(s *Service) *Handler {
	h := &Handler{service: s}
	mux := http.NewServeMux()
	mux.HandleFunc(inboundapi.RouteAddSource, func(w http.ResponseWriter, r *http.Request) {
		var b inboundapi.AddSourceRequest
		if !h.decode(w, r, &b, `{"name", "scheme", "solution", "max_body_bytes", "end_user", "secret"} (inboundapi.AddSourceRequest)`) {
			return
		}
		res, err := s.AddSource(r.Context(), b, proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteListSources, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.ListSources(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteRotateSecret, func(w http.ResponseWriter, r *http.Request) {
		var b inboundapi.RotateSecretRequest
		if !h.decode(w, r, &b, `{"secret"} or none (inboundapi.RotateSecretRequest)`) {
			return
		}
		res, err := s.RotateSecret(r.Context(), r.PathValue("name"), b, proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteRetireSecrets, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.RetireSecrets(r.Context(), r.PathValue("name"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteRemoveSource, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.RemoveSource(r.Context(), r.PathValue("name"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteAddSchedule, func(w http.ResponseWriter, r *http.Request) {
		var b inboundapi.AddScheduleRequest
		if !h.decode(w, r, &b, `{"name", "solution", "expression", "input", "end_user"} (inboundapi.AddScheduleRequest)`) {
			return
		}
		res, err := s.AddSchedule(r.Context(), b, proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteListSchedules, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.ListSchedules(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RoutePauseSchedule, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.PauseSchedule(r.Context(), r.PathValue("name"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteResumeSchedule, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.ResumeSchedule(r.Context(), r.PathValue("name"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteRemoveSchedule, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.RemoveSchedule(r.Context(), r.PathValue("name"), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteDLQList, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.DLQList(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc(inboundapi.RouteDLQRedrive, func(w http.ResponseWriter, r *http.Request) {
		res, err := s.DLQRedrive(r.Context(), proofOf(r))
		h.respond(w, r, res, err)
	})
	mux.HandleFunc("/", noRoute)
	h.url = functionurl.Routes(mux, noRoute)
	return h
}

func proofOf(r *http.Request) string { return r.Header.Get(inboundapi.ProofHeader) }

// decode reads r's JSON body into v, unknown members refused; an empty
// body is {}. On failure it answers SOURCES_INVALID with want (never
// quoting the body, which may hold a secret) and returns false.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any, want string) bool {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err == nil && len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err != nil || len(raw) > maxRequestBytes || dec.Decode(v) != nil || dec.More() {
		h.respond(w, r, nil, invalid("the body must be %s, at most %d bytes", want, maxRequestBytes))
		return false
	}
	return true
}

// knownActions are the direct invocation's actions.
var knownActions = []string{inboundapi.ActionAddSource, inboundapi.ActionListSources, inboundapi.ActionRotateSecret, inboundapi.ActionRetireSecrets,
	inboundapi.ActionRemoveSource, inboundapi.ActionAddSchedule, inboundapi.ActionListSchedules, inboundapi.ActionPauseSchedule,
	inboundapi.ActionResumeSchedule, inboundapi.ActionRemoveSchedule, inboundapi.ActionDLQList, inboundapi.ActionDLQRedrive}

// Handle is the Lambda handler: a Function URL event (payload 2.0, known
// by its requestContext) is served by the routes and answered as a
// Function URL response (an error as its code's status and an
// inboundapi.ErrorBody); any other payload must be an
// inboundapi.DirectRequest, unknown members refused, answered with the
// action's result as JSON or failed with a
// messages.InvokeResponse_Error whose Type is the SOURCES_ code and whose
// Message is the ErrorBody's JSON. A payload that is no JSON object is
// SOURCES_INVALID.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, edge(invalid("the request is not a JSON object"))
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.serveURL(ctx, payload)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req inboundapi.DirectRequest
	if err := dec.Decode(&req); err != nil || !slices.Contains(knownActions, req.Action) ||
		(req.Action == inboundapi.ActionAddSource && req.AddSource == nil) || (req.Action == inboundapi.ActionAddSchedule && req.AddSchedule == nil) {
		return nil, edge(invalid(`a direct invocation is {"action", the action's member ("add_source", "add_schedule", "rotate", "name"), "proof"} (inboundapi.DirectRequest)`))
	}
	res, err := h.direct(ctx, req)
	if err != nil {
		h.logFailure(ctx, err)
		return nil, edge(err)
	}
	return json.Marshal(res)
}

// direct runs a direct invocation's action.
func (h *Handler) direct(ctx context.Context, req inboundapi.DirectRequest) (any, error) {
	s := h.service
	switch req.Action {
	case inboundapi.ActionAddSource:
		return s.AddSource(ctx, *req.AddSource, req.Proof)
	case inboundapi.ActionListSources:
		return s.ListSources(ctx, req.Proof)
	case inboundapi.ActionRotateSecret:
		var r inboundapi.RotateSecretRequest
		if req.Rotate != nil {
			r = *req.Rotate
		}
		return s.RotateSecret(ctx, req.Name, r, req.Proof)
	case inboundapi.ActionRetireSecrets:
		return s.RetireSecrets(ctx, req.Name, req.Proof)
	case inboundapi.ActionRemoveSource:
		return s.RemoveSource(ctx, req.Name, req.Proof)
	case inboundapi.ActionAddSchedule:
		return s.AddSchedule(ctx, *req.AddSchedule, req.Proof)
	case inboundapi.ActionListSchedules:
		return s.ListSchedules(ctx, req.Proof)
	case inboundapi.ActionPauseSchedule:
		return s.PauseSchedule(ctx, req.Name, req.Proof)
	case inboundapi.ActionResumeSchedule:
		return s.ResumeSchedule(ctx, req.Name, req.Proof)
	case inboundapi.ActionRemoveSchedule:
		return s.RemoveSchedule(ctx, req.Name, req.Proof)
	case inboundapi.ActionDLQList:
		return s.DLQList(ctx, req.Proof)
	default:
		return s.DLQRedrive(ctx, req.Proof)
	}
}

// logFailure logs a refused or failed request: its code and message
// (safe to show: never a secret, proof or input), and for a failure of
// the function's own (DynamoDB, KMS, SQS, EventBridge Scheduler, STS) its
// cause, which the answer leaves out. Causes name names and AWS error
// codes, never a secret (shared/inbound/store's errors name no key byte).
func (h *Handler) logFailure(ctx context.Context, err error) {
	e := errorOf(err)
	if e.Err == nil {
		h.service.log().InfoContext(ctx, "sources request refused", "code", e.Code, "message", e.Message)
		return
	}
	h.service.log().WarnContext(ctx, "sources request failed", "code", e.Code, "message", e.Message, "error", e.Err.Error())
}

// body is err's *Error and its ErrorBody.
func body(err error) (*Error, []byte) {
	e := errorOf(err)
	var b inboundapi.ErrorBody
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
		return failure(invalid("the request is not a Function URL request"))
	})
}

// noRoute refuses any other request.
func noRoute(w http.ResponseWriter, _ *http.Request) {
	writeAnswer(w, nil, invalid("no route: use POST or GET /sources, POST /sources/{name}/rotate-secret (retire-secrets, remove), "+
		"POST or GET /schedules, POST /schedules/{name}/pause (resume, remove), GET /dlq or POST /dlq/redrive"))
}

// status is the Function URL status of a code (functionurl.Codes); a
// conflict is 409.
func status(code string) int {
	if code == inboundapi.CodeConflict {
		return http.StatusConflict
	}
	return functionurl.Codes{Invalid: inboundapi.CodeInvalid, Unauthenticated: inboundapi.CodeUnauthenticated,
		Refused: inboundapi.CodeRefused, NotFound: inboundapi.CodeNotFound}.Status(code)
}

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
