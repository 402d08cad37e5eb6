package review

import (
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/tool"
)

// Notice is the platform's e-mail notice that a review waits for a
// decision (docs/reviews.md, "Review notices"): a fixed form naming the
// review, its Solution, step, tool and expiry and the commands that show
// and decide it. It never holds the reviewed input, the values a show
// review shows, the question or any part of the Task's payload beyond
// these names: the message leaves the platform.
type Notice struct {
	ReviewID string
	// Solution is the name of the Solution whose run waits: the state
	// machine's name without "toolgate-<stage>_" (tool.StateMachineName);
	// the whole state machine name when it is not one of the stage's.
	Solution string
	// Step is the review step's id.
	Step string
	// Tool and Of are the reviewed tool and its tool step's id; both ""
	// for a review that shows values (tool.ReviewShow).
	Tool, Of string
	// ExpiresAt is the review's end (Review.ExpiresAt), whole seconds.
	ExpiresAt time.Time
}

// NoticeOf is r's notice: its Solution from its run id, an execution ARN
// (ParseExecutionARN) of a state machine named
// tool.StateMachineName(stage, solution); the state machine's whole name
// when the prefix is not the stage's, and "" when the run id is no
// execution ARN.
func NoticeOf(r *Review, stage string) Notice {
	n := Notice{ReviewID: r.ID, Step: r.Step, Tool: r.Tool, Of: r.Of, ExpiresAt: r.ExpiresAt}
	if e, ok := ParseExecutionARN(r.RunID); ok {
		n.Solution = e.StateMachine
		if s, ok := strings.CutPrefix(e.StateMachine, tool.StateMachineName(stage, "")); ok && stage != "" && s != "" {
			n.Solution = s
		}
	}
	return n
}

// Subject is the notice's subject: "Review <review id> is waiting:
// <solution>/<step>". Every part is an id of the platform's own
// grammar (a review id, a state machine name, a step id), never a
// value of the run.
func (n Notice) Subject() string {
	return fmt.Sprintf("Review %s is waiting: %s/%s", n.ReviewID, n.Solution, n.Step)
}

// Text is the notice's plain-text body: the review id, the Solution, the
// step, what the review asks about (the tool and its tool step, or "shows
// values"), the expiry (RFC 3339 UTC) and the toolgate commands that show
// and decide it, lines ending "\n".
func (n Notice) Text() string {
	what := "shows values (no tool call)"
	if n.Tool != "" {
		what = fmt.Sprintf("tool %s at step %s", n.Tool, n.Of)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A toolgate review waits for your decision.\n\n")
	fmt.Fprintf(&b, "Review:    %s\n", n.ReviewID)
	fmt.Fprintf(&b, "Solution:  %s\n", n.Solution)
	fmt.Fprintf(&b, "Step:      %s\n", n.Step)
	fmt.Fprintf(&b, "Reviews:   %s\n", what)
	fmt.Fprintf(&b, "Expires:   %s\n\n", n.ExpiresAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "See what it asks:\n  toolgate review show %s\n\n", n.ReviewID)
	fmt.Fprintf(&b, "Decide:\n  toolgate review approve %s\n  toolgate review reject %s --reason TEXT\n\n", n.ReviewID, n.ReviewID)
	fmt.Fprintf(&b, "This notice is the toolgate platform's own. It holds none of the reviewed values:\n")
	fmt.Fprintf(&b, "read them with toolgate review show, as a reviewer the review names.\n")
	return b.String()
}

// NoticeRecipients chooses whom a notice goes to: each address of notify
// (the review Task's notify, tool.ReviewTask.Notify) that allow (the
// platform's notices allow-list) admits, in its canonical form
// (recipient.Address.Canonical, the form the ses:Recipients IAM condition
// matches) and once, in the order written. skipped are the positions, from
// 0, of the addresses it refuses or that are no addr-spec (recipient.List
// Decide): a caller logs these positions, never the addresses. The zero
// List admits nobody.
func NoticeRecipients(allow recipient.List, notify []string) (kept []string, skipped []int) {
	seen := map[string]bool{}
	for i, a := range notify {
		d := allow.Decide(a)
		if d.Verdict != recipient.Allow {
			skipped = append(skipped, i)
			continue
		}
		if c := d.Address.Canonical(); !seen[c] {
			seen[c] = true
			kept = append(kept, c)
		}
	}
	return kept, skipped
}
