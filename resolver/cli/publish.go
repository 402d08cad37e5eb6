package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/ssmparams"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// Environment defaults of publish and run.
const (
	EnvStage      = "TOOLGATE_STAGE"       // the platform stage; default "dev"
	EnvParamsFile = "TOOLGATE_PARAMS_FILE" // a local parameters file instead of SSM
)

// platformFlags select the platform: its stage, where its parameters are,
// and the Step Functions and DynamoDB endpoints.
type platformFlags struct {
	endpoint, dynamoEndpoint, stage, paramsFile string
	app                                         *app // set by register
}

func (p *platformFlags) register(a *app, fs *pflag.FlagSet) {
	p.app = a
	fs.StringVar(&p.endpoint, "endpoint", "", "Step Functions endpoint `URL` (default: the standard AWS configuration)")
	fs.StringVar(&p.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint `URL` (default: the standard AWS configuration)")
	stage := a.getenv(EnvStage)
	if stage == "" {
		stage = "dev"
	}
	fs.StringVar(&p.stage, "stage", stage, "platform stage `NAME`: parameters are read under /toolgate/<stage>/ ($"+EnvStage+" sets the default)")
	fs.StringVar(&p.paramsFile, "params", a.getenv(EnvParamsFile), "a parameters `FILE` (the local stack's) instead of SSM (default $"+EnvParamsFile+")")
}

type platform struct {
	params deployment.Params
	sfn    *sfn.Client
	cfg    aws.Config
	p      *platformFlags
}

func (p *platformFlags) open(ctx context.Context) (*platform, error) {
	cfg, err := p.app.loadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	pl := &platform{cfg: cfg, p: p}
	if p.paramsFile != "" {
		fp, err := deployment.ReadFileParams(p.paramsFile)
		if err != nil {
			return nil, err
		}
		pl.params = fp
	} else {
		pl.params = ssmparams.Params{Client: ssm.NewFromConfig(cfg)}
	}
	pl.sfn = sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if p.endpoint != "" {
			o.BaseEndpoint = aws.String(p.endpoint)
		}
	})
	return pl, nil
}

func (pl *platform) store(ctx context.Context) (*ledger.Store, error) {
	table, err := pl.params.Get(ctx, deployment.TableParam(pl.p.stage))
	if err != nil {
		return nil, fmt.Errorf("the ledger table: %w", err)
	}
	db := dynamodb.NewFromConfig(pl.cfg, func(o *dynamodb.Options) {
		if pl.p.dynamoEndpoint != "" {
			o.BaseEndpoint = aws.String(pl.p.dynamoEndpoint)
		}
	})
	return ledger.New(db, table), nil
}

// EnvPublishURL names the publish function's Function URL when --url is
// not given.
const EnvPublishURL = "TOOLGATE_PUBLISH_URL"

// publishOptions are toolgate publish's flags.
type publishOptions struct {
	url, endpoint, as string
	// source, when set, is published under the file's name instead of
	// the file's own text: toolgate fork --toolset's copy naming another
	// toolset (resolver.WithToolset).
	source []byte
}

