package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// newCredentialsCmd is `toolgate credentials`: set, list, revoke and
// allow the credentials toolsets' targets are presented, through the
// publish function (docs/credentials.md).
func (a *app) newCredentialsCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "credentials",
		Short: "set, list, revoke and allow the credentials of toolsets' MCP servers and http hosts",
		Long: `Manages the credentials a toolset's targets (an MCP server, an exact http
host entry) that declare auth are presented, through the publish function
(--url, default $` + EnvPublishURL + `; --function-endpoint with --as NAME on the
local stack), which stores them encrypted under the stage's KMS key.
The secret is read from a file or standard input only, never from the
command line or the environment, and is never printed (docs/credentials.md).`,
	})
	cmd.AddCommand(a.newCredentialsSetCmd(), a.newCredentialsListCmd(), a.newCredentialsRevokeCmd(), a.newCredentialsAllowCmd())
	return cmd
}

// credentialsOptions are the flags of the credentials commands.
type credentialsOptions struct {
	fn              publishFunction
	toolset, target string
	endUser, run    string
	expiresAt       string
	fromFile        string
	fromStdin       bool
	toolsetID       string
	draft           string
	origin          string
	// review is the review-decision function set resumes the calls
	// parked on the credential through (resumeParkedOn).
	review reviewFunction
}

// noSecretArguments refuses arguments on the command line of a
// credentials command without printing them: one of them may be a
// secret typed where it must not be.
func noSecretArguments(cmd *cobra.Command, args []string) int {
	if len(args) == 0 {
		return ExitOK
	}
	return misuse(cmd, "%d argument(s) after the flags, not shown: toolgate takes no secret from the command line (shell history, process lists); write it to a file for --from-file or pipe it to --from-stdin", len(args))
}

