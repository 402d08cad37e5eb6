package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/shared/localkeys"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// publishFunction is how toolset register, show and diff reach the
// stage's publish function: its Function URL (--url, default
// $TOOLGATE_PUBLISH_URL; SigV4 with the standard AWS configuration, the
// caller proof signed with the same credentials) or, on the local stack,
// the function under the Lambda RIE (--function-endpoint, the caller proof
// signed with --as NAME's local keys).
type publishFunction struct {
	url, endpoint, as string
	app               *app // set by addFlags
}

// addFlags adds --url, --function-endpoint and --as to fs.
func (f *publishFunction) addFlags(a *app, fs *pflag.FlagSet) {
	f.app = a
	fs.StringVar(&f.url, "url", a.getenv(EnvPublishURL), "the publish function's Function `URL` (default $"+EnvPublishURL+")")
	fs.StringVar(&f.endpoint, "function-endpoint", "", "the publish function under the Lambda RIE (the local stack): its `URL`")
	fs.StringVar(&f.as, "as", "", "with --function-endpoint: sign the caller proof with `NAME`'s local keys")
}

// named reports whether a publish function was named (a flag or
// $TOOLGATE_PUBLISH_URL).
func (f *publishFunction) named() bool { return f.url != "" || f.endpoint != "" }

// check refuses --function-endpoint without --as, --as without it, and
// an --as that is not a local name.
func (f *publishFunction) check() error {
	switch {
	case f.endpoint != "" && f.as == "":
		return errors.New("--function-endpoint needs --as NAME")
	case f.as != "" && f.endpoint == "":
		return errors.New("--as is for the local stack, with --function-endpoint")
	case f.as != "":
		if _, _, err := localkeys.ParseIdentity(f.as); err != nil {
			return fmt.Errorf("--as %q: %v", f.as, err)
		}
	}
	return nil
}

// call sends one request: direct (the direct invocation, its Proof set
// here) to the function under the RIE, or method, path and body with the
// proof in publishapi.ProofHeader to the Function URL. It returns the
// answer's body, or the function's error code and the message of its
// error body.
func (f *publishFunction) call(ctx context.Context, direct publishapi.DirectRequest, method, path string, body []byte, proof string) (out []byte, code, msg string, err error) {
	if f.endpoint != "" {
		direct.Proof = proof
		payload, err := json.Marshal(direct)
		if err != nil {
			return nil, "", "", err
		}
		out, code, msg, err = f.app.invokeLambda(ctx, f.endpoint, rieFunctionName, payload)
	} else {
		out, code, msg, err = f.app.callFunctionURL(ctx, f.url, method, path, nil, body, map[string]string{publishapi.ProofHeader: proof})
	}
	if code != "" {
		var eb publishapi.ErrorBody
		if json.Unmarshal([]byte(msg), &eb) == nil && eb.Error.Code != "" {
			msg = eb.Error.Message
		}
	}
	return out, code, msg, err
}

// showCall reads registered toolset id: {"action": "show"} or
// GET /toolsets/{id}, with a proof bound to the id (publishapi.ShowBinding).
func (f *publishFunction) showCall(ctx context.Context, p *prover, id string) ([]byte, string, string, error) {
	proof, err := p.sign(ctx, publishapi.ShowBinding(id))
	if err != nil {
		return nil, "", "", err
	}
	return f.call(ctx, publishapi.DirectRequest{Action: "show", ToolsetID: id}, http.MethodGet, "/toolsets/"+url.PathEscape(id), nil, proof)
}
