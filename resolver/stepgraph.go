package resolver

import (
	"encoding/json"
	"fmt"
	"strings"
)

// StepGraph is a Solution's steps and the edges between them as the
// checks see them, for drawing (resolver/flowchart, `toolgate graph`). It
// is built from the decoded and checked Solution, refused or not: a
// picture of a refused Solution is where its refusal is easiest to see.
// docs/solutions.md §4.4 says how it is drawn.
type StepGraph struct {
	// Solution is the Solution's name as written ("" when it has none).
	Solution string
	Version  int
	// Start is the index in Steps of the run's first step.
	Start int
	// Steps are the Solution's steps in Solution.Steps order: a
	// for_each's body steps right after it, with Loop set.
	Steps []GraphStep
	// Edges are every step's out-edges in the order the step writes them,
	// defaults included (an unwritten next goes to end), followed by each
	// for_each's edge into its body.
	Edges []GraphEdge
}

// GraphStep is one step of a StepGraph. Fields another kind does not have
// are zero.
type GraphStep struct {
	// ID is the step id as written: it may break the step id rule, be
	// empty or repeat another's in a refused Solution.
	ID   string
	Kind StepKind
	// Tool is a tool step's tool; Gated: that tool needs an approved
	// review before every call (the catalog's review_required, or
	// policy.review_before), so Gate A checks the step.
	Tool  string
	Gated bool
	// Workflow is the Solution a workflow step starts.
	Workflow string
	// Of is the index of the tool step a review approves; -1 when its of
	// names no tool step of its scope (refused: [unknown-target],
	// [target-kind] or [review-scope]).
	Of int
	// Shows: a review that shows values (review.show) and approves no
	// tool call.
	Shows bool
	// Loop is the index of the for_each whose body holds the step; -1 for
	// a top-level step.
	Loop int
	// Reachable: some path from the start leads to the step.
	Reachable bool
	// Detail is a short account of the step's options, in words: a
	// review's timeout, a wait's length, a fail's error, a for_each's
	// items. Written by the author in part, so a renderer escapes it.
	Detail string
}

// EdgeKind says how a step is left along a GraphEdge: the key it is
// written with.
type EdgeKind string

// The kinds of edge.
const (
	EdgeNext      EdgeKind = "next"       // next of a tool, workflow, pass, wait or for_each step
	EdgeRule      EdgeKind = "when"       // a choice rule's next
	EdgeDefault   EdgeKind = "default"    // a choice's default
	EdgeOnError   EdgeKind = "on_error"   // on_error, or one of its entries
	EdgeOnApprove EdgeKind = "on_approve" // a review's approval
	EdgeOnReject  EdgeKind = "on_reject"  // a review's rejection, and its timeout when it has no on_timeout
	EdgeOnTimeout EdgeKind = "on_timeout" // a review's timeout
	EdgeBody      EdgeKind = "for_each"   // a for_each to its body's first step, once per item
)

// Edge targets that are not a step.
const (
	// ToEnd: the target is end, which ends the run, or in a for_each's
	// body the iteration.
	ToEnd = -1
	// ToUnknown: the target names no step (refused: [unknown-target]).
	ToUnknown = -2
)

// GraphEdge is one edge of a StepGraph.
type GraphEdge struct {
	// From is the index of the step left; To the index of the step
	// reached, ToEnd or ToUnknown; ToName is the target as written.
	From, To int
	ToName   string
	Kind     EdgeKind
	// Label says when the edge is taken, in words: a choice rule's
	// comparison, the error codes an on_error entry catches. Written by
	// the author in part, so a renderer escapes it.
	Label string
}

// RefusedPath is the path a [review-before-tool] (Gate A) or
// [no-fallback] diagnostic names, as data: the same steps, in order, that
// its message lists.
type RefusedPath struct {
	// Rule is RuleReviewBefore or RuleNoFallback.
	Rule string
	// Line and Column are those of the diagnostic.
	Line, Column int
	// Path is the path's steps as indexes into Solution.Steps (and
	// StepGraph.Steps), in order. Gate A: from the start of the tool
	// step's scope (the run's start, or its for_each body's first step)
	// to the tool step, last. No fallback: from the step whose on_error
	// is taken, first, to the tool step (or the workflow step, or the
	// for_each whose body calls a tool) it reaches, last.
	Path []int
}

