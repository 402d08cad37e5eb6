package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/invisible"
)

// EnvSourcesURL is the default of the source and schedule commands'
// --function-url: the stage's sources function's Function URL.
const EnvSourcesURL = "TOOLGATE_SOURCES_URL"

// sourcesFunction is how toolgate webhooks source and toolgate schedule
// reach the stage's sources function (adminFunction, default
// $TOOLGATE_SOURCES_URL).
type sourcesFunction struct{ adminFunction }

// addFlags adds the function's flags to fs (adminFunction.addFlags).
func (f *sourcesFunction) addFlags(a *app, fs *pflag.FlagSet) {
	f.adminFunction.addFlags(a, fs, "sources", EnvSourcesURL)
}

// sourcesRequest is one request to the sources function: its binding, its
// direct invocation, and its route.
type sourcesRequest struct {
	binding      caller.Binding
	direct       inboundapi.DirectRequest
	method, path string
	body         any // nil: none
}

// call signs a proof for r's binding and sends r (adminFunction.call).
func (f *sourcesFunction) call(cmd *cobra.Command, r sourcesRequest, out any) int {
	direct := func(proof string) any { r.direct.Proof = proof; return r.direct }
	return f.adminFunction.call(cmd, adminRequest{binding: r.binding, direct: direct, method: r.method, path: r.path, body: r.body}, out)
}

// newWebhooksSourceCmd is `toolgate webhooks source`.
func (a *app) newWebhooksSourceCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "source",
		Short: "add and manage the sources webhooks are received from (inbound operators)",
		Long: `Manages the sources the webhook receiver accepts deliveries from, through the
sources function (--function-url, default $` + EnvSourcesURL + `; --function-endpoint
with --as NAME on the local stack), for inbound operators (platform
configuration inboundOperators). A source is POST /in/<name> on the
receiver's Function URL: each delivery is verified with the source's secret
(Standard Webhooks, Stripe or GitHub signatures), recorded once by its event
id, and starts a run of the source's Solution (docs/webhooks.md, "Sources").`,
	})
	dlq := group(&cobra.Command{Use: "dlq", Short: "list and redrive the inbound events and firings left in the inbound dead-letter queue"})
	dlq.AddCommand(a.newSourceDLQListCmd(), a.newSourceDLQRedriveCmd())
	cmd.AddCommand(a.newSourceAddCmd(), a.newSourceListCmd(), a.newSourceRotateCmd(), a.newSourceRetireCmd(), a.newSourceRemoveCmd(), dlq)
	return cmd
}

// readSecretFromStdin reads a source's secret from standard input: one
// trailing newline (LF or CRLF) left out, 1 to inboundapi.MaxSecretBytes
// bytes. Errors never quote what was read.
func (a *app) readSecretFromStdin() (string, error) {
	if a.env.Stdin == nil {
		return "", errors.New("--secret-from-stdin: there is no standard input")
	}
	b, err := io.ReadAll(io.LimitReader(a.env.Stdin, inboundapi.MaxSecretBytes+3))
	if err != nil {
		return "", fmt.Errorf("--secret-from-stdin: %v", err)
	}
	if bytes.HasSuffix(b, []byte("\r\n")) {
		b = b[:len(b)-2]
	} else if bytes.HasSuffix(b, []byte("\n")) {
		b = b[:len(b)-1]
	}
	switch {
	case len(b) == 0:
		return "", errors.New("--secret-from-stdin: the secret read is empty")
	case len(b) > inboundapi.MaxSecretBytes:
		return "", fmt.Errorf("--secret-from-stdin: the secret read is over %d bytes", inboundapi.MaxSecretBytes)
	}
	return string(b), nil
}

// noSourceArguments refuses arguments after a source or schedule
// command's flags without printing them: one may be a secret typed where
// it must not be.
func noSourceArguments(cmd *cobra.Command, args []string) int {
	if len(args) == 0 {
		return ExitOK
	}
	return misuse(cmd, "%d argument(s) after the flags, not shown: every value is a flag's, and a secret is read with --secret-from-stdin only", len(args))
}

