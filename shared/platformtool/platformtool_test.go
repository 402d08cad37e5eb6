package platformtool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

func TestMap(t *testing.T) {
	cases := []struct {
		name, functionError, payload string
		code                         tool.Code // "" for a result
		applied                      bool
	}{
		{"result", "", `{"ticket_id":"T-1"}`, "", false},
		{"result with an error member among others", "", `{"error":"none","ok":true}`, "", false},
		{"not an object: the output schema decides", "", `[1]`, "", false},
		{"documented error", "", `{"error":{"code":"TOOL_PERMANENT_FAILURE","message":"no such queue"}}`, tool.PermanentFailure, false},
		{"documented error, maybe applied", "", `{"error":{"code":"TOOL_UPSTREAM_UNAVAILABLE","message":"x","maybe_applied":true}}`, tool.UpstreamUnavailable, true},
		{"unknown code", "", `{"error":{"code":"TICKETS_DOWN","message":"x"}}`, tool.Internal, false},
		{"lower-case code", "", `{"error":{"code":"tool_timeout","message":"x"}}`, tool.Internal, false},
		{"malformed error member", "", `{"error":"boom"}`, tool.Internal, false},
		{"unknown member in the error", "", `{"error":{"code":"TOOL_TIMEOUT","stack":"x"}}`, tool.Internal, false},
		{"function error", "Unhandled", `{"errorType":"Runtime.ExitError","errorMessage":"exit status 2"}`, tool.Internal, true},
		{"Lambda timeout", "Unhandled", `{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: x Error: Task timed out after 3.00 seconds"}`, tool.Timeout, true},
		{"older Lambda timeout", "Unhandled", `{"errorMessage":"2026-01-01 x Task timed out after 3.00 seconds"}`, tool.Timeout, true},
		{"RIE timeout", "", `Task timed out after 3.00 seconds`, tool.Timeout, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Map(c.functionError, []byte(c.payload))
			if c.code == "" {
				if err != nil || string(out) != c.payload {
					t.Fatalf("got %s %v, want the payload as the result", out, err)
				}
				return
			}
			te := tool.Classify(err)
			if te == nil || te.Code != c.code || te.MaybeApplied != c.applied {
				t.Fatalf("got %v (applied %v), want %s (applied %v)", err, te != nil && te.MaybeApplied, c.code, c.applied)
			}
		})
	}
}

// An answer's message reaches the caller bounded and on one line.
func TestMapMessage(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	_, err := Map("", []byte(`{"error":{"code":"TOOL_PERMANENT_FAILURE","message":"a\nb\u202ec `+long+`"}}`))
	te := tool.Classify(err)
	if strings.ContainsAny(te.Message, "\n\u202e") || len(te.Message) > MaxMessageBytes+len("…") || !strings.HasPrefix(te.Message, "a b c ") {
		t.Fatalf("message %q", te.Message)
	}
}

// Only a full ARN is invoked as written; a bare function name is refused
// as a function other than the pinned one is (TOOL_PERMISSION_DENIED).
func TestFunctionName(t *testing.T) {
	for ref, code := range map[string]tool.Code{
		"arn:aws:lambda:eu-west-1:123456789012:function:create-ticket":      "",
		"arn:aws:lambda:eu-west-1:123456789012:function:create-ticket:live": "",
		"create-ticket":                       tool.PermissionDenied,
		"send-email":                          tool.PermissionDenied,
		"create-ticket:live":                  tool.PermissionDenied,
		"123456789012:function:create-ticket": tool.PermissionDenied,
		"${FunctionCreateTicket}":             tool.Internal,
		"arn:aws:iam::123456789012:role/x":    tool.Internal,
		"create ticket":                       tool.Internal,
		"":                                    tool.Internal,
	} {
		name, err := FunctionName(ref)
		if code == "" {
			if err != nil || name != ref {
				t.Errorf("%q: %q %v", ref, name, err)
			}
			continue
		}
		if te := tool.Classify(err); te == nil || te.Code != code || te.MaybeApplied || name != "" {
			t.Errorf("%q: %q %v, want %s", ref, name, err, code)
		}
	}
	_, err := FunctionName("${FunctionCreateTicket}")
	if !strings.Contains(err.Error(), "placeholder") {
		t.Errorf("placeholder: %v", err)
	}
}

// fakeLambda answers Invoke with a fixed output or error and keeps the
// request.
type fakeLambda struct {
	in  *lambda.InvokeInput
	out *lambda.InvokeOutput
	err error
}

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.in = in
	return f.out, f.err
}

