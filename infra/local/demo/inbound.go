package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/webhook"
)

// The inbound demo's names: its Solution (testdata/demo/demo-inbound.yaml),
// its webhook source and its schedule.
const (
	inboundSolution = "demo-inbound"
	inboundSource   = "billing"
	inboundSchedule = "nightly-reminder"
)

// inboundEvent is the billing event the demo's provider sends: an
// invoice.paid, which the run gets whole as its input's payload (the
// Solution's input schema reads its customer and invoice).
const inboundEvent = `{"type":"invoice.paid","customer":"customer@example.com","invoice":"in_1001"}`

// inboundWait bounds each wait of the inbound demo for a run to appear:
// the receiver queues the event at once, and the local poller hands it
// to inbound-start within seconds.
const inboundWait = 45 * time.Second

// inboundEvents shows runs started by events and schedules (docs/webhooks.md,
// "Receiving events"; docs/schedules.md): a webhook source added through
// the sources function, one event signed with the source's secret sent
// to the receiver's Function URL (twice, and once with a bad signature),
// the run it started under the source's session, approved and followed;
// then a schedule that fires, its run, and the schedule removed.
func inboundEvents(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("runs started by events: publishing %s, and adding webhook source %q for it as %s, the stack's inbound operator", inboundSolution, inboundSource, stack.InboundOperator)
	if _, err := toolgate("publish", "testdata/demo/demo-inbound.yaml", "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	key, err := addSource(st)
	if err != nil {
		return err
	}

	step("a provider sends one signed event (Standard Webhooks) to the receiver's Function URL, twice, and a forged one")
	url := st.InboundURL() + "/in/" + inboundSource
	id := fmt.Sprintf("msg_demo_%d", time.Now().UnixNano())
	for i, c := range []struct {
		what string
		keys [][]byte
		want int
	}{
		{"the event", [][]byte{key}, http.StatusAccepted},
		{"the same event again (the provider's retry)", [][]byte{key}, http.StatusOK},
		{"a forged event (signed with another key)", [][]byte{[]byte("not the source's secret, 32 bytes")}, http.StatusUnauthorized},
	} {
		sendID := id
		if i == 2 {
			sendID = id + "-forged"
		}
		began := time.Now()
		status, answer, err := postEvent(ctx, url, sendID, c.keys)
		if err != nil {
			return err
		}
		fmt.Printf("  POST /in/%s  webhook-id %s  %s: %d %s in %v\n", inboundSource, sendID, c.what, status, answer, time.Since(began).Round(time.Millisecond))
		if status != c.want {
			return fmt.Errorf("%s: the receiver answered %d, want %d", c.what, status, c.want)
		}
	}

	step("the run the event started (inbound-start: input checked, start recorded as the source's session, one execution per event id)")
	arn, err := waitExecution(ctx, sf, "in-", nil)
	if err != nil {
		// A refused input is recorded on the event's item: say why.
		ev, rerr := store.New(local.DynamoDB(st.Dynamo.Endpoint()), stack.Table).Event(ctx, store.EventKey{Origin: inboundapi.OriginSource, Name: inboundSource, ID: id})
		if rerr == nil {
			return fmt.Errorf("%w (the event is %s: %s)", err, ev.Status, strings.Join(ev.Problems, "; "))
		}
		return err
	}
	if err := showInboundStart(ctx, st, arn); err != nil {
		return err
	}
	if err := approveReviews(ctx, st.Endpoints["review-decision"], arn, 1, "the invoice is paid"); err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, time.Minute, true)
	if err != nil {
		return err
	}
	if outcome.Status != "SUCCEEDED" {
		return fmt.Errorf("the inbound run ended %s, want SUCCEEDED", outcome.Status)
	}
	if n, err := inboundRuns(ctx, sf, "in-"); err != nil || n != 1 {
		return fmt.Errorf("the event and its retry started %d runs (%v), want one", n, err)
	}
	fmt.Println("  one run for the event and its retry; the forged event stored and started nothing")

	step("a schedule: %s starts %s every 2 seconds (the local ticker plays EventBridge Scheduler; seconds are for the local stack only)", inboundSchedule, inboundSolution)
	input := filepath.Join(st.Dir, "demo-schedule-input.json")
	if err := os.WriteFile(input, []byte(`{"payload":{"customer":"customer@example.com","invoice":"in_reminder"}}`), 0o600); err != nil {
		return err
	}
	sources := []string{"--function-endpoint", st.Endpoints["sources"], "--as", stack.InboundOperator}
	if _, err := toolgate(append([]string{"schedule", "add", "--name", inboundSchedule, "--solution", inboundSolution, "--rate", "2 seconds", "--input", input}, sources...)...); err != nil {
		return err
	}
	sched, err := waitExecution(ctx, sf, "sc-", nil)
	if err != nil {
		return err
	}
	if err := showInboundStart(ctx, st, sched); err != nil {
		return err
	}
	_, err = toolgate(append([]string{"schedule", "remove", "--name", inboundSchedule}, sources...)...)
	return err
}

