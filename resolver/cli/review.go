package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// EnvReviewURL names the review-decision Function URL when --url is not
// given.
const EnvReviewURL = "TOOLGATE_REVIEW_URL"

// decisionOptions are the flags of toolgate review's and toolgate
// parked's commands: both call the review-decision function, through its
// Function URL (url) or, on the local stack, under the RIE (endpoint, as).
type decisionOptions struct {
	endpoint, url, as string
	asJSON            bool
	status            string // list
	reason            string // a decision's; required to reject
	// An approval's answer (--answer TEXT or --answer-file F; answerFlag
	// names the flag given) and edits (--edit NAME=TEXT, --edits-file F),
	// review approve only (docs/reviews.md).
	answerText, answerFile givenText
	answer, answerFlag     string
	edit                   []string
	editsFile              string
	edits                  map[string]json.RawMessage
}

// decisionMisuse is the misuse, if any, of sub's positional arguments
// (list takes none, every other command one id, named what) and of o's
// transport flags, and a rejection without a reason; ok false when there
// is none.
func (a *app) decisionMisuse(cmd *cobra.Command, sub, what string, pos []string, o *decisionOptions) (exit int, ok bool) {
	switch {
	case sub == "list" && len(pos) != 0:
		return misuse(cmd, "list takes no arguments"), true
	case sub != "list" && len(pos) != 1:
		return misuse(cmd, "name one %s id", what), true
	case o.endpoint != "" && o.url != "" && a.getenv(EnvReviewURL) != o.url:
		return misuse(cmd, "--endpoint and --url exclude each other"), true
	case o.endpoint == "" && o.url == "":
		return misuse(cmd, "pass --url (the review-decision Function URL) or --endpoint (the function under the RIE, locally)"), true
	case o.endpoint == "" && o.as != "":
		return misuse(cmd, "--as is for the local stack: through the Function URL you are your IAM principal"), true
	case o.as != "" && validAs(o.as) != nil:
		return misuse(cmd, "--as %q: %v", o.as, validAs(o.as)), true
	case o.endpoint != "" && o.as == "":
		return misuse(cmd, "--endpoint needs --as NAME: on the local stack you prove who you are with NAME's local keys"), true
	case sub == "reject" && strings.TrimSpace(o.reason) == "":
		return misuse(cmd, "a rejection needs --reason TEXT"), true
	}
	return 0, false
}

// decisionCaller is how a command calls review-decision with one signed
// request: its out, its error code and message, or a transport error.
type decisionCaller = func(review.DirectRequest) ([]byte, string, string, error)

// decisionPrinters print a list's and a show's answer.
type decisionPrinters struct {
	list func(out []byte, status string, stdout, stderr io.Writer) int
	one  func(out []byte, stdout, stderr io.Writer) int
}

// sendDecision runs `toolgate <name> <sub>` once its request is built:
// sign signs req's caller proof and calls review-decision through o's
// transport (under the RIE, or viaURL), within a minute; the answer is
// printed as JSON with --json, by p for list and show, and otherwise as
// the decision's message. Exit 0, or 1 when the function refuses or
// fails (decisionAnswer).
func (a *app) sendDecision(name, sub string, o *decisionOptions, req review.DirectRequest,
	sign func(ctx context.Context, as string, req review.DirectRequest, call decisionCaller) ([]byte, string, string, error),
	viaURL func(ctx context.Context, url string, req review.DirectRequest) ([]byte, string, string, error),
	p decisionPrinters, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	call := func(req review.DirectRequest) ([]byte, string, string, error) {
		if o.endpoint != "" {
			return a.callDecisionRIE(ctx, o.endpoint, req)
		}
		return viaURL(ctx, o.url, req)
	}
	out, code, msg, err := sign(ctx, o.as, req, call)
	if exit, done := decisionAnswer("toolgate "+name+" "+sub, out, code, msg, err, o.asJSON, stdout, stderr); done {
		return exit
	}
	switch sub {
	case "list":
		return p.list(out, req.Status, stdout, stderr)
	case "show":
		return p.one(out, stdout, stderr)
	}
	var res struct {
		Message string `json:"message"` // review.DecideResult's and park.DecideResult's
	}
	if err := json.Unmarshal(out, &res); err != nil {
		fmt.Fprintf(stderr, "toolgate %s %s: unexpected answer: %.200s\n", name, sub, out)
		return ExitErrors
	}
	fmt.Fprintln(stdout, res.Message)
	return ExitOK
}