func call(fn string) *toolcall.Call {
	env := &tool.Envelope{Tool: "create-ticket", RunID: "arn:run", Seq: "2", Step: "file", IdempotencyKey: "arn:run/2", Attempt: 1}
	return &toolcall.Call{Envelope: env, Input: json.RawMessage(`{"title":"x"}`), Attempt: 3, ExternalKey: "q3Xb0Yl2u1Vv9tA8rXkE_w/2",
		Pinned: toolset.Tool{Function: fn, TimeoutSeconds: 10}}
}

// The request is the documented one; the Lambda API's own errors map to
// codes.
func TestTool(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{"ticket_id":"T-1"}`)}}
	out, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), call(arn))
	if err != nil || string(out) != `{"ticket_id":"T-1"}` {
		t.Fatalf("%s %v", out, err)
	}
	if aws.ToString(f.in.FunctionName) != arn || f.in.InvocationType != types.InvocationTypeRequestResponse {
		t.Fatalf("input %+v", f.in)
	}
	want := `{"input":{"title":"x"},"idempotency_key":"q3Xb0Yl2u1Vv9tA8rXkE_w/2","attempt":3,"run_id":"q3Xb0Yl2u1Vv9tA8rXkE_w","step":"file","tool":"create-ticket"}`
	if string(f.in.Payload) != want {
		t.Fatalf("request %s\nwant    %s", f.in.Payload, want)
	}
	if strings.Contains(string(f.in.Payload), "arn:run") {
		t.Fatalf("the request names the execution: %s", f.in.Payload)
	}
	for name, c := range map[string]struct {
		err     error
		code    tool.Code
		applied bool
	}{
		"throttled":  {&types.TooManyRequestsException{Message: aws.String("slow down")}, tool.RateLimited, false},
		"not found":  {&types.ResourceNotFoundException{Message: aws.String("no")}, tool.Internal, false},
		"service":    {&types.ServiceException{Message: aws.String("oops")}, tool.UpstreamUnavailable, true},
		"connection": {errors.New("connection reset"), tool.UpstreamUnavailable, true},
		"deadline":   {context.DeadlineExceeded, tool.Timeout, true},
	} {
		f := &fakeLambda{err: c.err}
		_, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), call(arn))
		if te := tool.Classify(err); te.Code != c.code || te.MaybeApplied != c.applied {
			t.Errorf("%s: %v applied %v", name, err, te.MaybeApplied)
		}
	}
}

// The event carries the call's trace context as its trace member, and
// none at all when the call has none (the event above).
func TestRequestCarriesTheTraceContext(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name string
		tc   tool.TraceContext
		want string
	}{
		{"with tracestate", tool.TraceContext{Traceparent: tp, Tracestate: "vendor=opaque"}, `,"trace":{"traceparent":"` + tp + `","tracestate":"vendor=opaque"}}`},
		{"without tracestate", tool.TraceContext{Traceparent: tp}, `,"trace":{"traceparent":"` + tp + `"}}`},
		{"a tracestate without a traceparent", tool.TraceContext{Tracestate: "vendor=opaque"}, `"tool":"create-ticket"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{}`)}}
			cl := call(arn)
			cl.Trace = c.tc
			if _, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), cl); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(f.in.Payload), c.want) {
				t.Fatalf("request %s\nwant it to end %s", f.in.Payload, c.want)
			}
		})
	}
}

// The function invoked is the pinned one: a placeholder through its SSM
// parameter, and an envelope naming another function is refused before
// anything is invoked.
func TestToolFunction(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	other := "arn:aws:lambda:us-east-1:000000000000:function:delete-everything"
	params := map[string]string{"/toolgate/test/tool-function/FunctionCreateTicket/arn": arn}
	for _, c := range []struct {
		name, pinned, envelope string
		params                 map[string]string
		ssmErr                 error
		code                   tool.Code // "" invoked arn
	}{
		{"ARN, no envelope function", arn, "", nil, nil, ""},
		{"ARN, the same envelope function", arn, arn, nil, nil, ""},
		{"ARN, another envelope function", arn, other, nil, nil, tool.PermissionDenied},
		{"placeholder resolved", "${FunctionCreateTicket}", arn, params, nil, ""},
		{"placeholder resolved, another envelope function", "${FunctionCreateTicket}", other, params, nil, tool.PermissionDenied},
		{"placeholder, envelope names the placeholder", "${FunctionCreateTicket}", "${FunctionCreateTicket}", params, nil, tool.PermissionDenied},
		{"placeholder without a parameter", "${FunctionCloseTicket}", "", params, nil, tool.PermissionDenied},
		{"parameter not an ARN", "${FunctionCreateTicket}", "", map[string]string{"/toolgate/test/tool-function/FunctionCreateTicket/arn": "create-ticket"}, nil, tool.Internal},
		{"SSM fails", "${FunctionCreateTicket}", "", nil, errors.New("connection reset"), tool.UpstreamUnavailable},
		{"bare function name", "create-ticket", "", nil, nil, tool.PermissionDenied},
		{"bare function name, the same envelope function", "create-ticket", "create-ticket", nil, nil, tool.PermissionDenied},
		{"neither", "create ticket", "", nil, nil, tool.Internal},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{"ticket_id":"T-1"}`)}}
			cl := call(c.pinned)
			cl.Envelope.Function = c.envelope
			_, err := Tool(f, NewFunctions("test", &fakeSSM{params: c.params, err: c.ssmErr}))(context.Background(), cl)
			if c.code == "" {
				if err != nil || f.in == nil || aws.ToString(f.in.FunctionName) != arn {
					t.Fatalf("%v, invoked %+v", err, f.in)
				}
				return
			}
			if te := tool.Classify(err); te == nil || te.Code != c.code || te.MaybeApplied || f.in != nil {
				t.Fatalf("%v, invoked %v; want %s", err, f.in != nil, c.code)
			}
		})
	}
}

