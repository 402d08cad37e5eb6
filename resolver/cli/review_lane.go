package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The direct lane's waiting bounds: `toolgate invoke` runs within 16
// minutes (Lambda's 15-minute maximum, and some), and must leave the tool
// its own time after the decision.
const (
	DefaultReviewWait = 5 * time.Minute
	MaxReviewWait     = 10 * time.Minute
	// reviewGrace keeps an approval given at the last moment of the wait
	// usable for the call that follows it.
	reviewGrace = time.Minute
	// directReviewStep is the review step of a direct-lane review: there is
	// no review step in a Solution.
	directReviewStep = "invoke-review"
)

// defaultReviewPoll is how often the direct lane reads its review.
const defaultReviewPoll = 2 * time.Second

// reviewLane is the direct lane's review of a gated tool: `toolgate
// invoke` of a tool the pinned toolset gates, without an approval, asks
// the review-request function for a review (no task token), polls it for
// the decision, and sends the call with the approval. The invoker never
// reads or writes review items itself: only the review functions do.
type reviewLane struct {
	wait     time.Duration
	endpoint string // review-request under the RIE
	function string
	prover   *prover // signs each request's caller proof
	app      *app
}

// addReviewLane registers the lane's flags on invoke's flag set.
func (a *app) addReviewLane(fs *pflag.FlagSet) *reviewLane {
	l := &reviewLane{app: a}
	fs.DurationVar(&l.wait, "wait-timeout", DefaultReviewWait, "gated tools: how long to wait for the review's decision (at most 10m)")
	fs.StringVar(&l.endpoint, "review-endpoint", "", "gated tools: the review-request function's Lambda endpoint `URL` (under the RIE locally; default: the standard AWS configuration)")
	fs.StringVar(&l.function, "review-function", "", "gated tools: the review-request function's `NAME` or ARN (default: review-request:direct, its direct alias; with --review-endpoint, \"function\")")
	return l
}

// gate returns the payload to send: unchanged unless the run's pinned
// toolset gates the tool and the envelope carries no approval; then with
// the approval of a review requested and decided meanwhile. Any other exit
// code than ExitOK ends the command (rejected, no decision in time,
// misuse).
func (l *reviewLane) gate(ctx context.Context, ts *toolset.Toolset, payload []byte, stderr io.Writer) ([]byte, int) {
	env, err := tool.DecodeEnvelope(payload)
	if err != nil || len(env.Approval) > 0 {
		return payload, ExitOK // the dispatcher refuses a bad envelope, and checks an approval
	}
	fail := func(code int, format string, a ...any) ([]byte, int) {
		fmt.Fprintf(stderr, "toolgate invoke: "+format+"\n", a...)
		return nil, code
	}
	if t, ok := ts.Tools[env.Tool]; !ok || !t.ReviewRequired {
		return payload, ExitOK
	}
	if l.wait < time.Second || l.wait > MaxReviewWait {
		return fail(ExitMisuse, "--wait-timeout %s is outside 1s..%s", l.wait, MaxReviewWait)
	}
	fn := l.function
	switch {
	case fn != "":
	case l.endpoint != "":
		fn = rieFunctionName
	default:
		fn = "review-request:direct"
	}
	_, digest, err := tool.InputDigest(env.Input)
	if err != nil {
		return fail(ExitMisuse, "%v", err)
	}
	var requested review.RequestResult
	req := review.LaneRequest{Action: review.LaneRequestAction, ReviewedCall: tool.ReviewedCall{RunID: env.RunID, Step: directReviewStep, Of: env.Step,
		Tool: env.Tool, ToolsetID: env.ToolsetID, Input: env.Input, TimeoutSeconds: int((l.wait + reviewGrace).Seconds())}}
	if code := l.call(ctx, fn, req, review.RequestBinding(req, digest), &requested, stderr); code != ExitOK {
		return nil, code
	}
	id := requested.ReviewID
	fmt.Fprintf(stderr, "%s is gated: review %s requested (run %s, step %s)\n", env.Tool, id, env.RunID, env.Step)
	fmt.Fprintf(stderr, "waiting up to %s for a decision: toolgate review approve %s | toolgate review reject %s --reason TEXT\n", l.wait, id, id)
	deadline := time.Now().Add(l.wait)
	for {
		var st review.LaneStatus
		if code := l.call(ctx, fn, review.LaneRequest{Action: review.LaneStatusAction, ReviewID: id},
			caller.Binding{Action: caller.ActionStatus, Target: id}, &st, stderr); code != ExitOK {
			return nil, code
		}
		if d := st.Decision; d != nil {
			how := ""
			if !d.Authenticated {
				how = " (unauthenticated)"
			}
			if d.Decision != review.Approve {
				return fail(ExitErrors, "review %s rejected by %s%s: %s; nothing was sent", id, d.Approver, how, d.Reason)
			}
			fmt.Fprintf(stderr, "review %s approved by %s%s\n", id, d.Approver, how)
			return withApproval(payload, d, stderr)
		}
		if time.Now().After(deadline) {
			return fail(ExitErrors, "no decision on review %s within %s; nothing was sent (the review expires at %s)", id, l.wait, st.ExpiresAt)
		}
		select {
		case <-ctx.Done():
			return fail(ExitErrors, "waiting for review %s: %v", id, ctx.Err())
		case <-time.After(min(l.app.env.reviewPoll, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// call invokes review-request with req, its caller proof bound to b, and
// decodes its answer into out.
func (l *reviewLane) call(ctx context.Context, fn string, req review.LaneRequest, b caller.Binding, out any, stderr io.Writer) int {
	var err error
	if req.Proof, err = l.prover.sign(ctx, b); err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: review: %v\n", err)
		return ExitErrors
	}
	payload, err := json.Marshal(req)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitErrors
	}
	res, errType, errMsg, err := l.app.invokeLambda(ctx, l.endpoint, fn, payload)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "toolgate invoke: review: %v\n", err)
		return ExitErrors
	case errType != "":
		fmt.Fprintf(stderr, "toolgate invoke: review %s: %s: %s\n", req.Action, errType, errMsg)
		return ExitErrors
	}
	if err := json.Unmarshal(res, out); err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: review %s: unexpected answer: %.200s\n", req.Action, res)
		return ExitErrors
	}
	return ExitOK
}

// withApproval adds the decision JSON to the envelope as its approval.
func withApproval(payload []byte, d *review.Decision, stderr io.Writer) ([]byte, int) {
	var env map[string]json.RawMessage
	approval, err := json.Marshal(d)
	if err == nil {
		err = json.Unmarshal(payload, &env)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return nil, ExitErrors
	}
	env[tool.MemberApproval] = approval
	out, err := json.Marshal(env)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return nil, ExitErrors
	}
	return out, ExitOK
}