// stepGraph builds the StepGraph of the checked Solution.
func (c *checker) stepGraph() *StepGraph {
	g := &StepGraph{Solution: c.sol.Name, Version: c.sol.Version, Start: c.start, Steps: make([]GraphStep, len(c.sol.Steps))}
	loops := map[*Step]int{}
	for i, st := range c.sol.Steps {
		loops[st] = i
	}
	for i, st := range c.sol.Steps {
		gs := GraphStep{ID: st.ID, Kind: st.Kind, Of: -1, Loop: -1, Reachable: c.reachable[i], Detail: stepDetail(st)}
		if st.Loop != nil {
			if l, ok := loops[st.Loop]; ok {
				gs.Loop = l
			}
		}
		switch st.Kind {
		case KindTool:
			gs.Tool, gs.Gated = st.Tool, c.stepGated(i)
		case KindWorkflow:
			gs.Workflow = st.Workflow
		case KindReview:
			gs.Shows = st.Show != nil
			if j, ok := c.index[st.Of.Name]; ok && !st.OfUnusable && c.sol.Steps[j].Kind == KindTool {
				gs.Of = j
			}
		}
		g.Steps[i] = gs
		for _, e := range graphEdges(st) {
			e.From = i
			switch j, ok := c.index[e.ToName]; {
			case e.ToName == EndTarget:
				e.To = ToEnd
			case ok:
				e.To = j
			default:
				e.To = ToUnknown
			}
			g.Edges = append(g.Edges, e)
		}
	}
	for i, st := range c.sol.Steps {
		if b := c.bodyStart(st); b >= 0 {
			label := ""
			if st.ForEach.As != "" {
				label = "each " + st.ForEach.As
			}
			g.Edges = append(g.Edges, GraphEdge{From: i, To: b, ToName: c.sol.Steps[b].ID, Kind: EdgeBody, Label: label})
		}
	}
	return g
}

// graphEdges lists a step's out-edges as written, with the defaults the
// checks take (checker.targets): an unwritten next, a choice's unwritten
// default and a review's unwritten on_reject go to end.
func graphEdges(st *Step) []GraphEdge {
	var out []GraphEdge
	add := func(r Ref, k EdgeKind, label string, dflt bool) {
		switch {
		case r.Set:
			out = append(out, GraphEdge{ToName: r.Name, Kind: k, Label: label})
		case dflt:
			out = append(out, GraphEdge{ToName: EndTarget, Kind: k, Label: label})
		}
	}
	catches := func() {
		for _, k := range st.Catches {
			codes := make([]string, len(k.Errors))
			for i, e := range k.Errors {
				codes[i] = e.Name
			}
			add(k.Next, EdgeOnError, strings.Join(codes, ", "), false)
		}
		other := ""
		if len(st.Catches) > 0 {
			other = "any other error"
		}
		add(st.OnError, EdgeOnError, other, false)
	}
	switch st.Kind {
	case KindTool, KindWorkflow, KindForEach:
		add(st.Next, EdgeNext, "", true)
		catches()
	case KindPass, KindWait:
		add(st.Next, EdgeNext, "", true)
	case KindChoice:
		for _, r := range st.Rules {
			add(r.Next, EdgeRule, ruleText(r), false)
		}
		add(st.Default, EdgeDefault, "", true)
	case KindReview:
		add(st.OnApprove, EdgeOnApprove, "", false)
		reject := ""
		if !st.OnTimeout.Set {
			reject = "or timeout"
		}
		add(st.OnReject, EdgeOnReject, reject, true)
		add(st.OnTimeout, EdgeOnTimeout, "", false)
	}
	return out
}

// ruleText is a choice rule's comparison, as "VALUE OPERATOR OPERAND".
func ruleText(r ChoiceRule) string {
	return fmt.Sprintf("%s %s %s", plainText(r.Value), r.Operator, plainText(r.Operand))
}

// plainText is a value as compact JSON, or a string as it is written.
func plainText(v *value) string {
	if v == nil {
		return ""
	}
	if v.kind == kString {
		return v.str
	}
	b, err := json.Marshal(v.plain())
	if err != nil {
		return "?"
	}
	return string(b)
}

// stepDetail is GraphStep.Detail.
func stepDetail(st *Step) string {
	switch st.Kind {
	case KindReview:
		return fmt.Sprintf("timeout %d s", st.ReviewTimeout)
	case KindWait:
		switch w := st.Wait; {
		case w == nil:
		case w.Bound == nil:
			return fmt.Sprintf("%d s", w.Seconds)
		case w.Until:
			return "until " + plainText(w.Bound)
		default:
			return plainText(w.Bound) + " s"
		}
	case KindFail:
		return st.Error
	case KindForEach:
		if fe := st.ForEach; fe != nil {
			return fmt.Sprintf("%s in %s, at most %d, %d at once", fe.As, plainText(fe.Items), fe.MaxItems, fe.MaxConcurrency)
		}
	}
	return ""
}