// A resolved placeholder is read from SSM once per container; a failure
// is read again.
func TestFunctionsCache(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	s := &fakeSSM{err: errors.New("throttled")}
	fns := NewFunctions("test", s)
	if _, err := fns.Resolve(context.Background(), "${FunctionCreateTicket}"); tool.Classify(err).Code != tool.UpstreamUnavailable {
		t.Fatal(err)
	}
	s.err, s.params = nil, map[string]string{"/toolgate/test/tool-function/FunctionCreateTicket/arn": arn}
	for range 3 {
		if got, err := fns.Resolve(context.Background(), "${FunctionCreateTicket}"); err != nil || got != arn {
			t.Fatalf("%q %v", got, err)
		}
	}
	if s.calls != 2 {
		t.Fatalf("%d GetParameter calls, want 2", s.calls)
	}
}

// fakeSSM answers GetParameter from params, or with err.
type fakeSSM struct {
	params map[string]string
	err    error
	calls  int
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	v, ok := f.params[aws.ToString(in.Name)]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{Message: aws.String("not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

// A call without an external key (never one from the dispatcher, which
// claims it first) is TOOL_INTERNAL and invokes nothing: the ledger's
// key is never sent in its place.
func TestToolNeedsTheExternalKey(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{"ticket_id":"T-1"}`)}}
	c := call(arn)
	c.ExternalKey = ""
	_, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), c)
	if te := tool.Classify(err); te.Code != tool.Internal || f.in != nil {
		t.Fatalf("%v; invoked %+v", err, f.in)
	}
}

// A function gets the run part of the call's external key as run_id:
// the opaque run id, or, for a call claimed before external keys, the
// readable run id its key holds; a key without a run part invokes
// nothing.
func TestRequestRunIDIsTheRunPartOfTheExternalKey(t *testing.T) {
	arn := "arn:aws:lambda:us-east-1:000000000000:function:create-ticket"
	for key, want := range map[string]string{
		"q3Xb0Yl2u1Vv9tA8rXkE_w/2.0.1": "q3Xb0Yl2u1Vv9tA8rXkE_w",
		"arn:run/2":                    "arn:run",
		"direct/arn:aws:iam::000000000000:user/ops/r-1/7": "direct/arn:aws:iam::000000000000:user/ops/r-1",
	} {
		f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{}`)}}
		c := call(arn)
		c.ExternalKey = key
		if _, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), c); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var req Request
		if err := json.Unmarshal(f.in.Payload, &req); err != nil || req.RunID != want || req.IdempotencyKey != key {
			t.Fatalf("%s: request %s (%v), want run_id %q", key, f.in.Payload, err, want)
		}
	}
	for _, key := range []string{"no-slash", "/2"} {
		f := &fakeLambda{}
		c := call(arn)
		c.ExternalKey = key
		_, err := Tool(f, NewFunctions("test", &fakeSSM{}))(context.Background(), c)
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.Internal || f.in != nil {
			t.Fatalf("%s: %v, invoked %v", key, err, f.in != nil)
		}
	}
}
