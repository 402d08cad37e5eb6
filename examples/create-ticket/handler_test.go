package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/toolgate/toolgate/examples/create-ticket/ticketservice"
)

func TestHandle(t *testing.T) {
	svc := ticketservice.New()
	srv := httptest.NewServer(svc)
	defer srv.Close()
	h := &Handler{Base: srv.URL, Client: srv.Client()}
	req := Request{Input: TicketInput{Title: "printer on fire"}, IdempotencyKey: "run/1", Attempt: 1}
	first, err := h.Handle(context.Background(), req)
	if err != nil || first != (Result{TicketID: "T-1", Created: true}) {
		t.Fatalf("first: %+v %v", first, err)
	}
	req.Attempt = 2
	again, err := h.Handle(context.Background(), req)
	if err != nil || again != (Result{TicketID: "T-1", Created: false}) || len(svc.Tickets()) != 1 {
		t.Fatalf("same key again: %+v %v, %d tickets", again, err, len(svc.Tickets()))
	}
	for status, code := range map[int]string{429: "TOOL_RATE_LIMITED", 503: "TOOL_UPSTREAM_UNAVAILABLE", 403: "TOOL_PERMISSION_DENIED", 422: "TOOL_PERMANENT_FAILURE"} {
		svc.FailNext(status)
		got, err := h.Handle(context.Background(), Request{Input: TicketInput{Title: "x"}, IdempotencyKey: "run/2"})
		if a, ok := got.(ErrorAnswer); err != nil || !ok || a.Error.Code != code {
			t.Errorf("HTTP %d: %+v %v", status, got, err)
		}
	}
	sent := svc.Requests()
	if got, _ := h.Handle(context.Background(), Request{Input: TicketInput{Title: "x"}}); got.(ErrorAnswer).Error.Code != "TOOL_INPUT_INVALID" {
		t.Errorf("no key: %+v", got)
	}
	if n := svc.Requests() - sent; n != 0 {
		t.Errorf("no key: the ticket service received %d requests, want none", n)
	}
}