// newPublishCmd is `toolgate publish FILE`: the Solution is checked here
// (its diagnostics shown), then sent to the publish function, which checks
// it again, registers its toolset, creates or updates the state machine
// and publishes a version recording the publisher. No person writes a
// state machine definition (docs/infra.md, "Publishing").
func (a *app) newPublishCmd() *cobra.Command {
	var o publishOptions
	cmd := &cobra.Command{
		Use:   "publish FILE (--url URL | --endpoint URL --as NAME) [--toolsets DIR]",
		Short: "publish a Solution through the publish function",
		Long: `Checks a Solution, then sends it to the publish function, which checks it
again, registers its toolset, creates or updates the state machine
toolgate-<stage>_<solution> and publishes a version recording you as the
publisher (docs/infra.md, "Publishing").

On AWS, --url names the publish function's Function URL: the request is
SigV4-signed and carries a caller proof signed with your AWS credentials.
On the local stack, --endpoint names the function under the Lambda RIE,
and --as NAME signs the proof with NAME's local keys.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.publishRun(cmd, files, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.url, "url", a.getenv(EnvPublishURL), "the publish function's Function `URL` (AWS; default $"+EnvPublishURL+")")
	fs.StringVar(&o.endpoint, "endpoint", "", "the publish function under the Lambda RIE (local stack): its `URL`")
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the caller proof with `NAME`'s local keys")
	a.addToolsetsFlag(cmd)
	return cmd
}

func (a *app) publishRun(cmd *cobra.Command, files []string, o *publishOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(files) != 1:
		return misuse(cmd, "name one Solution file")
	case o.endpoint == "" && o.url == "":
		return misuse(cmd, "pass --url (the publish Function URL) or --endpoint (the function under the RIE, locally)")
	case o.endpoint != "" && o.url != "" && a.getenv(EnvPublishURL) != o.url:
		return misuse(cmd, "--endpoint and --url exclude each other")
	case o.endpoint == "" && o.as != "":
		return misuse(cmd, "--as is for the local stack: through the Function URL you are your AWS credentials")
	case o.endpoint != "" && o.as == "":
		return misuse(cmd, "--endpoint needs --as NAME: on the local stack you prove who you are with NAME's local keys")
	case o.as != "" && validAs(o.as) != nil:
		return misuse(cmd, "--as %q: %v", o.as, validAs(o.as))
	}
	src, err := o.source, error(nil)
	if src == nil {
		src, err = resolver.ReadFile(files[0], resolver.SourceFile)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitMisuse
	}
	res := a.compileSource(files[0], src)
	if !res.OK() {
		for _, d := range res.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		fmt.Fprintln(stderr, "toolgate publish: the Solution has errors: nothing was published")
		return ExitErrors
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := a.newProver(ctx, o.as)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitMisuse
	}
	file := filepath.Base(files[0])
	proof, err := p.sign(ctx, publishapi.Binding(file, src))
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitErrors
	}
	var out []byte
	var code, msg string
	if o.endpoint != "" {
		payload, _ := json.Marshal(publishapi.DirectRequest{Action: "publish", File: file, Source: string(src), Proof: proof})
		out, code, msg, err = a.invokeLambda(ctx, o.endpoint, rieFunctionName, payload)
	} else {
		body, _ := json.Marshal(publishapi.Body{File: file, Source: string(src)})
		out, code, msg, err = a.callFunctionURL(ctx, o.url, http.MethodPost, "/solutions", nil, body, map[string]string{publishapi.ProofHeader: proof})
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitErrors
	}
	if code != "" {
		var eb publishapi.ErrorBody
		if json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
			for _, d := range eb.Diagnostics {
				fmt.Fprintln(stderr, d)
			}
			msg = eb.Error.Message
		}
		fmt.Fprintf(stderr, "toolgate publish: %s: %s\n", code, msg)
		return ExitErrors
	}
	var r publishapi.Result
	if err := json.Unmarshal(out, &r); err != nil || r.VersionARN == "" {
		fmt.Fprintf(stderr, "toolgate publish: unexpected answer: %.300s\n", out)
		return ExitErrors
	}
	for _, d := range r.Diagnostics {
		fmt.Fprintln(stderr, d)
	}
	verb := "updated"
	if r.Created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s %s\npublished version %s (toolset %s) by %s\n", verb, r.StateMachineARN, r.VersionARN, r.ToolsetID, r.Publisher)
	return ExitOK
}

// runOptions are toolgate run's flags.
type runOptions struct {
	pf                  platformFlags
	inputFile, name, as string
	endUser             string
	wait                bool
	timeout             time.Duration
}

// newRunCmd is `toolgate run SOLUTION --input FILE.json [--name N] [--wait]`.
func (a *app) newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run SOLUTION --input FILE.json [--name N] [--end-user ID] [--wait [--timeout D]] [--stage NAME] [--params FILE] [--endpoint URL] [--dynamodb-endpoint URL] [--as NAME]",
		Short: "start an execution (and follow it)",
		Long: `Starts an execution of a published Solution's state machine; with --wait,
follows it: one line per state, the run's pending
reviews with the commands that decide them, then its output (exit 0) or
its error (exit 1).

Before it starts anything, run reads the state machine's definition and
checks the input against what the resolver recorded there: its size
(policy.input_limit_bytes, compact JSON) and the Solution's input JSON
Schema. A refused input starts nothing (exit 1); the message names each
JSON Pointer and schema keyword at fault, never the input's values.

A Solution with gated tools or workflow steps records who starts it: run
first asks the review-request function (its start alias) to record the
start of the execution it names, for the digest of the whole execution
input, with a caller proof signed with your AWS credentials (--as NAME:
NAME's local keys). It starts the execution only once the record is
written; a name already recorded starts nothing (docs/identity.md, "Four
eyes"). A Solution whose toolset declares credentials (auth) records its
start too.

--end-user ID names the end user the run acts for (its credentials of
that end user are used): the start request names it, and the record
holds it only when the platform's end-user mapping lets you act for it;
otherwise run warns and the run starts without one (docs/identity.md,
"End users"). A Solution that records no start takes no --end-user.` + tracingHelp,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.runRun(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	o.pf.register(a, fs)
	fs.StringVar(&o.inputFile, "input", "", "the run's input, a JSON `FILE`")
	fs.StringVar(&o.name, "name", "", "the execution's name `N` (default: generated); never starting with "+tool.ChildNamePrefix+", the names of workflow steps' children")
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the start request's caller proof with `NAME`'s local keys ($"+EnvLocalKeys+")")
	fs.StringVar(&o.endUser, "end-user", "", "the end user `ID` the run acts for (visible ASCII, at most 256 bytes): recorded only when the platform's end-user mapping lets you act for it (docs/identity.md, \"End users\")")
	fs.BoolVar(&o.wait, "wait", false, "follow the run: one line per state, pending reviews, then the output or the error")
	fs.DurationVar(&o.timeout, "timeout", 24*time.Hour, "with --wait, how long to follow the run")
	return cmd
}

func (a *app) runRun(cmd *cobra.Command, pos []string, o *runOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(pos) != 1:
		return misuse(cmd, "name one Solution")
	case o.inputFile == "":
		return misuse(cmd, "--input FILE.json is required")
	}
	input, err := os.ReadFile(o.inputFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	if !json.Valid(input) {
		fmt.Fprintf(stderr, "toolgate run: %s is not JSON\n", o.inputFile)
		return ExitMisuse
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	pl, err := o.pf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	p, err := a.newProver(ctx, o.as)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	traceparent, endTrace, err := runTrace(ctx, a.getenv, pos[0], stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	arn, err := runner.Start(ctx, pl.sfn, o.pf.stage, pos[0], input, o.name, runner.Meta{Traceparent: traceparent, EndUser: o.endUser}, func(ctx context.Context, executionARN, digest string) error {
		return a.recordStart(ctx, pl, p, executionARN, digest, o.endUser, stderr)
	})
	if err != nil {
		endTrace("NOT_STARTED", true)
	}
	var bad *resolver.InputError
	if errors.As(err, &bad) {
		fmt.Fprintf(stderr, "toolgate run: %s is not an input Solution %s accepts; nothing was started:\n", o.inputFile, pos[0])
		for _, l := range bad.Lines() {
			fmt.Fprintf(stderr, "  %s\n", l)
		}
		return ExitErrors
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitErrors
	}
	fmt.Fprintf(stdout, "started %s\n", arn)
	if !o.wait {
		endTrace("STARTED", false)
		return ExitOK
	}
	out, err := runner.Follow(ctx, pl.sfn, arn, 500*time.Millisecond, func(e runner.Event) {
		printEvent(stdout, e)
		if e.Type == "TaskScheduled" && strings.HasSuffix(e.Resource, "waitForTaskToken") {
			a.reviewHint(ctx, pl, arn, stdout)
		}
	})
	if err != nil {
		endTrace("NOT_FOLLOWED", true)
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitErrors
	}
	endTrace(out.Status, out.Status != "SUCCEEDED")
	if out.Status == "SUCCEEDED" {
		fmt.Fprintf(stdout, "SUCCEEDED\n%s\n", out.Output)
		return ExitOK
	}
	fmt.Fprintf(stdout, "%s %s: %s\n", out.Status, out.Error, out.Cause)
	return ExitErrors
}

// recordStart asks review-request's start alias (sendStart) for the start
// record of executionARN with the whole execution input's digest, and the
// end user asked for ("" for none). An end user the record skipped is a
// warning on stderr (the run starts without one).
func (a *app) recordStart(ctx context.Context, pl *platform, p *prover, executionARN, digest, endUser string, stderr io.Writer) error {
	req := review.StartRequest{Action: review.StartAction, ExecutionARN: executionARN, InputDigest: digest, EndUser: endUser}
	return a.sendStart(ctx, pl, p, req, func(skipped string) {
		fmt.Fprintf(stderr, "toolgate run: warning: the run does not act for end user %s: %s\n", endUser, skipped)
	})
}

// sendStart sends req, signed with a caller proof p makes for exactly it
// (review.StartBindingOf: a run's start, or a fork's with its parent and
// rerun_reads), to review-request's start alias (deployment.StartFunctionParam:
// its ARN, or on the local stack its instance's URL under the RIE), and
// calls skipped with the reason when the record skipped the end user. An
// error says why nothing was recorded; the proof is never in it.
func (a *app) sendStart(ctx context.Context, pl *platform, p *prover, req review.StartRequest, skipped func(reason string)) error {
	target, err := pl.params.Get(ctx, deployment.StartFunctionParam(pl.p.stage))
	if err != nil {
		return fmt.Errorf("review-request's start alias: %w", err)
	}
	endpoint, fn := "", target
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		endpoint, fn = target, rieFunctionName
	}
	if req.Proof, err = p.sign(ctx, review.StartBindingOf(&req)); err != nil {
		return fmt.Errorf("sign the start request: %w", err)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return err
	}
	out, errType, errMsg, err := a.invokeLambda(ctx, endpoint, fn, payload)
	switch {
	case err != nil:
		return err
	case errType != "":
		return fmt.Errorf("%s: %s", errType, errMsg)
	}
	var ans review.StartAnswer
	if json.Unmarshal(out, &ans) == nil && ans.EndUserSkipped != "" {
		skipped(ans.EndUserSkipped)
	}
	return nil
}

func printEvent(w io.Writer, e runner.Event) {
	switch {
	case strings.HasSuffix(e.Type, "StateEntered"):
		fmt.Fprintf(w, "  → %s\n", e.State)
	case e.Error != "":
		fmt.Fprintf(w, "  ✗ %s %s: %s\n", e.Type, e.Error, e.Cause)
	}
}

// reviewHint prints the run's pending reviews, once each, with the command
// that decides them. It lists them through the review-decision function
// (its URL parameter; on the local stack, the function under the RIE).
func (a *app) reviewHint(ctx context.Context, pl *platform, executionARN string, w io.Writer) {
	url, err := pl.params.Get(ctx, deployment.ReviewDecisionURLParam(pl.p.stage))
	if err != nil {
		return
	}
	where := []string{"--url", url}
	if pl.p.paramsFile != "" { // the local stack: the function under the RIE
		where = []string{"--endpoint", url, "--as", "toolgate-run"}
	}
	for range 20 { // the review Task has started; its record follows shortly
		var out, errb bytes.Buffer
		env := a.env
		env.Stdout, env.Stderr = &out, &errb
		if RunWith(append([]string{"review", "list", "--json"}, where...), env) != ExitOK {
			return
		}
		var res review.ListResult
		if json.Unmarshal(out.Bytes(), &res) != nil {
			return
		}
		found := false
		for _, v := range res.Reviews {
			if v.RunID != executionARN || a.shownReviews[v.ReviewID] {
				continue
			}
			found, a.shownReviews[v.ReviewID] = true, true
			decide := strings.Join(where[:2], " ")
			fmt.Fprintf(w, "  ⏸ review %s: %s of step %q waits for a decision:\n      toolgate review show %s %s\n      toolgate review approve %s %s [--as NAME]   or   toolgate review reject %s %s --reason TEXT\n",
				v.ReviewID, v.Tool, v.Of, v.ReviewID, decide, v.ReviewID, decide, v.ReviewID, decide)
		}
		if found {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
