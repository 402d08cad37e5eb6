package platformtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Request is the whole event a team's function receives, one JSON object
// (docs/tools.md, "Platform tools").
type Request struct {
	// Input is the tool's input object as the dispatcher validated it
	// against the pinned input schema, in its RFC 8785 form.
	Input json.RawMessage `json:"input"`
	// IdempotencyKey is the call's external key (docs/ledger.md, "The
	// external key"): "<22 characters of base64url>/<seq>", at most 64
	// visible ASCII characters, opaque, and the same on every attempt of
	// one call (a call claimed before external keys keeps its
	// "<run_id>/<seq>"). A function pinned as idempotent does its effect
	// at most once per key.
	IdempotencyKey string `json:"idempotency_key"`
	// Attempt is the ledger's attempt number for the key, from 1.
	Attempt int `json:"attempt"`
	// RunID is the run part of IdempotencyKey (RunOf): the opaque run id,
	// 22 characters of base64url, the same for every call of one run, so a
	// function can group a run's calls without learning its account,
	// execution or caller (docs/tools.md, "Platform tools"). A call
	// claimed before external keys gets the readable run id its key holds
	// (a Step Functions execution ARN, or a direct-lane run id). Step is
	// the Solution's step id.
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	// Tool is the tool's name in the pinned toolset.
	Tool string `json:"tool"`
	// Trace is the W3C trace context of the call's attempt span
	// (toolcall.Call.Trace): {"traceparent": "00-<32 hex>-<16 hex>-<2
	// hex>", "tracestate": "..."}, tracestate omitted when empty, the
	// whole member omitted when there is no traceparent. A function that
	// traces opens its spans under it so that they join the run's trace;
	// one that does not ignores it. It is an addition to the event: a
	// function must ignore members it does not know (docs/tools.md,
	// "Platform tools").
	Trace tool.TraceContext `json:"trace,omitzero"`
}

// RunOf returns the run part of an external key, everything before its
// last '/' (docs/ledger.md, "The external key"): the opaque run id of a
// key "<opaque run id>/<seq>", or the readable run id of a call claimed
// before external keys, whose key is the ledger's "<run_id>/<seq>" (a seq
// holds no '/', tool.Seq). ok is false for a key with no '/' or nothing
// before it, which no claim stores.
func RunOf(externalKey string) (run string, ok bool) {
	i := strings.LastIndexByte(externalKey, '/')
	if i <= 0 {
		return "", false
	}
	return externalKey[:i], true
}

// Answer is the error shape a team's function returns, as an ordinary
// (successful) result, to fail a call with one of the contract's codes:
// {"error": {"code": "TOOL_…", "message": "…", "maybe_applied": false}}.
// An object whose only member is "error" is always read as this shape,
// never as a result.
type Answer struct {
	Error *AnswerError `json:"error"`
}

// AnswerError is the error member of an Answer.
type AnswerError struct {
	// Code is one of the contract's codes (tool.Codes); any other is
	// TOOL_INTERNAL.
	Code string `json:"code"`
	// Message is shown to the caller and recorded on the ledger, cut to
	// MaxMessageBytes with control characters replaced: it must hold no
	// secret and no personal data.
	Message string `json:"message"`
	// MaybeApplied says that the effect may have happened (docs/design.md,
	// "The tool contract"); absent means false: nothing was done.
	MaybeApplied bool `json:"maybe_applied,omitempty"`
}

// MaxMessageBytes bounds the message of an Answer the caller sees.
const MaxMessageBytes = 512

// InvokeMargin is added to a platform tool's pinned timeout_seconds to
// bound one Invoke: Lambda ends the function at its own timeout and
// answers with a function error, which the proxy should read rather than
// give up first. The dispatcher's deadline (the proxy function's
// timeout, the step's timeout_seconds) still bounds it.
const InvokeMargin = 5 * time.Second

// Invoker is the one Lambda API call the proxy makes.
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// ClientOptions are the Lambda client's options for the proxy: one
// attempt per Invoke (and per ListTags, Floors, with the same client). The
// SDK's retries would re-invoke a team's function that may already have
// acted; retries are the Solution's, under the same idempotency key,
// counted by the ledger.
func ClientOptions(o *lambda.Options) { o.RetryMaxAttempts = 1 }

