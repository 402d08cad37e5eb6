package review

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
)

// Environment variables of the review functions (docs/reviews.md).
const (
	EnvTable = "TOOLGATE_TABLE" // the ledger table (required)
	// EnvAllowUnauthenticated is gone: every caller proves who they are
	// (shared/caller). A function that finds it set stops at cold start.
	EnvAllowUnauthenticated = "TOOLGATE_ALLOW_UNAUTHENTICATED"
	// EnvDirectReviewers is review-request's direct-lane reviewers: a JSON
	// object from tool name to IAM principal ARN patterns. A gated tool
	// without patterns cannot be reviewed on the direct lane.
	EnvDirectReviewers = "TOOLGATE_DIRECT_REVIEWERS"
	// EnvDirectMaxTimeout caps a direct-lane review's timeout, in seconds
	// (default DefaultDirectMaxTimeout).
	EnvDirectMaxTimeout = "TOOLGATE_DIRECT_REVIEW_MAX_SECONDS"
	// ProofHeader carries the caller proof on the Function URL.
	ProofHeader = "X-Toolgate-Caller-Proof"
)

// DefaultDirectMaxTimeout is the longest direct-lane review by default: an
// hour. `toolgate invoke` waits at most MaxReviewWait for the decision.
const DefaultDirectMaxTimeout = 3600

// DecisionConfig is the review-decision function's configuration.
type DecisionConfig struct {
	Table   string
	Callers caller.Config
}

// DecisionConfigFromEnv reads the review-decision function's configuration.
func DecisionConfigFromEnv(getenv func(string) string) (DecisionConfig, error) {
	cfg := DecisionConfig{Table: getenv(EnvTable)}
	if cfg.Table == "" {
		return cfg, fmt.Errorf("%s is not set", EnvTable)
	}
	if v := getenv(EnvAllowUnauthenticated); v != "" {
		return cfg, fmt.Errorf("%s is no longer read: every caller proves who they are with a caller proof (docs/identity.md); remove it", EnvAllowUnauthenticated)
	}
	var err error
	cfg.Callers, err = caller.ConfigFromEnv(getenv)
	return cfg, err
}

// RequestConfig is the review-request function's configuration.
type RequestConfig struct {
	Table   string
	Lane    lane.Lane // fixed on the local stack only
	Callers caller.Config
	Direct  DirectPolicy
}

// DirectPolicy is the platform's configuration of direct-lane reviews:
// the requester never chooses who decides.
type DirectPolicy struct {
	// Reviewers are the reviewer patterns per tool; a gated tool without
	// any cannot be called on the direct lane.
	Reviewers map[string][]string
	// MaxTimeoutSeconds caps a direct-lane review's timeout.
	MaxTimeoutSeconds int
}

// RequestConfigFromEnv reads the review-request function's configuration.
func RequestConfigFromEnv(getenv func(string) string) (RequestConfig, error) {
	cfg := RequestConfig{Table: getenv(EnvTable), Direct: DirectPolicy{MaxTimeoutSeconds: DefaultDirectMaxTimeout}}
	if cfg.Table == "" {
		return cfg, fmt.Errorf("%s is not set", EnvTable)
	}
	var err error
	if cfg.Lane, err = lane.FromEnv(getenv); err != nil {
		return cfg, err
	}
	if cfg.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return cfg, err
	}
	if v := getenv(EnvDirectReviewers); v != "" {
		if err := json.Unmarshal([]byte(v), &cfg.Direct.Reviewers); err != nil {
			return cfg, fmt.Errorf("%s is not a JSON object from tool to reviewer patterns: %v", EnvDirectReviewers, err)
		}
		for t, ps := range cfg.Direct.Reviewers {
			if len(ps) > reviewer.MaxReviewers {
				return cfg, fmt.Errorf("%s: tool %s has %d reviewers, over %d", EnvDirectReviewers, t, len(ps), reviewer.MaxReviewers)
			}
			for _, p := range ps {
				if err := reviewer.CheckPattern(p); err != nil {
					return cfg, fmt.Errorf("%s: tool %s: %v", EnvDirectReviewers, t, err)
				}
			}
		}
	}
	if v := getenv(EnvDirectMaxTimeout); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxTimeout {
			return cfg, fmt.Errorf("%s=%q is not a whole number of seconds in 1..%d", EnvDirectMaxTimeout, v, MaxTimeout)
		}
		cfg.Direct.MaxTimeoutSeconds = n
	}
	return cfg, nil
}

