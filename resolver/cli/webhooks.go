package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// EnvWebhooksURL is the default of the webhooks commands' --function-url:
// the stage's webhooks function's Function URL.
const EnvWebhooksURL = "TOOLGATE_WEBHOOKS_URL"

// webhooksFunction is how toolgate webhooks reaches the stage's webhooks
// function (adminFunction, default $TOOLGATE_WEBHOOKS_URL).
type webhooksFunction struct{ adminFunction }

// addFlags adds the function's flags to fs (adminFunction.addFlags).
func (f *webhooksFunction) addFlags(a *app, fs *pflag.FlagSet) {
	f.adminFunction.addFlags(a, fs, "webhooks", EnvWebhooksURL)
}

// webhooksRequest is one request to the webhooks function: its binding,
// its direct invocation, and its route.
type webhooksRequest struct {
	binding      caller.Binding
	direct       webhookapi.DirectRequest
	method, path string
	query        url.Values
	body         any // nil: none
}

// call signs a proof for r's binding and sends r (adminFunction.call).
func (f *webhooksFunction) call(cmd *cobra.Command, r webhooksRequest, out any) int {
	direct := func(proof string) any { r.direct.Proof = proof; return r.direct }
	return f.adminFunction.call(cmd, adminRequest{binding: r.binding, direct: direct, method: r.method, path: r.path, query: r.query, body: r.body}, out)
}

// noArguments refuses arguments after a webhooks command's flags.
func noArguments(cmd *cobra.Command, args []string) int {
	if len(args) == 0 {
		return ExitOK
	}
	return misuse(cmd, "unexpected argument %q: every value is a flag's", args[0])
}

// newWebhooksCmd is `toolgate webhooks`.
func (a *app) newWebhooksCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "webhooks",
		Short: "subscribe endpoints to signed events, and manage their deliveries (webhook admins)",
		Long: `Manages webhook subscriptions through the webhooks function
(--function-url, default $` + EnvWebhooksURL + `; --function-endpoint with --as NAME on
the local stack), for webhook admins (platform configuration webhookAdmins).
Events (runs, reviews waiting, parked calls) are POSTed to each subscribed
endpoint, signed with the Standard Webhooks scheme, retried on a schedule,
and left in a dead-letter queue after the last attempt (docs/webhooks.md).`,
	})
	dlq := group(&cobra.Command{Use: "dlq", Short: "list and redrive the deliveries left in the dead-letter queue"})
	dlq.AddCommand(a.newWebhooksDLQListCmd(), a.newWebhooksRedriveCmd())
	cmd.AddCommand(a.newWebhooksSubscribeCmd(), a.newWebhooksListCmd(), a.newWebhooksRotateCmd(), a.newWebhooksDisableCmd(), a.newWebhooksDeliveriesCmd(), dlq, a.newWebhooksSourceCmd())
	return cmd
}

// printSecret writes a "whsec_" secret to w, standard output: the one
// time it is shown.
func printSecret(w io.Writer, secret string) {
	fmt.Fprintf(w, "secret (shown once; store it where the receiver reads it): %s\n", secret)
}

