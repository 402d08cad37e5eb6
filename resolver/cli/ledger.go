package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/resolver/cli/cost"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
)

// EnvTable names the ledger table when --table is not given.
const EnvTable = "TOOLGATE_TABLE"

// awsFlags are the connection flags of commands that talk to AWS.
type awsFlags struct {
	endpoint, table string
	app             *app // set by register (invoke sets it itself)
}

func (f *awsFlags) register(a *app, fs *pflag.FlagSet) {
	f.app = a
	fs.StringVar(&f.endpoint, "endpoint", "", "DynamoDB endpoint `URL` (default: the standard AWS configuration, e.g. AWS_ENDPOINT_URL_DYNAMODB)")
	fs.StringVar(&f.table, "table", a.getenv(EnvTable), "ledger table `NAME` (default $"+EnvTable+")")
}

func (f *awsFlags) store(ctx context.Context) (*ledger.Store, error) {
	if f.table == "" {
		return nil, fmt.Errorf("no ledger table: pass --table or set %s", EnvTable)
	}
	cfg, err := f.app.loadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	})
	return ledger.New(db, f.table), nil
}

// ledgerOptions are toolgate ledger's flags.
type ledgerOptions struct {
	af                      awsFlags
	asJSON, withCost        bool
	pricesFile, sfnEndpoint string
	// key is --key: an external key, whose run's pointer names the run.
	key string
}

