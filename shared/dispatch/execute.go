package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// execute runs the tool with the claim held, and checks its result
// against the pinned output schema and the inline limit. The deadline it
// gives the tool (toolDeadline) and the code the tool's end gets
// (classifyEnd, classifyOutput) are pure functions of what execute saw.
func (inv *invocation) execute(ctx context.Context, input json.RawMessage) *outcome {
	d, env := inv.d, inv.env
	inv.ranInput = input
	bounds := deadlineBounds{Now: time.Now(), LeaseUntil: inv.leaseUntil, Margin: d.cfg.DeadlineMargin, Lease: d.cfg.Lease, StepSeconds: env.TimeoutSeconds}
	bounds.Lambda, _ = ctx.Deadline()
	deadline, timedOut := toolDeadline(bounds)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	done := make(chan toolEnd, 1)
	inv.running = true
	go func() {
		defer func() {
			if p := recover(); p != nil {
				d.log.ErrorContext(ctx, "tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- toolEnd{panicked: true}
			}
		}()
		out, err := d.run(runCtx, &toolcall.Call{Envelope: env, Input: input, Pinned: inv.pinned, Toolset: inv.ts, Attempt: inv.attempt, ExternalKey: inv.externalKey, Trace: inv.callTrace(), Credential: inv.cred})
		done <- toolEnd{out: out, err: err}
	}()
	var end toolEnd
	select {
	case end = <-done:
	case <-runCtx.Done():
		// A result that arrives within a short grace is still known; a tool
		// that ignores its context is not waited for longer: its outcome is
		// unknown, and the function must answer before its deadline.
		grace := time.NewTimer(min(d.cfg.DeadlineMargin/2, d.cfg.Lease/20, time.Second)) // ends before the lease
		select {
		case end = <-done:
		case <-grace.C:
			end.abandoned = true
		}
		grace.Stop()
	}
	end.pastDeadline = runCtx.Err() != nil
	// inv.running stays set until the outcome is classified: a panic from
	// here on (in the classification or the output's checks) comes after
	// the tool may have acted, and phases records it as maybe applied.
	if te := classifyEnd(end, inv.pinned.Idempotent, inv.cred != nil, timedOut); te != nil {
		return inv.failed(te)
	}
	out, err := inv.checkOutput(end.out)
	if err != nil {
		return inv.failed(classifyOutput(err, inv.pinned.Idempotent))
	}
	return succeeded(out)
}

// deadlineBounds are what bounds a tool's run.
type deadlineBounds struct {
	Now        time.Time
	LeaseUntil time.Time // the end of this attempt's claim
	// Lambda is the function's deadline (the invocation context's); zero:
	// none.
	Lambda time.Time
	Margin time.Duration // Config.DeadlineMargin
	Lease  time.Duration // Config.Lease
	// StepSeconds is the envelope's timeout_seconds (docs/solutions.md,
	// "timeout_seconds"); 0: none.
	StepSeconds int
}

// toolDeadline is when the tool must be done, and the message a call
// that runs past it fails with: the earliest of the claim's end less
// min(Margin, Lease/10) (after it another attempt may take the key over),
// the Lambda deadline less Margin (to record the outcome before the
// function is stopped), and the step's timeout_seconds from Now (which
// bounds the tool's work from its start, and names itself in the message).
func toolDeadline(b deadlineBounds) (time.Time, string) {
	deadline := b.LeaseUntil.Add(-min(b.Margin, b.Lease/10))
	if !b.Lambda.IsZero() && b.Lambda.Add(-b.Margin).Before(deadline) {
		deadline = b.Lambda.Add(-b.Margin)
	}
	timedOut := "the tool did not finish within its deadline"
	if n := b.StepSeconds; n > 0 {
		if step := b.Now.Add(time.Duration(n) * time.Second); step.Before(deadline) {
			deadline = step
			timedOut = fmt.Sprintf("the tool did not finish within the step's timeout_seconds, %d s", n)
		}
	}
	return deadline, timedOut
}

// toolEnd is how a tool's run ended, as execute saw it.
type toolEnd struct {
	out json.RawMessage // the tool's result
	err error           // the tool's error
	// panicked: the tool panicked (its effect may have happened).
	panicked bool
	// abandoned: the tool had not returned by its deadline and the grace
	// after it; it was not waited for.
	abandoned bool
	// pastDeadline: the tool's context was done when execute stopped
	// waiting for it.
	pastDeadline bool
}

// classifyEnd is the *tool.Error a tool's end fails the call with, or nil
// when the tool returned a result (checked next, classifyOutput). The
// codes are the contract's (docs/tools.md): a panic is TOOL_INTERNAL and an
// abandoned run TOOL_TIMEOUT (with timedOut, from toolDeadline), both
// maybe applied; a *tool.Error keeps its code, except CALL_PARKED, which
// only the check before the claim may answer (it becomes TOOL_INTERNAL)
// but for one case: a call that carried a credential (credentialed) whose
// server refused it as an invalid token (credential.Credential.Refused,
// cause credential.CauseExpired; RFC 6750 §3.1) stays CALL_PARKED, never maybe
// applied (the server refused the request), so that its record is
// finished FAILED, the attempt counted toward tool.MaxAttempts, a PARKED
// row of the attempt written (record), and the call is sent again under
// the same key, as the next attempt, once its credentials are renewed
// (docs/credentials.md, "Expiry"; docs/parking.md);
// an untyped error is TOOL_INTERNAL (tool.Classify), or TOOL_TIMEOUT
// when it is the deadline the tool was given; a typed nil *tool.Error is
// no classification at all (TOOL_INTERNAL). A failure the tool did not
// classify may have come after its effect: for a tool that must not run
// twice (idempotent false) it is maybe applied.
func classifyEnd(end toolEnd, idempotent, credentialed bool, timedOut string) *tool.Error {
	switch {
	case end.panicked:
		return &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: true}
	case end.abandoned:
		return tool.Errorf(tool.Timeout, "%s", timedOut).Applied()
	case end.err == nil:
		return nil
	}
	te := tool.Classify(end.err)
	var typed *tool.Error
	isTyped := errors.As(end.err, &typed)
	if isTyped && typed == nil {
		// A typed nil *tool.Error is no classification at all.
		te = &tool.Error{Code: tool.Internal, Message: "internal error", Err: end.err}
	}
	if !isTyped && errors.Is(end.err, context.DeadlineExceeded) && end.pastDeadline {
		// The tool gave up at the deadline it was given: say which.
		te = &tool.Error{Code: tool.Timeout, Message: timedOut, MaybeApplied: true, Err: end.err}
	}
	if te.Code == tool.CallParked && credentialed && strings.HasPrefix(te.Message, credential.CauseExpired+":") {
		// The server refused the call's credential: nothing was applied.
		return te
	}
	if te.Code == tool.CallParked || te.Code == tool.ApprovalExpired {
		// Only the check before the claim parks a call, and only the
		// approval check refuses an expired approval (approval.go): a tool
		// that ran cannot answer that it was not sent.
		te = &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: !idempotent, Err: end.err}
	}
	if (!isTyped || typed == nil) && !idempotent {
		// A failure the tool did not classify may have come after its
		// effect: for a tool that must not run twice, assume it did.
		te.MaybeApplied = true
	}
	return te
}

