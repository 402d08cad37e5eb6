package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/webhook"
)

// hookPath is the path the demo's receiver takes deliveries on.
const hookPath = "/hooks/demo"

// hookEvents are the event types the demo subscribes its receiver to.
const hookEvents = "run.succeeded,review.requested,tool.schema_changed"

// hookWait bounds the wait for the first run's events once it succeeded:
// review.requested is handed to the events queue when the review is
// recorded, run.succeeded when the execution closes, and each reaches the
// receiver within seconds on the local stack (docs/webhooks.md, "On the
// local stack").
const hookWait = 30 * time.Second

// errEventMissing is hookLines' error while an awaited event has not
// arrived.
var errEventMissing = errors.New("not received")

// hookLines checks the deliveries of the first run's events: the
// review.requested of review reviewID and the run.succeeded of execution
// runARN. Each delivery of them must verify with key against the moment
// it arrived (hookreceiver.Verify; docs/webhooks.md, "Verifying a
// delivery"). It returns one line per event (type,
// webhook-id, the review id or the execution's name, "signature
// verified"), deliveries of one webhook-id counted once as a receiver
// dedupes them. Deliveries of other events are ignored. The error names
// the event that failed or is missing (wrapping errEventMissing), never
// the key or a body.
func hookLines(key []byte, got []hookreceiver.Request, runARN, reviewID string) ([]string, error) {
	want := []webhook.Type{webhook.ReviewRequested, webhook.RunSucceeded}
	lines := map[webhook.Type][]string{}
	seen := map[string]bool{}
	for _, d := range got {
		var body struct {
			Type webhook.Type `json:"type"`
			Data struct {
				ReviewID     string `json:"review_id"`
				ExecutionARN string `json:"execution_arn"`
				Name         string `json:"name"`
			} `json:"data"`
		}
		if json.Unmarshal(d.Body, &body) != nil {
			continue
		}
		var of string
		switch {
		case body.Type == webhook.ReviewRequested && body.Data.ReviewID == reviewID:
			of = "review " + reviewID
		case body.Type == webhook.RunSucceeded && body.Data.ExecutionARN == runARN:
			of = "execution " + body.Data.Name
		default:
			continue
		}
		if err := hookreceiver.Verify(d, key); err != nil {
			return nil, fmt.Errorf("%s for %s, webhook-id %s: the signature does not verify with the subscription's secret: %w", body.Type, of, d.ID, err)
		}
		if seen[d.ID] {
			continue
		}
		seen[d.ID] = true
		lines[body.Type] = append(lines[body.Type], fmt.Sprintf("%-16s  webhook-id %s  %s  signature verified", body.Type, d.ID, of))
	}
	var out []string
	for _, t := range want {
		if len(lines[t]) == 0 {
			return nil, fmt.Errorf("%s of the first run (review %s, execution %s): %w; the receiver got %s", t, reviewID, runARN, errEventMissing, received(got))
		}
		out = append(out, lines[t]...)
	}
	return out, nil
}

// received says how many deliveries of each type the receiver got, by
// their types only: "3 deliveries (review.requested 1, run.succeeded 2)".
func received(got []hookreceiver.Request) string {
	count := map[string]int{}
	var types []string
	for _, d := range got {
		var body struct{ Type string }
		if json.Unmarshal(d.Body, &body) != nil || !webhook.Known(webhook.Type(body.Type)) {
			body.Type = "not an event"
		}
		if count[body.Type]++; count[body.Type] == 1 {
			types = append(types, body.Type)
		}
	}
	slices.Sort(types)
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %d", t, count[t])
	}
	return fmt.Sprintf("%d deliveries (%s)", len(got), strings.Join(parts, ", "))
}

// subscribeHooks subscribes the receiver's hookPath to hookEvents through
// the CLI as the stack's webhook admin (toolgate webhooks subscribe
// --json), and returns the subscription with the key of its secret
// (hookreceiver.ReadSubscription). It prints the subscription, never the
// secret, which only the key in the demo's memory holds.
func subscribeHooks(st *stack.Stack, h *hookreceiver.Receiver) (hookreceiver.Subscription, error) {
	args := []string{"webhooks", "subscribe", "--url", h.URL(hookPath), "--events", hookEvents, "--json",
		"--function-endpoint", st.Endpoints["webhooks"], "--as", stack.WebhookAdmin}
	showCommand(args)
	var out, errb bytes.Buffer
	code := cli.Run(args, &out, &errb)
	fmt.Print(errb.String())
	if code != cli.ExitOK {
		return hookreceiver.Subscription{}, fmt.Errorf("toolgate webhooks subscribe: exit %d", code)
	}
	sub, err := hookreceiver.ReadSubscription(out.Bytes())
	if err != nil {
		return hookreceiver.Subscription{}, err
	}
	fmt.Print(shownSubscription(sub))
	return sub, nil
}

// shownSubscription is what the demo prints of a subscription: its id,
// status, URL, events, creation and creator, and in place of the secret a
// line saying where its key is kept. The secret is not in sub to print.
func shownSubscription(sub hookreceiver.Subscription) string {
	return fmt.Sprintf("  (the JSON answer, shown without its secret)\n  %s %s %s events %s, created %s by %s\n  secret %s… (kept in the demo's memory, never printed)\n",
		sub.ID, sub.Status, sub.URL, strings.Join(sub.Events, ","), sub.CreatedAt, sub.CreatedBy, webhook.SecretPrefix)
}

// showHooks waits for the first run's review.requested and run.succeeded
// at the receiver's hookPath (hookWait at most) and prints one verified line
// for each (hookLines). The subscription stays for the parked call
// (parkedCall), which disableHooks ends.
func showHooks(ctx context.Context, h *hookreceiver.Receiver, sub hookreceiver.Subscription, runARN, reviewID string) error {
	step("the webhooks the receiver got for that run, each signature verified with the subscription's secret (Standard Webhooks)")
	var lines []string
	var checked error
	wctx, cancel := context.WithTimeout(ctx, hookWait)
	defer cancel()
	_, err := h.Wait(wctx, hookPath, func(got []hookreceiver.Request) bool {
		lines, checked = hookLines(sub.Key, got, runARN, reviewID)
		return !errors.Is(checked, errEventMissing)
	})
	switch {
	case checked != nil && !errors.Is(checked, errEventMissing):
		return fmt.Errorf("webhook receiver: %w", checked)
	case err != nil:
		return fmt.Errorf("webhook receiver: %w (%v)", checked, err)
	}
	for _, l := range lines {
		fmt.Println("  " + l)
	}
	return nil
}

// disableHooks disables the demo's subscription once the last event it
// shows was delivered.
func disableHooks(st *stack.Stack, sub hookreceiver.Subscription) error {
	step("disabling the demo's webhook subscription")
	_, err := toolgate("webhooks", "disable", "--subscription", sub.ID, "--function-endpoint", st.Endpoints["webhooks"], "--as", stack.WebhookAdmin)
	return err
}
