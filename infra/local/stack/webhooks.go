package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/webhook"
)

// webhookQueueName is the platform's name of a webhook queue on stage
// Stage (infra/platform/webhooks.go): toolgate-local-webhook-<queue>.
func webhookQueueName(queue string) string { return "toolgate-" + Stage + "-webhook-" + queue }

// FunctionURLFunctions are the functions the platform serves as Function
// URLs (infra/platform: review-decision's, publish's and the webhooks
// function's). On the local stack their endpoints are the webhook
// functions' own hosts, which no subscription may name.
var FunctionURLFunctions = []string{"review-decision", "publish", "webhooks"}

// reserveFunctionURLs opens a listener on a free 127.0.0.1 port for the
// proxy of each of names that is one of FunctionURLFunctions, before any
// function starts, so that the webhook functions' environment can name
// those endpoints (ownHosts). The caller hands each to serialiseOn and
// closes what is left.
func reserveFunctionURLs(names []string) (map[string]net.Listener, error) {
	out := map[string]net.Listener{}
	for _, name := range FunctionURLFunctions {
		if !slices.Contains(names, name) {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, fmt.Errorf("reserve %s's endpoint: %w", name, err)
		}
		out[name] = ln
	}
	return out, nil
}

// ownHosts is TOOLGATE_WEBHOOK_OWN_HOSTS of the local stack: the host and
// port of each reserved Function-URL endpoint, in FunctionURLFunctions'
// order, comma-separated.
func ownHosts(reserved map[string]net.Listener) string {
	var out []string
	for _, name := range FunctionURLFunctions {
		if ln, ok := reserved[name]; ok {
			out = append(out, ln.Addr().String())
		}
	}
	return strings.Join(out, ",")
}

// webhookAllowList is TOOLGATE_WEBHOOK_ALLOW of the local stack: the
// entries given, and WebhookTestHost on the port of each 127.0.0.1:port
// entry (as MCPTestHost on the MCP server's port), comma-separated.
func webhookAllowList(entries []string) string {
	out := slices.Clone(entries)
	for _, e := range entries {
		p, err := hostlist.ParseEntry(e)
		if err == nil && p.Host == "127.0.0.1" && p.Port != 0 {
			out = append(out, fmt.Sprintf("%s:%d", WebhookTestHost, p.Port))
		}
	}
	return strings.Join(out, ",")
}

