package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/functionurl"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
)

// Config is the review-decision function's configuration.
type Config struct {
	Table   string
	Callers caller.Config
	// Parks names the park deciders and operators (park.EnvDeciders,
	// park.EnvOperators; docs/parking.md, "Deciding").
	Parks ParkPolicy
	// Forks are run.fork's operators and scope (EnvForkOperators; the
	// stage, account and region of review.StartScope).
	Forks ForkPolicy
	// Reconcilers are who may reconcile a call whose outcome is unknown
	// (review.EnvReconcilers; unset, the park operators; docs/fork.md,
	// "Reconciling").
	Reconcilers []string
	// Email is send-email's sender and recipient allow-list, the same
	// values the send-email function is given (EmailFromEnv), whose
	// verdicts a show answer carries.
	Email EmailConfig
}

// ConfigFromEnv reads the review-decision function's configuration:
// review.EnvTable (required), the caller proofs' (caller.ConfigFromEnv),
// the reviewer accounts (caller.EnvReviewerAccounts, never the
// deployment's own), and the park deciders and operators
// (park.EnvDeciders, park.EnvOperators: JSON lists of patterns of the
// deployment's own account, reviewer.ParseAdmins; unset, nobody), and the
// credential admins, as the publish function reads them
// (publishapi.EnvCredentialAdmins), who may resume a credentials park of
// a toolset's or an end user's scope; the fork operators
// (EnvForkOperators, a list of the same form) and the stage
// (tool.EnvStage) and region (AWS_REGION) whose runs run.fork admits;
// and the reconcilers (review.EnvReconcilers, a JSON list as
// park.EnvOperators; unset, the park operators); and send-email's sender
// and recipient allow-list (EmailFromEnv).
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
	if cfg.Parks.Deciders, err = reviewer.ParseAdmins(park.EnvDeciders, getenv(park.EnvDeciders), cfg.Callers.Account); err != nil {
		return cfg, err
	}
	if cfg.Parks.Operators, err = reviewer.ParseAdmins(park.EnvOperators, getenv(park.EnvOperators), cfg.Callers.Account); err != nil {
		return cfg, err
	}
	if cfg.Forks.Operators, err = reviewer.ParseAdmins(EnvForkOperators, getenv(EnvForkOperators), cfg.Callers.Account); err != nil {
		return cfg, err
	}
	cfg.Forks.StopGrace = ForkStopGrace
	if v := getenv(EnvForkStopGrace); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > MaxForkStopGrace {
			return cfg, fmt.Errorf("%s is %q: want whole seconds from 0 to %d", EnvForkStopGrace, excerpt.Bytes(v, 40, "..."), int(MaxForkStopGrace/time.Second))
		}
		cfg.Forks.StopGrace = time.Duration(n) * time.Second
	}
	cfg.Forks.Scope = review.StartScope{Account: cfg.Callers.Account, Region: getenv("AWS_REGION"), Stage: getenv(tool.EnvStage)}
	if cfg.Parks.CredentialAdmins, err = reviewer.ParseAdmins(publishapi.EnvCredentialAdmins, getenv(publishapi.EnvCredentialAdmins), cfg.Callers.Account); err != nil {
		return cfg, err
	}
	cfg.Reconcilers = cfg.Parks.Operators
	if v := getenv(review.EnvReconcilers); v != "" {
		if cfg.Reconcilers, err = reviewer.ParseAdmins(review.EnvReconcilers, v, cfg.Callers.Account); err != nil {
			return cfg, err
		}
	}
	if cfg.Email, err = EmailFromEnv(getenv); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// EmailFromEnv reads send-email's sender (functionconfig.EnvSender) and
