package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
)

// reconcileOptions are toolgate ledger reconcile's flags: the transport to
// review-decision (as toolgate parked's), the outcome, the result file and
// the reason, and the ledger table the result's schema check reads.
type reconcileOptions struct {
	decision            decisionOptions
	af                  awsFlags
	applied, notApplied bool
	resultFile          string
}

// maxReconcileResultFile bounds the --result file read: the largest result
// review-decision records (tool.MaxInlineLimit).
const maxReconcileResultFile = tool.MaxInlineLimit

// newLedgerReconcileCmd is `toolgate ledger reconcile KEY --applied
// [--result FILE] [--reason TEXT] | --not-applied --reason TEXT`
// (docs/fork.md, "Reconciling").
func (a *app) newLedgerReconcileCmd() *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile KEY (--applied [--result FILE] [--reason TEXT] | --not-applied --reason TEXT) [--json] (--url URL | --endpoint URL --as NAME) [--table NAME [--ddb-endpoint URL]]",
		Short: "say whether a call whose outcome is unknown took effect",
		Long: `Records a reconciliation of a call whose outcome is unknown (an UNKNOWN
ledger record, or an IN_PROGRESS one whose lease has passed) through the
review-decision function (docs/fork.md, "Reconciling"). KEY is the call's
idempotency key, <run_id>/<seq>, as toolgate ledger and the call.unknown
webhook event name it.

--applied says the call took effect; --result FILE gives the result it
had (JSON), which its next attempt, or a fork's call, returns without
running the tool; without --result that call fails
CALL_RECONCILED_NO_RESULT. --not-applied --reason TEXT says it did not:
the call is sent again under the same key. A call is reconciled once, by
a reconciler who neither started its run nor approved it.

With --table, the result is first checked against the pinned output
schema of the call's tool (the ledger row names the tool and toolset);
the function that replays it checks it again.

On AWS, --url names the function's Function URL (default
$` + EnvReviewURL + `); on the local stack, --endpoint names the function
under the Lambda RIE and --as NAME signs the caller proof with NAME's local
keys ($` + EnvLocalKeys + `).

Exit 0 once recorded, 1 when the function refuses or fails, 2 on misuse.`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.reconcileRun(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.decision.endpoint, "endpoint", "", "the review-decision function under the Lambda RIE (local stack): its `URL`")
	fs.StringVar(&o.decision.url, "url", a.getenv(EnvReviewURL), "the review-decision Function `URL` (AWS; default $"+EnvReviewURL+")")
	fs.StringVar(&o.decision.as, "as", "", "on the local stack only: sign the caller proof with `NAME`'s local keys")
	fs.BoolVar(&o.decision.asJSON, "json", false, "print the function's JSON answer")
	fs.StringVar(&o.decision.reason, "reason", "", "why, as `TEXT` (1 to 1000 characters; required with --not-applied)")
	fs.BoolVar(&o.applied, "applied", false, "the call took effect")
	fs.BoolVar(&o.notApplied, "not-applied", false, "the call did not take effect: it is sent again under the same key")
	fs.StringVar(&o.resultFile, "result", "", "with --applied: the call's result, a JSON `FILE`")
	fs.StringVar(&o.af.table, "table", a.getenv(EnvTable), "ledger table `NAME`, to check the result against the pinned output schema (default $"+EnvTable+")")
	fs.StringVar(&o.af.endpoint, "ddb-endpoint", "", "DynamoDB endpoint `URL` for --table (default: the standard AWS configuration)")
	o.af.app = a
	return cmd
}

