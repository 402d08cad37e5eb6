package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local/hookreceiver"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/webhook"
)

// parkedDescription is the description the demo gives crm's
// lookup_customer on the local MCP server: a change of its definition
// after the toolset pinned it, which parks the call.
const parkedDescription = "Returns a customer's name, tier and account manager."

// parkWait bounds each wait of the parked-call demo: the run reaching its
// park state, the event reaching the receiver, the run ending.
const parkWait = time.Minute

// parkedCall shows one parked call (docs/parking.md): the local MCP
// server changes crm.lookup_customer's description after mcp-demo pinned
// it; a run calling it parks in lookup-park, its park recorded and
// tool.schema_changed delivered to the receiver's hookPath (subscription
// sub, signature verified); the stack's park decider (stack.CredentialAdmin;
// the run's starter could too) lists it and approves it, and the call is
// sent once,
// under the key it had when it parked. The server's description is put
// back at the end. It returns the run's execution ARN and its Solution
// file (what forkParked forks). An error names what differed.
func parkedCall(ctx context.Context, st *stack.Stack, sf *sfn.Client, h *hookreceiver.Receiver, sub hookreceiver.Subscription) (arn, solution string, err error) {
	dir := filepath.Join(st.Dir, "toolsets")
	var lock struct{ ID string }
	if b, err := os.ReadFile(filepath.Join(dir, "mcp-demo.lock.json")); err != nil || json.Unmarshal(b, &lock) != nil || lock.ID == "" {
		return "", "", fmt.Errorf("parked call: the mcp-demo lock is not readable: %v", err)
	}
	solution = filepath.Join(dir, "crm-lookup-parked.yaml")
	if err := os.WriteFile(solution, stack.LookupSolution("crm-lookup-parked", lock.ID), 0o644); err != nil {
		return "", "", err
	}
	step("a parked call: crm-lookup-parked looks a customer up on %s", lock.ID)
	if _, err := toolgate("publish", solution, "--toolsets", dir, "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return "", "", err
	}

	step("the MCP server changes crm's lookup_customer (its description) after the toolset pinned it")
	before, err := st.MCP.Definition(mcpserver.LookupCustomer)
	if err != nil {
		return "", "", err
	}
	if err := st.MCP.SetDescription(mcpserver.LookupCustomer, parkedDescription); err != nil {
		return "", "", err
	}
	defer st.MCP.SetDescription(mcpserver.LookupCustomer, before.Description)
	fmt.Printf("  %q\n  → %q\n", before.Description, parkedDescription)

	step("a run calls it: mcp-call finds the definition changed, sends nothing and parks the call; the run waits in lookup-park")
	input := filepath.Join(dir, "parked-input.json")
	if err := os.WriteFile(input, []byte(`{"customer_id": "C-3"}`+"\n"), 0o644); err != nil {
		return "", "", err
	}
	calls := len(st.MCP.Calls())
	arn, err = startRun(st, "crm-lookup-parked", input, fmt.Sprintf("parked-%d", time.Now().Unix()))
	if err != nil {
		return "", "", err
	}
	if err := followToPark(ctx, sf, arn, "lookup"); err != nil {
		return "", "", err
	}
	decision := st.Endpoints["review-decision"]
	p, err := awaitPark(ctx, decision, arn)
	if err != nil {
		return "", "", err
	}
	if _, err := toolgate("parked", "list", "--endpoint", decision, "--as", stack.CredentialAdmin); err != nil {
		return "", "", err
	}
	if _, err := toolgate("parked", "show", p.ParkID, "--endpoint", decision, "--as", stack.CredentialAdmin); err != nil {
		return "", "", err
	}

	step("the event the subscriber got, its signature verified with the subscription's secret")
	line, err := parkEvent(ctx, h, sub, p.ParkID)
	if err != nil {
		return "", "", err
	}
	fmt.Println("  " + line)

	step("%s, the stack's park decider, approves it (an ungated step's park: the run's starter or a park decider decides it): the call runs against the server's current definition", stack.CredentialAdmin)
	if _, err := toolgate("parked", "approve", p.ParkID, "--endpoint", decision, "--as", stack.CredentialAdmin); err != nil {
		return "", "", err
	}
	outcome, err := follow(ctx, sf, arn, parkWait, false)
	if err != nil {
		return "", "", err
	}

	step("the run's ledger: the PARKED row and the call, under one key, which the server received once")
	if _, err := toolgate("ledger", arn, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return "", "", err
	}
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return "", "", err
	}
	sent := st.MCP.Calls()[calls:]
	for _, c := range sent {
		key, _ := c.Meta[mcpmeta.IdempotencyKey].(string)
		fmt.Printf("  the MCP server received tools/call %s with _meta %s %s\n", c.Tool, mcpmeta.IdempotencyKey, key)
	}
	return arn, solution, checkParkedCall(outcome, rows, sent, p)
}

