package resolver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Gate A over Solutions with for_each bodies, against a brute force over
// the flattened graph: every state (step,
// approvals) a run can be in is explored, where a for_each enters its
// body's first step, an iteration's end enters it again for the next item
// or leaves the loop by the for_each's next, a body's failure leaves by
// the for_each's on_error, and entering the body clears every approval of
// the body's tools (a review of an earlier item approves nothing). A
// review's of names a tool of its own scope, so the body's reviews and
// the outer tools never meet. The gated tools the brute force reaches
// unapproved are exactly those the resolver reports [review-before-tool],
// and the steps whose on_error reaches a tool unapproved that can still
// end the run well (bruteNoFallback) exactly those it reports
// [no-fallback].

// gstep is one step of a generated Solution.
type gstep struct {
	id, kind string // send (gated), fetch, review, choice, pass, fail, for_each
	next     string // next; a choice's first branch; a review's on_approve
	other    string // on_error (tool, for_each); a choice's default; a review's on_reject
	of       string // review
	body     []*gstep
}

func genScope(r *rand.Rand, prefix string, n int, inBody bool) []*gstep {
	steps := make([]*gstep, n)
	kinds := []string{"send", "send", "fetch", "review", "review", "choice", "pass", "fail"}
	for k := range steps {
		steps[k] = &gstep{id: fmt.Sprintf("%s%d", prefix, k), kind: kinds[r.IntN(len(kinds))]}
	}
	target := func() string {
		if r.IntN(4) == 0 {
			return "end"
		}
		return steps[r.IntN(n)].id
	}
	var tools []string
	for _, s := range steps {
		if s.kind == "send" || s.kind == "fetch" {
			tools = append(tools, s.id)
		}
	}
	for _, s := range steps {
		s.next = target()
		switch s.kind {
		case "send", "fetch":
			if r.IntN(3) == 0 {
				s.other = target()
			}
		case "choice":
			s.other = target()
		case "review":
			if len(tools) == 0 {
				s.kind = "pass"
				continue
			}
			s.of = tools[r.IntN(len(tools))]
			if r.IntN(3) > 0 {
				s.other = target()
			}
		}
	}
	return steps
}

func (s *gstep) yaml(b *strings.Builder, indent string) {
	fmt.Fprintf(b, "%s- id: %s\n", indent, s.id)
	in := indent + "  "
	switch s.kind {
	case "send":
		fmt.Fprintf(b, "%stool: send-email\n%swith: {to: [a@example.com], subject: s, text: t}\n%snext: %s\n", in, in, in, s.next)
	case "fetch":
		fmt.Fprintf(b, "%stool: structured-data-fetch\n%swith: {url: \"https://example.com/x\"}\n%snext: %s\n", in, in, in, s.next)
	case "pass":
		fmt.Fprintf(b, "%spass: {}\n%snext: %s\n", in, in, s.next)
	case "fail":
		fmt.Fprintf(b, "%sfail: {error: Stop}\n", in)
	case "choice":
		fmt.Fprintf(b, "%schoice:\n%s  - when: {value: \"${input.x}\", equals: 1}\n%s    next: %s\n%sdefault: %s\n", in, in, in, s.next, in, s.other)
	case "review":
		fmt.Fprintf(b, "%sreview: {of: %s}\n%son_approve: %s\n", in, s.of, in, s.next)
		if s.other != "" {
			fmt.Fprintf(b, "%son_reject: %s\n", in, s.other)
		}
	case "for_each":
		fmt.Fprintf(b, "%sfor_each:\n%s  items: \"${input.list}\"\n%s  as: it\n%s  max_items: 3\n%s  steps:\n", in, in, in, in, in)
		for _, c := range s.body {
			c.yaml(b, in+"    ")
		}
		fmt.Fprintf(b, "%snext: %s\n", in, s.next)
	}
	if s.other != "" && (s.kind == "send" || s.kind == "fetch" || s.kind == "for_each") {
		fmt.Fprintf(b, "%son_error: %s\n", in, s.other)
	}
}

