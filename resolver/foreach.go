package resolver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/resolver/asl"
)

// A for_each compiles to (docs/solutions.md, "for_each"):
//
//	<id>-seq     Pass: takes one value of the enclosing call counter
//	<id>-count   Pass: $.steps.<id>.count = States.ArrayLength(items); a
//	             value that is not a list fails the run (States.Runtime)
//	<id>-check   Choice: more than max_items items go to <id>-too-many
//	<id>-too-many Pass: writes {Error: FOR_EACH_TOO_MANY_ITEMS, Cause} at
//	             $.steps.<id>.error and goes where on_error routes it, or
//	             to <id>-failed
//	<id>         Map (INLINE): ItemProcessor is the body; each iteration
//	             returns only collect; the list is $.steps.<id>.output
//
// An iteration's state data is what the ItemSelector passes: the item
// and its index, meta (the run's, with loop_seq, the counter value the
// loop took, the index, and the iteration's own counter seq from 0),
// empty steps, reviews and decisions, the body's parks ({park_id: null}
// per parkable step, docs/parking.md), and exactly the outer values the
// body's reachable steps and collect bind (input, and each outer step or decision bound),
// at the paths they have outside, so that a binding compiles the same in
// and out of a body.

// forEach emits a for_each step: its states at the top level, its
// body's in its Map's ItemProcessor.
func (e *emitter) forEach(ps *planStep) {
	st, fe, l := ps.Step, ps.ForEach, ps.forEach
	result := "$.steps." + st.ID
	e.states[st.ID+"-seq"] = e.seqPass("entering a for_each takes one value of the call counter: its calls' keys are <that value>.<index>.<counter>", st.ID+"-count")
	e.states[st.ID+"-count"] = &asl.Pass{
		Comment:    "the number of items; a value that is not a list fails the run",
		Parameters: map[string]any{"count.$": "States.ArrayLength(" + l.itemsPath + ")"},
		ResultPath: result,
		Next:       st.ID + "-check",
	}
	tooMany := asl.Compare(result+".count", asl.GreaterThan, asl.Operand{Number: json.Number(strconv.Itoa(fe.MaxItems))})
	tooMany.Next = st.ID + "-too-many"
	e.states[st.ID+"-check"] = &asl.Choice{Choices: []asl.ChoiceRule{tooMany}, Default: st.ID}
	catchNext := e.failTarget(st, "the loop's error: too many items, or an iteration's")
	e.states[st.ID+"-too-many"] = &asl.Pass{
		Comment: "a list longer than max_items is never cut: the step fails, as a Catcher would write it",
		Parameters: map[string]any{
			"Error": ForEachTooManyItems,
			"Cause.$": fmt.Sprintf("States.Format('the list holds {} items; for_each %s takes at most %d (max_items)', %s.count)",
				st.ID, fe.MaxItems, result),
		},
		ResultPath: result + ".error",
		Next:       e.caughtAs(st, ForEachTooManyItems, catchNext),
	}

	outer := e.states
	e.states, e.loop = map[string]asl.State{}, ps
	for _, b := range l.body {
		e.step(b)
	}
	body := e.states
	e.states, e.loop = outer, nil

	e.states[st.ID] = &asl.Map{
		ItemsPath:    l.itemsPath,
		ItemSelector: e.itemSelector(l),
		ItemProcessor: asl.ItemProcessor{
			ProcessorConfig: asl.ProcessorConfig{Mode: "INLINE"},
			StartAt:         l.first,
			States:          body,
		},
		MaxConcurrency: fe.MaxConcurrency,
		ResultPath:     result + ".output",
		Catch:          e.catchers(st, result+".error", catchNext),
		Next:           e.next(st.Next, stateEnd),
	}
}

// iterationEnd is the state where an iteration of e.loop ends (its body's
// end, and a review's rejection without on_reject): its result is collect,
// or {}.
func (e *emitter) iterationEnd() *asl.Pass {
	return &asl.Pass{Comment: "the iteration's result: collect", Parameters: e.loop.forEach.collect, End: true}
}