// newReviewCmd is `toolgate review list|show|approve|reject|console`: it calls the
// review-decision function, never the table, so reviewers need no table
// access. Exit 0 on success (a repeated identical decision included), 1
// when the function refuses or fails, 2 on misuse.
func (a *app) newReviewCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "review",
		Short: "list, show and decide the reviews of gated calls",
		Long: `Lists, shows and decides the reviews of gated calls through the
review-decision function (never the table: reviewers need no table access).

On AWS, --url names the function's Function URL (default
$` + EnvReviewURL + `): requests are SigV4-signed and carry a caller proof
signed with your AWS credentials; you are who STS says you are. On the
local stack, --endpoint names the function under the Lambda RIE, and --as
NAME signs the caller proof with NAME's local keys ($` + EnvLocalKeys + `),
checked by the local STS stand-in.

Exit 0 on success (a repeated identical decision included), 1 when the
function refuses or fails, 2 on misuse.`,
	})
	cmd.AddCommand(
		a.newReviewSubCmd("list", "list [--status pending|approved|rejected] [--json] (--url URL | --endpoint URL --as NAME)", "list reviews, the pending ones by default"),
		a.newReviewSubCmd("show", "show ID [--json] (--url URL | --endpoint URL --as NAME)", "show a review and the input it is about"),
		a.newReviewSubCmd("approve", "approve ID [--reason TEXT] [--answer TEXT | --answer-file F] [--edit NAME=TEXT]... [--edits-file F] [--json] (--url URL | --endpoint URL --as NAME)", "approve a review, with an answer to its question and edits of its editable members"),
		a.newReviewSubCmd("reject", "reject ID --reason TEXT [--json] (--url URL | --endpoint URL --as NAME)", "reject a review, saying why"),
		a.newReviewConsoleCmd(),
	)
	return cmd
}

// newReviewSubCmd is `toolgate review SUB`.
func (a *app) newReviewSubCmd(sub, use, short string) *cobra.Command {
	var o decisionOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.reviewRun(cmd, sub, pos, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.endpoint, "endpoint", "", "the review-decision function under the Lambda RIE (local stack): its `URL`")
	fs.StringVar(&o.url, "url", a.getenv(EnvReviewURL), "the review-decision Function `URL` (AWS; default $"+EnvReviewURL+")")
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the caller proof with `NAME`'s local keys")
	fs.BoolVar(&o.asJSON, "json", false, "print the function's JSON answer")
	switch sub {
	case "list":
		fs.StringVar(&o.status, "status", "pending", "the reviews' `STATUS`: pending, approved or rejected")
	case "approve", "reject":
		fs.StringVar(&o.reason, "reason", "", "why, as `TEXT` (required to reject)")
	}
	if sub == "approve" {
		fs.Var(&o.answerText, "answer", "the answer to the review's question: `TEXT`, sent as a JSON string when the question asks for a string, else parsed as JSON")
		fs.Var(&o.answerFile, "answer-file", "the answer read from file `F` (as --answer)")
		fs.StringArrayVar(&o.edit, "edit", nil, "replace the editable input member NAME by the string TEXT (`NAME=TEXT`; repeatable)")
		fs.StringVar(&o.editsFile, "edits-file", "", "a JSON object in file `F` of the editable input members to replace")
	}
	return cmd
}

// givenText is a string flag that tells whether it was given (an
// empty --answer "" is an answer).
type givenText struct {
	text  string
	given bool
}