// classifyOutput is the *tool.Error a result that fails its checks
// (checkOutput) fails the call with: its code (tool.Classify), maybe
// applied for a tool that must not run twice, since the tool returned
// success and its effect happened.
func classifyOutput(err error, idempotent bool) *tool.Error {
	te := tool.Classify(err)
	te.MaybeApplied = te.MaybeApplied || !idempotent
	return te
}

// checkOutput validates the whole result against the pinned output
// schema (or an approved definition's: validateOutput), keeps the fields the envelope's keep names, and checks the kept
// result against the call's output limit: what the call returns, the
// ledger keeps and every replay returns (docs/solutions.md, "State size").
func (inv *invocation) checkOutput(out json.RawMessage) (json.RawMessage, error) {
	if err := inv.validateOutput(out); err != nil {
		return nil, err
	}
	kept, err := tool.Keep(out, inv.env.Keep)
	if err != nil {
		return nil, tool.Wrap(tool.OutputInvalid, err, "the result's fields cannot be kept")
	}
	limit, what := inv.d.cfg.InlineLimit, "the deployment's inline limit"
	if n := inv.env.OutputLimitBytes; n > 0 && n < limit {
		limit, what = n, "the step's output_limit_bytes"
	}
	if len(kept) > limit {
		return nil, tool.Errorf(tool.OutputInvalid, "the result is %d bytes, over %s, %d bytes: Step Functions limits a whole execution's state to 256 KiB and every step's result accumulates in it, so keep fewer fields", len(kept), what, limit)
	}
	return kept, nil
}

// validateOutput validates the whole result against the pinned output
// schema, or, on a call sent under an approved definition change, that
// definition's (check; docs/parking.md, "Sending a parked call again").
func (inv *invocation) validateOutput(out json.RawMessage) error {
	// A result far over any limit is not decoded: nothing of it could be
	// returned (Lambda answers at most 6 MB).
	if len(out) > maxResultBytes {
		return tool.Errorf(tool.OutputInvalid, "the result is %d bytes, over the %d bytes a function can answer", len(out), maxResultBytes)
	}
	s, err := schema.Compile(inv.pinned.OutputSchema)
	if err != nil {
		return tool.Wrap(tool.Internal, err, "the pinned output schema does not compile")
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return tool.Wrap(tool.OutputInvalid, err, "the result is not JSON")
	}
	if n := longestNumber(out); n > inputrecord.NumberBytes {
		return tool.Errorf(tool.OutputInvalid, "the result writes a number with %d characters, over %d: Step Functions holds numbers as doubles, whose shortest form is at most %d characters, and the state-size check counts them so (docs/solutions.md, \"State size\")",
			n, inputrecord.NumberBytes, inputrecord.NumberBytes)
	}
	if err := s.Validate(v); err != nil {
		which := "the pinned output schema"
		if inv.outputApproved {
			which = "the output schema of the definition approved for this call"
		}
		return tool.Errorf(tool.OutputInvalid, "the result does not match %s: %s", which, redactedProblems("output", err))
	}
	return nil
}

// longestNumber is the length of the longest number token of the JSON
// text js (outside strings), in bytes; js is valid JSON.
func longestNumber(js []byte) int {
	longest, run, inString, escaped := 0, 0, false, false
	for _, b := range js {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString, run = true, 0
		case b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E' || (b >= '0' && b <= '9'):
			run++
			longest = max(longest, run)
		default:
			run = 0
		}
	}
	return longest
}

// maxResultBytes is the largest result the dispatcher decodes: a Lambda
// function's synchronous response is at most 6 MB (AWS Lambda quotas).
const maxResultBytes = 6 << 20