// itemSelector is the state data each iteration of a for_each starts
// with.
func (e *emitter) itemSelector(l *loopPlan) map[string]any {
	sel := map[string]any{
		"item.$":  "$$.Map.Item.Value",
		"index.$": "$$.Map.Item.Index",
		"meta": map[string]any{
			"run_id.$": "$.meta.run_id", "parent_run_id.$": "$.meta.parent_run_id", "start.$": "$.meta.start",
			"traceparent.$": metaTraceparent, "loop_seq.$": "$.meta.seq", "index.$": "$$.Map.Item.Index", "seq": 0,
		},
		"reviews": map[string]any{},
	}
	steps, decisions := map[string]any{}, map[string]any{}
	if l.input {
		sel["input.$"] = "$.input"
	}
	for _, id := range l.steps {
		steps[id+".$"] = "$.steps." + id
	}
	for _, id := range l.reviews {
		decisions[id+".$"] = "$.decisions." + id
	}
	sel["steps"] = steps
	if e.p.decisions {
		sel["decisions"] = decisions
	}
	if parks := parkSlots(l.body); parks != nil {
		sel["parks"] = parks
	}
	return sel
}

// outerUses are the bindings of for_each step i's reachable body steps
// and collect that read a value from outside the body: the input, a
// top-level step, a top-level review's decision. Each such value is passed to every
// iteration, and counted in its state data (checkStateSize).
func (c *checker) outerUses(i int, st *Step) []use {
	var out []use
	keep := func(u use) {
		switch u.b.root {
		case "input":
			out = append(out, u)
		case "steps", "reviews":
			if j, ok := c.index[u.b.step]; ok && c.sol.Steps[j].Loop == nil {
				out = append(out, u)
			}
		}
	}
	for _, b := range st.ForEach.Body {
		k, ok := c.index[b.ID]
		if !ok || !c.reachable[k] {
			// A step no path reaches never runs, and what it binds is
			// checked set nowhere: passing it could fail every iteration's
			// start (States.Runtime) where it is unset.
			continue
		}
		for _, u := range c.uses[k] {
			keep(u)
		}
		// A review shows its tool's inputs: those the tool binds.
		if b.Kind == KindReview {
			if j, ok := c.index[b.Of.Name]; ok {
				for _, u := range c.uses[j] {
					keep(u)
				}
			}
		}
	}
	for _, u := range c.collectUses[i] {
		keep(u)
	}
	return out
}

// The state-size bound of a for_each (docs/solutions.md, "State size").
// The for_each's own slot, written where it starts, is one item (an item
// is at most the whole list it is in): on the paths into its body, the
// state before the loop (a superset of the values the ItemSelector
// passes), the item and what the body's steps write bound an iteration's
// state data from above. $.steps.<id>, the item count, then the list each
// iteration collected (max_items × collect's bound) or the loop's error,
// is written when the Map ends: addLoopResults counts it at each step the
// for_each leads to (next, on_error), wherever else those are reached
// from, a larger bound, never a smaller one; where it leads to end, the
// End state (or, in a body, the iteration's end) takes that state, which
// checkStateSize bounds as the for_each's own with the result added.

// forEachSlot is for_each step i's slot: the item.
func (z *sizer) forEachSlot(i int, st *Step) *slot {
	// The item, and {count} at $.steps.<id> while the loop starts.
	item := z.loopItemBound(i, "")
	return &slot{name: "item." + st.ID, bytes: item + 16 + numberBytes, parts: []string{fmt.Sprintf("an item %d, and the count", item)}}
}

// addLoopResults adds each reachable for_each's result slot to the slots
// of the steps it leads to, and returns, by step, the result slot of each
// for_each that leads to end (nil for the others).
func (z *sizer) addLoopResults(slots [][]*slot) []*slot {
	toEnd := make([]*slot, len(z.c.sol.Steps))
	for i, st := range z.c.sol.Steps {
		if st.Kind != KindForEach || !z.c.reachable[i] {
			continue
		}
		out, failed := z.forEachOutputBound(i), z.forEachErrorBound(i)
		s := &slot{name: "steps." + st.ID, bytes: 16 + numberBytes + max(out, failed),
			parts: []string{fmt.Sprintf("the list %d (max_items %d × collect), or an error %d", out, st.ForEach.MaxItems, failed)}}
		if z.cyclic[i] {
			// A loop may leave a list and then a failure's error in it.
			s.bytes = 16 + numberBytes + out + failed
		}
		for _, t := range z.c.targets(st) {
			if t.ref.Name == EndTarget {
				toEnd[i] = s
			} else if j, ok := z.c.index[t.ref.Name]; ok && !slices.Contains(slots[j], s) {
				slots[j] = append(slots[j], s)
			}
		}
	}
	return toEnd
}