// bruteGateA returns the gated tools some run reaches unapproved, and
// every step some run reaches.
func bruteGateA(top []*gstep) (unapproved, reached []string) {
	byID := map[string]*gstep{}
	loopOf := map[string]*gstep{}
	bit := map[string]uint64{}
	for _, s := range top {
		byID[s.id] = s
		for _, c := range s.body {
			byID[c.id], loopOf[c.id] = c, s
		}
	}
	for id, s := range byID {
		if s.kind == "send" || s.kind == "fetch" {
			bit[id] = 1 << len(bit)
		}
	}
	bodyMask := func(f *gstep) uint64 {
		var m uint64
		for _, c := range f.body {
			m |= bit[c.id]
		}
		return m
	}
	type state struct {
		id   string
		mask uint64
	}
	seen := map[state]bool{}
	bad := map[string]bool{}
	var queue []state
	var goTo func(from *gstep, to string, mask uint64, failure bool)
	push := func(id string, mask uint64) {
		s := byID[id]
		if s.kind == "send" && mask&bit[id] == 0 {
			bad[id] = true
		}
		if st := (state{id, mask}); !seen[st] {
			seen[st] = true
			queue = append(queue, st)
		}
	}
	// goTo follows an edge of from to target to (a failure when failure):
	// end, or a failure with nowhere to go, ends the run or the iteration.
	goTo = func(from *gstep, to string, mask uint64, failure bool) {
		f := loopOf[from.id]
		switch {
		case to != "" && to != "end":
			push(to, mask)
		case f == nil: // the run ends
		case failure: // the body fails: the for_each's on_error
			if f.other != "" {
				goTo(f, f.other, mask, false)
			}
		default: // the iteration ends: the next item, or after the loop
			push(f.body[0].id, mask&^bodyMask(f))
			goTo(f, f.next, mask, false)
		}
	}
	push(top[0].id, 0)
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		s := byID[st.id]
		switch s.kind {
		case "send", "fetch":
			m := st.mask &^ bit[s.id]
			goTo(s, s.next, m, false)
			if s.other != "" {
				goTo(s, s.other, m, false)
			} else {
				goTo(s, "", m, true)
			}
		case "review":
			goTo(s, s.next, st.mask|bit[s.of], false)
			goTo(s, s.other, st.mask&^bit[s.of], false)
		case "choice":
			goTo(s, s.next, st.mask, false)
			goTo(s, s.other, st.mask, false)
		case "pass":
			goTo(s, s.next, st.mask, false)
		case "fail":
			goTo(s, "", st.mask, true)
		case "for_each":
			push(s.body[0].id, st.mask&^bodyMask(s)) // the first item
			goTo(s, s.next, st.mask, false)          // no item
			if s.other != "" {                       // too many items
				goTo(s, s.other, st.mask, false)
			}
		}
	}
	for id := range bad {
		unapproved = append(unapproved, id)
	}
	for st := range seen {
		if !slices.Contains(reached, st.id) {
			reached = append(reached, st.id)
		}
	}
	slices.Sort(unapproved)
	return unapproved, reached
}

// bruteCanSucceed reports whether some run that is at step id can still
// end well, exploring the steps a run can be at from there: an edge to
// end ends the run well, or, in a body, ends the iteration (the for_each
// goes on: docs/solutions.md §4.2 takes that as success). A tool's Task
// may fail: to its on_error when it has one; a review's Task may fail
// otherwise than by a rejection; a fail step fails. A failure not caught
// fails the run (the top level) or the body, whose failure goes to its
// for_each's on_error, or fails the run. Pass and choice steps fail only
// by States.Runtime, which fails the run whatever catches it.
func bruteCanSucceed(top []*gstep, id string) bool {
	byID := map[string]*gstep{}
	loopOf := map[string]*gstep{}
	for _, s := range top {
		byID[s.id] = s
		for _, c := range s.body {
			byID[c.id], loopOf[c.id] = c, s
		}
	}
	seen := map[string]bool{}
	var at func(id string) bool
	// to follows an edge of from to target (a failure when failure).
	to := func(from *gstep, target string, failure bool) bool {
		f := loopOf[from.id]
		switch {
		case failure && f == nil:
			return false // the run fails
		case failure:
			return f.other != "" && at(f.other)
		case target == "" || target == "end":
			return true
		}
		return at(target)
	}
	at = func(id string) bool {
		if seen[id] {
			return false
		}
		seen[id] = true
		s := byID[id]
		// Its own failure: its on_error (a tool, a for_each), or up.
		switch s.kind {
		case "send", "fetch", "for_each":
			if s.other != "" && to(s, s.other, false) || s.other == "" && to(s, "", true) {
				return true
			}
		case "review", "fail":
			if to(s, "", true) {
				return true
			}
		}
		switch s.kind {
		case "send", "fetch", "pass", "for_each":
			return to(s, s.next, false)
		case "choice", "review": // a review's on_reject defaults to end
			return to(s, s.next, false) || to(s, s.other, false)
		}
		return false // fail
	}
	return at(id)
}

