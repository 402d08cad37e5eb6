package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// newParkedCmd is `toolgate parked list|show|approve|reject|resume|cancel`:
// it calls the review-decision function, as toolgate review does, never
// the table. Exit 0 on success (a repeated identical decision included),
// 1 when the function refuses or fails, 2 on misuse.
func (a *app) newParkedCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "parked",
		Short: "list, show and decide parked calls",
		Long: `Lists, shows and decides parked calls (docs/parking.md) through the
review-decision function, as toolgate review does.

A call parks when its MCP tool's definition changed on its server
(tool.schema_changed: approve or reject it) or its credential expired
(credentials.expired: set the credential with toolgate credentials set,
then resume it). cancel stops the run. A gated step's park is decided by
its reviewers, never by the run's starter; an ungated one's by the starter
or a park decider; the starter or a park operator may cancel.

On AWS, --url names the function's Function URL (default
$` + EnvReviewURL + `); on the local stack, --endpoint names the function
under the Lambda RIE and --as NAME signs the caller proof with NAME's local
keys ($` + EnvLocalKeys + `).

Exit 0 on success (a repeated identical decision included), 1 when the
function refuses or fails, 2 on misuse.`,
	})
	cmd.AddCommand(
		a.newParkedSubCmd("list", "list [--status parked|approved|rejected|resumed|cancelled|timed_out] [--json] (--url URL | --endpoint URL --as NAME)", "list parked calls, the waiting ones by default"),
		a.newParkedSubCmd("show", "show ID [--json] (--url URL | --endpoint URL --as NAME)", "show a parked call: why it parked and who may decide"),
		a.newParkedSubCmd("approve", "approve ID [--json] (--url URL | --endpoint URL --as NAME)", "approve a call whose tool definition changed: it runs against the server's current definition"),
		a.newParkedSubCmd("reject", "reject ID --reason TEXT [--json] (--url URL | --endpoint URL --as NAME)", "reject a parked call, saying why: its step fails TOOL_PERMISSION_DENIED"),
		a.newParkedSubCmd("resume", "resume ID [--json] (--url URL | --endpoint URL --as NAME)", "send a call whose credential expired again, once the credential is set"),
		a.newParkedSubCmd("cancel", "cancel ID [--reason TEXT] [--json] (--url URL | --endpoint URL --as NAME)", "cancel a parked call: its run is stopped"),
		a.newParkedForkCmd(),
	)
	return cmd
}

// newParkedSubCmd is `toolgate parked SUB`.
func (a *app) newParkedSubCmd(sub, use, short string) *cobra.Command {
	var o decisionOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.parkedRun(cmd, sub, pos, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.endpoint, "endpoint", "", "the review-decision function under the Lambda RIE (local stack): its `URL`")
	fs.StringVar(&o.url, "url", a.getenv(EnvReviewURL), "the review-decision Function `URL` (AWS; default $"+EnvReviewURL+")")
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the caller proof with `NAME`'s local keys")
	fs.BoolVar(&o.asJSON, "json", false, "print the function's JSON answer")
	switch sub {
	case "list":
		fs.StringVar(&o.status, "status", "parked", "the parks' `STATUS`: parked, approved, rejected, resumed, cancelled or timed_out")
	case "reject":
		fs.StringVar(&o.reason, "reason", "", "why, as `TEXT` (required)")
	case "cancel":
		fs.StringVar(&o.reason, "reason", "", "why, as `TEXT`")
	}
	return cmd
}

