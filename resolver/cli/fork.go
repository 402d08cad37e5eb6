package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// forkOptions are toolgate fork's flags.
type forkOptions struct {
	pf                  platformFlags
	solution, inputFile string
	// toolset, when set, is the registered toolset the corrected Solution
	// is published against (resolver.WithToolset).
	toolset          string
	name, as         string
	rerunReads, wait bool
	timeout          time.Duration
	// arg names the positional argument (RUN or PARK_ID), and runOf
	// turns it into the run to fork.
	arg   string
	runOf func(ctx context.Context, pl *platform, p *prover, arg string) (string, error)
}

// newForkCmd is `toolgate fork RUN --solution FILE ...` (docs/fork.md).
func (a *app) newForkCmd() *cobra.Command {
	return a.forkCmd("fork RUN", "RUN", "", func(ctx context.Context, pl *platform, p *prover, arg string) (string, error) { return arg, nil })
}

// newParkedForkCmd is `toolgate parked fork PARK_ID --solution FILE ...`:
// toolgate fork of the park's run, read through review-decision's
// park.show (docs/fork.md).
func (a *app) newParkedForkCmd() *cobra.Command {
	return a.forkCmd("fork PARK_ID", "PARK_ID", "\n\nparked fork forks the run of the park PARK_ID, which park.show names (you must be\nallowed to see the park).",
		a.parkRun)
}

// parkRun reads the run of park id through review-decision's park.show,
// signed by p (the deployment's review-decision URL parameter: the
// Function URL, or on the local stack the function under the RIE).
func (a *app) parkRun(ctx context.Context, pl *platform, p *prover, id string) (string, error) {
	if !park.IDPattern.MatchString(id) {
		return "", fmt.Errorf("%q is not a park id", id)
	}
	at, err := pl.params.Get(ctx, deployment.ReviewDecisionURLParam(pl.p.stage))
	if err != nil {
		return "", fmt.Errorf("the review-decision function: %w", err)
	}
	req := review.DirectRequest{Action: review.ActionParkShow, ParkID: id}
	if req.Proof, err = p.sign(ctx, review.ParkShowBinding(id)); err != nil {
		return "", err
	}
	var out []byte
	var code, msg string
	if pl.p.paramsFile != "" {
		out, code, msg, err = a.callDecisionRIE(ctx, at, req)
	} else {
		out, code, msg, err = a.callFunctionURL(ctx, at, http.MethodGet, "/parks/"+id, nil, nil, map[string]string{review.ProofHeader: req.Proof})
	}
	switch {
	case err != nil:
		return "", err
	case code != "":
		return "", fmt.Errorf("park.show: %s: %s", code, msg)
	}
	var v park.View
	if err := json.Unmarshal(out, &v); err != nil || v.RunID == "" {
		return "", fmt.Errorf("park.show: unexpected answer: %.200s", out)
	}
	return v.RunID, nil
}

