package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/functionurl"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// Handler is the publish function's Lambda handler: POST /solutions,
// POST /toolsets and GET /toolsets/{id} on its IAM-authorised Function URL
// (the caller proof in publishapi.ProofHeader), or a direct invocation. The event's
// authorizer is never read: the caller proof says who publishes.
type Handler struct {
	service *Service
	url     http.Handler // the Function URL's routes (NewHandler)
}

// NewHandler returns the publish function's handler for s. Its Function
// URL routes (Go's http.ServeMux patterns) are POST /solutions with a
// Body, POST /toolsets with a RegisterBody, GET /toolsets/{id...}, and
// the credentials': POST /credentials (set), GET /credentials/{name}
// (list), POST /credentials/revoke and POST /credentials/allow, each
// with a publishapi.CredentialRequest; each with or without a trailing
// slash and the method in any letter case; anything else is refused
// with PUBLISH_INVALID.
func NewHandler(s *Service) *Handler {
	h := &Handler{service: s}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /solutions", h.publish)
	mux.HandleFunc("POST /toolsets", h.register)
	mux.HandleFunc("GET /toolsets/{id...}", h.show)
	mux.HandleFunc("GET /shapes/{id...}", h.shapes)
	mux.HandleFunc("POST /credentials", h.setCredential)
	mux.HandleFunc("GET /credentials/{name}", h.listCredentials)
	mux.HandleFunc("POST /credentials/revoke", h.revokeCredential)
	mux.HandleFunc("POST /credentials/allow", h.allowCredentials)
	mux.HandleFunc("/toolsets", noRoute) // no listing, and no redirect to /toolsets/
	mux.HandleFunc("/", noRoute)
	h.url = functionurl.Routes(mux, noRoute)
	return h
}

// Handle is the Lambda handler.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, edge(&Error{Code: publishapi.CodeInvalid, Message: "the request is not a JSON object"})
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.serveURL(ctx, payload)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req publishapi.DirectRequest
	known := []string{"publish", "register", "show", publishapi.ActionShapes, publishapi.ActionCredentialsSet, publishapi.ActionCredentialsList, publishapi.ActionCredentialsRevoke, publishapi.ActionCredentialsAllow}
	if err := dec.Decode(&req); err != nil || !slices.Contains(known, req.Action) || (strings.HasPrefix(req.Action, "credentials.") && req.Credentials == nil) {
		return nil, edge(&Error{Code: publishapi.CodeInvalid, Message: "a direct invocation is {\"action\": \"publish\", \"file\", \"source\", \"proof\"}, {\"action\": \"register\", \"toolset\", \"proof\"}, {\"action\": \"show\" or \"shapes\", \"toolset_id\", \"proof\"} or {\"action\": \"credentials.set\" (list, revoke, allow), \"credentials\", \"proof\"}"})
	}
	var res any
	var err error
	switch req.Action {
	case publishapi.ActionCredentialsSet:
		res, err = h.service.SetCredential(ctx, *req.Credentials, req.Proof)
	case publishapi.ActionCredentialsList:
		res, err = h.service.ListCredentials(ctx, req.Credentials.Toolset, req.Proof)
	case publishapi.ActionCredentialsRevoke:
		res, err = h.service.RevokeCredential(ctx, *req.Credentials, req.Proof)
	case publishapi.ActionCredentialsAllow:
		res, err = h.service.AllowCredentials(ctx, req.Credentials.ToolsetID, req.Proof)
	case "register":
		res, err = h.service.Register(ctx, RegisterRequest{Toolset: []byte(req.Toolset), Proof: req.Proof})
	case "show":
		res, err = h.service.ShowToolset(ctx, ShowRequest{ID: req.ToolsetID, Proof: req.Proof})
	case publishapi.ActionShapes:
		res, err = h.service.ShowShapes(ctx, ShowRequest{ID: req.ToolsetID, Proof: req.Proof})
	default:
		res, err = h.service.Publish(ctx, Request{File: req.File, Source: []byte(req.Source), Proof: req.Proof})
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

// serveURL serves a Function URL request with the routes.
func (h *Handler) serveURL(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	return functionurl.ServePayload(ctx, h.url, payload, func() (int, []byte) {
		return failure(&Error{Code: publishapi.CodeInvalid, Message: "the request is not a Function URL request"})
	})
}

// noRoute refuses any other request.
func noRoute(w http.ResponseWriter, _ *http.Request) {
	respond(w, nil, &Error{Code: publishapi.CodeInvalid, Message: "no route: use POST /solutions, POST /toolsets, GET /toolsets/{id}, GET /shapes/{id}, POST /credentials, GET /credentials/{name}, POST /credentials/revoke or POST /credentials/allow"})
}

// credentialBody decodes a credentials route's body.
func credentialBody(w http.ResponseWriter, r *http.Request) (publishapi.CredentialRequest, bool) {
	var b publishapi.CredentialRequest
	ok := decodeBody(w, r, &b, "the body must be {\"toolset\", \"target\", ...} (publishapi.CredentialRequest)")
	return b, ok
}

// setCredential serves POST /credentials.
func (h *Handler) setCredential(w http.ResponseWriter, r *http.Request) {
	b, ok := credentialBody(w, r)
	if !ok {
		return
	}
	res, err := h.service.SetCredential(r.Context(), b, r.Header.Get(publishapi.ProofHeader))
	respond(w, res, err)
}

// listCredentials serves GET /credentials/{name}.
func (h *Handler) listCredentials(w http.ResponseWriter, r *http.Request) {
	res, err := h.service.ListCredentials(r.Context(), r.PathValue("name"), r.Header.Get(publishapi.ProofHeader))
	respond(w, res, err)
}

// revokeCredential serves POST /credentials/revoke.
func (h *Handler) revokeCredential(w http.ResponseWriter, r *http.Request) {
	b, ok := credentialBody(w, r)
	if !ok {
		return
	}
	res, err := h.service.RevokeCredential(r.Context(), b, r.Header.Get(publishapi.ProofHeader))
	respond(w, res, err)
}

// allowCredentials serves POST /credentials/allow.
func (h *Handler) allowCredentials(w http.ResponseWriter, r *http.Request) {
	b, ok := credentialBody(w, r)
	if !ok {
		return
	}
	res, err := h.service.AllowCredentials(r.Context(), b.ToolsetID, r.Header.Get(publishapi.ProofHeader))
	respond(w, res, err)
}

// show serves GET /toolsets/{id}.
func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.EscapedPath(), "/toolsets/")
	res, err := h.service.ShowToolset(r.Context(), ShowRequest{ID: id, Proof: r.Header.Get(publishapi.ProofHeader)})
	respond(w, res, err)
}

