package review

import (
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
)

// EnvForkOperators names who may fork any run of the stage besides its
// starter, on review-decision: a JSON list of IAM ARN patterns of the
// deployment's own account (reviewer.ParseAdmins), from the CDK context
// toolgate:forkOperators; unset, nobody (docs/fork.md, "Who may fork").
const EnvForkOperators = "TOOLGATE_FORK_OPERATORS"

// ActionRunFork is review-decision's run.fork (docs/fork.md, "Forking a
// run"): ForkRequest's action, and the caller action its proof is bound to
// (ForkBinding).
const ActionRunFork Action = caller.ActionRunFork

// ForkBinding is what a run.fork request's caller proof is bound to:
// caller.ActionRunFork, the parent run's execution ARN as Target, the
// fork's execution ARN as Decision, and Detail
// "rerun_reads" when the fork reruns its reads ("" otherwise), so that a
// proof signed for one fork cannot fork the parent as another execution,
// or with other reads.
func ForkBinding(parent, fork string, rerunReads bool) caller.Binding {
	detail := ""
	if rerunReads {
		detail = "rerun_reads"
	}
	return caller.Binding{Action: caller.ActionRunFork, Target: parent, Decision: fork, Detail: detail}
}

// ForkBody is the body of POST /forks on the decision function's Function
// URL: run.fork's parent, fork and rerun_reads.
type ForkBody struct {
	RunID      string `json:"run_id"`
	ForkRunID  string `json:"fork_run_id"`
	RerunReads bool   `json:"rerun_reads,omitempty"`
}

// Fork is a run's fork item (table.Fork): the one execution that forks
// the parent, who forked it, when, whether its reads run again, and the
// parent's status when it was forked.
type Fork struct {
	ParentRunID string
	ForkRunID   string
	ForkedBy    string
	ForkedAt    time.Time
	RerunReads  bool
	// ParentStatus is RUNNING or PENDING_REDRIVE when run.fork stopped the
	// parent, else the parent's terminal status (Step Functions' execution
	// status).
	ParentStatus string
}

// ForkCall is one of the parent's calls as run.fork's answer lists it
// (never its input or result): its idempotency key, seq, step, tool and
// ledger state (IN_PROGRESS, COMPLETED, FAILED or UNKNOWN).
type ForkCall struct {
	Key   string `json:"key"`
	Seq   string `json:"seq"`
	Step  string `json:"step"`
	Tool  string `json:"tool"`
	State string `json:"state"`
}

// ForkResult is run.fork's answer (docs/fork.md): the parent, the fork,
// the parent's status when forked, and the parent's call items in seq
// order, from which toolgate fork reports the completed calls the
// corrected Solution never reaches.
type ForkResult struct {
	ParentRunID  string     `json:"parent_run_id"`
	ForkRunID    string     `json:"fork_run_id"`
	ParentStatus string     `json:"parent_status"`
	Calls        []ForkCall `json:"calls"`
}

// ForkWaiting is the body of a FORK_WAITING answer (409): the keys of the
// parent's calls IN_PROGRESS under a live lease, and the latest lease's
// end (RFC 3339 UTC ms). toolgate fork waits at most until then, and asks
// again with a fresh proof.
type ForkWaiting struct {
	Keys       []string `json:"keys"`
	LeaseUntil string   `json:"lease_until"`
}

// forkWaitingPrefix and forkWaitingLease frame a FORK_WAITING message, so
// that a client reading only the message (a direct invocation's
// errorMessage) learns the keys and the lease.
const (
	forkWaitingPrefix = "calls of the parent are in progress: "
	forkWaitingLease  = "; their leases end by "
)

// ForkWaitingMessage is a FORK_WAITING error's message for w: the keys,
// then the latest lease end, and what to do.
func ForkWaitingMessage(w ForkWaiting) string {
	return forkWaitingPrefix + strings.Join(w.Keys, ", ") + forkWaitingLease + w.LeaseUntil +
		"; ask again after it (toolgate fork waits and asks again)"
}

// ParseForkWaiting reads ForkWaitingMessage's message back; false when msg
// is not one.
func ParseForkWaiting(msg string) (ForkWaiting, bool) {
	rest, ok := strings.CutPrefix(msg, forkWaitingPrefix)
	if !ok {
		return ForkWaiting{}, false
	}
	keys, rest, ok := strings.Cut(rest, forkWaitingLease)
	if !ok {
		return ForkWaiting{}, false
	}
	lease, _, _ := strings.Cut(rest, ";")
	if _, err := time.Parse(time.RFC3339Nano, lease); err != nil {
		return ForkWaiting{}, false
	}
	return ForkWaiting{Keys: strings.Split(keys, ", "), LeaseUntil: lease}, true
}