// reconcileRun runs toolgate ledger reconcile.
func (a *app) reconcileRun(cmd *cobra.Command, pos []string, o *reconcileOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if len(pos) != 1 {
		return misuse(cmd, "name one call's idempotency key, <run_id>/<seq>")
	}
	if exit, bad := a.decisionMisuse(cmd, "reconcile", "call key", pos, &o.decision); bad {
		return exit
	}
	key := pos[0]
	reason := o.decision.reason
	switch {
	case !isCallKey(key):
		return misuse(cmd, "%q is not a call's idempotency key, <run_id>/<seq> (toolgate ledger RUN_ID lists them)", key)
	case o.applied == o.notApplied:
		return misuse(cmd, "say --applied or --not-applied: exactly one")
	case o.notApplied && o.resultFile != "":
		return misuse(cmd, "--result is for --applied: a call that did not take effect had no result")
	case o.notApplied && strings.TrimSpace(reason) == "":
		return misuse(cmd, "--not-applied needs --reason TEXT: say how you know the call had no effect")
	case !utf8.ValidString(reason):
		return misuse(cmd, "--reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > ledger.MaxReconcileReason:
		return misuse(cmd, "--reason is %d characters, over %d", utf8.RuneCountInString(reason), ledger.MaxReconcileReason)
	case strings.ContainsFunc(reason, ledger.HiddenInReason):
		return misuse(cmd, "--reason holds control or bidirectional formatting characters: write it as plain text")
	}
	req := review.DirectRequest{Action: review.ActionLedgerReconcile, Key: key, Outcome: string(ledger.NotApplied), Reason: reason}
	if o.applied {
		req.Outcome = string(ledger.Applied)
	}
	if o.resultFile != "" {
		result, err := readResultFile(o.resultFile)
		if err != nil {
			return misuse(cmd, "--result: %v", err)
		}
		req.Result = result
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(req.Result) > 0 && o.af.table != "" {
		unchecked, err := a.checkReconcileResult(ctx, &o.af, key, req.Result)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate ledger reconcile: %v\n", err)
			return ExitMisuse
		}
		if unchecked != nil {
			// The function that replays the result checks it again.
			fmt.Fprintf(stderr, "toolgate ledger reconcile: the result was not checked here: %v\n", unchecked)
		}
	}
	out, code, msg, err := a.reconcileCall(ctx, &o.decision, req)
	if exit, done := decisionAnswer("toolgate ledger reconcile", out, code, msg, err, o.decision.asJSON, stdout, stderr); done {
		return exit
	}
	var res review.ReconcileResult
	if err := json.Unmarshal(out, &res); err != nil || res.Key != key {
		fmt.Fprintf(stderr, "toolgate ledger reconcile: unexpected answer: %.200s\n", out)
		return ExitErrors
	}
	what := "applied"
	switch {
	case res.Outcome == string(ledger.NotApplied):
		what = "not applied: its next attempt sends it again under the same key"
	case len(req.Result) > 0:
		what = "applied, with its result: its next attempt returns it without running the tool"
	default:
		what = "applied, without a result: its next attempt fails CALL_RECONCILED_NO_RESULT"
	}
	fmt.Fprintf(stdout, "reconciled %s as %s\nby %s at %s\n", res.Key, what, res.ReconciledBy, res.ReconciledAt)
	return ExitOK
}

// readResultFile reads a --result file: JSON, at most
// maxReconcileResultFile bytes. Errors never quote the file's content.
func readResultFile(path string) (json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, errWithoutPath(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReconcileResultFile+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %v", path, errWithoutPath(err))
	case len(b) > maxReconcileResultFile:
		return nil, fmt.Errorf("%s is over %d bytes, the largest result a tool function returns inline", path, maxReconcileResultFile)
	case !json.Valid(b):
		return nil, fmt.Errorf("%s is not JSON", path)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("%s is not JSON", path)
	}
	return compact.Bytes(), nil
}

// errWithoutPath is err's cause without the path os.PathError repeats.
func errWithoutPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// isCallKey reports whether key is a call's idempotency key: a run id (an
// execution ARN, or a direct-lane run id), "/" and a valid tool.Seq.
func isCallKey(key string) bool {
	i := strings.LastIndexByte(key, '/')
	return i > 0 && tool.Seq(key[i+1:]).Valid() == nil && (strings.HasPrefix(key, "arn:") || strings.HasPrefix(key, "direct/"))
}

// checkReconcileResult checks result against the pinned output schema of
// key's call: its ledger rows name the tool and the toolset, which the
// ledger table holds. invalid names the schema's keyword and location,
// never a value of the result; unchecked says why the schema could not be
// loaded (the table, the rows or the toolset unreadable), which leaves the
// check to the dispatcher.
func (a *app) checkReconcileResult(ctx context.Context, af *awsFlags, key string, result json.RawMessage) (unchecked, invalid error) {
	store, err := af.store(ctx)
	if err != nil {
		return err, nil
	}
	i := strings.LastIndexByte(key, '/')
	rows, err := store.KeyRows(ctx, key[:i], tool.Seq(key[i+1:]))
	if err != nil {
		return fmt.Errorf("read the ledger rows of %s: %w", key, err), nil
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s has no ledger rows in table %s", key, af.table), nil
	}
	toolName, tsID := rows[0].Tool, rows[0].ToolsetID
	ts, err := store.Toolset(ctx, tsID)
	if err != nil {
		return fmt.Errorf("load toolset %s of %s: %w", tsID, key, err), nil
	}
	pinned, ok := ts.Tools[toolName]
	if !ok {
		return fmt.Errorf("toolset %s pins no tool %s", tsID, toolName), nil
	}
	s, err := schema.Compile(pinned.OutputSchema)
	if err != nil {
		return fmt.Errorf("the pinned output schema of %s does not compile: %w", toolName, err), nil
	}
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		return nil, fmt.Errorf("the result is not JSON")
	}
	if err := s.Validate(v); err != nil {
		return nil, fmt.Errorf("the result does not match the pinned output schema of %s (toolset %s): %s", toolName, tsID,
			strings.Join(schema.RedactedLines(schema.Problems(err, nil), "output", 5), "; "))
	}
	return nil, nil
}

// reconcileCall signs req's caller proof (review.ReconcileBinding) and
// calls review-decision: under the RIE (--endpoint), or its Function URL's
// POST /reconciliations.
func (a *app) reconcileCall(ctx context.Context, o *decisionOptions, req review.DirectRequest) ([]byte, string, string, error) {
	p, err := a.newProver(ctx, o.as)
	if err != nil {
		return nil, "", "", err
	}
	digest, err := review.ReconcileResultDigest(req.Result)
	if err != nil {
		return nil, "", "", fmt.Errorf("the result is not JSON")
	}
	if req.Proof, err = p.sign(ctx, review.ReconcileBinding(req.Key, req.Outcome, digest, req.Reason)); err != nil {
		return nil, "", "", err
	}
	if o.endpoint != "" {
		return a.callDecisionRIE(ctx, o.endpoint, req)
	}
	body, _ := json.Marshal(review.ReconcileBody{Key: req.Key, Outcome: req.Outcome, Result: req.Result, Reason: req.Reason})
	out, code, msg, err := a.callFunctionURL(ctx, o.url, http.MethodPost, "/reconciliations", nil, body, map[string]string{review.ProofHeader: req.Proof})
	if code != "" {
		var eb review.ErrorBody
		if json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
			msg = eb.Error.Message
		}
	}
	return out, code, msg, err
}
