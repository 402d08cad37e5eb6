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
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// Environment variables of the review functions (docs/reviews.md).
const (
	EnvTable = "TOOLGATE_TABLE" // the ledger table (required)
	// EnvAllowUnauthenticated, "true" on the local stack only, lets the
	// decision function take direct invocations that name their caller
	// ("as"), recorded as unauthenticated. Default false: only requests
	// through the IAM-authorised Function URL are taken.
	EnvAllowUnauthenticated = "TOOLGATE_ALLOW_UNAUTHENTICATED"
)

// DecisionConfig is the review-decision function's configuration.
type DecisionConfig struct {
	Table                string
	AllowUnauthenticated bool
}

// DecisionConfigFromEnv reads the review-decision function's configuration.
func DecisionConfigFromEnv(getenv func(string) string) (DecisionConfig, error) {
	cfg := DecisionConfig{Table: getenv(EnvTable)}
	if cfg.Table == "" {
		return cfg, fmt.Errorf("%s is not set", EnvTable)
	}
	switch v := getenv(EnvAllowUnauthenticated); v {
	case "", "false":
	case "true":
		cfg.AllowUnauthenticated = true
	default:
		return cfg, fmt.Errorf("%s=%q is not true or false", EnvAllowUnauthenticated, v)
	}
	return cfg, nil
}

// RequestConfigFromEnv reads the review-request function's configuration:
// the table.
func RequestConfigFromEnv(getenv func(string) string) (string, error) {
	table := getenv(EnvTable)
	if table == "" {
		return "", fmt.Errorf("%s is not set", EnvTable)
	}
	return table, nil
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
	if !utf8.Valid(data) {
		return nil, errors.New("review request is not valid UTF-8")
	}
	seen, err := tool.DecodeObject("review request", data)
	if err != nil {
		return nil, err
	}
	for _, f := range tool.FieldNames(tool.ReviewTask{}) {
		v, ok := seen[f]
		if !ok {
			return nil, fmt.Errorf("review request field %q is missing", f)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return nil, fmt.Errorf("review request field %q must not be null", f)
		}
		delete(seen, f)
	}
	for k := range seen {
		return nil, fmt.Errorf("review request field %q is not part of the review Task's payload", truncate(k, 40))
	}
	strict := json.NewDecoder(bytes.NewReader(data))
	strict.DisallowUnknownFields()
	var p tool.ReviewTask
	if err := strict.Decode(&p); err != nil {
		return nil, fmt.Errorf("review request: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if p.TaskToken == "" {
		return nil, errors.New("review request: task_token is empty")
	}
	return New(Params{
		ID: IDForToken(p.TaskToken), TaskToken: p.TaskToken, RunID: p.RunID, Step: p.Step, Of: p.Of, Tool: p.Tool,
		ToolsetID: p.ToolsetID, Input: p.Input, Reviewers: p.Reviewers, TimeoutSeconds: p.TimeoutSeconds,
	})
}

// RequestResult is what review-request returns. The review Task ignores
// it (it waits for the task token); it is for logs and direct calls.
type RequestResult struct {
	ReviewID  string `json:"review_id"`
	Status    Status `json:"status"`
	ExpiresAt string `json:"expires_at"`
}

// RequestHandler is the review-request function: it stores the pending
// review a review Task asks for and returns while the Task keeps waiting;
// it also serves the direct lane (LaneRequest).
type RequestHandler struct {
	Store    *Store
	Ledger   *ledger.Store
	Log      *slog.Logger
	toolsets ledger.ToolsetCache
}

// Handle is the Lambda handler. Failures are tool contract codes
// (tool.Edge): TOOL_INPUT_INVALID for a malformed payload,
// TOOL_PERMISSION_DENIED for a toolset that is not registered or does not
// hold the tool, TOOL_UPSTREAM_UNAVAILABLE when DynamoDB fails.
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
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "review request is not a JSON object")
	}
	if _, lane := probe["action"]; lane {
		return h.lane(ctx, payload)
	}
	r, err := DecodeTask(payload)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
	}
	return h.create(ctx, r)
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
		"tool", r.Tool, "input_digest", r.InputDigest, "expires_at", formatTime(r.ExpiresAt), "created", created)
	return json.Marshal(RequestResult{ReviewID: r.ID, Status: r.Status, ExpiresAt: formatTime(r.ExpiresAt)})
}

