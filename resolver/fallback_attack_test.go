package resolver

import (
	"strings"
	"testing"
)

// A tool on an error path without a review passes the no-fallback check
// only when every path from it ends in a fail step (docs/solutions.md
// §4.2): a loop back to the failed step, a review that shows values whose
// rejection ends the run, the notice's own on_error to end, and a
// for_each whose on_error ends well all leave a way to success, and are
// refused; a plain notice, and one in a body whose for_each fails the run,
// pass.
func TestErrorNotificationsThatCanStillSucceedAreRefused(t *testing.T) {
	h := "solution: t\nversion: 1\npolicy:\n  fetch_hosts: [a.example.com]\ninput:\n  type: object\n  properties:\n    xs: {type: array, maxItems: 2, items: {type: integer, minimum: 0, maximum: 9}}\nsteps:\n"
	f := func(id, onErr, next string) string {
		s := "  - id: " + id + "\n    tool: structured-data-fetch\n    with: {url: \"https://a.example.com/x\"}\n"
		if onErr != "" {
			s += "    on_error: " + onErr + "\n"
		}
		if next != "" {
			s += "    next: " + next + "\n"
		}
		return s
	}
	fail := "  - id: failed\n    fail: {error: E, cause: c}\n"
	for _, c := range []struct {
		name, src string
		ok        bool
	}{
		{"A plain notify", h + f("fetch", "notify", "end") + f("notify", "failed", "failed") + fail, true},
		{"B loop back", h + f("fetch", "notify", "end") + f("notify", "failed", "which") + "  - id: which\n    choice:\n      - when: {value: 1, equals: 1}\n        next: failed\n    default: fetch\n" + fail, false},
		{"F show review after", h + f("fetch", "notify", "end") + f("notify", "failed", "look") + "  - id: look\n    review: {show: {a: 1}}\n    on_approve: failed\n" + fail, false},
		{"G notify on_error end", h + f("fetch", "notify", "end") + f("notify", "end", "failed") + fail, false},
		{"C foreach caught", h + "  - id: loop\n    for_each: {items: \"${input.xs}\", max_items: 2, as: it, steps: [{id: b1, tool: structured-data-fetch, with: {url: \"https://a.example.com/x\"}, on_error: b2}, {id: b2, tool: structured-data-fetch, with: {url: \"https://a.example.com/y\"}, next: bf, on_error: bf}, {id: bf, fail: {error: E}}]}\n    on_error: end\n", false},
		{"C2 foreach uncaught", h + "  - id: loop\n    for_each: {items: \"${input.xs}\", max_items: 2, as: it, steps: [{id: b1, tool: structured-data-fetch, with: {url: \"https://a.example.com/x\"}, on_error: b2}, {id: b2, tool: structured-data-fetch, with: {url: \"https://a.example.com/y\"}, next: bf, on_error: bf}, {id: bf, fail: {error: E}}]}\n", true},
	} {
		res := compileString(t, c.src)
		d := diagsOf(res.Diagnostics)
		if res.OK() != c.ok || !c.ok && !strings.Contains(d, "[no-fallback]") {
			t.Errorf("%s: ok=%v want %v: %s", c.name, res.OK(), c.ok, d)
		}
	}
}
