package resolver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// diagRules returns "severity rule" for each diagnostic of rule, in order.
func diagRules(res *Result, rule string) []string {
	var out []string
	for _, d := range res.Diagnostics {
		if d.Rule == rule {
			out = append(out, string(d.Severity)+" "+d.Rule)
		}
	}
	return out
}

// A wait compiles to a Wait state: literal seconds to Seconds, a bound
// number to SecondsPath, a bound time to TimestampPath.
func TestWaitCompilesToAWaitState(t *testing.T) {
	for _, c := range []struct {
		name, wait string
		want       map[string]any
	}{
		{"literal", "{seconds: 90}", map[string]any{"Type": "Wait", "Seconds": 90.0, "Next": "End"}},
		{"zero", "{seconds: 0}", map[string]any{"Type": "Wait", "Seconds": 0.0, "Next": "End"}},
		{"bound seconds", `{seconds: "${input.delay}"}`, map[string]any{"Type": "Wait", "SecondsPath": "$.input.delay", "Next": "End"}},
		{"bound time", `{until: "${steps.p.at}"}`, map[string]any{"Type": "Wait", "TimestampPath": "$.steps.p.at", "Next": "End"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, "solution: t\nversion: 1\npolicy: {run_timeout_seconds: 86400}\nsteps:\n  - id: p\n    pass: {at: \"${input.at}\"}\n    next: w\n  - id: w\n    wait: "+c.wait+"\n")
			if !res.OK() {
				t.Fatal(res.Diagnostics)
			}
			var def struct{ States map[string]map[string]any }
			if err := json.Unmarshal(res.Definition, &def); err != nil {
				t.Fatal(err)
			}
			if got := def.States["w"]; !mapsEqual(got, c.want) {
				t.Fatalf("state %v, want %v", got, c.want)
			}
		})
	}
}

func mapsEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The waits between a review's approval and its gated tool: refused when
// the literal waits on one path reach the review's timeout (every approval
// would have ended), a warning when some wait is there at all.
func TestWaitBetweenApprovalAndTool(t *testing.T) {
	const send = "  - id: send\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	review := func(timeout, next string) string {
		return "  - id: approve\n    review: {of: send, timeout_seconds: " + timeout + "}\n    on_approve: " + next + "\n"
	}
	wait := func(id, seconds, next string) string {
		return "  - id: " + id + "\n    wait: {seconds: " + seconds + "}\n    next: " + next + "\n"
	}
	for _, c := range []struct {
		name, steps string
		want        []string
	}{
		{"a wait before the review", wait("w", "90000", "approve") + review("86400", "send") + send, nil},
		{"no wait", review("86400", "send") + send, nil},
		{"a short wait between", review("86400", "w") + wait("w", "60", "send") + send, []string{"warning approval-expiry"}},
		{"a wait as long as the review", review("86400", "w") + wait("w", "86400", "send") + send, []string{"error approval-expiry"}},
		{"two waits that add up", review("100", "w1") + wait("w1", "60", "w2") + wait("w2", "40", "send") + send, []string{"error approval-expiry"}},
		{"two waits on different branches", review("100", "c") +
			"  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: w1\n    default: w2\n" +
			wait("w1", "60", "send") + wait("w2", "60", "send") + send, []string{"warning approval-expiry"}},
		{"a bound wait", review("100", "w") + "  - id: w\n    wait: {seconds: \"${input.s}\"}\n    next: send\n" + send, []string{"warning approval-expiry"}},
		{"a wait on a loop", review("100", "w") + wait("w", "1", "c") +
			"  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: w\n    default: send\n" + send, []string{"warning approval-expiry"}},
		{"a fresh approval after the wait", review("100", "w") + wait("w", "100", "again") +
			"  - id: again\n    review: {of: send, timeout_seconds: 100}\n    on_approve: send\n" + send, nil},
		{"a wait after the tool", review("100", "send") + strings.Replace(send, "text: t}\n", "text: t}\n    next: w\n", 1) + wait("w", "100", "end"), nil},
		{"an ungated tool", "  - id: approve\n    review: {of: check, timeout_seconds: 100}\n    on_approve: w\n" + wait("w", "100", "check") +
			"  - id: check\n    tool: workflow-validator\n    with: {solution: x}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, "solution: t\nversion: 1\npolicy: {run_timeout_seconds: 604800}\nsteps:\n"+c.steps)
			if got := diagRules(res, RuleApprovalExpiry); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
			for _, d := range res.Diagnostics {
				if d.Severity == SeverityError && d.Rule != RuleApprovalExpiry {
					t.Fatalf("another error: %v", d)
				}
			}
		})
	}
}

