package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
)

// forkParked forks the parked-call demo's run parent, whose Solution file
// is solution, once (docs/fork.md): as its starter, on the same Solution,
// with the server's description put back (parkedCall's end), so the
// fork's call is not parked again. The fork's lookup_customer matches the
// parent's completed call, takes its recorded result (a REUSED row naming
// the parent's key) and sends no tools/call; the fork succeeds. An error
// names what differed.
func forkParked(ctx context.Context, st *stack.Stack, sf *sfn.Client, parent, solution string) error {
	step("forking that run (toolgate fork): the fork runs the Solution again on the parent's input, and takes each completed call's recorded result instead of calling the tool again")
	rows, err := ledgerRows(st, parent)
	if err != nil {
		return err
	}
	calls := len(st.MCP.Calls())
	name := "fork-" + parent[strings.LastIndex(parent, ":")+1:]
	if _, err := toolgate(forkArgs(st, parent, solution, name)...); err != nil {
		return err
	}
	fork := parent[:strings.LastIndex(parent, ":")+1] + name
	outcome, err := follow(ctx, sf, fork, parkWait, true)
	if err != nil {
		return err
	}

	step("the fork's ledger: its call REUSED, naming the parent's key; the MCP server received nothing more")
	if _, err := toolgate("ledger", fork, "--endpoint", st.Dynamo.Endpoint(), "--table", stack.Table); err != nil {
		return err
	}
	forked, err := ledgerRows(st, fork)
	if err != nil {
		return err
	}
	sent := st.MCP.Calls()[calls:]
	fmt.Printf("  the MCP server received %d tools/call since the fork\n", len(sent))
	return checkFork(outcome, rows, forked, sent)
}

// forkArgs are the arguments of `toolgate fork` that forks parent on the
// Solution file solution under execution name name, as the demo's author
// (the parked run's starter).
func forkArgs(st *stack.Stack, parent, solution, name string) []string {
	return []string{"fork", parent, "--solution", solution, "--name", name, "--toolsets", filepath.Join(st.Dir, "toolsets"),
		"--endpoint", st.SFN.Endpoint(), "--stage", stack.Stage, "--params", st.ParamsFile, "--as", author}
}

// checkFork is the fork demo's verdict: the fork SUCCEEDED; its one row
// is REUSED, under the fork's own key, naming the key of the parent's
// SUCCEEDED call; and the server received no tools/call.
func checkFork(outcome *runner.Outcome, parent, fork []ledger.Row, sent []mcpserver.Call) error {
	var problems []string
	if outcome.Status != "SUCCEEDED" {
		problems = append(problems, fmt.Sprintf("the fork ended %s %s", outcome.Status, outcome.Error))
	}
	var done []ledger.Row
	for _, r := range parent {
		if r.Status == ledger.StatusSucceeded {
			done = append(done, r)
		}
	}
	switch {
	case len(done) != 1:
		problems = append(problems, fmt.Sprintf("the parent has %d SUCCEEDED rows", len(done)))
	case len(fork) != 1:
		problems = append(problems, fmt.Sprintf("the fork has %d rows", len(fork)))
	case fork[0].Status != ledger.StatusReused || fork[0].ReusedFrom != done[0].IdempotencyKey:
		problems = append(problems, fmt.Sprintf("the fork's row is %s reused from %q, not REUSED from %s", fork[0].Status, fork[0].ReusedFrom, done[0].IdempotencyKey))
	case fork[0].IdempotencyKey == done[0].IdempotencyKey:
		problems = append(problems, fmt.Sprintf("the fork's row is under the parent's key %s", done[0].IdempotencyKey))
	}
	if len(sent) != 0 {
		problems = append(problems, fmt.Sprintf("the server received %d tools/call", len(sent)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the fork: %s; want SUCCEEDED, one REUSED row naming the parent's call, nothing sent", strings.Join(problems, "; "))
	}
	return nil
}
