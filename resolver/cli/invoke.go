package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	lanepkg "github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/tracecontext"
)

// rieFunctionName is the only function name the Lambda Runtime Interface
// Emulator serves (/2015-03-31/functions/function/invocations).
const rieFunctionName = "function"

// invokeOptions are toolgate invoke's flags.
type invokeOptions struct {
	af                                           awsFlags
	inputFile, endpoint, function, toolsetID, as string
	url                                          string // the publish function's, where the toolset is read without --table
	fetchHosts                                   []string
	lane                                         *reviewLane
}

// newInvokeCmd is `toolgate invoke TOOL --input FILE.json`: the direct lane
// (dispatch-workflow-tool) that sends one envelope to a tool function.
func (a *app) newInvokeCmd() *cobra.Command {
	var o invokeOptions
	cmd := &cobra.Command{
		Use:   "invoke TOOL --input FILE.json (--url URL | --table NAME [--dynamodb-endpoint URL]) [--endpoint URL --as NAME] [--function NAME] [--toolset ID | --fetch-host ENTRY...] [--wait-timeout D] [--review-endpoint URL] [--review-function NAME]",
		Short: "call one tool function directly",
		Long: `Calls one tool function on the direct lane with an envelope built from
FILE.json, signed with a caller proof, and prints its output. The toolset
must be registered (toolgate toolset register); invoke reads it through the
publish function (--url, default $` + EnvPublishURL + `) or, with --table
(default $` + EnvTable + `), from the ledger table. A tool the toolset gates
first waits for a review's approval (toolgate review approve). Exit 1 when
the tool returns an error, the review is rejected or not decided in time.`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.invoke(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	o.af.app = a
	fs.StringVar(&o.af.endpoint, "dynamodb-endpoint", "", "DynamoDB endpoint `URL` of the ledger table, where the toolset is read (default: the standard AWS configuration)")
	fs.StringVar(&o.af.table, "table", a.getenv(EnvTable), "ledger table `NAME` the toolset is read from (default $"+EnvTable+"); without it, through the publish function (--url)")
	fs.StringVar(&o.url, "url", a.getenv(EnvPublishURL), "the publish function's Function `URL` the toolset is read through when no ledger table is named (default $"+EnvPublishURL+")")
	fs.StringVar(&o.inputFile, "input", "", "JSON `FILE`: the tool's input object, or a whole envelope (missing run_id and seq are generated)")
	fs.StringVar(&o.endpoint, "endpoint", "", "Lambda endpoint `URL` (a function under the RIE locally; default: the standard AWS configuration)")
	fs.StringVar(&o.function, "function", "", "function `NAME` or ARN (default: the direct alias of the tool's function in the catalog, NAME:direct; with --endpoint, \"function\", the name the Lambda RIE serves)")
	fs.StringVar(&o.toolsetID, "toolset", "", "a registered toolset `ID` (default: the tool's one-tool toolset from the catalog, which must be registered: toolgate toolset register --tool TOOL)")
	fs.StringArrayVar(&o.fetchHosts, "fetch-host", nil, "an allowed host `ENTRY` for structured-data-fetch in the tool's catalog toolset (repeatable)")
	fs.StringVar(&o.as, "as", "", "on the local stack only (with --endpoint): sign the caller proof with `NAME`'s local keys ($"+EnvLocalKeys+")")
	o.lane = a.addReviewLane(fs) // gated tools: review_lane.go
	return cmd
}

func (a *app) invoke(cmd *cobra.Command, pos []string, o *invokeOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(pos) != 1:
		return misuse(cmd, "name one tool")
	case o.inputFile == "":
		return misuse(cmd, "--input FILE.json is required")
	}
	if o.lane.wait < time.Second || o.lane.wait > MaxReviewWait {
		fmt.Fprintf(stderr, "toolgate invoke: --wait-timeout %s is outside 1s..%s\n", o.lane.wait, MaxReviewWait)
		return ExitMisuse
	}
	if o.as != "" && o.endpoint == "" {
		fmt.Fprintln(stderr, "toolgate invoke: --as is for the local stack (with --endpoint): on AWS you are who your AWS credentials say")
		return ExitMisuse
	}
	if o.toolsetID != "" && len(o.fetchHosts) > 0 {
		fmt.Fprintln(stderr, "toolgate invoke: --toolset and --fetch-host exclude each other: the toolset pins its hosts")
		return ExitMisuse
	}
	name := pos[0]
	entry, ok := catalog.Default().Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "toolgate invoke: tool %q is not in the catalog (%s)\n", name, strings.Join(catalog.Default().Names(), ", "))
		return ExitMisuse
	}
	raw, err := os.ReadFile(o.inputFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitMisuse
	}
	env, generated, err := buildEnvelope(name, raw)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %s: %v\n", o.inputFile, err)
		return ExitMisuse
	}
	ctx, cancel := context.WithTimeout(context.Background(), 16*time.Minute) // Lambda's 15-minute maximum, and some
	defer cancel()
	if _, pinned := env[tool.MemberToolsetID]; pinned && len(o.fetchHosts) > 0 {
		fmt.Fprintf(stderr, "toolgate invoke: %s names a toolset_id, which pins its hosts: --fetch-host cannot be used with it\n", o.inputFile)
		return ExitMisuse
	}
	if o.toolsetID != "" {
		env[tool.MemberToolsetID] = o.toolsetID
	}
	// The toolset is read before anything is written (a review request,
	// the dispatcher's row): invoke never registers one.
	if o.af.table == "" && o.url == "" {
		return misuse(cmd, "name where the toolset is read: the publish function, --url URL or $%s; or the ledger table, --table NAME or $%s", EnvPublishURL, EnvTable)
	}
	// The direct lane: every call carries a caller proof, and its run id is
	// in the caller's own namespace (docs/identity.md).
	prover, err := a.newProver(ctx, o.as)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitMisuse
	}
	var args []string
	if _, ok := env[tool.MemberToolsetID].(string); ok {
		args = []string{"FILE.toolset.json|SOLUTION.yaml"}
	} else if _, given := env[tool.MemberToolsetID]; given {
		fmt.Fprintf(stderr, "toolgate invoke: %s: toolset_id is not a string\n", o.inputFile)
		return ExitMisuse
	} else {
		ts, err := catalogToolset(name, o.fetchHosts)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
			return ExitMisuse
		}
		args = []string{"--tool", name}
		for _, h := range o.fetchHosts {
			args = append(args, "--fetch-host", h)
		}
		env[tool.MemberToolsetID] = ts.ID
	}
	ts, err := o.readToolset(ctx, prover, env[tool.MemberToolsetID].(string), args)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitErrors
	}
	if generated != "" {
		me, err := prover.whoAmI(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
			return ExitErrors
		}
		if env[tool.MemberIdempotencyKey] == fmt.Sprintf("%v/%v", generated, env[tool.MemberSeq]) {
			env[tool.MemberIdempotencyKey] = fmt.Sprintf("%v%v/%v", lanepkg.DirectRunPrefix(me), generated, env[tool.MemberSeq])
		}
		env[tool.MemberRunID] = lanepkg.DirectRunPrefix(me) + generated
	}
	if _, given := env[tool.MemberTrace]; !given {
		// The call continues the caller's trace, if it has one
		// (docs/tracing.md, "What a call carries").
		if sc := carriedTrace(a.getenv, "toolgate invoke", stderr); sc.IsValid() {
			env[tool.MemberTrace] = tracecontext.Format(sc)
		}
	}
	payload, err := json.Marshal(env)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitErrors
	}
	if _, err := tool.DecodeEnvelope(payload); err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %s: %v\n", o.inputFile, err)
		return ExitMisuse
	}
	o.lane.prover = prover
	payload, code := o.lane.gate(ctx, ts, payload, stderr)
	if code != ExitOK {
		return code
	}
	if payload, err = withCallerProof(ctx, prover, payload); err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitErrors
	}
	fn := o.function
	switch {
	case fn != "":
	case o.endpoint != "":
		fn = rieFunctionName
	default:
		fn = entry.Function + ":" + string(lanepkg.Direct) // people invoke the direct alias only
	}
	out, errType, errMsg, err := a.invokeLambda(ctx, o.endpoint, fn, payload)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate invoke: %v\n", err)
		return ExitErrors
	}
	if errType != "" {
		fmt.Fprintf(stderr, "%s: %s\n", errType, errMsg)
		return ExitErrors
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return ExitOK
}