// newLedgerCmd is `toolgate ledger RUN_ID`: a run's rows as a table, or
// JSON; with --cost, the run's estimated cost instead (docs/ledger.md,
// "Cost of a run").
func (a *app) newLedgerCmd() *cobra.Command {
	var o ledgerOptions
	cmd := &cobra.Command{
		Use:   "ledger [--json] [--cost [--prices FILE] [--sfn-endpoint URL]] [--endpoint URL] [--table NAME] (RUN_ID | --key KEY)",
		Short: "print a run's ToolInvocation rows, or its estimated cost",
		Long: `Prints a run's ToolInvocation rows from the ledger table, as a table or
as JSON; with --cost, the run's estimated cost per tool and in total
instead (docs/ledger.md, "Cost of a run"). A run without rows is exit 1,
except with --json alone (an empty list). The table ends with each call's
two keys: the ledger's idempotency key and the external key its MCP
server, platform tool or host was sent. --key KEY finds the run of an
external key, as a third party reports it, through the run's key pointer
(docs/ledger.md, "The key pointer"), and prints that run.`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.ledgerRun(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	o.af.register(a, fs)
	fs.BoolVar(&o.asJSON, "json", false, "print the rows (with --cost, the estimate) as JSON")
	fs.BoolVar(&o.withCost, "cost", false, "print the run's estimated cost per tool and in total instead of its rows")
	fs.StringVar(&o.pricesFile, "prices", "", "with --cost: a price table `FILE` in the format of resolver/cli/cost/prices.json (default: the built-in one)")
	fs.StringVar(&o.key, "key", "", "print the run of external key `KEY` (<22 characters>/<seq>) instead of naming its run id")
	fs.StringVar(&o.sfnEndpoint, "sfn-endpoint", "", "with --cost: Step Functions endpoint `URL` for the execution history (default: the standard AWS configuration)")
	cmd.AddCommand(a.newLedgerReconcileCmd())
	return cmd
}

func (a *app) ledgerRun(cmd *cobra.Command, pos []string, o *ledgerOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var opaque string
	switch {
	case cmd.Flags().Changed("key") && len(pos) != 0:
		return misuse(cmd, "name a run id or --key, not both")
	case cmd.Flags().Changed("key") && o.key == "":
		return misuse(cmd, "--key needs a key: the external key a third party was sent, <22 characters>/<seq>")
	case isLedgerKey(o.key):
		// A call claimed before external keys sent its ledger key; it
		// names its run, and no pointer is written for it.
		return misuse(cmd, "--key: that is a ledger idempotency key, <run_id>/<seq>, as calls made before external keys sent: use toolgate ledger RUN_ID")
	case o.key != "":
		var err error
		if opaque, _, err = externalkey.Parse(o.key); err != nil {
			return misuse(cmd, "--key: %v", err)
		}
	case len(pos) != 1:
		return misuse(cmd, "name one run id")
	case !o.withCost && (o.pricesFile != "" || o.sfnEndpoint != ""):
		return misuse(cmd, "--prices and --sfn-endpoint are for --cost")
	}
	var err error
	prices := cost.BuiltinPrices()
	if o.pricesFile != "" {
		if prices, err = cost.LoadPrices(o.pricesFile); err != nil {
			fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
			return ExitMisuse
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := o.af.store(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
		return ExitMisuse
	}
	if o.key != "" {
		runID, err := store.KeyPointer(ctx, opaque)
		if errors.Is(err, ledger.ErrNotFound) {
			fmt.Fprintf(stderr, "toolgate ledger: no run is known for external key %s: no key pointer holds its run id (only a run's first call, seq 1, writes one; docs/ledger.md, \"The key pointer\")\n", o.key)
			return ExitErrors
		}
		if err != nil {
			fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
			return ExitErrors
		}
		pos = []string{runID}
	}
	rows, err := store.RunRows(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate ledger: %v\n", err)
		return ExitErrors
	}
	if o.key != "" {
		if !holdsKey(rows, opaque) {
			fmt.Fprintf(stderr, "toolgate ledger: the pointer names a run that holds no call with this key (%s): every tool function's role may write a key pointer, so it may be forged; nothing is shown (docs/ledger.md, \"The key pointer\")\n", o.key)
			return ExitErrors
		}
		if !o.asJSON {
			fmt.Fprintf(stdout, "run %s (external key %s)\n", pos[0], o.key)
		}
	}
	if rows == nil {
		rows = []ledger.Row{}
	}
	if o.asJSON && !o.withCost {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rows)
		return ExitOK
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "toolgate ledger: no rows for run %s\n", pos[0])
		return ExitErrors
	}
	if o.withCost {
		report := cost.Estimate(pos[0], costCalls(rows), a.executionTransitions(ctx, pos[0], o.sfnEndpoint), prices)
		if o.asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.Encode(report)
		} else {
			printCost(stdout, report)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tATTEMPT\tSTEP\tTOOL\tSTATUS\tERROR\tRETRYABLE\tSTARTED\tMS\tIN\tOUT")
	for _, r := range rows {
		status := string(r.Status)
		switch r.Status {
		case ledger.StatusDeduplicated:
			// A call's replays: one line, their count, the last one's time.
			status = fmt.Sprintf("%s ×%d", r.Status, r.Invocations())
		case ledger.StatusReused:
			// A fork's call that took its parent's recorded result: the
			// parent call's key (docs/fork.md, "Matching").
			status = fmt.Sprintf("%s from %s", r.Status, r.ReusedFrom)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%v\t%s\t%d\t%d\t%d\n", r.Seq, r.Attempt, r.Step, r.Tool, status,
			orDash(r.ErrorCode), r.Retryable, r.StartedAt.UTC().Format(time.RFC3339), r.DurationMS, r.InputBytes, r.OutputBytes)
	}
	tw.Flush()
	printKeys(stdout, rows)
	return ExitOK
}

// isLedgerKey reports whether key has the shape of a ledger idempotency
// key of a Step Functions run, "arn:<partition>:states:…:execution:…/<seq>"
// (docs/ledger.md, "The external key"), rather than an external key.
func isLedgerKey(key string) bool {
	return strings.HasPrefix(key, "arn:") && strings.Contains(key, ":execution:") && strings.Contains(key, "/")
}

// holdsKey reports whether one of a run's rows carries an external key of
// opaque run id opaque (externalkey.RunID): the run a key pointer names
// must hold the call whose key was looked up. The external key a row
// shows is its call item's, which the writing function's seal covers, so
// a forged pointer cannot name a run without a forged call item as well
// (docs/ledger.md, "The key pointer").
func holdsKey(rows []ledger.Row, opaque string) bool {
	for _, r := range rows {
		if op, _, err := externalkey.Parse(r.ExternalKey); err == nil && op == opaque {
			return true
		}
	}
	return false
}

// printKeys prints each call's two keys, in call order: the ledger's
// idempotency key and the external key third parties were sent ("-" for
// a call that claimed nothing, so sent nothing).
func printKeys(w io.Writer, rows []ledger.Row) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tIDEMPOTENCY KEY\tEXTERNAL KEY")
	var seqs []string
	keys, external := map[string]string{}, map[string]string{}
	for _, r := range rows {
		seq := string(r.Seq)
		if _, ok := keys[seq]; !ok {
			seqs = append(seqs, seq)
			keys[seq] = r.IdempotencyKey
		}
		if r.ExternalKey != "" {
			external[seq] = r.ExternalKey
		}
	}
	for _, seq := range seqs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", seq, keys[seq], orDash(external[seq]))
	}
	tw.Flush()
}

// costCalls are the rows as the estimate reads them. A tool counts as
// gated when the catalog gates it: a Solution may gate another tool too,
// which the rows do not say. The http tool gates a call by its method
// (docs/tools.md, "http"), so an http row counts as gated when it names
// the approval it ran under.
func costCalls(rows []ledger.Row) []cost.Call {
	calls := make([]cost.Call, len(rows))
	for i := range rows {
		r := &rows[i]
		t, ok := catalog.Default().Lookup(r.Tool)
		gated := ok && t.ReviewRequired
		if r.Tool == httpToolName {
			gated = r.ReviewID != ""
		}
		calls[i] = cost.Call{RunID: r.RunID, Step: r.Step, Tool: r.Tool, Status: string(r.Status), ErrorCode: r.ErrorCode,
			Seq: string(r.Seq), Attempt: r.Attempt, Invocations: r.Invocations(), DurationMS: r.DurationMS, MemoryMB: r.MemoryMB,
			InputBytes: r.InputBytes, OutputBytes: r.OutputBytes, Gated: gated}
	}
	return calls
}

// httpToolName is the catalog's http tool, whose review depends on each
// call's method.
const httpToolName = "http"

// executionTransitions counts the state transitions of the run's execution
// from its history (states:GetExecutionHistory), when the run id is an
// execution ARN and the history can be read; otherwise it says why not.
func (a *app) executionTransitions(ctx context.Context, runID, endpoint string) cost.Transitions {
	ex, err := arn.Parse(runID)
	if err != nil || ex.Service != "states" || !strings.HasPrefix(ex.Resource, "execution:") {
		return cost.Transitions{Reason: "the run id is not a Step Functions execution ARN"}
	}
	cfg, err := a.loadAWSConfig(ctx)
	if err != nil {
		return cost.Transitions{Reason: err.Error()}
	}
	client := sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		o.Region = ex.Region // the execution's own region
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var types []string
	var token *string
	for {
		h, err := client.GetExecutionHistory(hctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(runID), NextToken: token, MaxResults: 1000})
		if err != nil {
			return cost.Transitions{Reason: fmt.Sprintf("execution history: %v", err)}
		}
		for _, e := range h.Events {
			types = append(types, string(e.Type))
		}
		if h.NextToken == nil {
			return cost.Transitions{Available: true, Count: cost.StateTransitions(types)}
		}
		token = h.NextToken
	}
}

