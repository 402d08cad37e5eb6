package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/shared/caller"
)

// adminFunction is how a command reaches one of the stage's functions
// that answer an IAM-authorised Function URL with a caller proof on every
// request (the webhooks function, the sources function): its Function
// URL (--function-url, default the environment variable env; SigV4 with
// the standard AWS configuration, the caller proof signed with the same
// credentials) or, on the local stack, the function under the Lambda RIE
// (--function-endpoint, the proof signed with --as NAME's local keys).
// Its flag is --function-url, not --url as the publish function's:
// webhooks subscribe's --url is the endpoint.
type adminFunction struct {
	// name is the function's, as the flags' help and errors say it
	// ("webhooks", "sources"); env the variable --function-url defaults to.
	name, env         string
	url, endpoint, as string
	app               *app
}

// addFlags adds --function-url, --function-endpoint and --as to fs, for
// function name whose Function URL defaults to $env.
func (f *adminFunction) addFlags(a *app, fs *pflag.FlagSet, name, env string) {
	f.app, f.name, f.env = a, name, env
	fs.StringVar(&f.url, "function-url", a.getenv(env), "the "+name+" function's Function `URL` (default $"+env+")")
	fs.StringVar(&f.endpoint, "function-endpoint", "", "the "+name+" function under the Lambda RIE (the local stack): its `URL`")
	fs.StringVar(&f.as, "as", "", "with --function-endpoint: sign the caller proof with `NAME`'s local keys")
}

// check refuses a command line that names no function, or names it
// wrongly (publishFunction.check's rules for --function-endpoint and
// --as).
func (f *adminFunction) check(cmd *cobra.Command) int {
	if f.url == "" && f.endpoint == "" {
		return misuse(cmd, "name the %s function: --function-url URL, or set $%s (--function-endpoint URL --as NAME on the local stack)", f.name, f.env)
	}
	if err := (&publishFunction{endpoint: f.endpoint, as: f.as}).check(); err != nil {
		return misuse(cmd, "%v", err)
	}
	return ExitOK
}

// adminRequest is one request to an adminFunction: what its caller proof
// is bound to, its direct invocation given the proof, and its route.
type adminRequest struct {
	binding      caller.Binding
	direct       func(proof string) any
	method, path string
	query        url.Values
	body         any // nil: none
}

// call signs a proof for r's binding and sends r, decoding the answer into
// out. It says what failed on stderr (never a request's secret or input)
// and returns ExitErrors, or ExitMisuse for a proof it cannot sign. An
// error answer's message is the function's {"error": {"code", "message"}}
// message.
func (f *adminFunction) call(cmd *cobra.Command, r adminRequest, out any) int {
	stderr, name := cmd.ErrOrStderr(), cmd.CommandPath()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := f.app.newProver(ctx, f.as)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitMisuse
	}
	proof, err := p.sign(ctx, r.binding)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitErrors
	}
	var answer []byte
	var code, msg string
	if f.endpoint != "" {
		payload, _ := json.Marshal(r.direct(proof)) // strings and raw JSON already checked: it cannot fail
		answer, code, msg, err = f.app.invokeLambda(ctx, f.endpoint, rieFunctionName, payload)
	} else {
		var body []byte
		if r.body != nil {
			body, _ = json.Marshal(r.body)
		}
		answer, code, msg, err = f.app.callFunctionURL(ctx, f.url, r.method, r.path, r.query, body, map[string]string{caller.ProofHeader: proof})
	}
	if code != "" {
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
			msg = eb.Error.Message
		}
	}
	return decodeAnswer(stderr, name, "the "+f.name+" function", answer, code, msg, err, out)
}
