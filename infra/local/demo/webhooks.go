package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/webhook"
)

// hookPath is the path the demo's receiver takes deliveries on.
const hookPath = "/hooks/demo"

// hookEvents are the event types the demo subscribes its receiver to.
const hookEvents = "run.succeeded,review.requested"

// hookWait bounds the wait for the first run's events once it succeeded:
// review.requested is handed to the events queue when the review is
// recorded, run.succeeded when the execution closes, and each reaches the
// receiver within seconds on the local stack (docs/webhooks.md, "On the
// local stack").
const hookWait = 30 * time.Second

// maxHookBody bounds what the receiver reads of one delivery: 1 MiB, far
// above any event (every payload string is at most webhook.MaxString).
const maxHookBody = 1 << 20

// delivery is one POST the receiver got: its three Standard Webhooks
// headers, its raw body, and when it arrived (the clock its signature's
// timestamp is checked against).
type delivery struct {
	id, timestamp, signature string
	body                     []byte
	at                       time.Time
}

// hookReceiver is the demo's webhook receiver on 127.0.0.1 (a port the
// system chooses): it answers 204 to every POST to hookPath and keeps what
// it got, in memory only.
type hookReceiver struct {
	srv     *http.Server
	addr    string
	mu      sync.Mutex
	got     []delivery
	arrived chan struct{} // closed and replaced on each arrival
}

// startHookReceiver listens on 127.0.0.1:0 and serves until Close.
func startHookReceiver() (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	h := &hookReceiver{addr: ln.Addr().String(), arrived: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+hookPath, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		d := delivery{id: r.Header.Get(webhook.HeaderID), timestamp: r.Header.Get(webhook.HeaderTimestamp),
			signature: r.Header.Get(webhook.HeaderSignature), body: body, at: time.Now()}
		h.mu.Lock()
		h.got = append(h.got, d)
		close(h.arrived)
		h.arrived = make(chan struct{})
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(ln)
	return h, nil
}

// Host is the receiver's host and port, its webhook allow-list entry
// (stack.StackOptions.WebhookAllow).
func (h *hookReceiver) Host() string { return h.addr }

// URL is the endpoint the demo subscribes: plain http, which the local
// stack allows to 127.0.0.1 only.
func (h *hookReceiver) URL() string { return "http://" + h.addr + hookPath }

// Close stops the receiver.
func (h *hookReceiver) Close() error { return h.srv.Close() }

// wait returns the deliveries once done accepts them, or an error when
// ctx ends or timeout passes first. It waits on each arrival, never on a
// clock tick.
func (h *hookReceiver) wait(ctx context.Context, timeout time.Duration, done func([]delivery) bool) ([]delivery, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		got := append([]delivery(nil), h.got...)
		arrived := h.arrived
		h.mu.Unlock()
		if done(got) {
			return got, nil
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return got, fmt.Errorf("not within %v", timeout)
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// errEventMissing is hookLines' error while an awaited event has not
// arrived.
var errEventMissing = errors.New("not received")

// hookLines checks the deliveries of the first run's events: the
// review.requested of review reviewID and the run.succeeded of execution
// runARN. Each delivery of them must verify with key against the moment
// it arrived (webhook.Verify, webhook.Tolerance; docs/webhooks.md,
// "Verifying a delivery"). It returns one line per event (type,
// webhook-id, the review id or the execution's name, "signature
// verified"), deliveries of one webhook-id counted once as a receiver
// dedupes them. Deliveries of other events are ignored. The error names
// the event that failed or is missing (wrapping errEventMissing), never
// the key or a body.
func hookLines(key []byte, got []delivery, runARN, reviewID string) ([]string, error) {
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
		if json.Unmarshal(d.body, &body) != nil {
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
		if err := webhook.Verify(key, d.id, d.timestamp, d.signature, d.body, d.at, webhook.Tolerance); err != nil {
			return nil, fmt.Errorf("%s for %s, webhook-id %s: the signature does not verify with the subscription's secret: %w", body.Type, of, d.id, err)
		}
		if seen[d.id] {
			continue
		}
		seen[d.id] = true
		lines[body.Type] = append(lines[body.Type], fmt.Sprintf("%-16s  webhook-id %s  %s  signature verified", body.Type, d.id, of))
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
func received(got []delivery) string {
	count := map[string]int{}
	var types []string
	for _, d := range got {
		var body struct{ Type string }
		if json.Unmarshal(d.body, &body) != nil || !webhook.Known(webhook.Type(body.Type)) {
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

// keepSecret splits the output of toolgate webhooks subscribe into what
// may be shown, with the secret's line replaced by one saying where it
// is kept, and the "whsec_" secret itself, which the demo never prints.
func keepSecret(out string) (shown, secret string, err error) {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if i := strings.Index(line, webhook.SecretPrefix); i >= 0 {
			if secret != "" {
				return "", "", errors.New("toolgate webhooks subscribe printed more than one secret")
			}
			secret = strings.TrimSpace(line[i:])
			b.WriteString(strings.TrimRight(line[:i], " ") + " " + webhook.SecretPrefix + "… (kept in the demo's memory, never printed)\n")
			continue
		}
		b.WriteString(line)
	}
	if secret == "" {
		return "", "", errors.New("toolgate webhooks subscribe printed no whsec_ secret")
	}
	return b.String(), secret, nil
}

// subscribeHooks subscribes the receiver to hookEvents through the CLI as
// the stack's webhook admin, and returns the subscription's id and the
// key of its secret. The secret's line is printed redacted (keepSecret).
func subscribeHooks(st *stack.Stack, h *hookReceiver) (string, []byte, error) {
	args := []string{"webhooks", "subscribe", "--url", h.URL(), "--events", hookEvents,
		"--function-endpoint", st.Endpoints["webhooks"], "--as", stack.WebhookAdmin}
	showCommand(args)
	var out, errb bytes.Buffer
	code := cli.Run(args, &out, &errb)
	fmt.Print(errb.String())
	if code != cli.ExitOK {
		return "", nil, fmt.Errorf("toolgate webhooks subscribe: exit %d", code)
	}
	shown, secret, err := keepSecret(out.String())
	if err != nil {
		return "", nil, err
	}
	fmt.Print(shown)
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		return "", nil, err
	}
	sub, _, _ := strings.Cut(out.String(), " ")
	return sub, key, nil
}

// showHooks waits for the first run's review.requested and run.succeeded
// at the receiver (hookWait at most), prints one verified line for each
// (hookLines), and disables the subscription, which the rest of the demo
// does not need.
func showHooks(ctx context.Context, st *stack.Stack, h *hookReceiver, sub string, key []byte, runARN, reviewID string) error {
	step("the webhooks the receiver got for that run, each signature verified with the subscription's secret (Standard Webhooks)")
	var lines []string
	var checked error
	_, err := h.wait(ctx, hookWait, func(got []delivery) bool {
		lines, checked = hookLines(key, got, runARN, reviewID)
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
	_, err = toolgate("webhooks", "disable", "--subscription", sub, "--function-endpoint", st.Endpoints["webhooks"], "--as", stack.WebhookAdmin)
	return err
}