func (g *givenText) String() string { return g.text }

// Set implements pflag.Value.
func (g *givenText) Set(s string) error { g.text, g.given = s, true; return nil }

// Type implements pflag.Value.
func (g *givenText) Type() string { return "string" }

// approvalMisuse reads an approval's answer and edits flags into o
// (answerFlag, answer, edits), and returns the misuse, if any: --answer
// with --answer-file, an --edit without "=", a file that cannot be read
// or whose edits are not a JSON object, and a member named twice (in the
// file, or by the file and an --edit).
func (a *app) approvalMisuse(cmd *cobra.Command, o *decisionOptions) (exit int, bad bool) {
	switch {
	case o.answerText.given && o.answerFile.given:
		return misuse(cmd, "--answer and --answer-file exclude each other"), true
	case o.answerText.given:
		o.answer, o.answerFlag = o.answerText.text, "--answer"
	case o.answerFile.given:
		b, err := os.ReadFile(o.answerFile.text)
		if err != nil {
			return misuse(cmd, "--answer-file: %v", err), true
		}
		o.answer, o.answerFlag = strings.TrimSuffix(string(b), "\n"), "--answer-file"
	}
	if len(o.edit) == 0 && o.editsFile == "" {
		return 0, false
	}
	o.edits = map[string]json.RawMessage{}
	if o.editsFile != "" {
		b, err := os.ReadFile(o.editsFile)
		if err != nil {
			return misuse(cmd, "--edits-file: %v", err), true
		}
		// Each member once (tool.DecodeObject): a decoder that kept the
		// last of two would send, and sign, another value than the first
		// one the file shows.
		members, err := tool.DecodeObject("--edits-file "+o.editsFile, bytes.TrimSpace(b))
		if err != nil {
			return misuse(cmd, "%v: give a JSON object of the members to replace, each once", err), true
		}
		o.edits = members
	}
	for _, e := range o.edit {
		name, text, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return misuse(cmd, "--edit %q: use --edit NAME=TEXT", e), true
		}
		if _, dup := o.edits[name]; dup {
			return misuse(cmd, "member %q is edited twice (--edit and --edits-file name each member once)", name), true
		}
		v, _ := json.Marshal(text)
		o.edits[name] = v
	}
	return 0, false
}

// answerJSON is the answer text of o as JSON for a review whose question
// is ask: a JSON string when ask says "type": "string", else the text
// parsed as JSON (an error naming the flag when it is not JSON). nil when
// no answer was given.
func answerJSON(o *decisionOptions, ask json.RawMessage) (json.RawMessage, error) {
	if o.answerFlag == "" {
		return nil, nil
	}
	var q struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(ask, &q) == nil && q.Type == "string" {
		b, _ := json.Marshal(o.answer)
		return b, nil
	}
	if !json.Valid([]byte(o.answer)) {
		return nil, fmt.Errorf("%s: the review's question asks for JSON, and the text is not JSON", o.answerFlag)
	}
	return json.RawMessage(bytes.TrimSpace([]byte(o.answer))), nil
}

// reviewRun runs toolgate review SUB.
func (a *app) reviewRun(cmd *cobra.Command, sub string, pos []string, o *decisionOptions) int {
	if exit, bad := a.decisionMisuse(cmd, sub, "review", pos, o); bad {
		return exit
	}
	if sub == "approve" {
		if exit, bad := a.approvalMisuse(cmd, o); bad {
			return exit
		}
	}
	req := review.DirectRequest{}
	switch sub {
	case "list":
		req.Action, req.Status = review.ActionList, o.status
	case "show":
		req.Action, req.ReviewID = review.ActionShow, pos[0]
	default:
		req.Action, req.ReviewID, req.Decision, req.Reason = review.ActionDecide, pos[0], review.Approve, o.reason
		if sub == "reject" {
			req.Decision = review.Reject
		}
	}
	sign := func(ctx context.Context, as string, req review.DirectRequest, call decisionCaller) ([]byte, string, string, error) {
		return a.decisionCall(ctx, as, req, call, o)
	}
	return a.sendDecision("review", sub, o, req, sign, a.callDecisionURL,
		decisionPrinters{list: printReviewList, one: printReview}, cmd.OutOrStdout(), cmd.ErrOrStderr())
}

