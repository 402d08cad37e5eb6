// Package gate holds the resolver's compile-time path checks on a compiled
// Solution: Gate A ("review before tool") and "no tool fallback chain". Both
// are pure graph algorithms over a Graph of steps; the package depends on the
// standard library only, and reporting (rule ids, positions, messages) is the
// caller's job.
//
// The rules come from the design notes on tools and the outside world:
//
//   - Review before tool (Gate A): "At compile time the resolver checks that
//     every path from entry to a tool step passes through a human-review step
//     where the Solution's policy requires it; a definition that would reach
//     a side effect without the required review is refused before it can be
//     published. Reject routes away from the tool by default."
//   - No tool fallback chain: "Falling over from send_email to
//     send_slack_message is a semantic change, not a routing decision; tools
//     have a different blast radius from models."
//
// # Graph
//
// Each step is a Node: a Tool (it calls a tool with side effects), a Review
// (a human approves or rejects the inputs of the one Tool named by its Of),
// or Other (pass, choice, succeed, fail, …). Edges are labelled by how the
// step is left: Plain (next, a choice branch or default), Approve and Reject
// (a review's on_approve, and its on_reject and on_timeout) and
// Error (a tool's on_error). Edges to the reserved target end are not
// listed; a node with one, or a succeed step, has Succeeds set. Cycles are
// allowed.
//
// # Approval
//
// For one tool node T, the approval along a path starts "not approved".
// Crossing the Approve edge of a review whose Of is T sets it; crossing the
// Reject edge of such a review clears it; leaving T by any edge, its Error
// edge included, clears it, because each execution of T uses the approval up.
// Every other edge leaves it unchanged; reviews of other tools do not count
// for T.
//
// # Review before tool (Gate A)
//
// A gated tool (Node.Gated: the tool is on the Solution's review list) must
// be approved every time a path from Start arrives at it. ReviewBeforeTool
// reports, per gated tool, a shortest path that arrives unapproved: a path
// with no review of the tool, one whose last review of it was left by Reject,
// or one that loops from the tool back to itself without a fresh approval.
// Steps no path from Start reaches are not checked.
//
// LastReviews names, for one tool, the reviews whose approval can be the
// last decision before a call: the ones a reader of a passing verdict
// must know approve.
//
// # No tool fallback chain
//
// A tool's on_error must not lead to a tool (any tool, gated or not, the
// failing one included) unless that tool has been approved after the error:
// a failure is routed to a human or to a non-tool step, never silently to a
// different side effect. A tool from which no path reaches success (a
// node whose Succeeds is set: a succeed step, or an edge to end) is no
// fallback: whatever it does, the run still fails after it, so it can only
// report the failure (an error notification). NoFallback reports, per tool
// with an Error edge, a shortest path from the Error edge to a tool that is
// not approved on arrival and can reach success, and a shortest path from
// that tool to success.
//
// # Cost
//
// Both checks are linear in nodes plus edges, plus, for each reviewed tool,
// the size of the region that reaches it without crossing one of its review
// decisions (see ReviewBeforeTool and NoFallback for the exact bound). In
// Solutions as authored a review's Approve edge leads straight to its tool, so
// those regions are a node or two and a 10 000-step Solution is checked in a
// few milliseconds.
package gate
