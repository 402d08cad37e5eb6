package tool

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

func TestRetryableTable(t *testing.T) {
	want := map[Code]bool{Timeout: true, RateLimited: true, UpstreamUnavailable: true}
	if len(Codes()) != 9 {
		t.Fatalf("%d codes", len(Codes()))
	}
	for _, c := range Codes() {
		if c.Retryable() != want[c] {
			t.Errorf("%s retryable = %v", c, c.Retryable())
		}
		if !c.Known() {
			t.Errorf("%s unknown", c)
		}
	}
	if Code("TOOL_SOMETHING").Retryable() || Code("TOOL_SOMETHING").Known() {
		t.Fatal("unknown code classified")
	}
}

func TestClassify(t *testing.T) {
	typed := Errorf(RateLimited, "slow down")
	cases := []struct {
		name    string
		err     error
		code    Code
		applied bool
	}{
		{"typed", typed, RateLimited, false},
		{"wrapped typed", fmt.Errorf("send: %w", typed), RateLimited, false},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), Timeout, true},
		{"cancel", context.Canceled, UpstreamUnavailable, true},
		{"foreign", errors.New("dial tcp: secret-host"), Internal, false},
		{"unknown code", &Error{Code: "NOPE", Message: "x"}, Internal, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.err)
			if got.Code != c.code || got.MaybeApplied != c.applied {
				t.Fatalf("Classify = %+v", got)
			}
			if c.code == Internal && got.Message != "internal error" {
				t.Fatalf("internal message leaks: %q", got.Message)
			}
		})
	}
	if Classify(nil) != nil {
		t.Fatal("nil")
	}
	cause := errors.New("cause")
	if !errors.Is(Wrap(Internal, cause, "x"), cause) {
		t.Fatal("Unwrap")
	}
}

func TestEdge(t *testing.T) {
	for _, c := range Codes() {
		err := Edge(fmt.Errorf("wrapped: %w", Errorf(c, "m")))
		ive, ok := err.(messages.InvokeResponse_Error)
		if !ok || ive.Type != string(c) || ive.Message != "m" {
			t.Fatalf("%s: Edge = %#v", c, err)
		}
	}
	ive := Edge(errors.New("secret internals")).(messages.InvokeResponse_Error)
	if ive.Type != string(Internal) || ive.Message != "internal error" {
		t.Fatalf("foreign error leaks: %#v", ive)
	}
	if Edge(nil) != nil {
		t.Fatal("nil")
	}
}

// CALL_PARKED and APPROVAL_EXPIRED are the contract's Step Functions
// errors for a call that was not sent: not tool codes, so no compiled
// Retry matches them and nothing counts them as retryable, but Classify
// and Edge keep each as its own errorType (never TOOL_INTERNAL), and they
// are never maybe applied.
func TestCallParkedAndApprovalExpiredAreStepFunctionsErrorsOfTheirOwn(t *testing.T) {
	for _, code := range []Code{CallParked, ApprovalExpired} {
		t.Run(string(code), func(t *testing.T) {
			for _, c := range Codes() {
				if c == code {
					t.Fatalf("%s is one of the tool codes", code)
				}
			}
			for _, c := range RetryableCodes() {
				if c == string(code) {
					t.Fatalf("%s is retryable", code)
				}
			}
			if code.Retryable() || code.Known() {
				t.Fatalf("%s classified as a tool code", code)
			}
			notSent := &Error{Code: code, Message: "crm.create_ticket was not sent", MaybeApplied: true}
			got := Classify(fmt.Errorf("check: %w", notSent))
			if got.Code != code || got.MaybeApplied || got.Retryable() || got.Message != notSent.Message {
				t.Fatalf("Classify = %+v", got)
			}
			if !notSent.MaybeApplied {
				t.Fatal("Classify changed the caller's error")
			}
			ive, ok := Edge(notSent).(messages.InvokeResponse_Error)
			if !ok || ive.Type != string(code) || ive.Message != notSent.Message {
				t.Fatalf("Edge = %#v", ive)
			}
		})
	}
}