// bruteNoFallback returns the steps whose on_error reaches a tool
// unapproved from which the run can still end well (bruteCanSucceed;
// docs/solutions.md §4.2), by exploring every (step, approvals) state
// from each on_error edge with every approval cleared; notices counts the
// on_error edges that reach unapproved tools, all of which end in failure.
// Each scope is its own graph, as for_each says: in a body, end and a
// failure end the search (the next item is another unit of work, and a
// failure of the body is its for_each's, whose own on_error starts a
// search in the outer graph); in the top level, a for_each whose body
// calls a tool is a tool no review approves.
func bruteNoFallback(top []*gstep) (out []string, notices int) {
	reached := map[string]bool{}
	_, all := bruteGateA(top)
	for _, id := range all {
		reached[id] = true
	}
	check := func(scope []*gstep) {
		byID := map[string]*gstep{}
		bit := map[string]uint64{}
		for _, s := range scope {
			byID[s.id] = s
			if s.kind == "send" || s.kind == "fetch" {
				bit[s.id] = 1 << len(bit)
			}
		}
		isTool := func(s *gstep) bool {
			if s.kind == "for_each" {
				return slices.ContainsFunc(s.body, func(c *gstep) bool { return c.kind == "send" || c.kind == "fetch" })
			}
			return s.kind == "send" || s.kind == "fetch"
		}
		for _, f := range scope {
			if f.other == "" || !isTool(f) || !reached[f.id] {
				continue
			}
			type state struct {
				id   string
				mask uint64
			}
			seen := map[state]bool{}
			queue := []state{{f.other, 0}}
			bad, notice := false, false
			for len(queue) > 0 && !bad {
				st := queue[0]
				queue = queue[1:]
				s, ok := byID[st.id]
				if !ok || seen[st] { // end
					continue
				}
				seen[st] = true
				if isTool(s) && st.mask&bit[s.id] == 0 {
					if bruteCanSucceed(top, s.id) {
						bad = true
						break
					}
					notice = true
				}
				m := st.mask &^ bit[s.id]
				switch s.kind {
				case "review":
					queue = append(queue, state{s.next, m | bit[s.of]}, state{s.other, m &^ bit[s.of]})
				case "fail":
				default: // next, and a choice's default or an approved tool's on_error
					queue = append(queue, state{s.next, m}, state{s.other, m})
				}
			}
			if bad {
				out = append(out, f.id)
			} else if notice {
				notices++
			}
		}
	}
	check(top)
	for _, s := range top {
		if s.kind == "for_each" {
			check(s.body)
		}
	}
	slices.Sort(out)
	return out, notices
}

func TestForEachGatesAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 1))
	refused, fallbacks, notices, other := 0, 0, 0, map[string]int{}
	defer func() {
		t.Logf("of 400: %d refused by Gate A, %d by the no-fallback check; %d on_error edges reach only tools that end in failure; other errors %v", refused, fallbacks, notices, other)
	}()
	for n := range 400 {
		top := genScope(r, "t", 2+r.IntN(3), false)
		for k := 0; k < 1+r.IntN(2); k++ {
			f := &gstep{id: fmt.Sprintf("f%d", k), kind: "for_each", body: genScope(r, fmt.Sprintf("b%d_", k), 1+r.IntN(4), true)}
			f.next = top[r.IntN(len(top))].id
			if r.IntN(3) == 0 {
				f.next = "end"
			}
			if r.IntN(3) == 0 {
				f.other = top[r.IntN(len(top))].id
			}
			top = append(top, f)
			// Something leads into the loop.
			top[r.IntN(len(top)-1)].next = f.id
		}
		var b strings.Builder
		b.WriteString("solution: gen\nversion: 1\npolicy: {fetch_hosts: [example.com]}\ninput: {type: object, properties: {list: {type: array}}}\nsteps:\n")
		for _, s := range top {
			s.yaml(&b, "  ")
		}
		res := Compile("gen.yaml", []byte(b.String()), Options{})
		var got, gotFallback []string
		for _, d := range res.Diagnostics {
			switch d.Rule {
			case RuleReviewBefore:
				got = append(got, strings.Split(d.Message, `"`)[1])
			case RuleNoFallback:
				gotFallback = append(gotFallback, strings.Split(d.Message, `"`)[1])
			}
		}
		slices.Sort(got)
		slices.Sort(gotFallback)
		if len(got) > 0 {
			refused++
		}
		if len(gotFallback) > 0 {
			fallbacks++
		}
		for _, d := range res.Diagnostics {
			if d.Severity == SeverityError && d.Rule != RuleReviewBefore && d.Rule != RuleNoFallback {
				other[d.Rule]++
			}
		}
		if want, _ := bruteGateA(top); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: Gate A refuses %v, the brute force reaches %v unapproved\n%s\n%v", n, got, want, b.String(), res.Diagnostics)
		}
		want, n2 := bruteNoFallback(top)
		notices += n2
		if fmt.Sprint(gotFallback) != fmt.Sprint(want) {
			t.Fatalf("case %d: the no-fallback check refuses the on_error of %v, the brute force %v\n%s\n%v", n, gotFallback, want, b.String(), res.Diagnostics)
		}
	}
}