// checkNameFlag refuses a --name that breaks inbound.CheckName.
func checkNameFlag(cmd *cobra.Command, what, name string) int {
	if name == "" {
		return misuse(cmd, "name the %s: --name NAME", what)
	}
	if err := inbound.CheckName(name); err != nil {
		return misuse(cmd, "--name: %v", err)
	}
	return ExitOK
}

// printSourceSecret writes a source's secret to w, standard output: the
// one time it is shown.
func printSourceSecret(w io.Writer, secret string) {
	fmt.Fprintf(w, "secret (shown once; give it to the provider, which signs every delivery with it): %s\n", secret)
}

// writeSource prints one source on one line, never a secret.
func writeSource(w io.Writer, s inboundapi.SourceInfo) {
	endUser := ""
	if s.EndUser != "" {
		endUser = " end user " + invisible.Escape(s.EndUser)
	}
	fmt.Fprintf(w, "%s %s solution %s max body %d bytes%s, added %s by %s, %d secret(s)\n", invisible.Escape(s.Name), invisible.Escape(s.Scheme),
		invisible.Escape(s.Solution), s.MaxBodyBytes, endUser, invisible.Escape(s.AddedAt), invisible.Escape(s.AddedBy), s.Secrets)
}

// newSourceAddCmd is `toolgate webhooks source add`.
func (a *app) newSourceAddCmd() *cobra.Command {
	var fn sourcesFunction
	var r inboundapi.AddSourceRequest
	var fromStdin, asJSON bool
	cmd := &cobra.Command{
		Use:   "add --name NAME --scheme SCHEME --solution SOLUTION [--max-body-bytes N] [--end-user ID] [--secret-from-stdin] [--json] (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "add a webhook source; prints its secret once when the function draws it",
		Long: `Adds source NAME (1 to 48 of a-z, 0-9 and -, first a letter or digit): the
receiver accepts deliveries at POST /in/NAME signed with SCHEME
(standard-webhooks, stripe or github), each starting a run of published
Solution SOLUTION, as end user ID when --end-user names one. Bodies over
--max-body-bytes (default 65536, at most 204800) are refused.

The secret: with --secret-from-stdin, the one read from standard input (in
the scheme's form: a Standard Webhooks "whsec_" secret, Stripe's endpoint
signing secret, a GitHub webhook secret); without it, the function draws one
and it is printed once, on standard output: give it to the provider. Stripe
makes its own, so a stripe source needs --secret-from-stdin. With --json,
one JSON object, the function's answer: {"source": {...}, "secret"} (the
secret only when drawn).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := checkNameFlag(cmd, "source", r.Name); code != ExitOK {
				return exit(code)
			}
			if _, err := inbound.ParseScheme(r.Scheme); err != nil {
				return exit(misuse(cmd, "--scheme %q: want standard-webhooks, stripe or github", r.Scheme))
			}
			switch {
			case r.Solution == "":
				return exit(misuse(cmd, "name the Solution: --solution NAME"))
			case r.MaxBodyBytes < 0 || r.MaxBodyBytes > inboundapi.MaxBodyBytes,
				r.MaxBodyBytes == 0 && cmd.Flags().Changed("max-body-bytes"):
				// 0 given is refused, not read as the default: a source
				// that takes no body is no source.
				return exit(misuse(cmd, "--max-body-bytes must be 1 to %d", inboundapi.MaxBodyBytes))
			case r.Scheme == string(inbound.Stripe) && !fromStdin:
				return exit(misuse(cmd, "stripe makes the endpoint's signing secret: give it with --secret-from-stdin"))
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			if fromStdin {
				secret, err := a.readSecretFromStdin()
				if err != nil {
					return exit(misuse(cmd, "%v", err))
				}
				r.Secret = secret
			}
			var res inboundapi.AddSourceResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.AddSourceBinding(r), method: http.MethodPost, path: inboundapi.PathSources, body: r,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r}}, &res); code != ExitOK {
				return exit(code)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.MarshalIndent(res, "", "  ") // strings and numbers: it cannot fail
				fmt.Fprintf(out, "%s\n", b)
				return nil
			}
			writeSource(out, res.Source)
			if res.Secret != "" {
				printSourceSecret(out, res.Secret)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&r.Name, "name", "", "the source's `NAME`: deliveries arrive at POST /in/NAME")
	fs.StringVar(&r.Scheme, "scheme", "", "how its deliveries are signed: `SCHEME` standard-webhooks, stripe or github")
	fs.StringVar(&r.Solution, "solution", "", "the published `SOLUTION` each delivery starts a run of")
	fs.IntVar(&r.MaxBodyBytes, "max-body-bytes", 0, "the largest body accepted, `N` bytes (default 65536, at most 204800)")
	fs.StringVar(&r.EndUser, "end-user", "", "the runs' end user `ID` (meta.end_user)")
	fs.BoolVar(&fromStdin, "secret-from-stdin", false, "read the secret from standard input (else the function draws one; stripe needs it)")
	fs.BoolVar(&asJSON, "json", false, "print the source and a drawn secret as one JSON object")
	fn.addFlags(a, fs)
	return cmd
}

// newSourceListCmd is `toolgate webhooks source list`.
func (a *app) newSourceListCmd() *cobra.Command {
	var fn sourcesFunction
	cmd := &cobra.Command{
		Use:   "list (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list the sources (never a secret)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res inboundapi.ListSourcesResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.ListSourcesBinding(), method: http.MethodGet, path: inboundapi.PathSources,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionListSources}}, &res); code != ExitOK {
				return exit(code)
			}
			if len(res.Sources) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no sources")
			}
			for _, s := range res.Sources {
				writeSource(cmd.OutOrStdout(), s)
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// namedCmd is a source or schedule command acting on --name NAME.
func (a *app) namedCmd(what, use, short, long string, run func(cmd *cobra.Command, fn *sourcesFunction, name string) int, more func(fs *pflag.FlagSet)) *cobra.Command {
	var fn sourcesFunction
	var name string
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := checkNameFlag(cmd, what, name); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			return exit(run(cmd, &fn, name))
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the "+what+"'s `NAME`")
	if more != nil {
		more(cmd.Flags())
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newSourceRotateCmd is `toolgate webhooks source rotate-secret`.
func (a *app) newSourceRotateCmd() *cobra.Command {
	var fromStdin bool
	return a.namedCmd("source", "rotate-secret --name NAME [--secret-from-stdin] (--function-url URL | --function-endpoint URL --as NAME)",
		"give a source a new secret; prints it once when the function draws it",
		`Gives source NAME a new secret: the one read from standard input with
--secret-from-stdin (needed for stripe), else one the function draws,
printed once on standard output. The previous secrets keep verifying for 24
hours (the answer says until when), so that the provider can move to the
new one without a refused delivery; retire-secrets ends that at once.`,
		func(cmd *cobra.Command, fn *sourcesFunction, name string) int {
			var r inboundapi.RotateSecretRequest
			if fromStdin {
				secret, err := a.readSecretFromStdin()
				if err != nil {
					return misuse(cmd, "%v", err)
				}
				r.Secret = secret
			}
			var res inboundapi.RotateSecretResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.RotateSecretBinding(name, r), method: http.MethodPost,
				path: inboundapi.SourcePath(name, inboundapi.OpRotateSecret), body: r,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionRotateSecret, Name: name, Rotate: &r}}, &res); code != ExitOK {
				return code
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "rotated the secret of %s; the previous ones verify too until %s\n", invisible.Escape(res.Source), invisible.Escape(res.PreviousRetiresAt))
			if res.Secret != "" {
				printSourceSecret(out, res.Secret)
			}
			return ExitOK
		}, func(fs *pflag.FlagSet) {
			fs.BoolVar(&fromStdin, "secret-from-stdin", false, "read the new secret from standard input (else the function draws one; stripe needs it)")
		})
}

// newSourceRetireCmd is `toolgate webhooks source retire-secrets`.
func (a *app) newSourceRetireCmd() *cobra.Command {
	return a.namedCmd("source", "retire-secrets --name NAME (--function-url URL | --function-endpoint URL --as NAME)",
		"drop every secret of a source but the newest, now",
		`Drops every secret of source NAME but the newest, at once: once the provider
signs with the secret of the last rotation, the previous ones need not keep
verifying until they retire.`,
		func(cmd *cobra.Command, fn *sourcesFunction, name string) int {
			var res inboundapi.RetireSecretsResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.RetireSecretsBinding(name), method: http.MethodPost,
				path:   inboundapi.SourcePath(name, inboundapi.OpRetireSecrets),
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionRetireSecrets, Name: name}}, &res); code != ExitOK {
				return code
			}
			fmt.Fprintf(cmd.OutOrStdout(), "retired %d secret(s) of %s; the newest alone verifies\n", res.Retired, invisible.Escape(res.Source))
			return ExitOK
		}, nil)
}

// newSourceRemoveCmd is `toolgate webhooks source remove`.
func (a *app) newSourceRemoveCmd() *cobra.Command {
	return a.namedCmd("source", "remove --name NAME (--function-url URL | --function-endpoint URL --as NAME)",
		"remove a source: its deliveries are refused from then on",
		`Removes source NAME: the receiver refuses its deliveries (401) once its
cache lets the source go (5 minutes by default), and events of it already
queued fail without a run ("source removed").`,
		func(cmd *cobra.Command, fn *sourcesFunction, name string) int {
			var res inboundapi.RemoveResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.RemoveSourceBinding(name), method: http.MethodPost,
				path:   inboundapi.SourcePath(name, inboundapi.OpRemove),
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSource, Name: name}}, &res); code != ExitOK {
				return code
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed source %s\n", invisible.Escape(res.Name))
			return ExitOK
		}, nil)
}

// newSourceDLQListCmd is `toolgate webhooks source dlq list`.
func (a *app) newSourceDLQListCmd() *cobra.Command {
	var fn sourcesFunction
	cmd := &cobra.Command{
		Use:   "list (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list the events and firings left in the inbound dead-letter queue",
		Long: `Lists the messages in the inbound dead-letter queue (at most 100): the
events and schedule firings whose run could not be started in 5 attempts,
each by its source and event id or its schedule and scheduled time.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res inboundapi.DLQResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.DLQListBinding(), method: http.MethodGet, path: inboundapi.PathDLQ,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionDLQList}}, &res); code != ExitOK {
				return exit(code)
			}
			out := cmd.OutOrStdout()
			if len(res.Messages) == 0 {
				fmt.Fprintln(out, "the inbound dead-letter queue is empty")
			}
			for _, m := range res.Messages {
				if m.Schedule != "" {
					fmt.Fprintf(out, "schedule %s firing %s: %d attempt(s), first sent %s\n", invisible.Escape(m.Schedule), invisible.Escape(m.ScheduledTime), m.ReceiveCount, m.SentAt)
					continue
				}
				fmt.Fprintf(out, "source %s event %s: %d attempt(s), first sent %s\n", invisible.Escape(m.Source), invisible.Escape(m.EventID), m.ReceiveCount, m.SentAt)
			}
			if res.More {
				fmt.Fprintln(out, "more than 100: redrive or wait, then list again")
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newSourceDLQRedriveCmd is `toolgate webhooks source dlq redrive`.
func (a *app) newSourceDLQRedriveCmd() *cobra.Command {
	var fn sourcesFunction
	cmd := &cobra.Command{
		Use:   "redrive (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "move the inbound dead-letter queue's messages back to the inbound queue",
		Long: `Moves the messages in the inbound dead-letter queue back to the inbound
queue, where each event's or firing's run is tried again (at most 100 per
run). An event whose run started meanwhile starts no second one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res inboundapi.RedriveResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.RedriveBinding(), method: http.MethodPost, path: inboundapi.PathDLQRedrive,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionDLQRedrive}}, &res); code != ExitOK {
				return exit(code)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moved %d message(s) back\n", res.Moved)
			if res.More {
				fmt.Fprintln(cmd.OutOrStdout(), "more are left: run it again")
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newScheduleCmd is `toolgate schedule`.
func (a *app) newScheduleCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "schedule",
		Short: "start a Solution's runs on a schedule (inbound operators)",
		Long: `Manages the schedules that start published Solutions' runs, through the
sources function (--function-url, default $` + EnvSourcesURL + `; --function-endpoint
with --as NAME on the local stack), for inbound operators (platform
configuration inboundOperators). Each firing starts one run with the
schedule's input, named after its scheduled time (docs/schedules.md).`,
	})
	cmd.AddCommand(a.newScheduleAddCmd(), a.newScheduleListCmd(), a.newScheduleStateCmd("pause"), a.newScheduleStateCmd("resume"), a.newScheduleRemoveCmd())
	return cmd
}

