package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// execute runs the tool with the claim held, and checks its result
// against the pinned output schema and the inline limit.
func (inv *invocation) execute(ctx context.Context, input json.RawMessage) *outcome {
	d, env := inv.d, inv.env
	// The tool must be done before the Lambda deadline (less the margin to
	// record its outcome) and before its claim's lease ends, after which
	// another attempt may take the key over.
	// The step's timeout_seconds, when the envelope carries one, bounds the
	// tool's work from its start (docs/solutions.md, "timeout_seconds").
	deadline := inv.leaseUntil.Add(-min(d.cfg.DeadlineMargin, d.cfg.Lease/10))
	if dl, ok := ctx.Deadline(); ok && dl.Add(-d.cfg.DeadlineMargin).Before(deadline) {
		deadline = dl.Add(-d.cfg.DeadlineMargin)
	}
	timedOut := "the tool did not finish within its deadline"
	if n := env.TimeoutSeconds; n > 0 {
		if step := time.Now().Add(time.Duration(n) * time.Second); step.Before(deadline) {
			deadline = step
			timedOut = fmt.Sprintf("the tool did not finish within the step's timeout_seconds, %d s", n)
		}
	}
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	inv.running = true
	go func() {
		defer func() {
			if p := recover(); p != nil {
				d.log.ErrorContext(ctx, "tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- result{err: &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: true}}
			}
		}()
		out, err := d.run(runCtx, &toolcall.Call{Envelope: env, Input: input, Pinned: inv.pinned, Toolset: inv.ts, Attempt: inv.attempt, ExternalKey: inv.externalKey})
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-runCtx.Done():
		// A result that arrives within a short grace is still known; a tool
		// that ignores its context is not waited for longer: its outcome is
		// unknown, and the function must answer before its deadline.
		grace := time.NewTimer(min(d.cfg.DeadlineMargin/2, d.cfg.Lease/20, time.Second)) // ends before the lease
		select {
		case res = <-done:
		case <-grace.C:
			res.err = tool.Errorf(tool.Timeout, "%s", timedOut).Applied()
		}
		grace.Stop()
	}
	// inv.running stays set until the outcome is classified: a panic from
	// here on (in the classification or the output's checks) comes after
	// the tool may have acted, and phases records it as maybe applied.
	if res.err != nil {
		te := tool.Classify(res.err)
		var typed *tool.Error
		if errors.As(res.err, &typed) && typed == nil {
			// A typed nil *tool.Error is no classification at all.
			te = &tool.Error{Code: tool.Internal, Message: "internal error", Err: res.err}
		}
		if !errors.As(res.err, &typed) && errors.Is(res.err, context.DeadlineExceeded) && runCtx.Err() != nil {
			// The tool gave up at the deadline it was given: say which.
			te = &tool.Error{Code: tool.Timeout, Message: timedOut, MaybeApplied: true, Err: res.err}
		}
		if te.Code == tool.CallParked {
			// Only the check before the claim parks a call: a tool that
			// ran cannot answer that it was not sent.
			te = &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: !inv.pinned.Idempotent, Err: res.err}
		}
		if (!errors.As(res.err, &typed) || typed == nil) && !inv.pinned.Idempotent {
			// A failure the tool did not classify may have come after its
			// effect: for a tool that must not run twice, assume it did.
			te.MaybeApplied = true
		}
		return inv.failed(te)
	}
	out, err := inv.checkOutput(res.out)
	if err != nil {
		te := tool.Classify(err)
		// The tool returned success, so its effect happened: for a tool that
		// must not run twice, the outcome is in doubt, not failed.
		te.MaybeApplied = te.MaybeApplied || !inv.pinned.Idempotent
		return inv.failed(te)
	}
	return succeeded(out)
}

// checkOutput validates the whole result against the pinned output
// schema, keeps the fields the envelope's keep names, and checks the kept
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
// schema.
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
		return tool.Errorf(tool.OutputInvalid, "the result does not match the pinned output schema: %s", redactedProblems("output", err))
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