// LaneRequest is a request of the direct lane (toolgate invoke of a gated
// tool), which has no review Task and no task token: "request" stores a
// pending review of the call and returns its id; "status" reports a
// direct-lane review's decision (never its inputs), which is the approval
// the call then carries. The invoker thus never writes or reads review
// items itself.
type LaneRequest struct {
	Action         string          `json:"action"`
	ReviewID       string          `json:"review_id,omitempty"`
	RunID          string          `json:"run_id,omitempty"`
	Step           string          `json:"step,omitempty"`
	Of             string          `json:"of,omitempty"`
	Tool           string          `json:"tool,omitempty"`
	ToolsetID      string          `json:"toolset_id,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Reviewers      []string        `json:"reviewers,omitempty"`
	TimeoutSeconds int             `json:"timeout_seconds,omitempty"`
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
	switch req.Action {
	case LaneRequestAction:
		if req.ReviewID != "" {
			return nil, tool.Errorf(tool.InputInvalid, "review request: a new review's id is chosen by the function")
		}
		if req.Input == nil {
			return nil, tool.Errorf(tool.InputInvalid, "review request: input is missing")
		}
		r, err := New(Params{ID: NewID(), RunID: req.RunID, Step: req.Step, Of: req.Of, Tool: req.Tool, ToolsetID: req.ToolsetID,
			Input: req.Input, Reviewers: req.Reviewers, TimeoutSeconds: req.TimeoutSeconds})
		if err != nil {
			return nil, tool.Errorf(tool.InputInvalid, "%s", err.Error())
		}
		return h.create(ctx, r)
	case LaneStatusAction:
		if !ValidID(req.ReviewID) {
			return nil, tool.Errorf(tool.InputInvalid, "%q is not a review id", truncate(req.ReviewID, 40))
		}
		r, err := h.Store.Get(ctx, req.ReviewID)
		if errors.Is(err, ErrNotFound) || (err == nil && r.TaskToken != "") {
			// A review Task's review is not the direct lane's to watch.
			return nil, tool.Errorf(tool.InputInvalid, "there is no direct-lane review %s", req.ReviewID)
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

// ---------------------------------------------------------------------------
// review-decision

// DirectRequest is a direct invocation of the decision function (the
// local stack's CLI): the action and, since nothing authenticates it, the
// caller's name.
type DirectRequest struct {
	Action   Action  `json:"action"`
	ReviewID string  `json:"review_id,omitempty"`
	Status   string  `json:"status,omitempty"`
	Decision Verdict `json:"decision,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	// As names the caller; recorded as unauthenticated.
	As string `json:"as,omitempty"`
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

// DecisionHandler is the review-decision function. On AWS it sits behind
// an IAM-authorised (AWS_IAM) Function URL: the caller is the IAM
// principal of the request context, and a request without one is refused.
// A direct invocation ({"action": ...}) names its caller itself, so it is
// taken only when AllowUnauthenticated (the local stack), and recorded as
// unauthenticated.
type DecisionHandler struct {
	Service              *Service
	AllowUnauthenticated bool
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
	if !h.AllowUnauthenticated {
		return nil, edge(errorf(CodeUnauthenticated, "this function takes only IAM-authenticated requests through its Function URL; a direct invocation carries no principal"))
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req DirectRequest
	if err := dec.Decode(&req); err != nil {
		return nil, edge(errorf(CodeInvalid, "bad request: %s", strings.TrimPrefix(err.Error(), "json: ")))
	}
	if req.As == "" {
		return nil, edge(errorf(CodeUnauthenticated, "nothing authenticates a direct invocation: name yourself (toolgate review --as NAME)"))
	}
	caller := Caller{Principal: req.As}
	res, err := h.Service.Do(ctx, caller, Request{Action: req.Action, ReviewID: req.ReviewID, Status: req.Status, Decision: req.Decision, Reason: req.Reason})
	h.logRequest(ctx, caller, req.Action, req.ReviewID, err)
	if err != nil {
		return nil, edge(err)
	}
	return json.Marshal(res)
}

func (h *DecisionHandler) logRequest(ctx context.Context, caller Caller, action Action, id string, err error) {
	code := ""
	if err != nil {
		e := classify(err)
		code = string(e.Code)
		if e.Code == CodeInternal || e.Code == CodeUnavailable {
			h.Service.Log.ErrorContext(ctx, "review request failed", "error", err.Error())
		}
	}
	h.Service.Log.InfoContext(ctx, "review decision request", "action", string(action), "review_id", id,
		"principal", caller.Principal, "authenticated", caller.Authenticated, "error_code", code)
}

// url serves the Function URL: GET /reviews[?status=...], GET
// /reviews/{id}, POST /reviews/{id} with a DecisionBody.
func (h *DecisionHandler) url(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return respond(nil, errorf(CodeInvalid, "the request is not a Function URL request"))
	}
	var caller Caller
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil && a.IAM.UserARN != "" {
		caller = Caller{Principal: a.IAM.UserARN, Authenticated: true}
	} else {
		return respond(nil, errorf(CodeUnauthenticated, "the request carries no IAM principal: the Function URL must use AWS_IAM auth, and requests must be SigV4-signed"))
	}
	method := strings.ToUpper(ev.RequestContext.HTTP.Method)
	path := strings.TrimSuffix(ev.RawPath, "/")
	var req Request
	switch {
	case path == "/reviews" && method == http.MethodGet:
		req = Request{Action: ActionList, Status: ev.QueryStringParameters["status"]}
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
	res, err := h.Service.Do(ctx, caller, req)
	h.logRequest(ctx, caller, req.Action, req.ReviewID, err)
	return respond(res, err)
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