// parkedRun runs toolgate parked SUB.
func (a *app) parkedRun(cmd *cobra.Command, sub string, pos []string, o *decisionOptions) int {
	if exit, bad := a.decisionMisuse(cmd, sub, "park", pos, o); bad {
		return exit
	}
	if sub != "list" && !park.IDPattern.MatchString(pos[0]) {
		return misuse(cmd, "%q is not a park id (pk_ and 26 characters a-z, 2-7)", pos[0])
	}
	req := review.DirectRequest{Reason: o.reason}
	switch sub {
	case "list":
		req.Action, req.Status = review.ActionParkList, o.status
	case "show":
		req.Action, req.ParkID = review.ActionParkShow, pos[0]
	case "cancel":
		req.Action, req.ParkID = review.ActionParkCancel, pos[0]
	default:
		req.Action, req.ParkID, req.Decision = review.ActionParkDecide, pos[0], review.Verdict(sub)
	}
	return a.sendDecision("parked", sub, o, req, a.parkCall, a.callParkURL,
		decisionPrinters{list: printParkList, one: printPark}, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// parkCall signs req's caller proof and calls the function. A decision is
// bound to the park's current digest (the server's definition an approval
// accepts), so it first shows the park, with a proof of its own.
func (a *app) parkCall(ctx context.Context, as string, req review.DirectRequest, call func(review.DirectRequest) ([]byte, string, string, error)) ([]byte, string, string, error) {
	p, err := a.newProver(ctx, as)
	if err != nil {
		return nil, "", "", err
	}
	var b caller.Binding
	switch req.Action {
	case review.ActionParkList:
		b = review.ParkListBinding(req.Status)
	case review.ActionParkShow:
		b = review.ParkShowBinding(req.ParkID)
	case review.ActionParkCancel:
		b = review.ParkCancelBinding(req.ParkID)
	case review.ActionParkDecide:
		show := review.DirectRequest{Action: review.ActionParkShow, ParkID: req.ParkID}
		if show.Proof, err = p.sign(ctx, review.ParkShowBinding(req.ParkID)); err != nil {
			return nil, "", "", err
		}
		out, code, msg, err := call(show)
		if err != nil || code != "" {
			return out, code, msg, err
		}
		var v park.View
		if err := json.Unmarshal(out, &v); err != nil || v.ParkID != req.ParkID {
			return nil, "", "", fmt.Errorf("unexpected answer to show %s: %.200s", req.ParkID, out)
		}
		b = review.ParkDecideBinding(req.ParkID, string(req.Decision), v.CurrentDigest)
	}
	if req.Proof, err = p.sign(ctx, b); err != nil {
		return nil, "", "", err
	}
	return call(req)
}

// callParkURL calls the review-decision Function URL's /parks routes.
func (a *app) callParkURL(ctx context.Context, base string, req review.DirectRequest) ([]byte, string, string, error) {
	method, path, body := http.MethodGet, "/parks", []byte(nil)
	var query url.Values
	switch req.Action {
	case review.ActionParkList:
		query = url.Values{"status": {req.Status}}
	case review.ActionParkShow:
		path += "/" + url.PathEscape(req.ParkID)
	case review.ActionParkDecide, review.ActionParkCancel:
		d := req.Decision
		if req.Action == review.ActionParkCancel {
			d = "cancel"
		}
		method, path = http.MethodPost, path+"/"+url.PathEscape(req.ParkID)
		body, _ = json.Marshal(review.DecisionBody{Decision: d, Reason: req.Reason})
	}
	out, code, msg, err := a.callFunctionURL(ctx, base, method, path, query, body, map[string]string{review.ProofHeader: req.Proof})
	if code != "" {
		var eb review.ErrorBody
		if json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
			msg = eb.Error.Message
		}
	}
	return out, code, msg, err
}

func printParkList(out []byte, status string, stdout, stderr io.Writer) int {
	var res park.ListResult
	if err := json.Unmarshal(out, &res); err != nil {
		fmt.Fprintf(stderr, "toolgate parked list: unexpected answer: %.200s\n", out)
		return ExitErrors
	}
	if len(res.Parks) == 0 {
		fmt.Fprintf(stdout, "no %s calls\n", strings.ToLower(status))
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARK\tSTATUS\tCAUSE\tTOOL\tSTEP\tRUN\tPARKED\tDEADLINE\tDECIDED BY")
	for _, v := range res.Parks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ParkID, v.Status, v.Cause, v.Tool, v.Step, v.RunID, orDash(v.CreatedAt), orDash(v.Deadline), orDash(v.DecidedBy))
	}
	tw.Flush()
	return ExitOK
}

// changedLines are a tool.schema_changed park's changed JSON Pointers,
// one a line, each after its class, "additive" or "breaking"
// (docs/parking.md, "Classifying a change"): a pointer the park does not
// list as additive is breaking, as on parks recorded before changes were
// classified. A tool its server lists no more is one breaking line, and a
// park without pointers "-".
func changedLines(v park.View) []string {
	if v.CurrentDigest == "" && v.PinnedDigest != "" {
		return []string{"breaking: the server lists the tool no more"}
	}
	if len(v.ChangedPointers) == 0 {
		return []string{"-"}
	}
	lines := make([]string, len(v.ChangedPointers))
	for i, p := range v.ChangedPointers {
		class := "breaking"
		if slices.Contains(v.AdditivePointers, p) {
			class = "additive"
		}
		if p == "" {
			p = "(the whole definition)"
		}
		lines[i] = class + " " + p
	}
	return lines
}

func printPark(out []byte, stdout, stderr io.Writer) int {
	var v park.View
	if err := json.Unmarshal(out, &v); err != nil {
		fmt.Fprintf(stderr, "toolgate parked show: unexpected answer: %.200s\n", out)
		return ExitErrors
	}
	status := string(v.Status)
	if v.Expired {
		status += " (timed out)"
	}
	oneLine := func(s string) string { return invisible.Escape(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)) }
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "park\t%s\n", v.ParkID)
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "cause\t%s\n", v.Cause)
	fmt.Fprintf(tw, "tool\t%s, step %s, seq %s\n", v.Tool, v.Step, v.Seq)
	fmt.Fprintf(tw, "run\t%s\n", v.RunID)
	fmt.Fprintf(tw, "toolset\t%s\n", v.ToolsetID)
	fmt.Fprintf(tw, "started by\t%s\n", orDash(v.Starter))
	fmt.Fprintf(tw, "deciders\t%s\n", orDash(v.Deciders))
	switch v.Cause {
	case park.SchemaChanged:
		fmt.Fprintf(tw, "pinned\t%s\n", orDash(v.PinnedDigest))
		fmt.Fprintf(tw, "current\t%s\n", orDash(v.CurrentDigest))
		for i, line := range changedLines(v) {
			label := ""
			if i == 0 {
				label = "changed"
			}
			fmt.Fprintf(tw, "%s\t%s\n", label, oneLine(line))
		}
	case park.CredentialsExpired:
		fmt.Fprintf(tw, "credential\t%s, scope %s\n", orDash(oneLine(v.Target)), orDash(oneLine(v.Scope)))
	}
	fmt.Fprintf(tw, "parked\t%s\n", orDash(v.CreatedAt))
	fmt.Fprintf(tw, "deadline\t%s\n", orDash(v.Deadline))
	if v.DecidedBy != "" {
		fmt.Fprintf(tw, "decided\t%s by %s at %s\n", strings.ToLower(string(v.Status)), v.DecidedBy, v.DecidedAt)
		fmt.Fprintf(tw, "reason\t%s\n", orDash(oneLine(v.Reason)))
	}
	tw.Flush()
	return ExitOK
}
