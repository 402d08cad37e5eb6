package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/mcpmeta"
)

// The names of the tools a Server starts with.
const (
	CreateTicket   = "create_ticket"
	SendSMS        = "send_sms"
	LookupCustomer = "lookup_customer"
)

// Ticket is one ticket create_ticket created.
type Ticket struct {
	// ID is "T-" and a sequence number from 1: T-1, T-2, …
	ID       string
	Title    string
	Priority string
	// IdempotencyKey is the request's io.toolgate/idempotency-key, "" if it
	// had none.
	IdempotencyKey string
}

// SMS is one message send_sms sent.
type SMS struct {
	To   string
	Text string
}

// customers are what lookup_customer knows, by customer_id.
var customers = map[string]map[string]any{
	"C-1": {"customer_id": "C-1", "name": "Ada Lovelace", "tier": "platinum"},
	"C-2": {"customer_id": "C-2", "name": "Grace Hopper", "tier": "gold"},
	"C-3": {"customer_id": "C-3", "name": "Alan Turing", "tier": "basic"},
}

// runFunc is a tool's own behaviour, as the SDK's typed handler: it returns
// either a result or an output value (the structured content, which the SDK
// checks against the output schema), or an error the SDK turns into an
// isError result.
type runFunc = mcp.ToolHandlerFor[map[string]any, any]

// tool is a tool's current definition, behaviour and pending faults.
type tool struct {
	def mcp.Tool
	run runFunc

	fail   []string // isError texts, one per coming call
	breaks int      // coming results that break the output schema
	delays []delay  // one per coming call
}

func defaultTools(s *Server) []*tool {
	return []*tool{
		{
			def: mcp.Tool{
				Name:        CreateTicket,
				Title:       "Create a ticket",
				Description: "Creates a support ticket. A request carrying the _meta key " + mcpmeta.IdempotencyKey + " creates at most one ticket per key.",
				InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"title": {"type": "string", "minLength": 1, "maxLength": 200},
		"priority": {"type": "string", "enum": ["low", "normal", "high"]}
	},
	"required": ["title", "priority"],
	"additionalProperties": false
}`),
				OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"ticket_id": {"type": "string"},
		"created": {"type": "boolean", "description": "false when an earlier request with the same idempotency key created the ticket"}
	},
	"required": ["ticket_id", "created"],
	"additionalProperties": false
}`),
				Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
			},
			run: s.createTicket,
		},
		{
			def: mcp.Tool{
				Name:        SendSMS,
				Title:       "Send an SMS",
				Description: "Sends a text message. Every request sends one; there is no idempotency key.",
				InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"to": {"type": "string", "pattern": "^\\+?[0-9]+$"},
		"text": {"type": "string", "maxLength": 160}
	},
	"required": ["to", "text"],
	"additionalProperties": false
}`),
				Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)},
			},
			run: s.sendSMS,
		},
		{
			def: mcp.Tool{
				Name:        LookupCustomer,
				Title:       "Look up a customer",
				Description: "Returns a customer's name and tier. Known: C-1, C-2, C-3.",
				InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"customer_id": {"type": "string", "pattern": "^C-[0-9]+$"}
	},
	"required": ["customer_id"],
	"additionalProperties": false
}`),
				OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"customer_id": {"type": "string"},
		"name": {"type": "string"},
		"tier": {"type": "string", "enum": ["basic", "gold", "platinum"]}
	},
	"required": ["customer_id", "name", "tier"],
	"additionalProperties": false
}`),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
			},
			run: s.lookupCustomer,
		},
	}
}

func ptr[T any](v T) *T { return &v }

func (s *Server) createTicket(_ context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
	title, _ := args["title"].(string)
	priority, _ := args["priority"].(string)
	key, _ := req.Params.Meta[mcpmeta.IdempotencyKey].(string)

	s.mu.Lock()
	defer s.mu.Unlock()
	if key != "" {
		for _, t := range s.tickets {
			if t.IdempotencyKey != key {
				continue
			}
			if t.Title != title || t.Priority != priority {
				return nil, nil, fmt.Errorf("idempotency key %q was used for ticket %s with other arguments", key, t.ID)
			}
			return nil, map[string]any{"ticket_id": t.ID, "created": false}, nil
		}
	}
	t := Ticket{ID: fmt.Sprintf("T-%d", len(s.tickets)+1), Title: title, Priority: priority, IdempotencyKey: key}
	s.tickets = append(s.tickets, t)
	return nil, map[string]any{"ticket_id": t.ID, "created": true}, nil
}

func (s *Server) sendSMS(_ context.Context, _ *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
	m := SMS{}
	m.To, _ = args["to"].(string)
	m.Text, _ = args["text"].(string)
	s.mu.Lock()
	s.sms = append(s.sms, m)
	n := len(s.sms)
	s.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("message %d sent to %s", n, m.To)}}}, nil, nil
}

func (s *Server) lookupCustomer(_ context.Context, _ *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
	id, _ := args["customer_id"].(string)
	c, ok := customers[id]
	if !ok {
		return nil, nil, fmt.Errorf("no customer %s", id)
	}
	return nil, c, nil
}

// register adds or replaces t on the MCP server with its current definition.
// The caller holds s.mu or is Start.
func (s *Server) register(t *tool) error {
	if err := checkSchema(t.def.InputSchema, true); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if t.def.OutputSchema != nil {
		if err := checkSchema(t.def.OutputSchema, false); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	s.tools[t.def.Name] = t
	def := t.def
	mcp.AddTool(s.mcp, &def, s.handler(t.def.Name))
	return nil
}

// handler runs the named tool with its pending faults applied: a queued
// failure answers isError without running the tool; otherwise the tool runs
// (and does its side effect), a queued break replaces its structured
// content, and a queued delay holds the answer back.
func (s *Server) handler(name string) runFunc {
	return func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
		s.mu.Lock()
		t, ok := s.tools[name]
		if !ok {
			s.mu.Unlock()
			return nil, nil, fmt.Errorf("tool %s was removed", name)
		}
		var (
			failText string
			failing  bool
			breaking bool
			d        *delay
		)
		if len(t.fail) > 0 {
			failText, failing = t.fail[0], true
			t.fail = t.fail[1:]
		}
		if t.breaks > 0 && !failing {
			t.breaks--
			breaking = true
		}
		if len(t.delays) > 0 {
			d = &t.delays[0]
			t.delays = t.delays[1:]
		}
		run := t.run
		s.mu.Unlock()

		var (
			res *mcp.CallToolResult
			out any
			err error
		)
		if failing {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: failText}}}
		} else {
			res, out, err = run(ctx, req, args)
		}
		if breaking && err == nil {
			res, out = brokenResult(), nil
		}
		if d != nil {
			if werr := s.wait(ctx, *d); werr != nil {
				// A protocol error, not an isError result: the tool did
				// not fail, its answer was dropped.
				return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "answer dropped: " + werr.Error()}
			}
		}
		return res, out, err
	}
}

// brokenResult is a result whose structured content lacks every required
// property of the default output schemas and has one they do not allow. The
// SDK does not check a result built this way.
func brokenResult() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		StructuredContent: map[string]any{"unexpected": true},
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"unexpected":true}`}},
	}
}