// FunctionName returns the FunctionName the proxy invokes for a pinned
// tool's function reference that is not a placeholder (Functions.Resolve
// resolves those): a full Lambda function ARN (toolset.LambdaARNPattern,
// with an optional qualifier), as it is.
//
// A bare function name, or a partial ARN (functionNamePattern), is
// TOOL_PERMISSION_DENIED, as an envelope naming another function is:
// Lambda would resolve it in the proxy's own account and region, where
// toolgate's own functions are; and the registration check admits only a
// placeholder or an ARN, so a pinned toolset holding one was written
// around it. A placeholder ("${FunctionX}") or anything else is
// TOOL_INTERNAL: the run's toolset cannot run this tool here, and no
// retry changes that. Nothing is invoked in any refusal.
func FunctionName(ref string) (string, error) {
	switch {
	case toolset.LambdaARNPattern.MatchString(ref):
		return ref, nil
	case functionNamePattern().MatchString(ref):
		return "", tool.Errorf(tool.PermissionDenied, "the pinned function %q is a bare function name, not a full Lambda function ARN: the proxy invokes only an ARN or a ${Function...} placeholder resolved from SSM", ref)
	case toolset.FunctionPattern.MatchString(ref):
		return "", tool.Errorf(tool.Internal, "the pinned function %s is a placeholder that publishing did not resolve to a Lambda function ARN", ref)
	}
	return "", tool.Errorf(tool.Internal, "the pinned function %.80q is neither a Lambda function ARN nor a ${Function...} placeholder", ref)
}