// scheduleExpression is the expression of --cron or --rate: their text
// as given when it is wrapped already ("cron(...)", "rate(...)"), else
// wrapped.
func scheduleExpression(cron, rate string) string {
	if cron != "" {
		if strings.HasPrefix(cron, "cron(") {
			return cron
		}
		return "cron(" + cron + ")"
	}
	if strings.HasPrefix(rate, "rate(") {
		return rate
	}
	return "rate(" + rate + ")"
}

// readScheduleInput reads --input FILE: a regular file holding one JSON
// value other than null of at most inboundapi.MaxScheduleInputBytes.
// Errors never quote its content.
func readScheduleInput(path string) (json.RawMessage, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--input: %v", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--input %s is not a regular file", path)
	}
	if st.Size() > inboundapi.MaxScheduleInputBytes {
		return nil, fmt.Errorf("--input %s: %d bytes, over %d", path, st.Size(), inboundapi.MaxScheduleInputBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--input: %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("--input %s is not one JSON value", path)
	}
	if compact.String() == "null" {
		// The sources function refuses it too (a Solution without inputs
		// takes {}); said here, the refusal names the flag.
		return nil, fmt.Errorf("--input %s is null: give the runs' input, a JSON value other than null ({} for none)", path)
	}
	return compact.Bytes(), nil
}