// decisionCall signs req's caller proof and calls the function. A decision
// is bound to the review's input digest, so it first shows the review
// (with a proof of its own) to learn the digest: you decide on exactly the
// inputs the function shows. An approval's answer (o's, as JSON for the
// question shown: answerJSON) and edits go into req and its binding
// (review.DecideBinding).
func (a *app) decisionCall(ctx context.Context, as string, req review.DirectRequest, call func(review.DirectRequest) ([]byte, string, string, error), o *decisionOptions) ([]byte, string, string, error) {
	p, err := a.newProver(ctx, as)
	if err != nil {
		return nil, "", "", err
	}
	b := caller.Binding{Action: caller.ActionList, Target: req.Status}
	switch req.Action {
	case review.ActionShow:
		b = caller.Binding{Action: caller.ActionShow, Target: req.ReviewID}
	case review.ActionDecide:
		show := review.DirectRequest{Action: review.ActionShow, ReviewID: req.ReviewID}
		if show.Proof, err = p.sign(ctx, caller.Binding{Action: caller.ActionShow, Target: req.ReviewID}); err != nil {
			return nil, "", "", err
		}
		out, code, msg, err := call(show)
		if err != nil || code != "" {
			return out, code, msg, err
		}
		var v review.View
		if err := json.Unmarshal(out, &v); err != nil || v.InputDigest == "" {
			return nil, "", "", fmt.Errorf("unexpected answer to show %s: %.200s", req.ReviewID, out)
		}
		if req.Answer, err = answerJSON(o, v.Ask); err != nil {
			return nil, "", "", err
		}
		if len(o.edits) > 0 {
			if req.Edits, err = json.Marshal(o.edits); err != nil {
				return nil, "", "", err
			}
		}
		if b, err = review.DecideBinding(req.ReviewID, req.Decision, v.InputDigest, req.Answer, req.Edits); err != nil {
			return nil, "", "", err
		}
	}
	if req.Proof, err = p.sign(ctx, b); err != nil {
		return nil, "", "", err
	}
	return call(req)
}

// callDecisionRIE invokes the function under the RIE with the Lambda SDK,
// as `toolgate invoke` does.
func (a *app) callDecisionRIE(ctx context.Context, endpoint string, req review.DirectRequest) ([]byte, string, string, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, "", "", err
	}
	return a.invokeLambda(ctx, endpoint, rieFunctionName, payload)
}