// ---------------------------------------------------------------------------
// review-request

// DecodeTask parses a review Task's payload strictly: every field present
// and not null, no other field, no field twice, and returns the review it
// asks for (its id derived from the task token).
func DecodeTask(data []byte) (*Review, error) {
	if len(data) > MaxInputBytes+64<<10 {
		return nil, fmt.Errorf("review request is %d bytes, too large", len(data))
	}
	var p tool.ReviewTask
	if err := decodeTask("review request", "the review Task's payload", data, &p); err != nil {
		return nil, err
	}
	if p.TaskToken == "" {
		return nil, errors.New("review request: task_token is empty")
	}
	return New(Params{
		ID: IDForToken(p.TaskToken), TaskToken: p.TaskToken, RunID: p.RunID, Step: p.Step, Of: p.Of, Tool: p.Tool,
		ToolsetID: p.ToolsetID, Input: p.Input, Reviewers: p.Reviewers, TimeoutSeconds: p.TimeoutSeconds, Requester: p.Requester,
	})
}

// RequestResult is what review-request returns. The review Task ignores
// it (it waits for the task token); it is for logs and direct calls.
type RequestResult struct {
	ReviewID  string `json:"review_id"`
	Status    Status `json:"status"`
	ExpiresAt string `json:"expires_at"`
}

// RequestHandler is the review-request function. On the sfn lane it
// stores the pending review a review Task asks for and returns while the
// Task keeps waiting, and answers a Solution's start Task (Start); on the
// direct lane it serves LaneRequest, for a verified caller.
type RequestHandler struct {
	Store   *Store
	Ledger  *ledger.Store
	Log     *slog.Logger
	Callers Callers
	// Lane is fixed on the local stack (one instance per lane); empty: the
	// invoked alias decides.
	Lane     lane.Lane
	Direct   DirectPolicy
	toolsets ledger.ToolsetCache
}

// Handle is the Lambda handler. Failures are tool contract codes
// (tool.Edge): TOOL_INPUT_INVALID for a malformed payload,
// TOOL_PERMISSION_DENIED for a refused caller proof, the wrong lane, or a
// toolset that is not registered or does not hold the tool,
// TOOL_UPSTREAM_UNAVAILABLE when DynamoDB or STS fails.
func (h *RequestHandler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	if h.Log == nil {
		h.Log = slog.Default()
	}
	out, err := h.request(ctx, payload)
	if err != nil {
		h.Log.WarnContext(ctx, "review request refused", "error", err.Error())
	}
	return out, tool.Edge(err)
}

func (h *RequestHandler) request(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	l, err := lane.Of(ctx, h.Lane)
	if err != nil {
		return nil, tool.Errorf(tool.PermissionDenied, "%s", err.Error())
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "review request is not a JSON object")
	}
	_, isLane := probe["action"]
	_, isStart := probe["start_proof"]
	switch {
	case l == lane.Direct && isLane:
		return h.lane(ctx, payload)
	case l == lane.Direct:
		return nil, tool.Errorf(tool.PermissionDenied, "review Tasks and start Tasks come through the %s alias; this is the %s alias", lane.SFN, lane.Direct)
	case isLane:
		return nil, tool.Errorf(tool.PermissionDenied, "direct-lane requests come through the %s alias; this is the %s alias", lane.Direct, lane.SFN)
	case isStart:
		return h.start(ctx, payload)
	}
	r, err := DecodeTask(payload)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(r.RunID) {
		return nil, tool.Errorf(tool.PermissionDenied, "run id %q is a direct-lane run id; review Tasks run under their execution's ARN", truncate(r.RunID, 80))
	}
	// The requester is the execution's proven starter, as its Starter
	// state recorded it: never the payload's word alone.
	starter, err := h.Store.Starter(ctx, r.RunID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, tool.Errorf(tool.PermissionDenied, "execution %s has no verified start: a Solution with gated tools starts with its Starter state (start runs with toolgate run)", truncate(r.RunID, 200))
	case err != nil:
		return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable")
	case starter != r.Requester:
		return nil, tool.Errorf(tool.PermissionDenied, "the review Task names requester %s, but execution %s was started by %s", truncate(r.Requester, 200), truncate(r.RunID, 200), starter)
	}
	return h.create(ctx, r)
}