// A literal wait must be below the run's timeout; a bound one is not
// known before the run.
func TestWaitBelowTheRunTimeout(t *testing.T) {
	for _, c := range []struct {
		wait string
		want []string
	}{
		{"{seconds: 3599}", nil},
		{"{seconds: 3600}", []string{RuleRunTimeout}},
		{"{seconds: 31536001}", []string{RuleQuota}},
		{"{seconds: -1}", []string{RuleInvalidValue}},
		{"{seconds: 1.5}", []string{RuleInvalidValue}},
		{`{seconds: "${input.s}"}`, nil},
		{`{seconds: "60"}`, []string{RuleBinding}},
		{`{seconds: "${execution.start_time}"}`, []string{RuleBinding}},
		{`{until: 5}`, []string{RuleInvalidValue}},
		{`{until: "${input.a}${input.b}"}`, []string{RuleBinding}},
		{`{seconds: [1]}`, []string{RuleInvalidValue}},
		{`{secs: 1}`, []string{RuleMissingField, RuleUnknownField}},
	} {
		t.Run(c.wait, func(t *testing.T) {
			res := compileString(t, "solution: t\nversion: 1\npolicy: {run_timeout_seconds: 3600}\nsteps:\n  - id: w\n    wait: "+c.wait+"\n")
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
		})
	}
}

// A for_each between a review's approval and its tool runs its body's
// waits before the call (at least once when the list holds an item, once
// per item at max_concurrency 1): they count, as a wait on a loop.
func TestWaitInAForEachBodyBetweenApprovalAndTool(t *testing.T) {
	const send = "  - id: send\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	loop := func(body string) string {
		return "  - id: each\n    for_each:\n      items: \"${input.people}\"\n      as: p\n      max_items: 5\n      steps:\n" + body + "    next: send\n"
	}
	for _, c := range []struct {
		name, steps string
		want        []string
	}{
		{"a body wait as long as the review", "  - id: approve\n    review: {of: send, timeout_seconds: 3600}\n    on_approve: each\n" +
			loop("        - id: hold\n          wait: {seconds: 4000}\n") + send, []string{"error approval-expiry"}},
		{"a short body wait", "  - id: approve\n    review: {of: send, timeout_seconds: 3600}\n    on_approve: each\n" +
			loop("        - id: hold\n          wait: {seconds: 60}\n") + send, []string{"warning approval-expiry"}},
		{"a body without waits", "  - id: approve\n    review: {of: send, timeout_seconds: 3600}\n    on_approve: each\n" +
			loop("        - id: noop\n          pass: {}\n") + send, nil},
		{"the loop before the review", loop("        - id: hold\n          wait: {seconds: 4000}\n") +
			"  - id: approve\n    review: {of: send, timeout_seconds: 3600}\n    on_approve: send\n" + send, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "solution: t\nversion: 1\ninput:\n  type: object\n  properties: {people: {type: array}}\nsteps:\n" + c.steps
			if c.name == "the loop before the review" {
				src = strings.Replace(src, "    next: send\n", "    next: approve\n", 1)
			}
			res := compileString(t, src)
			if got := diagRules(res, RuleApprovalExpiry); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
			for _, d := range res.Diagnostics {
				if d.Severity == SeverityError && d.Rule != RuleApprovalExpiry {
					t.Fatalf("another error: %v", d)
				}
			}
		})
	}
}