// newCredentialsSetCmd is `toolgate credentials set`.
func (a *app) newCredentialsSetCmd() *cobra.Command {
	var o credentialsOptions
	cmd := &cobra.Command{
		Use:   "set --toolset NAME --target TARGET (--origin ORIGIN | --draft FILE) [--end-user ID | --run EXECUTION_ARN] [--expires-at RFC3339] (--from-file FILE | --from-stdin) (--url URL [--review-url URL] | --function-endpoint URL --as NAME [--review-endpoint URL])",
		Short: "store a credential for a toolset's target (publish function), and resume the calls parked on it",
		Long: `Stores the credential toolset NAME's TARGET (an MCP server's key, or an
exact http host entry) is presented, for --origin ORIGIN
("<scheme>://<host>[:<port>]", as toolgate toolset show gives the target's
origin): a registered toolset of that name must declare the target there.
The origin is yours to name and your proof binds it, so a toolset
registered by someone else cannot choose where your secret goes. The scope is the toolset's
(a credential admin), --end-user ID's (a principal the end-user mapping
lets act for ID, or a credential admin) or --run EXECUTION_ARN's, for a
run not started yet (used only when you start it). A credential admin's
set allows every toolset id of the name registered so far with that
target and origin to use the name's credentials; anyone else's allows
none, and an id registered later needs toolgate credentials allow.

The secret is read from FILE (--from-file) or standard input
(--from-stdin), one trailing newline left out; at most 8 KiB, with no CR,
LF or NUL. It is never taken from the command line or the environment,
and never printed. --expires-at stops it being presented after that time.

An MCP server that needs its credential to be listed cannot be registered
before the credential is set: --draft FILE names the toolset file whose
server TARGET declares auth, which gives the origin and auth (whatever
toolsets of the name are registered). Registering the file then lists
the server with the toolset-scope credential; the id it registers needs
toolgate credentials allow, as any registered after the set.

Once stored, the calls parked because this credential expired or was
refused (credentials.expired, docs/parking.md) are resumed, each once,
through the review-decision function (--review-url, default
$` + EnvReviewURL + `; --review-endpoint on the local stack), with proofs of
your own: the parks of the target and scope you may resume (the run's
starter, a park decider, or a credential admin for a toolset's or an end
user's scope). Each park resumed is printed; one whose resume is refused
is reported on standard error, and the set still succeeds.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSecretArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			return exit(a.credentialsSet(cmd, &o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.toolset, "toolset", "", "the toolset `NAME` the credential is stored under")
	fs.StringVar(&o.target, "target", "", "the `TARGET`: an MCP server's key, or an exact http host entry, that declares auth")
	fs.StringVar(&o.endUser, "end-user", "", "the end user `ID` whose credential it is (the end-user scope)")
	fs.StringVar(&o.run, "run", "", "the `EXECUTION_ARN` of a run not started yet (the run scope)")
	fs.StringVar(&o.expiresAt, "expires-at", "", "when the credential stops being presented, `RFC3339` (default: never)")
	fs.StringVar(&o.fromFile, "from-file", "", "read the secret from `FILE`")
	fs.BoolVar(&o.fromStdin, "from-stdin", false, "read the secret from standard input")
	fs.StringVar(&o.draft, "draft", "", "the toolset `FILE` naming MCP server TARGET, for a toolset not registered yet")
	fs.StringVar(&o.origin, "origin", "", "the `ORIGIN` the credential is for, scheme://host[:port]: required without --draft")
	fs.StringVar(&o.review.url, "review-url", a.getenv(EnvReviewURL), "the review-decision Function `URL`, through which the calls parked on this credential are resumed (default $"+EnvReviewURL+")")
	fs.StringVar(&o.review.endpoint, "review-endpoint", "", "on the local stack: the review-decision function under the Lambda RIE, its `URL`, through which the calls parked on this credential are resumed (with --as)")
	o.fn.addFlags(a, fs)
	return cmd
}

// credentialsSet runs toolgate credentials set.
func (a *app) credentialsSet(cmd *cobra.Command, o *credentialsOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case o.toolset == "" || o.target == "":
		return misuse(cmd, "name the toolset and the target: --toolset NAME --target TARGET")
	case o.endUser != "" && o.run != "":
		return misuse(cmd, "--end-user and --run name two scopes: name one, or neither for the toolset's")
	case (o.fromFile == "") == !o.fromStdin:
		return misuse(cmd, "read the secret from one place: --from-file FILE or --from-stdin")
	case o.origin == "" && o.draft == "":
		return misuse(cmd, "name the origin the credential is for: --origin scheme://host[:port] (toolgate toolset show gives each target's), or --draft FILE")
	case o.review.endpoint != "" && o.fn.endpoint == "":
		return misuse(cmd, "--review-endpoint is for the local stack, with --function-endpoint and --as")
	}
	if o.fn.endpoint != "" {
		// On the local stack, review-decision is --review-endpoint's: a
		// local proof is no caller's at a Function URL.
		o.review.url = ""
	}
	if o.expiresAt != "" {
		t, err := time.Parse(time.RFC3339, o.expiresAt)
		if err != nil {
			return misuse(cmd, "--expires-at %q is not an RFC 3339 time (2026-12-31T23:59:59Z)", o.expiresAt)
		}
		if !t.After(time.Now()) {
			return misuse(cmd, "--expires-at %s has passed", o.expiresAt)
		}
	}
	if err := a.publishCheck(cmd, &o.fn); err != ExitOK {
		return err
	}
	secret, err := a.readSecret(o)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate credentials set: %v\n", err)
		return ExitMisuse
	}
	req := publishapi.CredentialRequest{Toolset: o.toolset, Target: o.target, Origin: o.origin, EndUser: o.endUser, Run: o.run, ExpiresAt: o.expiresAt, Secret: secret}
	if o.draft != "" {
		doc, err := a.draftDocument(o.draft)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate credentials set: --draft %s: %v\n", o.draft, err)
			return ExitErrors
		}
		req.Draft = string(doc)
	}
	req.Salt = publishapi.NewSalt()
	var res publishapi.CredentialSetResult
	code := a.credentialsCall(cmd, &o.fn, publishapi.CredentialSetBinding(req), publishapi.ActionCredentialsSet, req, http.MethodPost, "/credentials", &res)
	if code != ExitOK {
		return code
	}
	fmt.Fprintf(stdout, "set the %s credential of toolset %s target %s (origin %s), version %d, by %s\n",
		invisible.Escape(res.Scope), invisible.Escape(res.Toolset), invisible.Escape(res.Target), invisible.Escape(res.Origin), res.Version, invisible.Escape(res.SetBy))
	if len(res.Allowed) > 0 {
		fmt.Fprintf(stdout, "allowed toolset ids: %s\n", strings.Join(res.Allowed, ", "))
	}
	for _, origin := range res.OtherOrigins {
		fmt.Fprintf(stderr, "toolgate credentials set: note: toolset ids of %s give target %s another origin, %s: they get no credential from this one\n",
			invisible.Escape(res.Toolset), invisible.Escape(res.Target), invisible.Escape(origin))
	}
	if o.draft == "" {
		// A draft's credential is for a toolset not registered yet: no call
		// of it can have parked.
		a.resumeParkedOn(o.review, o.fn.as, &res, stdout, stderr)
	}
	return ExitOK
}

// draftDocument compiles toolset file path and returns its draft document
// as registration sends it; a file that names no MCP server is refused.
func (a *app) draftDocument(path string) ([]byte, error) {
	src, err := resolver.ReadFile(path, resolver.SourceFile)
	if err != nil {
		return nil, err
	}
	if !resolver.IsToolsetFile(src) {
		return nil, errors.New("not a toolset file")
	}
	res := a.compileToolsetFile(path, src)
	if !res.OK() {
		var lines []string
		for _, d := range res.Diagnostics {
			lines = append(lines, d.String())
		}
		return nil, fmt.Errorf("the toolset file has errors:\n%s", strings.Join(lines, "\n"))
	}
	if !res.Draft {
		return nil, errors.New("it names no MCP server: register it, then set the credential")
	}
	doc, err := res.Toolset.MarshalIndent()
	return bytes.TrimSpace(doc), err
}

// readSecret reads the secret from --from-file or standard input: at
// most credential.MaxSecretBytes after one trailing "\n" or "\r\n" is
// left out, and not empty. Its errors never quote what was read.
func (a *app) readSecret(o *credentialsOptions) ([]byte, error) {
	var r io.Reader
	where := "standard input"
	if o.fromFile != "" {
		where = o.fromFile
		st, err := os.Stat(o.fromFile)
		if err != nil {
			// The name is not quoted: a file that cannot be found may be
			// the secret itself, typed where its file's name goes.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("--from-file: the file cannot be read (%v); its name is not shown, in case it is the secret", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("--from-file %s is not a regular file", o.fromFile)
		}
		f, err := os.Open(o.fromFile)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %v", err)
		}
		defer f.Close()
		r = f
	} else {
		r = a.env.Stdin
		if r == nil {
			return nil, errors.New("--from-stdin: there is no standard input")
		}
	}
	b, err := io.ReadAll(io.LimitReader(r, credential.MaxSecretBytes+3))
	if err != nil {
		return nil, fmt.Errorf("read the secret from %s: %v", where, err)
	}
	if bytes.HasSuffix(b, []byte("\r\n")) {
		b = b[:len(b)-2]
	} else if bytes.HasSuffix(b, []byte("\n")) {
		b = b[:len(b)-1]
	}
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("the secret read from %s is empty", where)
	case len(b) > credential.MaxSecretBytes:
		return nil, fmt.Errorf("the secret read from %s is over %d bytes", where, credential.MaxSecretBytes)
	}
	return b, nil
}

// newCredentialsListCmd is `toolgate credentials list`.
func (a *app) newCredentialsListCmd() *cobra.Command {
	var o credentialsOptions
	cmd := &cobra.Command{
		Use:   "list --toolset NAME (--url URL | --function-endpoint URL --as NAME)",
		Short: "list the credentials stored under a toolset name (metadata only)",
		Long: `Lists the credentials stored under toolset NAME: target, origin, scope,
version, who set them and when they expire; never a secret. A run's
credential is shown to its setter and to credential admins only. Then each
toolset id of the name registered with a target that declares auth, and
whether it is allowed to use that target's credentials.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSecretArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if o.toolset == "" {
				return exit(misuse(cmd, "name the toolset: --toolset NAME"))
			}
			if code := a.publishCheck(cmd, &o.fn); code != ExitOK {
				return exit(code)
			}
			var res publishapi.CredentialListResult
			req := publishapi.CredentialRequest{Toolset: o.toolset}
			code := a.credentialsCall(cmd, &o.fn, publishapi.CredentialListBinding(o.toolset), publishapi.ActionCredentialsList, req,
				http.MethodGet, "/credentials/"+url.PathEscape(o.toolset), &res)
			if code != ExitOK {
				return exit(code)
			}
			writeCredentialList(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.toolset, "toolset", "", "the toolset `NAME`")
	o.fn.addFlags(a, cmd.Flags())
	return cmd
}