// checkParkedCall is the parked-call demo's verdict: the run SUCCEEDED;
// its ledger holds the PARKED row and the call's SUCCEEDED row, both under
// the park's idempotency key, the SUCCEEDED one naming the park; and the
// server received exactly one tools/call, under that row's external key.
func checkParkedCall(outcome *runner.Outcome, rows []ledger.Row, sent []mcpserver.Call, p park.View) error {
	var parked, succeeded []ledger.Row
	for _, r := range rows {
		switch {
		case r.IdempotencyKey != p.IdempotencyKey:
		case r.Status == ledger.StatusParked:
			parked = append(parked, r)
		case r.Status == ledger.StatusSucceeded:
			succeeded = append(succeeded, r)
		}
	}
	var problems []string
	if outcome.Status != "SUCCEEDED" {
		problems = append(problems, fmt.Sprintf("the run ended %s %s", outcome.Status, outcome.Error))
	}
	if len(parked) != 1 || len(succeeded) != 1 || len(rows) != 2 {
		problems = append(problems, fmt.Sprintf("%d rows, %d PARKED and %d SUCCEEDED under %s", len(rows), len(parked), len(succeeded), p.IdempotencyKey))
	} else if succeeded[0].ParkID != p.ParkID {
		problems = append(problems, fmt.Sprintf("the call's row names park %q", succeeded[0].ParkID))
	}
	if len(sent) != 1 {
		problems = append(problems, fmt.Sprintf("the server received %d tools/call", len(sent)))
	} else if key, _ := sent[0].Meta[mcpmeta.IdempotencyKey].(string); len(succeeded) == 1 && key != succeeded[0].ExternalKey {
		problems = append(problems, fmt.Sprintf("the server received the key %q, the row's external key is %q", key, succeeded[0].ExternalKey))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the parked call: %s; want SUCCEEDED, one PARKED and one SUCCEEDED row under one key, sent once", strings.Join(problems, "; "))
	}
	return nil
}

// followToPark follows the run until it enters step's park state
// (`<step>-park`), printing the states it enters; a run that ends first,
// or not within parkWait, is an error.
func followToPark(ctx context.Context, sf *sfn.Client, arn, step string) error {
	fctx, cancel := context.WithTimeout(ctx, parkWait)
	defer cancel()
	parked := false
	outcome, err := runner.Follow(fctx, sf, arn, 300*time.Millisecond, func(e runner.Event) {
		switch {
		case parked:
		case strings.HasSuffix(e.Type, "StateEntered"):
			fmt.Printf("  → %s\n", e.State)
			if e.State == step+"-park" {
				parked = true
				cancel()
			}
		case e.Error != "":
			fmt.Printf("  ✗ %s %s\n", e.Type, e.Error)
		}
	})
	switch {
	case parked:
		return nil
	case err != nil:
		return fmt.Errorf("the run did not reach %s-park: %w", step, err)
	}
	return fmt.Errorf("the run ended %s %s %s before reaching %s-park", outcome.Status, outcome.Error, outcome.Cause, step)
}

// awaitPark is the PARKED park of run arn as the park decider lists it (toolgate
// parked list --json, not printed): the park Task invokes review-request,
// which records it, shortly after the run enters its park state, so it is
// polled every 200 ms for parkWait at most.
func awaitPark(ctx context.Context, decision, arn string) (park.View, error) {
	wctx, cancel := context.WithTimeout(ctx, parkWait)
	defer cancel()
	for {
		var out, errb strings.Builder
		if code := cli.Run([]string{"parked", "list", "--json", "--endpoint", decision, "--as", stack.CredentialAdmin}, &out, &errb); code != cli.ExitOK {
			return park.View{}, fmt.Errorf("toolgate parked list: exit %d: %s", code, errb.String())
		}
		var list park.ListResult
		if err := json.Unmarshal([]byte(out.String()), &list); err != nil {
			return park.View{}, fmt.Errorf("toolgate parked list --json: %w", err)
		}
		if i := slices.IndexFunc(list.Parks, func(v park.View) bool { return v.RunID == arn }); i >= 0 {
			return list.Parks[i], nil
		}
		select {
		case <-wctx.Done():
			return park.View{}, fmt.Errorf("no park of %s listed within %s", arn, parkWait)
		case <-time.After(200 * time.Millisecond): // a poll with a deadline: the park is recorded when the park Task runs
		}
	}
}

// parkEvent waits (parkWait at most) for the tool.schema_changed event of
// park id at the receiver's hookPath, verifies its signature with sub's
// key, and returns one line: its type, webhook-id, park id and the command
// it says decides it. Never the key or the body.
func parkEvent(ctx context.Context, h *hookreceiver.Receiver, sub hookreceiver.Subscription, id string) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, parkWait)
	defer cancel()
	var line string
	var checked error
	_, err := h.Wait(wctx, hookPath, func(got []hookreceiver.Request) bool {
		for _, d := range got {
			var body struct {
				Type webhook.Type `json:"type"`
				Data struct {
					ParkID        string `json:"park_id"`
					DecideCommand string `json:"decide_command"`
				} `json:"data"`
			}
			if json.Unmarshal(d.Body, &body) != nil || body.Type != webhook.ToolSchemaChanged || body.Data.ParkID != id {
				continue
			}
			if checked = hookreceiver.Verify(d, sub.Key); checked != nil {
				return true
			}
			line = fmt.Sprintf("%s  webhook-id %s  park %s  signature verified\n  decide with: %s", body.Type, d.ID, id, body.Data.DecideCommand)
			return true
		}
		return false
	})
	switch {
	case checked != nil:
		return "", fmt.Errorf("%s of park %s: the signature does not verify with the subscription's secret: %w", webhook.ToolSchemaChanged, id, checked)
	case err != nil:
		return "", fmt.Errorf("no %s of park %s reached the receiver: %w", webhook.ToolSchemaChanged, id, errors.Join(err, errors.New(received(h.Requests(hookPath)))))
	}
	return line, nil
}