// shapes serves GET /shapes/{id}.
func (h *Handler) shapes(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.EscapedPath(), "/shapes/")
	res, err := h.service.ShowShapes(r.Context(), ShowRequest{ID: id, Proof: r.Header.Get(publishapi.ProofHeader)})
	respond(w, res, err)
}

// publish serves POST /solutions.
func (h *Handler) publish(w http.ResponseWriter, r *http.Request) {
	var b publishapi.Body
	if !decodeBody(w, r, &b, "the body must be {\"file\": NAME, \"source\": TEXT}") {
		return
	}
	res, err := h.service.Publish(r.Context(), Request{File: b.File, Source: []byte(b.Source), Proof: r.Header.Get(publishapi.ProofHeader)})
	respond(w, res, err)
}

// register serves POST /toolsets.
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	var b publishapi.RegisterBody
	if !decodeBody(w, r, &b, "the body must be {\"toolset\": TEXT}") {
		return
	}
	res, err := h.service.Register(r.Context(), RegisterRequest{Toolset: []byte(b.Toolset), Proof: r.Header.Get(publishapi.ProofHeader)})
	respond(w, res, err)
}

// decodeBody decodes r's body strictly into v, or answers PUBLISH_INVALID
// (with malformed for a body that is not v's JSON) and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, malformed string) bool {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		respond(w, nil, &Error{Code: publishapi.CodeInvalid, Message: "the body is not valid base64"})
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		respond(w, nil, &Error{Code: publishapi.CodeInvalid, Message: malformed})
		return false
	}
	return true
}

// status is the Function URL status of a code (functionurl.Codes).
var status = functionurl.Codes{Invalid: publishapi.CodeInvalid, Unauthenticated: publishapi.CodeUnauthenticated,
	Refused: publishapi.CodeRefused, NotFound: publishapi.CodeNotFound}.Status

// respond writes a Function URL answer (functionurl.Answer): 200 with the
// result, or failure's.
func respond(w http.ResponseWriter, res any, err error) {
	st, b := functionurl.Answer(res, err, failure)
	functionurl.WriteJSON(w, st, b)
}

// failure is the Function URL answer to err: its code's status (status)
// with an ErrorBody; an error that is not an *Error is PUBLISH_UNAVAILABLE,
// "internal error" (body).
func failure(err error) (int, []byte) {
	e, b := body(err)
	return status(e.Code), b
}