// printCost prints an estimate as a table; "~" marks every estimated
// figure.
func printCost(w io.Writer, r *cost.Report) {
	fmt.Fprintf(w, "Estimated cost of run %s\n", r.RunID)
	fmt.Fprintf(w, "Every figure is an estimate (~), not a bill: %s list prices as of %s (%s), no free tier.\n\n", r.Prices.Region, r.Prices.AsOf, r.Prices.Source)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tINVOCATIONS\tLAMBDA GB-S\tLAMBDA REQUESTS\tDYNAMODB WRU\tDYNAMODB RRU\tSES MESSAGES\tSTATE TRANSITIONS\tUSD")
	line := func(name string, u cost.Usage, transitions string) {
		fmt.Fprintf(tw, "%s\t~%d\t~%s\t~%d\t~%d\t~%d\t~%d\t%s\t~$%.8f\n", name, u.Invocations,
			strconv.FormatFloat(u.LambdaGBSeconds, 'f', -1, 64), u.LambdaRequests, u.WriteUnits, u.ReadUnits, u.SESMessages, transitions, u.USD.Total)
	}
	for _, u := range r.Tools {
		line(u.Tool, u, "-")
	}
	sf := r.StepFunctions
	transitions := "not available"
	if sf.Available {
		transitions = fmt.Sprintf("~%d", sf.Count)
		fmt.Fprintf(tw, "Step Functions\t-\t-\t-\t-\t-\t-\t%s\t~$%.8f\n", transitions, sf.USD)
	} else {
		fmt.Fprintf(tw, "Step Functions\t-\t-\t-\t-\t-\t-\t%s\t-\n", transitions)
	}
	line("total (estimate)", r.Total, transitions)
	tw.Flush()
	if !sf.Available {
		fmt.Fprintf(w, "\nStep Functions state transitions: not available (%s); the total leaves them out.\n", sf.Reason)
	}
	if n := r.Total.MemoryUnknown; n > 0 {
		fmt.Fprintf(w, "%d invocations have no memory_mb on their row: their GB-seconds are left out.\n", n)
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