// forEachOutputBound bounds for_each step i's output, the list of what
// each iteration returned: max_items times collect's bound ({} without
// collect) and a comma each.
func (z *sizer) forEachOutputBound(i int) int {
	per := 2
	if c := z.p.at[i].forEach.collected; c != nil {
		per = z.compiledBound(c.static, c.uses)
	}
	return 2 + z.c.sol.Steps[i].ForEach.MaxItems*(per+1)
}

// itemsBound bounds for_each step i's list, and so each of its items.
func (z *sizer) itemsBound(i int) int {
	if uses := z.p.at[i].forEach.itemsUses; len(uses) == 1 {
		return z.bindingBound(uses[0].b)
	}
	return z.input
}

// itemBound bounds the value at path rest ("" for the item itself) of
// the item a body binds by its as name: the largest loopItemBound of the
// for_each steps that name their item so.
// Each (as, rest) is computed once, over the loops listed once by as
// name, so that a Solution of many loops naming their item alike stays
// linear in its loops.
func (z *sizer) itemBound(as, rest string) int {
	key := itemKey{as, rest}
	if n, ok := z.items[key]; ok {
		return n
	}
	if z.loopsByAs == nil {
		z.loopsByAs = map[string][]int{}
		for i, st := range z.c.sol.Steps {
			if st.Kind == KindForEach {
				z.loopsByAs[st.ForEach.As] = append(z.loopsByAs[st.ForEach.As], i)
			}
		}
		z.items = map[itemKey]int{}
	}
	n := 0
	for _, i := range z.loopsByAs[as] {
		n = max(n, z.loopItemBound(i, rest))
	}
	z.items[key] = n
	return n
}

// loopItemBound bounds the value at path rest ("" for the item itself) of
// for_each step i's item: its list's items schema's bound where that bounds
// it (schemaBound), and at most the whole list.
func (z *sizer) loopItemBound(i int, rest string) int {
	item := z.itemsBound(i)
	if s := z.itemSchema(i); s != nil {
		m, ok := schemaBound(s)
		if rest != "" {
			m, ok = pathBound(s, rest)
		}
		if ok {
			item = min(item, m)
		}
	}
	return item
}

// arrayKeywords are the keywords a list's schema may have besides
// boundKeywords for its items schema to hold for every item: none of them
// admits an item the items schema refuses.
var arrayKeywords = map[string]bool{"items": true, "maxItems": true, "minItems": true, "uniqueItems": true}

// itemSchema is the schema every item of for_each step i's list meets: the
// items schema (one schema, not a draft-07 list of them) of the list's
// schema in the input schema; nil when the list is not in the input, or
// its schema has another keyword (prefixItems, $ref, a combinator, ...).
func (z *sizer) itemSchema(i int) map[string]any {
	uses := z.p.at[i].forEach.itemsUses
	if len(uses) != 1 || uses[0].b.root != "input" || z.c.sol.Input == nil {
		return nil
	}
	list := schemaAt(z.inputSchema(), uses[0].b.rest)
	for k := range list {
		if !boundKeywords[k] && !arrayKeywords[k] {
			return nil
		}
	}
	items, _ := list["items"].(map[string]any)
	return items
}

// forEachErrorBound bounds for_each step i's error object: a tool's
// error an iteration did not catch, a body's fail step's error and cause
// (literals, escaped twice at most), a workflow step's, or
// FOR_EACH_TOO_MANY_ITEMS with its short cause.
func (z *sizer) forEachErrorBound(i int) int {
	n := errorBytes
	for _, b := range z.c.sol.Steps[i].ForEach.Body {
		k, ok := z.c.index[b.ID]
		if !ok {
			continue
		}
		switch b.Kind {
		case KindFail:
			e, _ := json.Marshal(b.Error)
			c, _ := json.Marshal(b.Cause)
			n = max(n, 2*(len(e)+len(c))+1<<10)
		case KindWorkflow:
			n = max(n, z.errorBound(k))
		}
	}
	return n
}