// readToolset reads registered toolset id: from the ledger table when
// --table (or $TOOLGATE_TABLE) names one, else through the publish function
// at --url (or $TOOLGATE_PUBLISH_URL), whose answer is believed only as far
// as registeredToolset checks it. args name the toolset for toolgate
// toolset register, in the hint given when it is not registered.
func (o *invokeOptions) readToolset(ctx context.Context, p *prover, id string, args []string) (*toolset.Toolset, error) {
	if o.af.table != "" {
		store, err := o.af.store(ctx)
		if err != nil {
			return nil, fmt.Errorf("the toolset is read from the ledger table: %v", err)
		}
		return readRegistered(ctx, store, id, registerHint(o.url, store.Table(), o.af.endpoint, args...))
	}
	fn := publishFunction{url: o.url, app: o.af.app}
	out, code, msg, err := fn.showCall(ctx, p, id)
	switch {
	case err != nil:
		return nil, fmt.Errorf("toolset %s: %v", id, err)
	case code == publishapi.CodeNotFound:
		return nil, fmt.Errorf("toolset %s is not registered (the publish function says: %s: %s): %s", id, code, msg, registerHint(o.url, "", "", args...))
	case code != "":
		return nil, fmt.Errorf("toolset %s: the publish function refused the read: %s: %s", id, code, msg)
	}
	return registeredToolset(id, out)
}