// forkCmd is toolgate fork (use "fork RUN") or toolgate parked fork:
// runOf turns the argument into the run to fork.
func (a *app) forkCmd(use, arg, more string, runOf func(ctx context.Context, pl *platform, p *prover, arg string) (string, error)) *cobra.Command {
	var o forkOptions
	o.runOf, o.arg = runOf, arg
	cmd := &cobra.Command{
		Use:   use + " --solution FILE [--toolset ID] [--toolsets DIR] [--input FILE.json] [--rerun-reads] [--name N] [--wait [--timeout D]] [--stage NAME] [--params FILE] [--endpoint URL] [--dynamodb-endpoint URL] [--as NAME]",
		Short: "fork a run with a corrected Solution, reusing what it already did",
		Long: `Forks the run RUN (its execution ARN): publishes the corrected Solution
FILE as toolgate publish does, names the fork's execution as toolgate run
does, asks review-decision for run.fork (you must be the run's starter or a
fork operator), which stops RUN if it still runs and records the fork once,
then starts the fork with RUN's input (or --input's) and trace, and prints
RUN's completed calls whose step the corrected Solution no longer has.
While calls of RUN are in progress, it waits for their lease and asks again;
calls whose outcome is unknown must first be reconciled (toolgate ledger
reconcile KEY). With --wait it follows the fork as toolgate run does.

--toolset ID publishes FILE against the registered toolset ID instead of
the one its toolset: member names (that member's value is replaced, and
nothing else); its lock file is read from --toolsets DIR, as toolgate
publish reads it.

Exit 0 once the fork started (with --wait: succeeded), 1 when refused or
failed, 2 on misuse (docs/fork.md).` + more,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.runFork(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	o.pf.register(a, fs)
	fs.StringVar(&o.solution, "solution", "", "the corrected Solution `FILE` (published first)")
	fs.StringVar(&o.toolset, "toolset", "", "publish FILE against the registered toolset `ID` (ts_...) instead of the one its toolset: names")
	a.addToolsetsFlag(cmd)
	fs.StringVar(&o.inputFile, "input", "", "the fork's input, a JSON `FILE` (default: the run's own input)")
	fs.BoolVar(&o.rerunReads, "rerun-reads", false, "run the fork's reads (tools whose contract needs no review) again instead of reusing the run's results")
	fs.StringVar(&o.name, "name", "", "the fork's execution name `N` (default: generated); never starting with "+tool.ChildNamePrefix)
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the caller proofs with `NAME`'s local keys ($"+EnvLocalKeys+")")
	fs.BoolVar(&o.wait, "wait", false, "follow the fork: one line per state, then the output or the error")
	fs.DurationVar(&o.timeout, "timeout", 24*time.Hour, "how long to wait for the run's calls in progress and, with --wait, to follow the fork")
	return cmd
}

// forkMisuse is the misuse of toolgate fork's arguments, if any.
func forkMisuse(cmd *cobra.Command, pos []string, o *forkOptions) (int, bool) {
	switch {
	case len(pos) != 1 && o.arg == "PARK_ID":
		return misuse(cmd, "name one park id"), true
	case len(pos) != 1:
		return misuse(cmd, "name one run (its execution ARN)"), true
	case o.arg == "RUN" && !isExecutionARN(pos[0]):
		return misuse(cmd, "%q is not an execution ARN (arn:aws:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME)", pos[0]), true
	case o.solution == "":
		return misuse(cmd, "--solution FILE is required: the corrected Solution"), true
	case o.toolset != "" && !tool.ToolsetIDPattern.MatchString(o.toolset):
		return misuse(cmd, "--toolset %q is not a toolset id (ts_ and 32 lower-case hex digits, as toolgate toolset register prints it)", o.toolset), true
	case o.name != "" && strings.HasPrefix(o.name, tool.ChildNamePrefix):
		return misuse(cmd, "--name %q starts with %s, which only workflow steps' children are named with", o.name, tool.ChildNamePrefix), true
	case o.as != "" && validAs(o.as) != nil:
		return misuse(cmd, "--as %q: %v", o.as, validAs(o.as)), true
	case o.timeout <= 0:
		return misuse(cmd, "--timeout must be positive"), true
	}
	return 0, false
}

func isExecutionARN(s string) bool {
	_, ok := review.ParseExecutionARN(s)
	return ok
}

func (a *app) runFork(cmd *cobra.Command, pos []string, o *forkOptions) int {
	if code, bad := forkMisuse(cmd, pos, o); bad {
		return code
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "toolgate fork: "+format+"\n", args...)
		return code
	}
	src, err := resolver.ReadFile(o.solution, resolver.SourceFile)
	if err != nil {
		return fail(ExitMisuse, "%v", err)
	}
	if o.toolset != "" {
		if src, err = resolver.WithToolset(o.solution, src, o.toolset); err != nil {
			return fail(ExitMisuse, "--toolset: %v", err)
		}
	}
	res := a.compileSource(o.solution, src)
	if !res.OK() {
		for _, d := range res.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		return fail(ExitErrors, "the Solution has errors: nothing was published or forked")
	}
	// A fork's calls learn their parent from its Starter's answer only: a
	// Solution without the Starter would make every call of the run again.
	if err := runner.Forkable(res.Definition); err != nil {
		return fail(ExitErrors, "%s cannot be a fork's Solution: %v: nothing was published or forked", o.solution, err)
	}
	var input []byte
	if o.inputFile != "" {
		if input, err = os.ReadFile(o.inputFile); err != nil {
			return fail(ExitMisuse, "%v", err)
		}
		if !json.Valid(input) {
			return fail(ExitMisuse, "%s is not JSON", o.inputFile)
		}
		if code, bad := a.refuseForkInput(stderr, res, input); bad {
			return code
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	pl, err := o.pf.open(ctx)
	if err != nil {
		return fail(ExitMisuse, "%v", err)
	}
	p, err := a.newProver(ctx, o.as)
	if err != nil {
		return fail(ExitMisuse, "%v", err)
	}
	parent, err := o.runOf(ctx, pl, p, pos[0])
	if err != nil {
		return fail(ExitErrors, "%v", err)
	}
	// a. The parent: its input {input, meta} and its trace.
	d, err := pl.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(parent)})
	if err != nil {
		return fail(ExitErrors, "read %s: %v", parent, err)
	}
	var pin struct {
		Input json.RawMessage `json:"input"`
		Meta  struct {
			Traceparent string `json:"traceparent"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Input)), &pin); err != nil || len(pin.Input) == 0 {
		return fail(ExitErrors, "%s's input is not {input, meta}: it was not started by toolgate run", parent)
	}
	if input == nil {
		input = pin.Input
		if code, bad := a.refuseForkInput(stderr, res, input); bad {
			return code
		}
	} else {
		fmt.Fprintf(stdout, "the fork's input is %s, not the run's: calls whose input changed run again\n", o.inputFile)
	}
	// b. Publish the corrected Solution, as toolgate publish does.
	local := pl.p.paramsFile != ""
	publishAt, err := pl.params.Get(ctx, deployment.PublishURLParam(pl.p.stage))
	if err != nil {
		return fail(ExitErrors, "the publish function: %v", err)
	}
	po := &publishOptions{url: publishAt, source: src}
	if local {
		po = &publishOptions{endpoint: publishAt, as: o.as, source: src}
	}
	if code := a.publishRun(cmd, []string{o.solution}, po); code != ExitOK {
		return fail(code, "nothing was forked")
	}
	// c. The fork's name and ARN, before anything starts.
	name := o.name
	if name == "" {
		name = runner.NewName()
	}
	fork, err := runner.ExecutionARN(ctx, pl.sfn, pl.p.stage, res.Solution.Name, name)
	if err != nil {
		return fail(ExitErrors, "%v", err)
	}
	// d. run.fork, again after the leases of calls in progress.
	decisionAt, err := pl.params.Get(ctx, deployment.ReviewDecisionURLParam(pl.p.stage))
	if err != nil {
		return fail(ExitErrors, "the review-decision function: %v", err)
	}
	var ans review.ForkResult
	for {
		req := review.DirectRequest{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, RerunReads: o.rerunReads}
		if req.Proof, err = p.sign(ctx, review.ForkBinding(parent, fork, o.rerunReads)); err != nil {
			return fail(ExitErrors, "sign run.fork: %v", err)
		}
		var out []byte
		var code, msg string
		if local {
			out, code, msg, err = a.callDecisionRIE(ctx, decisionAt, req)
		} else {
			body, _ := json.Marshal(review.ForkBody{RunID: parent, ForkRunID: fork, RerunReads: o.rerunReads})
			out, code, msg, err = a.callFunctionURL(ctx, decisionAt, http.MethodPost, "/forks", nil, body, map[string]string{review.ProofHeader: req.Proof})
			var eb review.ErrorBody
			if code != "" && json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
				msg = eb.Error.Message
			}
		}
		if err != nil {
			return fail(ExitErrors, "run.fork: %v", err)
		}
		if code == string(review.CodeForkWaiting) {
			if w, ok := review.ParseForkWaiting(msg); ok && a.waitForLease(ctx, w, stdout) {
				continue
			}
		}
		if code != "" {
			return fail(ExitErrors, "%s: %s", code, msg)
		}
		if err := json.Unmarshal(out, &ans); err != nil {
			return fail(ExitErrors, "unexpected answer: %.300s", out)
		}
		break
	}
	fmt.Fprintf(stdout, "forked %s (%s) as %s\n", parent, ans.ParentStatus, fork)
	for _, c := range Unreached(ans.Calls, res.Solution) {
		fmt.Fprintf(stdout, "  not reached by the corrected Solution: %s (step %s, %s)\n", c.Key, c.Step, c.Tool)
	}
	// e. Start the fork as toolgate run does, its start naming the parent.
	arn, err := runner.StartFork(ctx, pl.sfn, pl.p.stage, res.Solution.Name, input, name, runner.Meta{Traceparent: pin.Meta.Traceparent},
		func(ctx context.Context, executionARN, digest string) error {
			return a.recordForkStart(ctx, pl, p, executionARN, digest, parent, o.rerunReads, stderr)
		})
	var bad *resolver.InputError
	if errors.As(err, &bad) {
		fmt.Fprintf(stderr, "toolgate fork: the input is not one %s accepts; nothing was started:\n", res.Solution.Name)
		for _, l := range bad.Lines() {
			fmt.Fprintf(stderr, "  %s\n", l)
		}
		return ExitErrors
	}
	if err != nil {
		return fail(ExitErrors, "%v", err)
	}
	fmt.Fprintf(stdout, "started %s\n", arn)
	if !o.wait {
		return ExitOK
	}
	out, err := runner.Follow(ctx, pl.sfn, arn, 500*time.Millisecond, func(e runner.Event) { printEvent(stdout, e) })
	if err != nil {
		return fail(ExitErrors, "%v", err)
	}
	if out.Status == "SUCCEEDED" {
		fmt.Fprintf(stdout, "SUCCEEDED\n%s\n", out.Output)
		return ExitOK
	}
	fmt.Fprintf(stdout, "%s %s: %s\n", out.Status, out.Error, out.Cause)
	return ExitErrors
}

// refuseForkInput checks the fork's input against the corrected
// Solution's InputRecord (its input_limit_bytes, then its input schema;
// resolver.ReadInputRecord) before anything is published or forked: a
// refused input would otherwise be found only by the start, once run.fork
// had stopped the parent and recorded its fork. It prints the refusal and
// returns ExitErrors and true for an input the record refuses.
func (a *app) refuseForkInput(stderr io.Writer, res *resolver.Result, input []byte) (int, bool) {
	rec, err := resolver.ReadInputRecord(res.Definition)
	if err == nil {
		err = rec.Check(input)
	}
	if err == nil {
		return 0, false
	}
	var bad *resolver.InputError
	if !errors.As(err, &bad) {
		fmt.Fprintf(stderr, "toolgate fork: %s: %v: nothing was published or forked\n", res.Solution.Name, err)
		return ExitErrors, true
	}
	fmt.Fprintf(stderr, "toolgate fork: the input is not one %s accepts; nothing was published or forked:\n", res.Solution.Name)
	for _, l := range bad.Lines() {
		fmt.Fprintf(stderr, "  %s\n", l)
	}
	return ExitErrors, true
}

// waitForLease prints the keys of w and waits until its lease ends (and a
// second); false when ctx ends first or the lease is not a time.
func (a *app) waitForLease(ctx context.Context, w review.ForkWaiting, stdout io.Writer) bool {
	until, err := time.Parse(time.RFC3339Nano, w.LeaseUntil)
	if err != nil {
		return false
	}
	fmt.Fprintf(stdout, "waiting until %s for calls in progress: %s\n", w.LeaseUntil, strings.Join(w.Keys, ", "))
	t := time.NewTimer(time.Until(until) + time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Unreached are the completed calls of calls whose step is no tool step
// of sol (a for_each's body included): the parent did them, and the fork
// never will.
func Unreached(calls []review.ForkCall, sol *resolver.Solution) []review.ForkCall {
	tools := map[string]bool{}
	var walk func([]*resolver.Step)
	walk = func(steps []*resolver.Step) {
		for _, s := range steps {
			if s == nil {
				continue
			}
			if s.Kind == resolver.KindTool {
				tools[s.ID] = true
			}
			if s.ForEach != nil {
				walk(s.ForEach.Body)
			}
		}
	}
	walk(sol.Steps)
	var out []review.ForkCall
	for _, c := range calls {
		if c.State == "COMPLETED" && !tools[c.Step] {
			out = append(out, c)
		}
	}
	return out
}

// recordForkStart is recordStart for a fork: the start request names the
// parent (forked_from) and rerun_reads, bound in its caller proof
// (review.StartBindingOf), and no end user (the fork acts for the
// parent's, docs/fork.md).
func (a *app) recordForkStart(ctx context.Context, pl *platform, p *prover, executionARN, digest, parent string, rerunReads bool, stderr io.Writer) error {
	req := review.StartRequest{Action: review.StartAction, ExecutionARN: executionARN, InputDigest: digest, ForkedFrom: parent, RerunReads: rerunReads}
	return a.sendStart(ctx, pl, p, req, func(skipped string) {
		fmt.Fprintf(stderr, "toolgate fork: warning: the fork does not act for the run's end user: %s\n", skipped)
	})
}