// recipient allow-list (functionconfig.EnvRecipientAllow) as the
// send-email function parses them (recipient.Parse; recipient.ParseCommaList),
// each optional here: unset or blank, the show answer says
// review.VerdictUnknown where it would decide. A value that does not parse
// is an error naming the variable and the rule it breaks
// (docs/reviews.md, "What a review's show answer carries").
func EmailFromEnv(getenv func(string) string) (EmailConfig, error) {
	var c EmailConfig
	if v := strings.TrimSpace(getenv(functionconfig.EnvSender)); v != "" {
		a, err := recipient.Parse(v)
		if err != nil {
			return EmailConfig{}, fmt.Errorf("%s: %v", functionconfig.EnvSender, err)
		}
		c.From = a.String()
	}
	if v := getenv(functionconfig.EnvRecipientAllow); strings.TrimSpace(v) != "" {
		l, err := recipient.ParseCommaList(v)
		if err != nil {
			return EmailConfig{}, fmt.Errorf("%s: %v", functionconfig.EnvRecipientAllow, err)
		}
		c.Allow = &l
	}
	return c, nil
}

// Handler is the review-decision function: behind an IAM-authorised
// (AWS_IAM) Function URL on AWS, or invoked directly. Either way the caller
// is whoever the request's caller proof proves (ProofHeader on the URL,
// "proof" in a direct invocation); the event's authorizer fields are never
// read, since anyone allowed to invoke the function can write them.
type Handler struct {
	service *Service
	log     *slog.Logger
	url     http.Handler // the Function URL's routes (NewHandler)
}

// NewHandler returns the function's handler for s. Its Function URL
// routes (Go's http.ServeMux patterns) are GET /reviews[?status=...],
// GET /reviews/{id} and POST /reviews/{id} with a DecisionBody, and for
// parks GET /parks[?status=...], GET /parks/{id} and POST /parks/{id}
// with a DecisionBody whose decision is approve, reject, resume or cancel
// (docs/parking.md, "Deciding"), and POST /forks with a review.ForkBody
// (run.fork, docs/fork.md), each with
// (docs/parking.md, "Deciding"), and POST /reconciliations with a
// review.ReconcileBody (docs/fork.md, "Reconciling"), each with
// or without a trailing slash and the method in any letter case; any other
// path is refused with REVIEW_INVALID_REQUEST, and so is another method on
// a review.
func NewHandler(s *Service) *Handler {
	h := &Handler{service: s, log: s.log}
	mux := http.NewServeMux()
	for _, p := range []string{"/reviews", "/reviews/{$}"} {
		mux.HandleFunc("GET "+p, h.list)
	}
	for _, p := range []string{"/reviews/{id}", "/reviews/{id}/{$}"} {
		mux.HandleFunc("GET "+p, h.show)
		mux.HandleFunc("POST "+p, h.decide)
		mux.HandleFunc(p, h.methodNotAllowed)
	}
	for _, p := range []string{"/parks", "/parks/{$}"} {
		mux.HandleFunc("GET "+p, h.listParks)
	}
	for _, p := range []string{"/parks/{id}", "/parks/{id}/{$}"} {
		mux.HandleFunc("GET "+p, h.showPark)
		mux.HandleFunc("POST "+p, h.decidePark)
		mux.HandleFunc(p, h.methodNotAllowed)
	}
	for _, p := range []string{"/forks", "/forks/{$}"} {
		mux.HandleFunc("POST "+p, h.fork)
	}
	for _, p := range []string{"/reconciliations", "/reconciliations/{$}"} {
		mux.HandleFunc("POST "+p, h.reconcile)
	}
	mux.HandleFunc("/", h.noRoute)
	h.url = h.routes(mux)
	return h
}

// Handle is the Lambda handler: a Function URL request (an event with a
// requestContext, served by the routes through shared/functionurl), or a
// direct invocation (review.DirectRequest).
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, review.Edge(review.Errorf(review.CodeInvalid, "the request is not a JSON object"))
	}
	if _, isURL := probe["requestContext"]; !isURL {
		return h.direct(ctx, payload)
	}
	return functionurl.ServePayload(ctx, h.url, payload, func() (int, []byte) {
		return failure(review.Errorf(review.CodeInvalid, "the request is not a Function URL request"))
	})
}