// buildEnvelope reads the input file: a whole envelope (it has "input"),
// or the tool's input object. Missing run_id, seq, step, attempt,
// tolerate_duplicates and idempotency_key are filled in; a generated run
// id is also returned, so that the caller can put it in its direct-lane
// namespace (lane.DirectRunPrefix) once it knows who it is.
func buildEnvelope(name string, raw []byte) (map[string]any, string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, "", fmt.Errorf("not a JSON object")
	}
	env := doc
	if _, isEnvelope := doc[tool.MemberInput]; !isEnvelope {
		env = map[string]any{tool.MemberInput: doc}
	}
	if t, ok := env[tool.MemberTool]; ok && t != name {
		return nil, "", fmt.Errorf("the envelope's tool %v is not %s", t, name)
	}
	env[tool.MemberTool] = name
	generated := ""
	if _, ok := env[tool.MemberRunID]; !ok {
		b := make([]byte, 8)
		rand.Read(b)
		generated = fmt.Sprintf("invoke-%s-%s", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(b))
		env[tool.MemberRunID] = generated
	}
	defaults := map[string]any{tool.MemberSeq: "1", tool.MemberStep: "invoke", tool.MemberAttempt: json.Number("1"), tool.MemberTolerateDuplicates: false}
	for k, v := range defaults {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	if _, ok := env[tool.MemberIdempotencyKey]; !ok {
		env[tool.MemberIdempotencyKey] = fmt.Sprintf("%v/%v", env[tool.MemberRunID], env[tool.MemberSeq])
	}
	return env, generated, nil
}

// withCallerProof adds the direct lane's caller proof to an envelope,
// bound to its idempotency key and its input's digest.
func withCallerProof(ctx context.Context, p *prover, payload []byte) ([]byte, error) {
	env, err := tool.DecodeEnvelope(payload)
	if err != nil {
		return nil, err
	}
	_, digest, err := tool.InputDigest(env.Input)
	if err != nil {
		return nil, err
	}
	proof, err := p.sign(ctx, caller.Binding{Action: caller.ActionInvoke, Target: env.IdempotencyKey, InputDigest: digest})
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(payload, &members); err != nil {
		return nil, err
	}
	members[tool.MemberCallerProof], _ = json.Marshal(proof)
	return json.Marshal(members)
}

// invokeLambda calls Invoke (RequestResponse). A function error comes back
// as its errorType and errorMessage: Lambda marks it with X-Amz-Function-
// Error, the RIE only by the payload's shape.
func (a *app) invokeLambda(ctx context.Context, endpoint, function string, payload []byte) (out []byte, errType, errMsg string, err error) {
	cfg, err := a.loadAWSConfig(ctx)
	if err != nil {
		return nil, "", "", err
	}
	client := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	res, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload})
	if err != nil {
		return nil, "", "", fmt.Errorf("invoke %s: %w", function, err)
	}
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	if json.Unmarshal(res.Payload, &fe) == nil && fe.ErrorType != nil && fe.ErrorMessage != nil {
		return nil, *fe.ErrorType, *fe.ErrorMessage, nil
	}
	if res.FunctionError != nil {
		return nil, *res.FunctionError, strings.TrimSpace(string(res.Payload)), nil
	}
	return res.Payload, "", "", nil
}