// writeCredentialList prints a listing, one line per credential and per
// toolset id.
func writeCredentialList(w io.Writer, res publishapi.CredentialListResult) {
	if len(res.Credentials) == 0 {
		fmt.Fprintf(w, "no credentials are stored under toolset %s\n", invisible.Escape(res.Toolset))
	}
	for _, c := range res.Credentials {
		expires := "never expires"
		if c.ExpiresAt != "" {
			expires = "expires " + c.ExpiresAt
		}
		run := ""
		if c.ExecutionARN != "" {
			run = " for " + invisible.Escape(c.ExecutionARN)
		}
		fmt.Fprintf(w, "%s %s %s%s version %d set %s by %s, %s\n", invisible.Escape(c.Target), invisible.Escape(c.Origin), invisible.Escape(c.Scope), run,
			c.Version, invisible.Escape(c.CreatedAt), invisible.Escape(c.SetBy), expires)
	}
	if res.HiddenRuns > 0 {
		fmt.Fprintf(w, "%d run credentials set by others are not shown (a credential admin sees them)\n", res.HiddenRuns)
	}
	for _, t := range res.Toolsets {
		allowed := "not allowed: toolgate credentials allow --toolset " + t.ToolsetID
		if t.AllowedBy != "" {
			allowed = "allowed by " + invisible.Escape(t.AllowedBy) + " at " + invisible.Escape(t.AllowedAt)
		}
		fmt.Fprintf(w, "toolset %s %s %s: %s\n", t.ToolsetID, invisible.Escape(t.Target), invisible.Escape(t.Origin), allowed)
	}
}