// functionNamePattern is what the Lambda API takes as a FunctionName
// besides a full ARN, which FunctionName refuses: a bare name (letters,
// digits, '-' and '_', 1..64) or a partial ARN ("123456789012:function:
// NAME"), each with an optional version or alias qualifier. It is
// compiled the first time a reference that is no full ARN is refused, not
// at cold start: RE2 unrolls its counted repetitions, 0.15 MB of init
// (docs/performance.md, "Cold init of the tool functions").
var functionNamePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\d{12}:)?(function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$`)
})

// Tool returns the proxy's toolcall.Func: it invokes the function the
// pinned toolset names for the tool (fns.Resolve) with the call's Request
// and maps the answer (Map, mapInvokeError).
//
// The function comes from the pinned entry only. An envelope's
// "function" member (the compiled Task's, the placeholder substituted at
// publish) must name the same function, or the call is
// TOOL_PERMISSION_DENIED and nothing is invoked: otherwise a direct-lane
// caller could name another team's tool function, which the proxy's role
// may also invoke, with input validated against this tool's schema.
func Tool(client Invoker, fns *Functions) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if !c.Pinned.Platform() {
			return nil, tool.Errorf(tool.PermissionDenied, "tool %s names no function", c.Envelope.Tool)
		}
		name, err := fns.Resolve(ctx, c.Pinned.Function)
		if err != nil {
			return nil, err
		}
		env := c.Envelope
		if env.Function != "" && env.Function != name {
			return nil, tool.Errorf(tool.PermissionDenied, "the envelope's function %.160q is not the function the pinned toolset names for tool %s", env.Function, env.Tool)
		}
		if c.ExternalKey == "" {
			return nil, tool.Errorf(tool.Internal, "the call has no external idempotency key")
		}
		run, ok := RunOf(c.ExternalKey)
		if !ok {
			return nil, tool.Errorf(tool.Internal, "the call's external idempotency key has no run part")
		}
		req := Request{Input: c.Input, IdempotencyKey: c.ExternalKey, Attempt: c.Attempt, RunID: run, Step: env.Step, Tool: env.Tool}
		if c.Trace.Traceparent != "" {
			req.Trace = c.Trace
		}
		payload, err := json.Marshal(req)
		if err != nil {
			return nil, tool.Wrap(tool.Internal, err, "the request to the tool's function cannot be encoded")
		}
		if n := c.Pinned.TimeoutSeconds; n > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Second+InvokeMargin)
			defer cancel()
		}
		out, err := client.Invoke(ctx, &lambda.InvokeInput{
			FunctionName:   aws.String(name),
			InvocationType: types.InvocationTypeRequestResponse,
			Payload:        payload,
		})
		if err != nil {
			return nil, mapInvokeError(ctx, err)
		}
		return Map(aws.ToString(out.FunctionError), out.Payload)
	}
}

// Map reads a team function's answer: functionError is the Invoke
// response's FunctionError ("" when the function returned normally) and
// payload its Payload.
//
//   - A function error (an unhandled error or a crash) is TOOL_INTERNAL,
//     and Lambda's timeout ("Sandbox.Timedout", "Task timed out after …")
//     TOOL_TIMEOUT; both maybe applied, since the function may have acted
//     before it failed. The RIE answers a timeout with that text alone and
//     no function error; it is read the same way.
//   - An Answer is its code and message (TOOL_INTERNAL for a code that is
//     not the contract's, or a malformed error member), maybe applied only
//     when the answer says so.
//   - Anything else is the result, which the dispatcher validates against
//     the pinned output schema.
func Map(functionError string, payload []byte) (json.RawMessage, error) {
	if functionError != "" {
		var fe struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		_ = json.Unmarshal(payload, &fe)
		if fe.ErrorType == "Sandbox.Timedout" || timedOut(fe.ErrorMessage) {
			return nil, tool.Errorf(tool.Timeout, "the tool's function timed out").Applied()
		}
		return nil, &tool.Error{Code: tool.Internal, Message: "the tool's function failed with an unhandled error", MaybeApplied: true,
			Err: fmt.Errorf("function error %s", excerpt.Bytes(functionError, 64, "…"))}
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if timedOut(string(trimmed)) {
			return nil, tool.Errorf(tool.Timeout, "the tool's function timed out").Applied()
		}
		return json.RawMessage(payload), nil // not an object: the output schema refuses it
	}
	members, err := tool.DecodeObject("the function's answer", trimmed)
	if err != nil {
		return json.RawMessage(payload), nil // the dispatcher says the result is not JSON
	}
	raw, ok := members["error"]
	if !ok || len(members) != 1 {
		return json.RawMessage(payload), nil
	}
	var a AnswerError
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the tool's function answered a malformed error")
	}
	code := tool.Code(a.Code)
	if !code.Known() {
		return nil, &tool.Error{Code: tool.Internal, Message: fmt.Sprintf("the tool's function answered the error code %.40q, which is not one of the contract's", a.Code),
			MaybeApplied: a.MaybeApplied}
	}
	msg := safeMessage(a.Message)
	if msg == "" {
		msg = "the tool's function answered " + a.Code
	}
	return nil, &tool.Error{Code: code, Message: msg, MaybeApplied: a.MaybeApplied}
}

// timedOut reports Lambda's timeout message ("… Task timed out after 3.00
// seconds"), which is also the RIE's whole answer to a timeout.
func timedOut(s string) bool { return strings.Contains(s, "Task timed out after ") }

// safeMessage is an Answer's message as the caller may see it: control
// and format characters replaced by a space, cut to MaxMessageBytes at a
// character boundary.
func safeMessage(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	return excerpt.Bytes(s, MaxMessageBytes, "…")
}

// mapInvokeError classifies a failed Invoke request (the Lambda API's
// errors, not the function's): a throttle is TOOL_RATE_LIMITED and access
// denied TOOL_PERMISSION_DENIED, both before the function ran; a
// function that does not exist, or a request Lambda refuses, is
// TOOL_INTERNAL (the deployment's fault); Lambda's own server errors and
// lost connections are TOOL_UPSTREAM_UNAVAILABLE, maybe applied, as the
// function may have started; a deadline is TOOL_TIMEOUT, maybe applied.
func mapInvokeError(ctx context.Context, err error) error {
	var throttled *types.TooManyRequestsException
	if errors.As(err, &throttled) {
		te := tool.Wrap(tool.RateLimited, err, "Lambda throttled the tool's function")
		if s, perr := strconv.Atoi(aws.ToString(throttled.RetryAfterSeconds)); perr == nil && s > 0 {
			te.RetryAfter = time.Duration(s) * time.Second
		}
		return te
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded {
		return tool.Wrap(tool.Timeout, err, "the tool's function did not answer within its timeout").Applied()
	}
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return tool.Wrap(tool.Internal, err, "the tool's function does not exist")
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch {
		case status == http.StatusForbidden || strings.Contains(api.ErrorCode(), "AccessDenied"):
			return tool.Wrap(tool.PermissionDenied, err, "the proxy may not invoke the tool's function")
		case status == http.StatusTooManyRequests:
			return tool.Wrap(tool.RateLimited, err, "Lambda throttled the tool's function")
		case status >= 400 && status < 500:
			return tool.Wrap(tool.Internal, err, "Lambda refused the invocation (%s)", excerpt.Bytes(api.ErrorCode(), 64, "…"))
		}
	}
	return tool.Wrap(tool.UpstreamUnavailable, err, "Lambda did not answer the invocation").Applied()
}