// ResolveWebhookTestHost makes WebhookTestHost resolve to addrs (IP
// addresses) for both webhook functions from their next look-up on: at
// subscribe, and before each attempt.
func (s *Stack) ResolveWebhookTestHost(addrs ...string) error {
	line := WebhookTestHost + "=" + strings.Join(addrs, ",")
	if _, err := fetch.ParseResolve([]string{line}); err != nil {
		return err
	}
	tmp := s.WebhookResolveFile + ".tmp"
	if err := os.WriteFile(tmp, []byte("# "+WebhookTestHost+" for the webhook functions (TOOLGATE_WEBHOOK_RESOLVE_FILE)\n"+line+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.WebhookResolveFile)
}

// startWebhookQueues starts the SQS stand-in and creates the webhook
// queues and their dead-letter queues on it: the deliveries queue's
// maxReceiveCount is the schedule's Attempts(), as on AWS.
func (s *Stack) startWebhookQueues(ctx context.Context, o StackOptions, logf func(string, ...any)) error {
	if s.webhookSchedule = o.WebhookSchedule; s.webhookSchedule == "" {
		s.webhookSchedule = DefaultWebhookSchedule
	}
	schedule, err := webhook.ParseSchedule(s.webhookSchedule)
	if err != nil {
		return fmt.Errorf("StackOptions.WebhookSchedule: %w", err)
	}
	if s.SQS, err = sqs.Start(ctx); err != nil {
		return err
	}
	s.procs = append(s.procs, s.SQS.Process())
	q := &s.WebhookQueues
	// Each dead-letter queue is created before its source queue, whose
	// redrive policy reads its ARN.
	for _, c := range []struct {
		queue *sqs.Queue
		name  string
		o     sqs.QueueOptions
	}{
		{&q.EventsDLQ, "events-dlq", sqs.QueueOptions{VisibilityTimeout: webhookVisibility}},
		{&q.Events, "events", sqs.QueueOptions{VisibilityTimeout: webhookVisibility, DeadLetter: &q.EventsDLQ, MaxReceiveCount: webhookEventsMaxReceives}},
		{&q.DeliveriesDLQ, "deliveries-dlq", sqs.QueueOptions{VisibilityTimeout: webhookVisibility}},
		{&q.Deliveries, "deliveries", sqs.QueueOptions{VisibilityTimeout: webhookVisibility, DeadLetter: &q.DeliveriesDLQ, MaxReceiveCount: schedule.Attempts()}},
	} {
		if *c.queue, err = s.SQS.CreateQueue(ctx, webhookQueueName(c.name), c.o); err != nil {
			return err
		}
	}
	logf("SQS stand-in %s (webhook queues %s, %s; schedule %s, %d attempts)", s.SQS.Endpoint(), q.Events.Name, q.Deliveries.Name, s.webhookSchedule, schedule.Attempts())
	return nil
}

// startWebhookPollers starts one sqs.Poller on each webhook queue, each
// invoking webhook-delivery at invokeURL (its RIE, behind the stack's
// one-at-a-time proxy) with its batches, as the function's event-source
// mappings do on AWS, and the relay's ticker. Stop ends them.
func (s *Stack) startWebhookPollers(invokeURL string, logf func(string, ...any)) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopPollers = cancel
	for _, q := range []sqs.Queue{s.WebhookQueues.Events, s.WebhookQueues.Deliveries} {
		// No per-batch log: the demo prints the stack's progress lines
		// while it runs, and a poller ending on an error is logged below.
		p := &sqs.Poller{Client: s.SQS.Client(), Queue: q, Invoke: sqs.InvokeURL(invokeURL)}
		s.pollers.Add(1)
		go func() {
			defer s.pollers.Done()
			if err := p.Run(ctx); err != nil {
				logf("poller of %s stopped: %v", q.Name, err)
				s.pollerMu.Lock()
				s.pollerErrs = append(s.pollerErrs, fmt.Errorf("the poller of %s: %w", q.Name, err))
				s.pollerMu.Unlock()
			}
		}()
		logf("poller       %s -> webhook-delivery", q.Name)
	}
	// The relay's ticker, as the platform's schedule: every
	// webhookRelayEvery it invokes webhook-delivery with a scheduled
	// event. A failed relay is logged and tried again on the next tick,
	// as on AWS.
	s.pollers.Add(1)
	go func() {
		defer s.pollers.Done()
		tick := time.NewTicker(webhookRelayEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := s.RelayWebhooks(ctx); err != nil && ctx.Err() == nil {
					logf("webhook relay: %v", err)
				}
			}
		}
	}()
	logf("relay        every %v, events unsent for %v -> webhook-delivery", webhookRelayEvery, webhookRelayAfter)
}

// scheduledEvent is the EventBridge scheduled event the platform's relay
// rules invoke webhook-delivery and webhook-receiver with (their handlers
// read only "detail-type").
const scheduledEvent = `{"version":"0","id":"local-relay","detail-type":"Scheduled Event","source":"aws.events","account":"` + AccountID +
	`","region":"` + local.Region + `","resources":[],"detail":{}}`

// RelayWebhooks invokes webhook-delivery once with a scheduled event, as
// the platform's relay schedule does every minute on AWS: it sends each
// webhook event recorded but left unsent for longer than the function's
// bound (webhookRelayAfter) to the events queue. The stack's own ticker
// calls it every webhookRelayEvery; tests may call it too. The error is
// the invocation's (invokeScheduled).
func (s *Stack) RelayWebhooks(ctx context.Context) error {
	if err := s.invokeScheduled(ctx, "webhook-delivery"); err != nil {
		return fmt.Errorf("relay webhooks: %w", err)
	}
	return nil
}

// invokeScheduled invokes function once with the scheduled event
// (scheduledEvent), as the platform's relay rules do, and waits up to 90 s
// for its answer: both relays (RelayWebhooks, RelayInbound). The error
// names the function's errorType only, never its message.
func (s *Stack) invokeScheduled(ctx context.Context, function string) error {
	e, ok := s.Endpoints[function]
	if !ok {
		return fmt.Errorf("the stack runs no %s function", function)
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e+local.InvokePath, strings.NewReader(scheduledEvent))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("invoke %s: %w", function, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("invoke %s: read the answer: %w", function, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("invoke %s: %s", function, resp.Status)
	}
	var fe struct {
		ErrorType *string `json:"errorType"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.ErrorType != nil {
		return fmt.Errorf("%s failed: %s", function, *fe.ErrorType)
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("Task timed out")) {
		return fmt.Errorf("%s timed out", function)
	}
	return nil
}