// newCredentialsRevokeCmd is `toolgate credentials revoke`.
func (a *app) newCredentialsRevokeCmd() *cobra.Command {
	var o credentialsOptions
	cmd := &cobra.Command{
		Use:   "revoke --toolset NAME --target TARGET [--end-user ID | --run EXECUTION_ARN] (--url URL | --function-endpoint URL --as NAME)",
		Short: "delete a stored credential",
		Long: `Deletes the credential of toolset NAME's TARGET in one scope: the
toolset's, --end-user ID's or --run EXECUTION_ARN's. Who may set a scope's
credential may revoke it. Warm functions may present it for a few more
seconds (docs/credentials.md, "Revocation").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSecretArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			switch {
			case o.toolset == "" || o.target == "":
				return exit(misuse(cmd, "name the toolset and the target: --toolset NAME --target TARGET"))
			case o.endUser != "" && o.run != "":
				return exit(misuse(cmd, "--end-user and --run name two scopes: name one, or neither for the toolset's"))
			}
			if code := a.publishCheck(cmd, &o.fn); code != ExitOK {
				return exit(code)
			}
			req := publishapi.CredentialRequest{Toolset: o.toolset, Target: o.target, EndUser: o.endUser, Run: o.run}
			var res publishapi.CredentialRevokeResult
			code := a.credentialsCall(cmd, &o.fn, publishapi.CredentialRevokeBinding(req), publishapi.ActionCredentialsRevoke, req, http.MethodPost, "/credentials/revoke", &res)
			if code != ExitOK {
				return exit(code)
			}
			if !res.Revoked {
				fmt.Fprintf(cmd.OutOrStdout(), "no such credential: nothing was revoked\n")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked\n")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.toolset, "toolset", "", "the toolset `NAME`")
	fs.StringVar(&o.target, "target", "", "the `TARGET`")
	fs.StringVar(&o.endUser, "end-user", "", "the end user `ID` (the end-user scope)")
	fs.StringVar(&o.run, "run", "", "the run's `EXECUTION_ARN` (the run scope)")
	o.fn.addFlags(a, fs)
	return cmd
}

// newCredentialsAllowCmd is `toolgate credentials allow`.
func (a *app) newCredentialsAllowCmd() *cobra.Command {
	var o credentialsOptions
	cmd := &cobra.Command{
		Use:   "allow --toolset ID (--url URL | --function-endpoint URL --as NAME)",
		Short: "allow a registered toolset id to use its name's credentials (credential admins)",
		Long: `Allows registered toolset ID to use the credentials stored under its name
for each of its targets that declares auth, at that target's origin. A
toolset registered after a credential was set gets none until a
credential admin allows it; toolgate toolset diff against an allowed id
shows what changed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSecretArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if o.toolsetID == "" {
				return exit(misuse(cmd, "name the toolset id: --toolset ID"))
			}
			if code := a.publishCheck(cmd, &o.fn); code != ExitOK {
				return exit(code)
			}
			req := publishapi.CredentialRequest{ToolsetID: o.toolsetID}
			var res publishapi.CredentialAllowResult
			code := a.credentialsCall(cmd, &o.fn, publishapi.CredentialAllowBinding(o.toolsetID), publishapi.ActionCredentialsAllow, req, http.MethodPost, "/credentials/allow", &res)
			if code != ExitOK {
				return exit(code)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "allowed %s for %s, by %s\n", res.ToolsetID, invisible.Escape(strings.Join(res.Targets, ", ")), invisible.Escape(res.AllowedBy))
			return nil
		},
	}
	cmd.Flags().StringVar(&o.toolsetID, "toolset", "", "the registered toolset `ID`")
	o.fn.addFlags(a, cmd.Flags())
	return cmd
}

