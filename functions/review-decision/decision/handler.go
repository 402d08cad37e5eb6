package decision

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/review"
)

// Config is the review-decision function's configuration.
type Config struct {
	Table   string
	Callers caller.Config
}

// ConfigFromEnv reads the review-decision function's configuration.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{Table: getenv(review.EnvTable)}
	if cfg.Table == "" {
		return cfg, fmt.Errorf("%s is not set", review.EnvTable)
	}
	if v := getenv(review.EnvAllowUnauthenticated); v != "" {
		return cfg, fmt.Errorf("%s is no longer read: every caller proves who they are with a caller proof (docs/identity.md); remove it", review.EnvAllowUnauthenticated)
	}
	var err error
	if cfg.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return cfg, err
	}
	// The organisation's reviewer accounts: the verifier admits their
	// principals here, and nowhere else (docs/reviews.md).
	others, err := caller.ReviewerAccountsFromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	if slices.Contains(others, cfg.Callers.Account) {
		return cfg, fmt.Errorf("%s lists the deployment's own account %s: list only other accounts", caller.EnvReviewerAccounts, cfg.Callers.Account)
	}
	cfg.Callers = cfg.Callers.WithAccounts(others)
	return cfg, nil
}

// Handler is the review-decision function: behind an IAM-authorised
// (AWS_IAM) Function URL on AWS, or invoked directly. Either way the caller
// is whoever the request's caller proof proves (ProofHeader on the URL,
// "proof" in a direct invocation); the event's authorizer fields are never
// read, since anyone allowed to invoke the function can write them.
type Handler struct {
	Service *Service
}

// Handle is the Lambda handler.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	if h.Service.Log == nil {
		h.Service.Log = slog.Default()
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, review.Edge(review.Errorf(review.CodeInvalid, "the request is not a JSON object"))
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.url(ctx, payload)
	}
	return h.direct(ctx, payload)
}

func (h *Handler) direct(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req review.DirectRequest
	if err := dec.Decode(&req); err != nil {
		return nil, review.Edge(review.Errorf(review.CodeInvalid, "bad request: %s", strings.TrimPrefix(err.Error(), "json: ")))
	}
	who, res, err := h.Service.Do(ctx, Request{Action: req.Action, ReviewID: req.ReviewID, Status: req.Status, Decision: req.Decision, Reason: req.Reason, Proof: req.Proof})
	h.logRequest(ctx, who, req.Action, req.ReviewID, err)
	if err != nil {
		return nil, review.Edge(err)
	}
	return json.Marshal(res)
}

func (h *Handler) logRequest(ctx context.Context, who review.Caller, action review.Action, id string, err error) {
	code := ""
	if err != nil {
		e := review.AsError(err)
		code = string(e.Code)
		if e.Code == review.CodeInternal || e.Code == review.CodeUnavailable {
			h.Service.Log.ErrorContext(ctx, "review request failed", "error", err.Error())
		}
	}
	h.Service.Log.InfoContext(ctx, "review decision request", "action", string(action), "review_id", id,
		"principal", who.Principal, "authenticated", who.Authenticated, "error_code", code)
}

// url serves the Function URL: GET /reviews[?status=...], GET
// /reviews/{id}, POST /reviews/{id} with a DecisionBody; the caller proof
// in ProofHeader.
func (h *Handler) url(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return respond(nil, review.Errorf(review.CodeInvalid, "the request is not a Function URL request"))
	}
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	path := strings.TrimSuffix(ev.RawPath, "/")
	req := Request{Proof: header(ev.Headers, review.ProofHeader)}
	switch {
	case path == "/reviews" && method == http.MethodGet:
		req.Action, req.Status = review.ActionList, ev.QueryStringParameters["status"]
	case strings.HasPrefix(path, "/reviews/") && !strings.Contains(path[len("/reviews/"):], "/"):
		req.ReviewID = path[len("/reviews/"):]
		switch method {
		case http.MethodGet:
			req.Action = review.ActionShow
		case http.MethodPost:
			body := []byte(ev.Body)
			if ev.IsBase64Encoded {
				var err error
				if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					return respond(nil, review.Errorf(review.CodeInvalid, "the body is not valid base64"))
				}
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			var b review.DecisionBody
			if err := dec.Decode(&b); err != nil {
				return respond(nil, review.Errorf(review.CodeInvalid, "the body must be {\"decision\": \"approve\"|\"reject\", \"reason\": \"...\"}: %s", strings.TrimPrefix(err.Error(), "json: ")))
			}
			req.Action, req.Decision, req.Reason = review.ActionDecide, b.Decision, b.Reason
		default:
			return respond(nil, review.Errorf(review.CodeInvalid, "%s is not allowed on %s: use GET or POST", method, excerpt.Bytes(ev.RawPath, 80, "...")))
		}
	default:
		return respond(nil, review.Errorf(review.CodeInvalid, "no route for %s %s: use GET /reviews, GET /reviews/{id} or POST /reviews/{id}", method, excerpt.Bytes(ev.RawPath, 80, "...")))
	}
	who, res, err := h.Service.Do(ctx, req)
	h.logRequest(ctx, who, req.Action, req.ReviewID, err)
	return respond(res, err)
}

// header returns a header's value; Function URL events carry header names
// lower-cased, and RFC 9110 makes them case-insensitive.
func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// respond writes a Function URL response: 200 with the result, or the
// code's status with an ErrorBody.
func respond(res any, err error) (json.RawMessage, error) {
	resp := events.LambdaFunctionURLResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}}
	var body []byte
	if err != nil {
		e := review.AsError(err)
		var eb review.ErrorBody
		eb.Error.Code, eb.Error.Message = e.Code, e.Message
		resp.StatusCode = e.Code.HTTPStatus()
		body, _ = json.Marshal(eb)
	} else {
		var merr error
		if body, merr = json.Marshal(res); merr != nil {
			return respond(nil, review.Wrap(review.CodeInternal, merr, "internal error"))
		}
	}
	resp.Body = string(body)
	return json.Marshal(resp)
}