func (h *Handler) direct(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req review.DirectRequest
	if err := dec.Decode(&req); err != nil {
		return nil, review.Edge(review.Errorf(review.CodeInvalid, "bad request: %s", strings.TrimPrefix(err.Error(), "json: ")))
	}
	who, res, err := h.service.Do(ctx, Request{Action: req.Action, ReviewID: req.ReviewID, ParkID: req.ParkID, Status: req.Status, Decision: req.Decision, Reason: req.Reason, Proof: req.Proof,
		Answer: req.Answer, Edits: req.Edits, Key: req.Key, Outcome: req.Outcome, Result: req.Result, RunID: req.RunID, ForkRunID: req.ForkRunID, RerunReads: req.RerunReads})
	h.logRequest(ctx, who, req.Action, req.ReviewID, req.ParkID, err)
	if err != nil {
		return nil, review.Edge(err)
	}
	return json.Marshal(res)
}

// logRequest logs one request: its action, the review or park it names,
// who made it and the error code, never a reason or a proof.
func (h *Handler) logRequest(ctx context.Context, who review.Caller, action review.Action, id, parkID string, err error) {
	code := ""
	if err != nil {
		e := review.AsError(err)
		code = string(e.Code)
		if e.Code == review.CodeInternal || e.Code == review.CodeUnavailable {
			h.log.ErrorContext(ctx, "review request failed", "error", err.Error())
		}
	}
	h.log.InfoContext(ctx, "review decision request", "action", string(action), "review_id", id, "park_id", parkID,
		"principal", who.Principal, "authenticated", who.Authenticated, "error_code", code)
}

// serve runs req for the URL's request r and writes the answer.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, req Request) {
	req.Proof = r.Header.Get(review.ProofHeader)
	who, res, err := h.service.Do(r.Context(), req)
	h.logRequest(r.Context(), who, req.Action, req.ReviewID, req.ParkID, err)
	respond(w, res, err)
}

// list serves GET /reviews[?status=...].
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	// As a Function URL's queryStringParameters had it: the values of a
	// repeated parameter joined with ",", and a query Go cannot parse (a
	// ";" separator) refused rather than read in part.
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the query string is not valid: use GET /reviews or GET /reviews?status=pending, approved or rejected"))
		return
	}
	h.serve(w, r, Request{Action: review.ActionList, Status: strings.Join(q["status"], ",")})
}

// show serves GET /reviews/{id}.
func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, Request{Action: review.ActionShow, ReviewID: reviewID(r)})
}

// decide serves POST /reviews/{id} with a DecisionBody.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	b, err := decisionBody(r, `"approve"|"reject"`)
	if err != nil {
		respond(w, nil, err)
		return
	}
	h.serve(w, r, Request{Action: review.ActionDecide, ReviewID: reviewID(r), Decision: b.Decision, Reason: b.Reason, Answer: b.Answer, Edits: b.Edits})
}

// listParks serves GET /parks[?status=...].
func (h *Handler) listParks(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the query string is not valid: use GET /parks or GET /parks?status=parked"))
		return
	}
	h.serve(w, r, Request{Action: review.ActionParkList, Status: strings.Join(q["status"], ",")})
}

// showPark serves GET /parks/{id}.
func (h *Handler) showPark(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, Request{Action: review.ActionParkShow, ParkID: parkID(r)})
}

// decidePark serves POST /parks/{id} with a DecisionBody: approve, reject
// or resume (review.ActionParkDecide), or cancel (review.ActionParkCancel).
func (h *Handler) decidePark(w http.ResponseWriter, r *http.Request) {
	b, err := decisionBody(r, `"approve"|"reject"|"resume"|"cancel"`)
	if err != nil {
		respond(w, nil, err)
		return
	}
	if len(b.Answer) > 0 || len(b.Edits) > 0 {
		respond(w, nil, review.Errorf(review.CodeInvalid, "a park's decision carries no answer and no edits"))
		return
	}
	req := Request{Action: review.ActionParkDecide, ParkID: parkID(r), Decision: b.Decision, Reason: b.Reason}
	if b.Decision == "cancel" {
		req.Action, req.Decision = review.ActionParkCancel, ""
	}
	h.serve(w, r, req)
}

