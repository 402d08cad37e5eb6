package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/resolver/publish"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
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
}

func (p *platformFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.endpoint, "endpoint", "", "Step Functions endpoint URL (default: the standard AWS configuration)")
	fs.StringVar(&p.dynamoEndpoint, "dynamodb-endpoint", "", "DynamoDB endpoint URL (default: the standard AWS configuration)")
	stage := os.Getenv(EnvStage)
	if stage == "" {
		stage = "dev"
	}
	fs.StringVar(&p.stage, "stage", stage, "platform stage: parameters are read under /toolgate/<stage>/ (default $"+EnvStage+" or dev)")
	fs.StringVar(&p.paramsFile, "params", os.Getenv(EnvParamsFile), "a parameters file (the local stack's) instead of SSM (default $"+EnvParamsFile+")")
}

type platform struct {
	params publish.Params
	sfn    *sfn.Client
	cfg    aws.Config
	p      *platformFlags
}

func (p *platformFlags) open(ctx context.Context) (*platform, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	pl := &platform{cfg: cfg, p: p}
	if p.paramsFile != "" {
		fp, err := publish.ReadFileParams(p.paramsFile)
		if err != nil {
			return nil, err
		}
		pl.params = fp
	} else {
		pl.params = publish.SSMParams{Client: ssm.NewFromConfig(cfg)}
	}
	pl.sfn = sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if p.endpoint != "" {
			o.BaseEndpoint = aws.String(p.endpoint)
		}
	})
	return pl, nil
}

func (pl *platform) store(ctx context.Context) (*ledger.Store, error) {
	table, err := pl.params.Get(ctx, publish.TableParam(pl.p.stage))
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

// publishCmd is `toolgate publish FILE`: compile, check that the toolset
// is registered (stop before any write when it is not, naming the
// register command), create or update toolgate-<solution>, publish a
// version.
func publishCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("publish", stderr)
	var pf platformFlags
	pf.register(fs)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "usage: toolgate publish FILE [--endpoint URL] [--stage NAME] [--params FILE] [--dynamodb-endpoint URL]")
		return ExitMisuse
	}
	res, err := compileFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitMisuse
	}
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.String())
	}
	if !res.OK() {
		fmt.Fprintln(stderr, "toolgate publish: the Solution has errors: nothing was published")
		return ExitErrors
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pl, err := pf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitMisuse
	}
	store, err := pl.store(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitErrors
	}
	out, err := publish.Publish(ctx, res, pl.params, pf.stage, pl.cfg.Region, store, pl.sfn)
	var unregistered *publish.UnregisteredError
	if errors.As(err, &unregistered) {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		fmt.Fprintf(stderr, "  the deployment's operator, with the deploy role, runs:\n    %s\n", registerCommand(store.Table(), pf.dynamoEndpoint, files[0]))
		return ExitErrors
	}
	if err != nil {
		fmt.Fprintf(stderr, "toolgate publish: %v\n", err)
		return ExitErrors
	}
	verb := "updated"
	if out.Created {
		verb = "created"
	}
	fmt.Fprintf(stdout, "%s %s\npublished version %s (toolset %s)\n", verb, out.StateMachineARN, out.VersionARN, res.Toolset.ID)
	return ExitOK
}

// runCmd is `toolgate run SOLUTION --input FILE.json [--name N] [--wait]`.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	var pf platformFlags
	pf.register(fs)
	inputFile := fs.String("input", "", "the run's input, a JSON file")
	name := fs.String("name", "", "the execution's name (default: generated)")
	as := fs.String("as", "", "on the local stack only: sign the start proof with NAME's local keys ($"+EnvLocalKeys+")")
	wait := fs.Bool("wait", false, "follow the run: one line per state, pending reviews, then the output or the error")
	timeout := fs.Duration("timeout", 24*time.Hour, "with --wait, how long to follow the run")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(pos) != 1 || *inputFile == "" {
		fmt.Fprintln(stderr, "usage: toolgate run SOLUTION --input FILE.json [--name N] [--wait] [--endpoint URL] [--as NAME]")
		return ExitMisuse
	}
	input, err := os.ReadFile(*inputFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	if !json.Valid(input) {
		fmt.Fprintf(stderr, "toolgate run: %s is not JSON\n", *inputFile)
		return ExitMisuse
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	pl, err := pf.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	p, err := newProver(ctx, *as)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitMisuse
	}
	arn, err := publish.Start(ctx, pl.sfn, pos[0], input, *name, func(ctx context.Context, executionARN string) (string, error) {
		return p.sign(ctx, caller.Binding{Action: caller.ActionStart, Target: executionARN})
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitErrors
	}
	fmt.Fprintf(stdout, "started %s\n", arn)
	if !*wait {
		return ExitOK
	}
	out, err := publish.Follow(ctx, pl.sfn, arn, 500*time.Millisecond, func(e publish.Event) {
		printEvent(stdout, e)
		if e.Type == "TaskScheduled" && strings.HasSuffix(e.Resource, "waitForTaskToken") {
			reviewHint(ctx, pl, arn, stdout)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolgate run: %v\n", err)
		return ExitErrors
	}
	if out.Status == "SUCCEEDED" {
		fmt.Fprintf(stdout, "SUCCEEDED\n%s\n", out.Output)
		return ExitOK
	}
	fmt.Fprintf(stdout, "%s %s: %s\n", out.Status, out.Error, out.Cause)
	return ExitErrors
}

func printEvent(w io.Writer, e publish.Event) {
	switch {
	case strings.HasSuffix(e.Type, "StateEntered"):
		fmt.Fprintf(w, "  → %s\n", e.State)
	case e.Error != "":
		fmt.Fprintf(w, "  ✗ %s %s: %s\n", e.Type, e.Error, e.Cause)
	}
}

// shownReviews remembers which pending reviews reviewHint printed.
var shownReviews = map[string]bool{}

// reviewHint prints the run's pending reviews, once each, with the command
// that decides them. It lists them through the review-decision function
// (its URL parameter; on the local stack, the function under the RIE).
func reviewHint(ctx context.Context, pl *platform, executionARN string, w io.Writer) {
	url, err := pl.params.Get(ctx, publish.ReviewDecisionURLParam(pl.p.stage))
	if err != nil {
		return
	}
	where := []string{"--url", url}
	if pl.p.paramsFile != "" { // the local stack: the function under the RIE
		where = []string{"--endpoint", url, "--as", "toolgate-run"}
	}
	for range 20 { // the review Task has started; its record follows shortly
		var out, errb bytes.Buffer
		if Run(append([]string{"review", "list", "--json"}, where...), &out, &errb) != ExitOK {
			return
		}
		var res review.ListResult
		if json.Unmarshal(out.Bytes(), &res) != nil {
			return
		}
		found := false
		for _, v := range res.Reviews {
			if v.RunID != executionARN || shownReviews[v.ReviewID] {
				continue
			}
			found, shownReviews[v.ReviewID] = true, true
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
