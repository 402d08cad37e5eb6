package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// cancelWait bounds the wait, after a call's context ended, for the SDK's
// notifications/cancelled to be sent before the session is closed.
const cancelWait = 500 * time.Millisecond

// TextResult is a call's result when the pinned tool has no output schema:
// the text items of the answer's content, in order, and how many items of
// other types (image, audio, resource, ...) were left out.
type TextResult struct {
	Content []TextItem `json:"content"`
	Dropped int        `json:"dropped"`
}

// TextItem is one text content item.
type TextItem struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// Call calls a pinned MCP tool (call.Pinned.MCP): a toolcall.Func (c.Call).
// It opens a new session with the pinned server URL and sends tools/call
// with the tool's pinned name, arguments call.Input, and _meta
// {mcpmeta.IdempotencyKey: call.ExternalKey}: the call's external key
// (docs/ledger.md, "The external key"), opaque and the same on every
// attempt and replay, never the ledger's key; a call without one is
// TOOL_INTERNAL, nothing sent. When call.Trace holds a traceparent, the
// call carries its W3C trace context so that the server's spans join the
// run's trace: in _meta beside the key (mcpmeta.Traceparent and, when not
// empty, mcpmeta.Tracestate) and as the traceparent and tracestate HTTP
// headers of every request of the call's session (the handshake, the
// tools/call POST, its cancellation, the session's DELETE). The call is bounded by ctx (the dispatcher's deadline)
// and the pinned timeout_seconds; the handshake before it by
// Config.Timeout too.
//
// The result is the answer's structuredContent when the pinned tool has an
// output schema (checked against it here), and otherwise a TextResult:
// {"content": [{"type": "text", "text": "..."}...], "dropped": n}. Each
// response is read up to Config.MaxBytes; the dispatcher applies the step's
// output limit. Failures are *tool.Error as the package documentation's
// table says.
func (c *Client) Call(ctx context.Context, call *toolcall.Call) (json.RawMessage, error) {
	m := call.Pinned.MCP
	if m == nil {
		return nil, tool.Errorf(tool.PermissionDenied, "tool %s is not an MCP tool of the run's toolset", call.Envelope.Tool)
	}
	if call.ExternalKey == "" {
		return nil, tool.Errorf(tool.Internal, "the call has no external idempotency key")
	}
	if n := call.Pinned.TimeoutSeconds; n > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(n)*time.Second)
		defer cancel()
	}
	handshake, cancel := context.WithTimeout(ctx, c.cfg.timeout())
	defer cancel()
	s, te := c.connect(ctx, handshake, m.URL, nil, call.Trace, call.Credential)
	if te != nil {
		return nil, te
	}
	defer s.close()
	name := m.Server + "." + m.Name
	p := &probe{}
	res, err := s.cs.CallTool(withProbe(ctx, p), &mcp.CallToolParams{
		Name:      m.Name,
		Arguments: call.Input,
		Meta:      meta(call),
	})
	if err != nil {
		if ctx.Err() != nil {
			// The SDK sends notifications/cancelled in the background; a
			// server with sessions stops the call on it, not on the POST's
			// end. Closing the session first would lose it.
			timer := time.NewTimer(cancelWait)
			select {
			case <-p.laterDone():
			case <-timer.C:
			}
			timer.Stop()
		}
		a := attempt{what: "tools/call of " + name + " on", host: s.host, call: true, limit: c.cfg.maxBytes(), cred: s.cred}
		return nil, s.cred.RedactError(failure(ctx, ctx, a, p.firstExchange(), err))
	}
	out, err := result(name, res, call.Pinned, s.cred)
	if err != nil {
		return nil, s.cred.RedactError(tool.Classify(err))
	}
	return redactOutput(out, s.cred)
}

// meta is the _meta of a call's tools/call: the external key under
// mcpmeta.IdempotencyKey and, when the call has a trace context, its
// traceparent and tracestate under the bare keys the MCP specification
// reserves for them (mcpmeta.Traceparent, mcpmeta.Tracestate; SEP-414).
// Never baggage.
func meta(call *toolcall.Call) mcp.Meta {
	m := mcp.Meta{mcpmeta.IdempotencyKey: call.ExternalKey}
	if tc := call.Trace; tc.Traceparent != "" {
		m[mcpmeta.Traceparent] = tc.Traceparent
		if tc.Tracestate != "" {
			m[mcpmeta.Tracestate] = tc.Tracestate
		}
	}
	return m
}

// result maps a tools/call answer: isError, and an input_required result
// (the tool asks for input first), are TOOL_PERMANENT_FAILURE, not maybe
// applied (the server says the call failed, or did not run); otherwise the result's
// shape follows the pinned output schema, and an answer that breaks it is
// TOOL_OUTPUT_INVALID, maybe applied (the tool ran). cred is the credential
// the call presented (nil: none), taken out of an isError text.
func result(name string, res *mcp.CallToolResult, pinned toolset.Tool, cred *credential.Credential) (json.RawMessage, error) {
	if res.NeedsInput() {
		// An input_required result (multi round-trip requests): the tool
		// did not run, and toolgate has no input to give.
		return nil, tool.Errorf(tool.PermanentFailure, "MCP tool %s asks for input before it runs (%d input request(s): elicitation, sampling or roots), which toolgate cannot give", name, len(res.InputRequests))
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		// The secret is taken out before the cut: a cut through it would
		// leave a part Redact no longer recognises.
		text := clean(cred.Redact(strings.Join(texts, " ")), MaxServerText)
		if text == "" {
			text = "(no text)"
		}
		return nil, tool.Errorf(tool.PermanentFailure, "MCP tool %s answered isError: %s", name, text)
	}
	if !hasOutputSchema(pinned.OutputSchema) {
		out := TextResult{Content: []TextItem{}}
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				out.Content = append(out.Content, TextItem{Type: "text", Text: tc.Text})
			} else {
				out.Dropped++
			}
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, tool.Wrap(tool.Internal, err, "the text result of MCP tool %s cannot be encoded", name).Applied()
		}
		return raw, nil
	}
	if res.StructuredContent == nil {
		return nil, tool.Errorf(tool.OutputInvalid, "MCP tool %s answered no structuredContent, though its pinned outputSchema asks for it", name).Applied()
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, tool.Wrap(tool.OutputInvalid, err, "the structuredContent of MCP tool %s cannot be encoded as JSON", name).Applied()
	}
	sch, err := schema.Compile(pinned.OutputSchema)
	if err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the pinned output schema of MCP tool %s does not compile", name).Applied()
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, tool.Wrap(tool.OutputInvalid, err, "the structuredContent of MCP tool %s is not JSON", name).Applied()
	}
	if err := sch.Validate(v); err != nil {
		return nil, tool.Errorf(tool.OutputInvalid, "the structuredContent of MCP tool %s does not match its pinned outputSchema: %s", name, problems(err)).Applied()
	}
	return raw, nil
}

// hasOutputSchema reports whether a pinned output schema is not the empty
// schema {}, which a tool without one is pinned with.
func hasOutputSchema(s json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(s), &m) == nil && len(m) == 0 {
		return false
	}
	return len(bytes.TrimSpace(s)) > 0
}

// maxProblems bounds the schema problems a message lists.
const maxProblems = 5

// problems lists a validation error's problems without any value of the
// instance (schema.Problem.Redacted).
func problems(err error) string {
	return strings.Join(schema.RedactedLines(schema.Problems(err, nil), "", maxProblems), "; ")
}