// newWebhooksSubscribeCmd is `toolgate webhooks subscribe`.
func (a *app) newWebhooksSubscribeCmd() *cobra.Command {
	var fn webhooksFunction
	var endpoint, list, solution string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "subscribe --url URL --events LIST [--solution NAME] [--json] (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "subscribe an endpoint to events; prints its signing secret once",
		Long: `Subscribes endpoint URL (https, on a host of the platform's webhook
allow-list, never one of this deployment's Function URLs) to the events
LIST names: comma-separated types or "<prefix>.*" (run.*, review.requested,
tool.schema_changed, ...). --solution limits it to one published
Solution's events. The subscription's "whsec_" secret is printed once, on
standard output, and stored only encrypted: give it to the receiver, which
verifies every delivery with it (docs/webhooks.md, "Verifying").

It prints the subscription on one line and the secret on the next; with
--json, one JSON object instead, the function's answer:
{"subscription": {"id", "url", "events", "solution", "status", ...},
"secret": "whsec_..."}, for a program to read the secret from
(docs/webhooks.md, "The secret").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			var events []string
			for _, e := range strings.Split(list, ",") {
				if e = strings.TrimSpace(e); e != "" {
					events = append(events, e)
				}
			}
			switch {
			case endpoint == "":
				return exit(misuse(cmd, "name the endpoint: --url URL"))
			case len(events) == 0:
				return exit(misuse(cmd, "name the events: --events LIST (run.*,review.requested)"))
			}
			if u, err := url.Parse(endpoint); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
				return exit(misuse(cmd, "--url %q is not an http(s) URL", endpoint))
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			req := webhookapi.SubscribeRequest{URL: endpoint, Events: events, Solution: solution}
			var res webhookapi.SubscribeResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.SubscribeBinding(req), method: http.MethodPost, path: "/subscriptions", body: req,
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionSubscribe, Subscribe: &req}}, &res); code != ExitOK {
				return exit(code)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.MarshalIndent(res, "", "  ") // strings, a list and numbers: it cannot fail
				fmt.Fprintf(out, "%s\n", b)
				return nil
			}
			writeSubscription(out, res.Subscription)
			printSecret(out, res.Secret)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&endpoint, "url", "", "the endpoint `URL` events are POSTed to")
	fs.StringVar(&list, "events", "", "the event types or patterns, comma-separated `LIST`")
	fs.StringVar(&solution, "solution", "", "only the events of published Solution `NAME`")
	fs.BoolVar(&asJSON, "json", false, "print the subscription and its secret as one JSON object")
	fn.addFlags(a, fs)
	return cmd
}

// writeSubscription prints one subscription on one line.
func writeSubscription(w io.Writer, s webhookapi.Subscription) {
	solution := ""
	if s.Solution != "" {
		solution = " solution " + invisible.Escape(s.Solution)
	}
	status := s.Status
	if s.DisabledReason != "" {
		status += " (" + invisible.Escape(s.DisabledReason) + ")"
	}
	fmt.Fprintf(w, "%s %s %s events %s%s, created %s by %s, %d secret(s)\n", s.ID, invisible.Escape(status), invisible.Escape(s.URL),
		invisible.Escape(strings.Join(s.Events, ",")), solution, s.CreatedAt, invisible.Escape(s.CreatedBy), s.Secrets)
}

// newWebhooksListCmd is `toolgate webhooks list`.
func (a *app) newWebhooksListCmd() *cobra.Command {
	var fn webhooksFunction
	cmd := &cobra.Command{
		Use:   "list (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list the subscriptions (never a secret)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res webhookapi.ListResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.ListBinding(), method: http.MethodGet, path: "/subscriptions",
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionList}}, &res); code != ExitOK {
				return exit(code)
			}
			if len(res.Subscriptions) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no subscriptions")
			}
			for _, s := range res.Subscriptions {
				writeSubscription(cmd.OutOrStdout(), s)
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// subscriptionCmd is a command acting on --subscription ID.
func (a *app) subscriptionCmd(use, short, long string, run func(cmd *cobra.Command, fn *webhooksFunction, id string) int) *cobra.Command {
	var fn webhooksFunction
	var id string
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if !strings.HasPrefix(id, "sub_") {
				return exit(misuse(cmd, "name the subscription: --subscription ID (sub_..., as toolgate webhooks list shows)"))
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			return exit(run(cmd, &fn, id))
		},
	}
	cmd.Flags().StringVar(&id, "subscription", "", "the subscription `ID`")
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newWebhooksRotateCmd is `toolgate webhooks rotate-secret`.
func (a *app) newWebhooksRotateCmd() *cobra.Command {
	return a.subscriptionCmd("rotate-secret --subscription ID (--function-url URL | --function-endpoint URL --as NAME)",
		"give a subscription a new signing secret; prints it once",
		`Gives subscription ID a new "whsec_" secret, printed once on standard
output. The previous secret keeps signing every delivery too, for the
grace period the answer gives (24 hours), so that the receiver can move to
the new one without refusing a delivery (docs/webhooks.md, "Rotation").`,
		func(cmd *cobra.Command, fn *webhooksFunction, id string) int {
			var res webhookapi.RotateResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.RotateBinding(id), method: http.MethodPost, path: "/subscriptions/" + url.PathEscape(id) + "/rotate-secret",
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionRotateSecret, Subscription: id}}, &res); code != ExitOK {
				return code
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "rotated the secret of %s; the previous one signs too until %s\n", res.Subscription, invisible.Escape(res.PreviousRetiresAt))
			printSecret(out, res.Secret)
			return ExitOK
		})
}

// newWebhooksDisableCmd is `toolgate webhooks disable`.
func (a *app) newWebhooksDisableCmd() *cobra.Command {
	return a.subscriptionCmd("disable --subscription ID (--function-url URL | --function-endpoint URL --as NAME)",
		"stop deliveries to a subscription", `Disables subscription ID: no event is delivered to it any more, and
deliveries already queued are dropped. An endpoint answering 410 Gone is
disabled the same way.`,
		func(cmd *cobra.Command, fn *webhooksFunction, id string) int {
			var res webhookapi.DisableResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.DisableBinding(id), method: http.MethodPost, path: "/subscriptions/" + url.PathEscape(id) + "/disable",
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionDisable, Subscription: id}}, &res); code != ExitOK {
				return code
			}
			if !res.Disabled {
				fmt.Fprintf(cmd.OutOrStdout(), "%s was disabled already\n", res.Subscription)
				return ExitOK
			}
			fmt.Fprintf(cmd.OutOrStdout(), "disabled %s\n", res.Subscription)
			return ExitOK
		})
}

// newWebhooksDeliveriesCmd is `toolgate webhooks deliveries`.
func (a *app) newWebhooksDeliveriesCmd() *cobra.Command {
	var fn webhooksFunction
	var event string
	cmd := &cobra.Command{
		Use:   "deliveries --event ID (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list an event's delivery attempts",
		Long: `Lists the recorded attempts of event ID (the webhook-id a receiver got, or
one toolgate webhooks dlq list shows) to each subscription: attempt number,
time, status code, latency and outcome; never a body.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if !strings.HasPrefix(event, "evt_") {
				return exit(misuse(cmd, "name the event: --event ID (evt_..., a delivery's webhook-id)"))
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res webhookapi.DeliveriesResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.DeliveriesBinding(event), method: http.MethodGet, path: "/deliveries", query: url.Values{"event": {event}},
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionDeliveries, Event: event}}, &res); code != ExitOK {
				return exit(code)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "event %s (%s): %d attempt(s)\n", res.Event, invisible.Escape(res.Type), len(res.Deliveries))
			for _, d := range res.Deliveries {
				status := "no answer"
				if d.StatusCode != 0 {
					status = fmt.Sprintf("status %d", d.StatusCode)
				}
				class := ""
				if d.ErrorClass != "" {
					class = " (" + invisible.Escape(d.ErrorClass) + ")"
				}
				fmt.Fprintf(out, "%s attempt %d at %s: %s, %d ms, %s%s\n", d.Subscription, d.Attempt, d.At, status, d.LatencyMS, invisible.Escape(d.Outcome), class)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&event, "event", "", "the event `ID`")
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newWebhooksDLQListCmd is `toolgate webhooks dlq list`.
func (a *app) newWebhooksDLQListCmd() *cobra.Command {
	var fn webhooksFunction
	cmd := &cobra.Command{
		Use:   "list (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "list the deliveries and events left in the dead-letter queues",
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res webhookapi.DLQResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.DLQListBinding(), method: http.MethodGet, path: "/dlq",
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionDLQList}}, &res); code != ExitOK {
				return exit(code)
			}
			out := cmd.OutOrStdout()
			if len(res.Messages) == 0 {
				fmt.Fprintln(out, "the dead-letter queues are empty")
			}
			for _, m := range res.Messages {
				switch {
				case m.Queue == webhookapi.DLQEvents && m.Event == "":
					fmt.Fprintf(out, "events: status change of %s not fanned out: %d attempt(s), first sent %s\n", invisible.Escape(m.Execution), m.ReceiveCount, m.SentAt)
				case m.Queue == webhookapi.DLQEvents:
					fmt.Fprintf(out, "events: event %s not fanned out: %d attempt(s), first sent %s\n", invisible.Escape(m.Event), m.ReceiveCount, m.SentAt)
				default:
					fmt.Fprintf(out, "event %s to %s: %d attempt(s), first sent %s\n", invisible.Escape(m.Event), invisible.Escape(m.Subscription), m.ReceiveCount, m.SentAt)
				}
			}
			if res.More {
				fmt.Fprintf(out, "more than %d: redrive or wait, then list again\n", webhookapi.MaxDLQ)
			}
			return nil
		},
	}
	fn.addFlags(a, cmd.Flags())
	return cmd
}

// newWebhooksRedriveCmd is `toolgate webhooks dlq redrive`.
func (a *app) newWebhooksRedriveCmd() *cobra.Command {
	var fn webhooksFunction
	cmd := &cobra.Command{
		Use:   "redrive (--function-url URL | --function-endpoint URL --as NAME)",
		Short: "move the dead-letter queues' deliveries and events back",
		Long: `Moves the deliveries in the deliveries dead-letter queue back to the
deliveries queue, where each is attempted again on the whole retry schedule,
and the events in the events dead-letter queue back to the events queue,
where each is fanned out again: at most 100 in all per run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := noArguments(cmd, args); code != ExitOK {
				return exit(code)
			}
			if code := fn.check(cmd); code != ExitOK {
				return exit(code)
			}
			var res webhookapi.RedriveResult
			if code := fn.call(cmd, webhooksRequest{binding: webhookapi.RedriveBinding(), method: http.MethodPost, path: "/dlq/redrive",
				direct: webhookapi.DirectRequest{Action: webhookapi.ActionDLQRedrive}}, &res); code != ExitOK {
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
