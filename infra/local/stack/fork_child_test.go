package stack_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// A fork's workflow step forks its child from the parent's child of the
// same step (docs/fork.md, "Child runs"): ticket-parent's child opened a
// ticket, the parent is forked with the same Solution, and the fork's
// child takes the parent child's recorded result instead of opening
// another: one ticket in all, and the fork's child's row is REUSED,
// naming the parent child's call. The effect is the team function's
// ticket, which the stack records as the SES emulator records mails.
func TestAForksChildReusesItsParentsChildsEffect(t *testing.T) {
	e, toolsets, solutions := parentsEnv(t, sharedEnv(t))
	e.publishOn(t, toolsets, filepath.Join(solutions, "demo-ticket.yaml"))
	e.publishOn(t, toolsets, filepath.Join(solutions, "ticket-parent.yaml"))
	executionOf := func(solution, name string) string {
		return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, solution), name)
	}
	before := e.teamNow()
	name := fresh("wf-parent")
	parent := executionOf("ticket-parent", name)
	e.runParent(t, name, parent)
	parentChild := executionOf("demo-ticket", tool.ChildExecutionName(parent, "1"))

	forkName := fresh("wf-fork")
	out, code := e.toolgate(t, "fork", parent, "--solution", filepath.Join(solutions, "ticket-parent.yaml"), "--toolsets", toolsets, "--name", forkName,
		"--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter)
	fork := executionOf("ticket-parent", forkName)
	if code != cli.ExitOK || !strings.Contains(out, fork) {
		t.Fatalf("toolgate fork %s: exit %d, want 0 naming %s\n%s", parent, code, fork, out)
	}
	if end, _ := e.follow(t, fork); end.Status != "SUCCEEDED" {
		t.Fatalf("the fork %s: %s %s", end.Status, end.Error, end.Cause)
	}
	forkChild := executionOf("demo-ticket", tool.ChildExecutionName(fork, "1"))
	if tickets := e.ticketsSince(before); len(tickets) != 1 {
		t.Fatalf("tickets %+v, want the parent's child's one only", tickets)
	}
	rows := e.callRows(t, forkChild)
	if len(rows) != 1 || rows[0].Status != ledger.StatusReused || rows[0].ReusedFrom != parentChild+"/1" || rows[0].ParentRunID != fork {
		t.Fatalf("the fork's child's rows %+v, want one REUSED from %s/1 naming parent %s", rows, parentChild, fork)
	}
}