// addSource adds the demo's source through the sources function (toolgate
// webhooks source add --json) and returns its signing key. The secret the
// function drew is kept in memory, never printed.
func addSource(st *stack.Stack) ([]byte, error) {
	args := []string{"webhooks", "source", "add", "--name", inboundSource, "--scheme", "standard-webhooks", "--solution", inboundSolution, "--json",
		"--function-endpoint", st.Endpoints["sources"], "--as", stack.InboundOperator}
	showCommand(args)
	var out, errb bytes.Buffer
	code := cli.Run(args, &out, &errb)
	fmt.Print(errb.String())
	if code != cli.ExitOK {
		return nil, fmt.Errorf("toolgate webhooks source add: exit %d", code)
	}
	var res inboundapi.AddSourceResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("toolgate webhooks source add --json: %w", err)
	}
	key, err := webhook.ParseSecret(res.Secret)
	if err != nil {
		return nil, fmt.Errorf("the source's drawn secret: %w", err)
	}
	fmt.Printf("  (the JSON answer, shown without its secret)\n  source %s: %s, starts %s, added by %s\n  secret %s… (kept in the demo's memory, never printed)\n",
		res.Source.Name, res.Source.Scheme, res.Source.Solution, res.Source.AddedBy, webhook.SecretPrefix)
	return key, nil
}

// postEvent sends inboundEvent to url as a Standard Webhooks delivery
// with webhook-id id, signed now with keys, and returns the receiver's
// status and answer.
func postEvent(ctx context.Context, url, id string, keys [][]byte) (int, string, error) {
	now := time.Now()
	sig, err := webhook.Sign(keys, id, now, []byte(inboundEvent))
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(inboundEvent))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// inboundMachine is the demo inbound Solution's state machine ARN on the
// local stack.
func inboundMachine() string {
	return "arn:aws:states:" + local.Region + ":" + stack.AccountID + ":stateMachine:" + deployment.StateMachineName(stack.Stage, inboundSolution)
}

// inboundRuns counts the executions of the inbound Solution whose names
// start with prefix.
func inboundRuns(ctx context.Context, sf *sfn.Client, prefix string) (int, error) {
	n := 0
	p := sfn.NewListExecutionsPaginator(sf, &sfn.ListExecutionsInput{StateMachineArn: aws.String(inboundMachine())})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, x := range out.Executions {
			if strings.HasPrefix(aws.ToString(x.Name), prefix) {
				n++
			}
		}
	}
	return n, nil
}

// waitExecution polls the inbound Solution's executions until one named
// with prefix appears that is not in skip, within inboundWait, and
// returns its ARN.
func waitExecution(ctx context.Context, sf *sfn.Client, prefix string, skip map[string]bool) (string, error) {
	deadline := time.Now().Add(inboundWait)
	for time.Now().Before(deadline) {
		out, err := sf.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(inboundMachine())})
		if err != nil {
			return "", err
		}
		for _, x := range out.Executions {
			if arn := aws.ToString(x.ExecutionArn); strings.HasPrefix(aws.ToString(x.Name), prefix) && !skip[arn] {
				return arn, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond): // a bounded poll of another process's work
		}
	}
	return "", fmt.Errorf("no execution named %s… of %s within %v", prefix, inboundSolution, inboundWait)
}

// showInboundStart prints the start record of inbound run arn: its
// execution name, the starter (the inbound-start role's session of the
// source or schedule) and the origin.
func showInboundStart(ctx context.Context, st *stack.Stack, arn string) error {
	rec, err := dynamo.NewStore(local.DynamoDB(st.Dynamo.Endpoint()), stack.Table).RunStart(ctx, arn)
	if err != nil {
		return fmt.Errorf("the start record of %s: %w", arn, err)
	}
	if rec.Origin == nil {
		return errors.New("the inbound run's start record names no origin")
	}
	fmt.Printf("  execution %s\n  start record: starter %s\n                origin %s %q (event %s), added by %s\n",
		arn[strings.LastIndex(arn, ":")+1:], rec.Starter, rec.Origin.Kind, rec.Origin.Name, rec.Origin.Event, rec.Origin.AddedBy)
	if !strings.HasSuffix(rec.Starter, ":assumed-role/"+stack.InboundRoleName+"/"+rec.Origin.SessionName()) {
		return fmt.Errorf("the inbound run's starter %s is not the inbound-start role's session %s", rec.Starter, rec.Origin.SessionName())
	}
	return nil
}