// callDecisionURL calls the review-decision Function URL with req.
func (a *app) callDecisionURL(ctx context.Context, base string, req review.DirectRequest) ([]byte, string, string, error) {
	method, path, body := http.MethodGet, "/reviews", []byte(nil)
	var query url.Values
	switch req.Action {
	case review.ActionList:
		query = url.Values{"status": {req.Status}}
	case review.ActionShow:
		path += "/" + url.PathEscape(req.ReviewID)
	case review.ActionDecide:
		method, path = http.MethodPost, path+"/"+url.PathEscape(req.ReviewID)
		body, _ = json.Marshal(review.DecisionBody{Decision: req.Decision, Reason: req.Reason, Answer: req.Answer, Edits: req.Edits})
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

// callFunctionURL sends one request to a Function URL, SigV4-signed for
// the lambda service with the standard AWS configuration's credentials,
// with headers added (a caller proof). It returns the body of a 200; for
// another status the error code from a {"error": {"code"}} body and the
// whole body as the message, or "HTTP <status>" and the start of the body
// when the request was refused before the function ran (IAM).
func (a *app) callFunctionURL(ctx context.Context, base, method, path string, query url.Values, body []byte, headers map[string]string) ([]byte, string, string, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, "", "", fmt.Errorf("--url %q is not a Function URL", base)
	}
	u.Path += path
	if query != nil {
		u.RawQuery = query.Encode()
	}
	cfg, err := a.loadAWSConfig(ctx)
	if err != nil {
		return nil, "", "", err
	}
	region := functionURLRegion(u.Host)
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, "", "", fmt.Errorf("no AWS region: the URL does not name one; set AWS_REGION")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, "", "", fmt.Errorf("AWS credentials: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, "", "", err
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		hreq.Header.Set(k, v)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, hreq, hex.EncodeToString(sum[:]), "lambda", region, time.Now()); err != nil {
		return nil, "", "", fmt.Errorf("sign the request: %w", err)
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, "", "", fmt.Errorf("call %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 6<<20))
	if err != nil {
		return nil, "", "", fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return out, "", "", nil
	}
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(out, &eb) == nil && eb.Error.Code != "" {
		return nil, eb.Error.Code, string(out), nil
	}
	// Refused before the function ran: IAM (403 from the Function URL) or
	// anything in front of it.
	return nil, fmt.Sprintf("HTTP %d", resp.StatusCode), strings.TrimSpace(string(bytes.ToValidUTF8(out[:min(len(out), 300)], nil))), nil
}

// functionURLRegion reads the region of a Function URL host,
// "<url-id>.lambda-url.<region>.on.aws"; "" for any other host.
func functionURLRegion(host string) string {
	labels := strings.Split(strings.ToLower(host), ".")
	for i, l := range labels {
		if l == "lambda-url" && i+1 < len(labels) {
			return labels[i+1]
		}
	}
	return ""
}

func printReviewList(out []byte, status string, stdout, stderr io.Writer) int {
	var res review.ListResult
	if err := json.Unmarshal(out, &res); err != nil {
		fmt.Fprintf(stderr, "toolgate review list: unexpected answer: %.200s\n", out)
		return ExitErrors
	}
	if len(res.Reviews) == 0 {
		fmt.Fprintf(stdout, "no %s reviews\n", strings.ToLower(status))
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REVIEW\tSTATUS\tTOOL\tSTEP\tRUN\tREQUESTED\tEXPIRES\tDECIDED BY")
	for _, v := range res.Reviews {
		tool, step := v.Tool, v.Of
		if v.Kind == "show" {
			tool, step = "(shows values)", v.Step
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ReviewID, v.Status, tool, step, v.RunID, orDash(v.CreatedAt), v.ExpiresAt, orDash(v.Approver))
	}
	tw.Flush()
	return ExitOK
}

func printReview(out []byte, stdout, stderr io.Writer) int {
	var v review.View
	if err := json.Unmarshal(out, &v); err != nil {
		fmt.Fprintf(stderr, "toolgate review show: unexpected answer: %.200s\n", out)
		return ExitErrors
	}
	status := string(v.Status)
	if v.Expired {
		status += " (expired)"
	}
	reviewers := "anyone who may call the decision function"
	if len(v.Reviewers) > 0 {
		reviewers = strings.Join(v.Reviewers, ", ")
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "review\t%s\n", v.ReviewID)
	fmt.Fprintf(tw, "status\t%s\n", status)
	if v.Kind == "show" {
		fmt.Fprintf(tw, "review of\tnothing: shows values (step %s); its approval authorises no tool call\n", v.Step)
	} else {
		fmt.Fprintf(tw, "tool\t%s, step %s (reviewed by step %s)\n", v.Tool, v.Of, v.Step)
	}
	if len(v.Ask) > 0 {
		fmt.Fprintf(tw, "question\tapprove with --answer: the answer must match %s\n", invisible.EscapeJSON(v.Ask))
	}
	if len(v.Editable) > 0 {
		// The names are the reviewed tool's input schema's (a third
		// party's, for an MCP tool): each on this line, its line breaks,
		// tabs and invisible characters shown, so none forges or hides a
		// line.
		names := make([]string, len(v.Editable))
		for i, n := range v.Editable {
			names[i] = invisible.Escape(strings.NewReplacer("\r", `\r`, "\n", `\n`, "\t", `\t`).Replace(n))
		}
		fmt.Fprintf(tw, "editable\t%s (approve with --edit NAME=TEXT or --edits-file F)\n", strings.Join(names, ", "))
	}
	fmt.Fprintf(tw, "run\t%s\n", v.RunID)
	fmt.Fprintf(tw, "toolset\t%s\n", v.ToolsetID)
	fmt.Fprintf(tw, "lane\t%s\n", v.Lane)
	fmt.Fprintf(tw, "reviewers\t%s\n", reviewers)
	fmt.Fprintf(tw, "requested\t%s by %s (who may not decide it)\n", orDash(v.CreatedAt), orDash(v.Requester))
	fmt.Fprintf(tw, "expires\t%s\n", v.ExpiresAt)
	if v.Approver != "" {
		how := "unauthenticated"
		if v.Authenticated != nil && *v.Authenticated {
			how = "IAM"
		}
		fmt.Fprintf(tw, "decided\t%s by %s (%s) at %s\n", strings.ToLower(string(v.Status)), v.Approver, how, v.DecidedAt)
		// The reason is a reviewer's text: one line, invisible characters
		// shown, so it can neither forge a line nor hide one.
		fmt.Fprintf(tw, "reason\t%s\n", orDash(invisible.Escape(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(v.Reason))))
		fmt.Fprintf(tw, "delivery\t%s\n", orDash(string(v.Delivery)))
		if len(v.Answer) > 0 {
			fmt.Fprintf(tw, "answer\t%s\n", invisible.EscapeJSON(v.Answer))
		}
		if len(v.Edits) > 0 {
			fmt.Fprintf(tw, "edits\t%s\n", invisible.EscapeJSON(v.Edits))
			fmt.Fprintf(tw, "approved\t%s (the input with the edits merged)\n", v.ApprovedDigest)
		}
	}
	if v.UsedBy != "" {
		fmt.Fprintf(tw, "used by\t%s\n", v.UsedBy)
	}
	if len(v.Reuses) > 0 {
		// A review of a fork's call: what the approved call will take
		// instead of running, if the dispatcher matches it (docs/fork.md).
		fmt.Fprintf(tw, "reuses\tonce approved, the parent's recorded result of %s (the tool does not run again)\n", strings.Join(v.Reuses, " or "))
	}
	fmt.Fprintf(tw, "input\t%s\n", v.InputDigest)
	tw.Flush()
	var pretty bytes.Buffer
	if json.Indent(&pretty, v.Input, "", "  ") == nil {
		// The reviewed input, with invisible and bidirectional characters
		// as JSON escapes: what a reviewer approves is what they read.
		fmt.Fprintf(stdout, "%s\n", invisible.EscapeJSON(pretty.Bytes()))
	}
	return ExitOK
}

// decisionAnswer prints what review-decision answered a toolgate review or
// toolgate parked subcommand (what names it in messages) when nothing is
// left for the caller to print: a failed call or a refusal on stderr
// (ExitErrors), or with asJSON the answer indented on stdout (ExitOK).
// done is false when the caller prints the answer itself.
func decisionAnswer(what string, out []byte, code, msg string, err error, asJSON bool, stdout, stderr io.Writer) (exit int, done bool) {
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", what, err)
		return ExitErrors, true
	case code != "":
		fmt.Fprintf(stderr, "%s: %s: %s\n", what, code, msg)
		return ExitErrors, true
	case asJSON:
		var pretty bytes.Buffer
		if json.Indent(&pretty, out, "", "  ") == nil {
			out = pretty.Bytes()
		}
		fmt.Fprintf(stdout, "%s\n", out)
		return ExitOK, true
	}
	return 0, false
}