// writeSchedule prints one schedule on one line, never its input.
func writeSchedule(w io.Writer, s inboundapi.ScheduleInfo) {
	endUser := ""
	if s.EndUser != "" {
		endUser = " end user " + invisible.Escape(s.EndUser)
	}
	fmt.Fprintf(w, "%s %s %s solution %s input %d bytes%s, added %s by %s\n", invisible.Escape(s.Name), invisible.Escape(s.State), invisible.Escape(s.Expression),
		invisible.Escape(s.Solution), s.InputBytes, endUser, invisible.Escape(s.AddedAt), invisible.Escape(s.AddedBy))
}

// newScheduleAddCmd is `toolgate schedule add`.
func (a *app) newScheduleAddCmd() *cobra.Command {
	var fn sourcesFunction
	var r inboundapi.AddScheduleRequest
	var cron, rate, inputFile string
	cmd := &cobra.Command{
		Use:   "add --name NAME --solution SOLUTION (--cron EXPR | --rate EXPR) --input FILE [--end-user ID] (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "start a published Solution's runs on a schedule",
		Long: `Adds schedule NAME (1 to 48 of a-z, 0-9 and -, first a letter or digit): at
each time of --cron (EventBridge Scheduler's six fields, "0 18 ? * MON-FRI *")
or --rate ("5 minutes", "1 day"), in UTC, one run of published Solution
SOLUTION starts with the JSON in FILE (at most 32 KiB) as its input, as end
user ID when --end-user names one. The input's size is checked against the
Solution's policy now; its input record at each firing, against the version
then published (docs/schedules.md).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := checkNameFlag(cmd, "schedule", r.Name); code != ExitOK {
				return exit(code)
			}
			switch {
			case r.Solution == "":
				return exit(misuse(cmd, "name the Solution: --solution NAME"))
			case (cron == "") == (rate == ""):
				return exit(misuse(cmd, "give one expression: --cron EXPR or --rate EXPR"))
			case inputFile == "":
				return exit(misuse(cmd, "give the runs' input: --input FILE (a JSON value; {} for none)"))
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			input, err := readScheduleInput(inputFile)
			if err != nil {
				return exit(misuse(cmd, "%v", err))
			}
			r.Expression, r.Input = scheduleExpression(cron, rate), input
			var res inboundapi.AddScheduleResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.AddScheduleBinding(r), method: http.MethodPost, path: inboundapi.PathSchedules, body: r,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionAddSchedule, AddSchedule: &r}}, &res); code != ExitOK {
				return exit(code)
			}
			writeSchedule(cmd.OutOrStdout(), res.Schedule)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&r.Name, "name", "", "the schedule's `NAME`")
	fs.StringVar(&r.Solution, "solution", "", "the published `SOLUTION` each firing starts a run of")
	fs.StringVar(&cron, "cron", "", "a cron `EXPR`: six fields, minutes hours day-of-month month day-of-week year (UTC)")
	fs.StringVar(&rate, "rate", "", "a rate `EXPR`: \"N minutes|hours|days\" (singular for 1)")
	fs.StringVar(&inputFile, "input", "", "the runs' input, a JSON `FILE`")
	fs.StringVar(&r.EndUser, "end-user", "", "the runs' end user `ID` (meta.end_user)")
	fn.addFlags(a, fs)
	return cmd
}

// newScheduleListCmd is `toolgate schedule list`.
func (a *app) newScheduleListCmd() *cobra.Command {
	var fn sourcesFunction
	cmd := &cobra.Command{
		Use:   "list (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list the schedules (never an input)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noSourceArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res inboundapi.ListSchedulesResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.ListSchedulesBinding(), method: http.MethodGet, path: inboundapi.PathSchedules,
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionListSchedules}}, &res); code != ExitOK {
				return exit(code)
			}
			if len(res.Schedules) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no schedules")
			}
			for _, s := range res.Schedules {
				writeSchedule(cmd.OutOrStdout(), s)
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newScheduleStateCmd is `toolgate schedule pause` or `resume` (op).
func (a *app) newScheduleStateCmd(op string) *cobra.Command {
	short, long := "pause a schedule: its firings start no run", `Pauses schedule NAME: no firing of it starts a run until it is resumed.`
	binding, action := inboundapi.PauseScheduleBinding, inboundapi.ActionPauseSchedule
	pathOp := inboundapi.OpPause
	if op == "resume" {
		short, long = "resume a paused schedule", `Resumes schedule NAME: its next firing starts a run again. Firings missed
while it was paused are not made up.`
		binding, action, pathOp = inboundapi.ResumeScheduleBinding, inboundapi.ActionResumeSchedule, inboundapi.OpResume
	}
	return a.namedCmd("schedule", op+" --name NAME (--function-url URL | --function-endpoint URL --as NAME)", short, long,
		func(cmd *cobra.Command, fn *sourcesFunction, name string) int {
			var res inboundapi.ScheduleStateResult
			if code := fn.call(cmd, sourcesRequest{binding: binding(name), method: http.MethodPost, path: inboundapi.SchedulePath(name, pathOp),
				direct: inboundapi.DirectRequest{Action: action, Name: name}}, &res); code != ExitOK {
				return code
			}
			if !res.Changed {
				fmt.Fprintf(cmd.OutOrStdout(), "schedule %s was %s already\n", invisible.Escape(res.Schedule), invisible.Escape(res.State))
				return ExitOK
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s is %s\n", invisible.Escape(res.Schedule), invisible.Escape(res.State))
			return ExitOK
		}, nil)
}

// newScheduleRemoveCmd is `toolgate schedule remove`.
func (a *app) newScheduleRemoveCmd() *cobra.Command {
	return a.namedCmd("schedule", "remove --name NAME (--function-url URL | --function-endpoint URL --as NAME)",
		"remove a schedule: it fires no more",
		`Removes schedule NAME: it fires no more, and firings of it already queued
start no run.`,
		func(cmd *cobra.Command, fn *sourcesFunction, name string) int {
			var res inboundapi.RemoveResult
			if code := fn.call(cmd, sourcesRequest{binding: inboundapi.RemoveScheduleBinding(name), method: http.MethodPost,
				path:   inboundapi.SchedulePath(name, inboundapi.OpRemove),
				direct: inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSchedule, Name: name}}, &res); code != ExitOK {
				return code
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed schedule %s\n", invisible.Escape(res.Name))
			return ExitOK
		}, nil)
}
