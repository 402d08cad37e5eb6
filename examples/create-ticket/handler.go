package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Request is the proxy's request (docs/tools.md, "Platform tools"); this
// function reads the members it needs.
type Request struct {
	Input          TicketInput `json:"input"`
	IdempotencyKey string      `json:"idempotency_key"`
	Attempt        int         `json:"attempt"`
	// RunID is the run part of IdempotencyKey, opaque: the same for
	// every call of one run.
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	Tool  string `json:"tool"`
}

// TicketInput is the tool's input, already validated by the proxy
// against the toolset's pinned input schema.
type TicketInput struct {
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Priority string `json:"priority,omitempty"`
}

// Result is the tool's result: the ticket's id, and whether this call
// created it (false when an earlier attempt under the same key did).
type Result struct {
	TicketID string `json:"ticket_id"`
	Created  bool   `json:"created"`
}

// ErrorAnswer is the documented error shape: {"error": {"code", "message",
// "maybe_applied"}}.
type ErrorAnswer struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an ErrorAnswer's member.
type ErrorBody struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	MaybeApplied bool   `json:"maybe_applied,omitempty"`
}

// Handler creates tickets through the ticket service at Base.
type Handler struct {
	Base   string
	Client *http.Client
}

// Handle answers one request: a Result, or an ErrorAnswer for a failure
// the tool contract has a code for. It returns a Go error only for what
// it cannot answer at all, which the proxy reports as TOOL_INTERNAL.
func (h *Handler) Handle(ctx context.Context, req Request) (any, error) {
	if req.IdempotencyKey == "" {
		return fail("TOOL_INPUT_INVALID", "the request carries no idempotency key", false), nil
	}
	body, err := json.Marshal(req.Input)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.Base, "/")+"/tickets", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	// The ticket service keeps one ticket per Idempotency-Key: a retry
	// under the same key answers the ticket the first attempt created.
	hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	resp, err := h.Client.Do(hr)
	if err != nil {
		// The request may have reached the service.
		return fail("TOOL_UPSTREAM_UNAVAILABLE", "the ticket service did not answer", true), nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		var t struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.ID == "" {
			return fail("TOOL_UPSTREAM_UNAVAILABLE", "the ticket service answered no ticket id", true), nil
		}
		return Result{TicketID: t.ID, Created: resp.StatusCode == http.StatusCreated}, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return fail("TOOL_RATE_LIMITED", "the ticket service is rate limiting", false), nil
	case resp.StatusCode >= 500:
		return fail("TOOL_UPSTREAM_UNAVAILABLE", fmt.Sprintf("the ticket service answered HTTP %d", resp.StatusCode), true), nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fail("TOOL_PERMISSION_DENIED", "the ticket service refused this function's credentials", false), nil
	default:
		return fail("TOOL_PERMANENT_FAILURE", fmt.Sprintf("the ticket service refused the ticket (HTTP %d)", resp.StatusCode), false), nil
	}
}

func fail(code, message string, maybeApplied bool) ErrorAnswer {
	return ErrorAnswer{Error: ErrorBody{Code: code, Message: message, MaybeApplied: maybeApplied}}
}
