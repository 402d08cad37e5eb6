package review

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
)

// Reason words of an execution ARN the start lane (and run.fork, for a
// parent and its fork: docs/fork.md) does not admit
// (docs/identity.md, "Lanes"): each is REVIEW_FORBIDDEN, decided before
// the caller proof is verified, and nothing is recorded.
const (
	// ReasonStartChildName: the execution name starts with
	// tool.ChildNamePrefix, which only a parent's workflow step names.
	ReasonStartChildName = "start-child-name"
	// ReasonStartAccount: the execution is of another account than the
	// deployment's (caller.EnvAccount).
	ReasonStartAccount = "start-account"
	// ReasonStartRegion: the execution is of another region than the
	// function's (AWS_REGION).
	ReasonStartRegion = "start-region"
	// ReasonStartStateMachine: the execution's state machine is not one
	// of this stage's Solutions (tool.StateMachineName(stage, ...)).
	ReasonStartStateMachine = "start-state-machine"
)

// StartScope is what review-request's start lane admits a start record
// for: executions of this deployment's Solutions. Each field empty, no
// execution is admitted.
type StartScope struct {
	// Account is the deployment's own AWS account, 12 digits
	// (caller.EnvAccount).
	Account string
	// Region is the function's AWS region (AWS_REGION, which Lambda sets).
	Region string
	// Stage is the platform stage (tool.EnvStage): a Solution of it is published
	// as a state machine named tool.StateMachineName(Stage, <solution>).
	Stage string
}

// Admit decides whether toolgate run may record the start of the
// execution executionARN (already an execution ARN: review.DecodeStartRequest):
// "" when it may, otherwise the reason word (ReasonStartChildName,
// ReasonStartAccount, ReasonStartRegion, ReasonStartStateMachine, checked in
// that order) and a message safe to show the caller. A child's name is
// refused first: a parent's workflow step names its children from the
// parent's run id (tool.ChildAttemptName), so anyone who knows that id
// knows their names, and a start recorded under one before the step would
// hold it (docs/identity.md, "Lanes").
func (s StartScope) Admit(executionARN string) (reason, message string) {
	e, ok := ParseExecutionARN(executionARN)
	switch {
	case !ok:
		return ReasonStartStateMachine, fmt.Sprintf("%q is not an execution ARN", excerpt.Bytes(executionARN, 200, "..."))
	case strings.HasPrefix(e.Name, tool.ChildNamePrefix):
		return ReasonStartChildName, fmt.Sprintf("execution name %q starts with %q, which only a workflow step's child runs are named with: start the run under another name",
			excerpt.Bytes(e.Name, 80, "..."), tool.ChildNamePrefix)
	case s.Account == "" || e.Account != s.Account:
		return ReasonStartAccount, fmt.Sprintf("execution %s is not of this deployment's account", excerpt.Bytes(executionARN, 200, "..."))
	case s.Region == "" || e.Region != s.Region:
		return ReasonStartRegion, fmt.Sprintf("execution %s is not of this deployment's region", excerpt.Bytes(executionARN, 200, "..."))
	case s.Stage == "" || !strings.HasPrefix(e.StateMachine, tool.StateMachineName(s.Stage, "")) || len(e.StateMachine) == len(tool.StateMachineName(s.Stage, "")):
		return ReasonStartStateMachine, fmt.Sprintf("execution %s is not of a Solution of this stage (state machines %s<solution>)",
			excerpt.Bytes(executionARN, 200, "..."), tool.StateMachineName(s.Stage, ""))
	}
	return "", ""
}