// fork serves POST /forks with a review.ForkBody (run.fork; docs/fork.md).
func (h *Handler) fork(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the body could not be read"))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var b review.ForkBody
	if err := dec.Decode(&b); err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the body is not {\"run_id\", \"fork_run_id\", \"rerun_reads\"}"))
		return
	}
	h.serve(w, r, Request{Action: review.ActionRunFork, RunID: b.RunID, ForkRunID: b.ForkRunID, RerunReads: b.RerunReads})
}

// reconcile serves POST /reconciliations with a review.ReconcileBody
// (docs/fork.md, "Reconciling").
func (h *Handler) reconcile(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the body is not valid base64"))
		return
	}
	var b review.ReconcileBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		respond(w, nil, review.Errorf(review.CodeInvalid, "the body must be {\"key\": \"<run_id>/<seq>\", \"outcome\": \"applied\"|\"not_applied\", \"result\": ..., \"reason\": \"...\"}"))
		return
	}
	h.serve(w, r, Request{Action: review.ActionLedgerReconcile, Key: b.Key, Outcome: b.Outcome, Result: b.Result, Reason: b.Reason})
}

// parkID is the {id} of a /parks/{id} route as the path writes it.
func parkID(r *http.Request) string {
	return strings.TrimSuffix(strings.TrimPrefix(r.URL.EscapedPath(), "/parks/"), "/")
}

// methodNotAllowed refuses another method on a review.
func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	respond(w, nil, review.Errorf(review.CodeInvalid, "%s is not allowed on %s: use GET or POST", r.Method, excerpt.Bytes(r.URL.EscapedPath(), 80, "...")))
}

// noRoute refuses any other path.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	respond(w, nil, review.Errorf(review.CodeInvalid, "no route for %s %s: use GET /reviews, GET /reviews/{id} or POST /reviews/{id}, GET /parks, GET /parks/{id} or POST /parks/{id}, or POST /reconciliations", r.Method, excerpt.Bytes(r.URL.EscapedPath(), 80, "...")))
}

// reviewID is the {id} of a /reviews/{id} route as the path writes it
// (not unescaped: the service refuses anything but a review id).
func reviewID(r *http.Request) string {
	id := strings.TrimPrefix(r.URL.EscapedPath(), "/reviews/")
	return strings.TrimSuffix(id, "/")
}

// routes serves mux with the request's method in upper case: Function
// URLs pass the method as the client sent it, and the routes take it in
// any letter case. A path that is not in its clean form ("//", "." or
// ".." segments), which http.ServeMux would redirect, has no route.
func (h *Handler) routes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := *r
		r2.Method = strings.ToUpper(r.Method)
		if !functionurl.Plain(&r2) {
			h.noRoute(w, &r2)
			return
		}
		mux.ServeHTTP(w, &r2)
	})
}

// respond writes a Function URL answer (functionurl.Answer): 200 with the
// result, or failure's.
func respond(w http.ResponseWriter, res any, err error) {
	status, body := functionurl.Answer(res, err, failure)
	functionurl.WriteJSON(w, status, body)
}

// failure is the Function URL answer to err: its code's status
// (review.Code.HTTPStatus) with an ErrorBody; an error that is not a
// *review.Error is REVIEW_INTERNAL, "internal error" (review.AsError).
func failure(err error) (int, []byte) {
	e := review.AsError(err)
	var eb review.ErrorBody
	eb.Error.Code, eb.Error.Message = e.Code, e.Message
	body, _ := json.Marshal(eb)
	return e.Code.HTTPStatus(), body
}

// decisionBody reads a POST's review.DecisionBody, no other member; a
// body that is not one is REVIEW_INVALID_REQUEST naming the decisions
// (JSON strings joined with "|") the route takes.
func decisionBody(r *http.Request, decisions string) (review.DecisionBody, error) {
	var b review.DecisionBody
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return b, review.Errorf(review.CodeInvalid, "the body is not valid base64")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, review.Errorf(review.CodeInvalid, "the body must be {\"decision\": %s, \"reason\": \"...\"}: %s", decisions, strings.TrimPrefix(err.Error(), "json: "))
	}
	return b, nil
}
