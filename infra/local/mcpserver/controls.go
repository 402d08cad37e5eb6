package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrStopped is what a delay ends with when Stop interrupts it.
var ErrStopped = errors.New("mcpserver stopped")

// SetInputSchema replaces the named tool's input schema, a JSON Schema of
// type "object" that the SDK's validator (github.com/google/jsonschema-go)
// can resolve. The next tools/list shows it and later calls are checked
// against it; sessions get notifications/tools/list_changed.
func (s *Server) SetInputSchema(name string, schema json.RawMessage) error {
	return s.change(name, func(d *mcp.Tool) { d.InputSchema = slices.Clone(schema) })
}

// SetOutputSchema replaces the named tool's output schema; nil removes it.
// Results are checked against it when the tool builds them (but see
// BreakOutput).
func (s *Server) SetOutputSchema(name string, schema json.RawMessage) error {
	return s.change(name, func(d *mcp.Tool) {
		if schema == nil {
			d.OutputSchema = nil
			return
		}
		d.OutputSchema = slices.Clone(schema)
	})
}

// Definition is a copy of the named tool's definition as the server lists
// it now; an unknown name is an error.
func (s *Server) Definition(name string) (mcp.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok {
		return mcp.Tool{}, fmt.Errorf("no tool %q", name)
	}
	return t.def, nil
}

// SetDescription replaces the named tool's description; "" removes it.
func (s *Server) SetDescription(name, description string) error {
	return s.change(name, func(d *mcp.Tool) { d.Description = description })
}

// SetAnnotations replaces the named tool's annotations; nil removes them.
func (s *Server) SetAnnotations(name string, a *mcp.ToolAnnotations) error {
	return s.change(name, func(d *mcp.Tool) {
		if a == nil {
			d.Annotations = nil
			return
		}
		c := *a
		d.Annotations = &c
	})
}

// RemoveTool removes the named tool: it leaves tools/list, and a call to it
// is answered with the SDK's unknown-tool error (JSON-RPC -32602).
func (s *Server) RemoveTool(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tools[name]; !ok {
		return fmt.Errorf("no tool %q", name)
	}
	delete(s.tools, name)
	s.mcp.RemoveTools(name)
	return nil
}

// ListAlso makes the first page of every later tools/list answer carry def
// too, after the registered tools, without registering it: a tool the SDK's
// server would refuse to add (AddTool panics on an invalid x-mcp-header
// annotation, for one), as a server built otherwise can list it. A nil def
// is listed as null. The SDK client (v1.8.0) drops such tools from what
// ClientSession.ListTools returns, logging each; a call to one is the SDK's
// unknown-tool error.
func (s *Server) ListAlso(def *mcp.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if def != nil {
		c := *def
		def = &c
	}
	s.extra = append(s.extra, def)
}

// AnswerEmptyCursor makes the next n tools/list answers carry
// "nextCursor": "" in place of their cursor (so that the pages after it
// cannot be asked for), or in addition, on a last page that has none. The
// SDK's server cannot write it (ListToolsResult.NextCursor has
// omitempty): the answer is rewritten at the HTTP layer.
func (s *Server) AnswerEmptyCursor(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emptyCursors += n
}

func (s *Server) change(name string, edit func(*mcp.Tool)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok {
		return fmt.Errorf("no tool %q", name)
	}
	next := *t
	edit(&next.def)
	if err := s.register(&next); err != nil {
		return fmt.Errorf("tool %s: %w", name, err)
	}
	return nil
}

// checkSchema reports whether raw is a JSON Schema the SDK accepts, of type
// "object" if object.
func checkSchema(raw any, object bool) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(b, &sch); err != nil {
		return fmt.Errorf("not a JSON Schema: %w", err)
	}
	if object && sch.Type != "object" {
		return fmt.Errorf(`type is %q, not "object"`, sch.Type)
	}
	if _, err := sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return err
	}
	return nil
}

// RefuseCalls makes the server answer the next n tools/call requests (to
// any tool) with r at the HTTP layer, before the MCP layer or any tool sees
// them. Refusals queue up: RefuseCalls(1, Unavailable) then
// RefuseCalls(1, Unauthorized) refuses one call with 503 and the next with
// 401. Refused calls are recorded with Call.Refused set.
func (s *Server) RefuseCalls(n int, r Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.refusals = append(s.refusals, r)
	}
}

// BreakOutput makes the named tool's next n results carry structured content
// that breaks its output schema: {"unexpected": true}. The tool still runs.
func (s *Server) BreakOutput(name string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok {
		return fmt.Errorf("no tool %q", name)
	}
	t.breaks += n
	return nil
}

// FailCalls makes the named tool answer its next n calls with a result of
// isError true and text as its only content, without running the tool.
func (s *Server) FailCalls(name, text string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok {
		return fmt.Errorf("no tool %q", name)
	}
	for range n {
		t.fail = append(t.fail, text)
	}
	return nil
}

// delay holds back one answer.
type delay struct {
	d     time.Duration
	ended chan<- error
}

// Delay holds back the named tool's answer to each of its next n calls by d,
// after the tool has run (so a side effect happens even if the caller gives
// up). A delay ends early when the request's context ends (the client
// cancelled or disconnected) or when Stop is called; the answer is then
// dropped: the handler returns JSON-RPC error -32603 "answer dropped: …",
// which reaches the client only if its request is still open (without
// sessions, on Stop). The returned channel, buffered for n, receives one value as each
// delay ends: nil if it ran its full length, otherwise the context's error
// or ErrStopped.
func (s *Server) Delay(name string, d time.Duration, n int) (<-chan error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[name]
	if !ok {
		return nil, fmt.Errorf("no tool %q", name)
	}
	ended := make(chan error, n)
	for range n {
		t.delays = append(t.delays, delay{d: d, ended: ended})
	}
	return ended, nil
}

func (s *Server) wait(ctx context.Context, d delay) error {
	timer := time.NewTimer(d.d)
	defer timer.Stop()
	requestDone, _ := ctx.Value(requestDoneKey{}).(<-chan struct{})
	var err error
	select {
	case <-timer.C:
	case <-ctx.Done():
		err = ctx.Err()
	case <-requestDone:
		err = context.Canceled
	case <-s.stopping.Done():
		err = ErrStopped
	}
	d.ended <- err
	return err
}

// Calls returns the tools/call requests received so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Requests returns the HTTP requests received at the endpoint so far,
// oldest first, with their trace headers: every POST (the handshake,
// tools/list, tools/call, notifications), GET and DELETE, including those
// RefuseCalls refused.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ToolsListed returns how many tools/list requests reached the server (one
// per page; a client answering from its own cache sends none).
func (s *Server) ToolsListed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Tickets returns the tickets create_ticket created, oldest first.
func (s *Server) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tickets)
}

// SMSSent returns the messages send_sms sent, oldest first; its length is
// the number of sends.
func (s *Server) SMSSent() []SMS {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sms)
}