// publishCheck refuses a command line that names no publish function, or
// names it wrongly (publishFunction.check).
func (a *app) publishCheck(cmd *cobra.Command, fn *publishFunction) int {
	if !fn.named() {
		return misuse(cmd, "name the publish function: --url URL, or set $%s (--function-endpoint URL --as NAME on the local stack)", EnvPublishURL)
	}
	if err := fn.check(); err != nil {
		return misuse(cmd, "%v", err)
	}
	return ExitOK
}

// credentialsCall signs a proof for b and sends req to the publish
// function (direct action action, or method and path on the Function
// URL), decoding its answer into out. It says what failed on stderr and
// returns ExitErrors, or ExitMisuse for a proof it cannot sign.
func (a *app) credentialsCall(cmd *cobra.Command, fn *publishFunction, b caller.Binding, action string, req publishapi.CredentialRequest, method, path string, out any) int {
	stderr := cmd.ErrOrStderr()
	name := cmd.CommandPath()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := a.newProver(ctx, fn.as)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitMisuse
	}
	proof, err := p.sign(ctx, b)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitErrors
	}
	var body []byte
	if method != http.MethodGet {
		body, _ = json.Marshal(req)
	}
	answer, code, msg, err := fn.call(ctx, publishapi.DirectRequest{Action: action, Credentials: &req}, method, path, body, proof)
	return decodeAnswer(stderr, name, "the publish function", answer, code, msg, err, out)
}

// decodeAnswer is the exit code of command name's call of function
// (its answer, or its failure's code and message, or err): it prints a
// failure on stderr (the message with invisible characters escaped) and decodes a
// success into out, refusing an answer that is not out's JSON.
func decodeAnswer(stderr io.Writer, name, function string, answer []byte, code, msg string, err error, out any) int {
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitErrors
	case code != "":
		fmt.Fprintf(stderr, "%s: %s: %s\n", name, code, invisible.Escape(msg))
		return ExitErrors
	}
	if err := json.Unmarshal(answer, out); err != nil {
		fmt.Fprintf(stderr, "%s: unexpected answer from %s\n", name, function)
		return ExitErrors
	}
	return ExitOK
}