// callerError maps a refused proof to the tool contract.
func callerError(err error) error {
	var ce *caller.Error
	if errors.As(err, &ce) && ce.Reason == caller.Unavailable {
		return tool.Wrap(tool.UpstreamUnavailable, err, "%s", ce.Message)
	}
	if errors.As(err, &ce) {
		return tool.Errorf(tool.PermissionDenied, "%s [%s]", ce.Message, ce.Reason)
	}
	return tool.Wrap(tool.UpstreamUnavailable, err, "the caller could not be verified")
}

// decodeTask decodes a compiled Task's payload into v (a contract struct
// of shared/tool) strictly: valid UTF-8, members by their exact names,
// once each, every field present and not null, no other.
func decodeTask(what, payload string, data []byte, v any) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	seen, err := tool.DecodeObject(what, data)
	if err != nil {
		return err
	}
	for _, f := range tool.FieldNames(v) {
		m, ok := seen[f]
		if !ok {
			return fmt.Errorf("%s field %q is missing", what, f)
		}
		if string(bytes.TrimSpace(m)) == "null" {
			return fmt.Errorf("%s field %q must not be null", what, f)
		}
		delete(seen, f)
	}
	for k := range seen {
		return fmt.Errorf("%s field %q is not part of %s", what, truncate(k, 40), payload)
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	if err := strict.Decode(v); err != nil {
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// DecodeStart parses a start Task's payload strictly (as DecodeTask):
// every field of tool.StartCheck present, once, not null, and no other;
// start_time RFC 3339.
func DecodeStart(payload []byte) (*tool.StartCheck, time.Time, error) {
	var c tool.StartCheck
	if err := decodeTask("start check", "the start Task's payload", payload, &c); err != nil {
		return nil, time.Time{}, err
	}
	started, err := time.Parse(time.RFC3339Nano, c.StartTime)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("start check: start_time %q is not RFC 3339", truncate(c.StartTime, 40))
	}
	return &c, started, nil
}

// start answers a Solution's start Task: it verifies the start proof from
// the execution input's meta as bound to this execution and signed at most
// caller.Window before the execution started, and returns the starter.
func (h *RequestHandler) start(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	c, started, err := DecodeStart(payload)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(c.ExecutionARN) {
		return nil, tool.Errorf(tool.PermissionDenied, "%q is a direct-lane run id, not an execution", truncate(c.ExecutionARN, 80))
	}
	if h.Callers == nil {
		return nil, tool.Errorf(tool.PermissionDenied, "this function has no caller verifier")
	}
	id, err := h.Callers.VerifyAt(ctx, c.StartProof, caller.Binding{Action: caller.ActionStart, Target: c.ExecutionARN}, started)
	if err != nil {
		return nil, callerError(fmt.Errorf("the run's start proof: %w", err))
	}
	if err := h.Store.RecordStart(ctx, c.ExecutionARN, id.Principal); errors.Is(err, ErrStartConflict) {
		return nil, tool.Errorf(tool.PermissionDenied, "execution %s was started by someone else", truncate(c.ExecutionARN, 200))
	} else if err != nil {
		return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable")
	}
	h.Log.InfoContext(ctx, "run start verified", "execution_arn", c.ExecutionARN, "starter", id.Principal)
	return json.Marshal(tool.StartResult{Starter: id.Principal})
}

// create stores r after checking that its toolset is registered and pins
// its tool.
func (h *RequestHandler) create(ctx context.Context, r *Review) (json.RawMessage, error) {
	ts, err := h.toolsets.Load(ctx, h.Ledger, r.ToolsetID, h.Log)
	if err != nil {
		return nil, err
	}
	if _, ok := ts.Tools[r.Tool]; !ok {
		return nil, tool.Errorf(tool.PermissionDenied, "tool %s is not in toolset %s", r.Tool, r.ToolsetID)
	}
	created, existing, err := h.Store.Create(ctx, r)
	if err != nil {
		return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable")
	}
	if !created {
		if !existing.sameRequest(r) {
			return nil, tool.Errorf(tool.InputInvalid, "review %s exists with another request for the same task token", r.ID)
		}
		r = existing
	}
	h.Log.InfoContext(ctx, "review requested", "review_id", r.ID, "run_id", r.RunID, "step", r.Step, "of", r.Of,
		"tool", r.Tool, "input_digest", r.InputDigest, "requester", r.Requester, "expires_at", formatTime(r.ExpiresAt), "created", created)
	return json.Marshal(RequestResult{ReviewID: r.ID, Status: r.Status, ExpiresAt: formatTime(r.ExpiresAt)})
}

// LaneRequest is a request of the direct lane (toolgate invoke of a gated
// tool), which has no review Task and no task token: "request" stores a
// pending review of the call and returns its id; "status" reports a
// direct-lane review's decision (never its inputs) to its requester, which
// is the approval the call then carries. The invoker never writes or reads
// review items itself. Each request carries a caller proof bound to it:
// caller.ActionRequest with the run id, the tool and the input's digest;
// caller.ActionStatus with the review id.
type LaneRequest struct {
	Action    string          `json:"action"`
	ReviewID  string          `json:"review_id,omitempty"`
	RunID     string          `json:"run_id,omitempty"`
	Step      string          `json:"step,omitempty"`
	Of        string          `json:"of,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	ToolsetID string          `json:"toolset_id,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	// Reviewers must be empty: the platform names the direct lane's
	// reviewers (DirectPolicy).
	Reviewers      []string `json:"reviewers,omitempty"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
	Proof          string   `json:"proof,omitempty"`
}

// Lane actions.
const (
	LaneRequestAction = "request"
	LaneStatusAction  = "status"
)

// LaneStatus is the answer to a "status" request.
type LaneStatus struct {
	ReviewID  string `json:"review_id"`
	Status    Status `json:"status"`
	ExpiresAt string `json:"expires_at"`
	Expired   bool   `json:"expired"`
	// Decision is the decision JSON once decided: the call's approval.
	Decision *Decision `json:"decision,omitempty"`
}

func (h *RequestHandler) lane(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	// Members by their exact names, once each (Go's decoder alone would
	// match any letter case and keep the last of duplicates).
	if !utf8.Valid(payload) {
		return nil, tool.Errorf(tool.InputInvalid, "review request is not valid UTF-8")
	}
	members, err := tool.DecodeObject("review request", payload)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
	}
	known := tool.FieldNames(LaneRequest{})
	for k := range members {
		if !slices.Contains(known, k) {
			return nil, tool.Errorf(tool.InputInvalid, "review request field %s is not part of a direct-lane request", strconv.Quote(truncate(k, 40)))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req LaneRequest
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "review request: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if h.Callers == nil {
		return nil, tool.Errorf(tool.PermissionDenied, "this function has no caller verifier")
	}
	switch req.Action {
	case LaneRequestAction:
		return h.laneRequest(ctx, req)
	case LaneStatusAction:
		if !ValidID(req.ReviewID) {
			return nil, tool.Errorf(tool.InputInvalid, "%q is not a review id", truncate(req.ReviewID, 40))
		}
		who, err := h.Callers.Verify(ctx, req.Proof, caller.Binding{Action: caller.ActionStatus, Target: req.ReviewID})
		if err != nil {
			return nil, callerError(err)
		}
		r, err := h.Store.Get(ctx, req.ReviewID)
		if errors.Is(err, ErrNotFound) || (err == nil && (r.TaskToken != "" || r.Requester != who.Principal)) {
			// A review Task's review, or another requester's, is not this
			// caller's to watch.
			return nil, tool.Errorf(tool.InputInvalid, "there is no direct-lane review %s of yours", req.ReviewID)
		}
		if err != nil {
			return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable")
		}
		st := LaneStatus{ReviewID: r.ID, Status: r.Status, ExpiresAt: formatTime(r.ExpiresAt), Expired: r.Expired(h.Store.Now())}
		if r.Status != Pending {
			d := r.Decision()
			st.Decision = &d
		}
		return json.Marshal(st)
	}
	return nil, tool.Errorf(tool.InputInvalid, "review request: action %q is not request or status", truncate(req.Action, 40))
}

// RequestBinding is what a direct-lane review request's caller proof is
// bound to: caller.ActionRequest, the run id, the tool, the input's digest
// and, as Detail, the JSON array [step, of, toolset_id, timeout_seconds]:
// every member the requester chooses.
func RequestBinding(req LaneRequest, inputDigest string) caller.Binding {
	detail, _ := json.Marshal([]any{req.Step, req.Of, req.ToolsetID, req.TimeoutSeconds})
	return caller.Binding{Action: caller.ActionRequest, Target: req.RunID, Decision: req.Tool, InputDigest: inputDigest, Detail: string(detail)}
}

// laneRequest stores a direct-lane review for its verified requester, with
// the platform's reviewers for the tool.
func (h *RequestHandler) laneRequest(ctx context.Context, req LaneRequest) (json.RawMessage, error) {
	switch {
	case req.ReviewID != "":
		return nil, tool.Errorf(tool.InputInvalid, "review request: a new review's id is chosen by the function")
	case req.Input == nil:
		return nil, tool.Errorf(tool.InputInvalid, "review request: input is missing")
	case len(req.Reviewers) > 0:
		return nil, tool.Errorf(tool.InputInvalid, "review request: a direct-lane requester does not choose reviewers; the platform names them per tool (%s)", EnvDirectReviewers)
	}
	_, digest, err := tool.InputDigest(req.Input)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "review request: %v", err)
	}
	who, err := h.Callers.Verify(ctx, req.Proof, RequestBinding(req, digest))
	if err != nil {
		return nil, callerError(err)
	}
	if prefix := lane.DirectRunPrefix(who.ARN); !strings.HasPrefix(req.RunID, prefix) || len(req.RunID) == len(prefix) {
		return nil, tool.Errorf(tool.PermissionDenied, "run id %q is not in your direct-lane namespace %s<id>", truncate(req.RunID, 80), prefix)
	}
	reviewers := h.Direct.Reviewers[req.Tool]
	if len(reviewers) == 0 {
		return nil, tool.Errorf(tool.PermissionDenied, "the direct lane is closed for %s: the platform names no direct-lane reviewers for it (%s)", truncate(req.Tool, 64), EnvDirectReviewers)
	}
	if max := h.Direct.MaxTimeoutSeconds; req.TimeoutSeconds > max {
		return nil, tool.Errorf(tool.InputInvalid, "review request: timeout_seconds %d is over the direct lane's %d", req.TimeoutSeconds, max)
	}
	r, err := New(Params{ID: NewID(), RunID: req.RunID, Step: req.Step, Of: req.Of, Tool: req.Tool, ToolsetID: req.ToolsetID,
		Input: req.Input, Reviewers: reviewers, TimeoutSeconds: req.TimeoutSeconds, Requester: who.Principal})
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
	}
	return h.create(ctx, r)
}

// ---------------------------------------------------------------------------
// review-decision

// DirectRequest is a direct invocation of the decision function (the local
// stack's CLI; on AWS the Function URL is the reviewers' way in): the
// action and the caller proof bound to it.
type DirectRequest struct {
	Action   Action  `json:"action"`
	ReviewID string  `json:"review_id,omitempty"`
	Status   string  `json:"status,omitempty"`
	Decision Verdict `json:"decision,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	Proof    string  `json:"proof,omitempty"`
}

// DecisionBody is the body of POST /reviews/{id} on the Function URL.
type DecisionBody struct {
	Decision Verdict `json:"decision"`
	Reason   string  `json:"reason,omitempty"`
}

// ErrorBody is a Function URL error response's body.
type ErrorBody struct {
	Error struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// DecisionHandler is the review-decision function: behind an IAM-authorised
// (AWS_IAM) Function URL on AWS, or invoked directly. Either way the caller
// is whoever the request's caller proof proves (ProofHeader on the URL,
// "proof" in a direct invocation); the event's authorizer fields are never
// read, since anyone allowed to invoke the function can write them.
type DecisionHandler struct {
	Service *Service
}

// Handle is the Lambda handler.
func (h *DecisionHandler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	if h.Service.Log == nil {
		h.Service.Log = slog.Default()
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, edge(errorf(CodeInvalid, "the request is not a JSON object"))
	}
	if _, isURL := probe["requestContext"]; isURL {
		return h.url(ctx, payload)
	}
	return h.direct(ctx, payload)
}

func edge(err error) error {
	e := classify(err)
	return messages.InvokeResponse_Error{Type: string(e.Code), Message: e.Message}
}

func (h *DecisionHandler) direct(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req DirectRequest
	if err := dec.Decode(&req); err != nil {
		return nil, edge(errorf(CodeInvalid, "bad request: %s", strings.TrimPrefix(err.Error(), "json: ")))
	}
	who, res, err := h.Service.Do(ctx, Request{Action: req.Action, ReviewID: req.ReviewID, Status: req.Status, Decision: req.Decision, Reason: req.Reason, Proof: req.Proof})
	h.logRequest(ctx, who, req.Action, req.ReviewID, err)
	if err != nil {
		return nil, edge(err)
	}
	return json.Marshal(res)
}

func (h *DecisionHandler) logRequest(ctx context.Context, who Caller, action Action, id string, err error) {
	code := ""
	if err != nil {
		e := classify(err)
		code = string(e.Code)
		if e.Code == CodeInternal || e.Code == CodeUnavailable {
			h.Service.Log.ErrorContext(ctx, "review request failed", "error", err.Error())
		}
	}
	h.Service.Log.InfoContext(ctx, "review decision request", "action", string(action), "review_id", id,
		"principal", who.Principal, "authenticated", who.Authenticated, "error_code", code)
}

// url serves the Function URL: GET /reviews[?status=...], GET
// /reviews/{id}, POST /reviews/{id} with a DecisionBody; the caller proof
// in ProofHeader.
func (h *DecisionHandler) url(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return respond(nil, errorf(CodeInvalid, "the request is not a Function URL request"))
	}
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	path := strings.TrimSuffix(ev.RawPath, "/")
	req := Request{Proof: header(ev.Headers, ProofHeader)}
	switch {
	case path == "/reviews" && method == http.MethodGet:
		req.Action, req.Status = ActionList, ev.QueryStringParameters["status"]
	case strings.HasPrefix(path, "/reviews/") && !strings.Contains(path[len("/reviews/"):], "/"):
		req.ReviewID = path[len("/reviews/"):]
		switch method {
		case http.MethodGet:
			req.Action = ActionShow
		case http.MethodPost:
			body := []byte(ev.Body)
			if ev.IsBase64Encoded {
				var err error
				if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					return respond(nil, errorf(CodeInvalid, "the body is not valid base64"))
				}
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			var b DecisionBody
			if err := dec.Decode(&b); err != nil {
				return respond(nil, errorf(CodeInvalid, "the body must be {\"decision\": \"approve\"|\"reject\", \"reason\": \"...\"}: %s", strings.TrimPrefix(err.Error(), "json: ")))
			}
			req.Action, req.Decision, req.Reason = ActionDecide, b.Decision, b.Reason
		default:
			return respond(nil, errorf(CodeInvalid, "%s is not allowed on %s: use GET or POST", method, truncate(ev.RawPath, 80)))
		}
	default:
		return respond(nil, errorf(CodeInvalid, "no route for %s %s: use GET /reviews, GET /reviews/{id} or POST /reviews/{id}", method, truncate(ev.RawPath, 80)))
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
		e := classify(err)
		var eb ErrorBody
		eb.Error.Code, eb.Error.Message = e.Code, e.Message
		resp.StatusCode = e.Code.HTTPStatus()
		body, _ = json.Marshal(eb)
	} else {
		var merr error
		if body, merr = json.Marshal(res); merr != nil {
			return respond(nil, wrap(CodeInternal, merr, "internal error"))
		}
	}
	resp.Body = string(body)
	return json.Marshal(resp)
}
