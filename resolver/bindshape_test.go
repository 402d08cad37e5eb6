package resolver

import (
	"slices"
	"strings"
	"testing"
)

// bindingDiags lists the [binding-shape] and [binding-type] diagnostics
// of a compile as "severity rule".
func bindingDiags(res *Result) []string {
	var out []string
	for _, d := range res.Diagnostics {
		if d.Rule == RuleBindingShape || d.Rule == RuleBindingType {
			out = append(out, string(d.Severity)+" "+d.Rule)
		}
	}
	return out
}

func TestBindingChecksAgainstSchemas(t *testing.T) {
	const head = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\n" +
		"input:\n  type: object\n  properties:\n    to: {type: array, items: {type: string}}\n    n: {type: number}\n" +
		"    orders: {type: array, items: {type: object, additionalProperties: false, properties: {id: {type: string}, qty: {type: integer}}}}\n" +
		"steps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    next: s\n"
	const send = "  - id: r\n    review: {of: s}\n    on_approve: s\n  - id: s\n    tool: send-email\n"
	cases := []struct {
		name  string
		steps string
		want  []string
		in    string // a fragment the first message holds
	}{
		{"a member the closed output cannot have", "  - id: s\n    pass: {x: \"${steps.f.output.stats}\"}\n",
			[]string{"error binding-shape"}, "did you mean ${steps.f.output.status}"},
		{"a member of an integer", "  - id: s\n    pass: {x: \"${steps.f.output.status.code}\"}\n",
			[]string{"error binding-shape"}, "${steps.f.output.status} is integer, never an object"},
		{"an open subtree says nothing", "  - id: s\n    pass: {x: \"${steps.f.output.data.items[3].name}\"}\n", nil, ""},
		{"a member the open input does not declare", "  - id: s\n    pass: {x: \"${input.too}\"}\n",
			[]string{"warning binding-shape"}, "did you mean ${input.to}"},
		{"a number bound to a string field", send + "    with: {to: \"${input.to}\", subject: \"${steps.f.output.status}\", text: t}\n",
			[]string{"error binding-type"}, "with.subject"},
		{"a template bound to a list", send + "    with: {to: \"x ${input.n}\", subject: s, text: t}\n",
			[]string{"error binding-type"}, "wants array"},
		{"a list element of the right type", send + "    with: {to: [\"${input.to[0]}\", \"${steps.f.output.content_type}\"], subject: \"${input.n} errors\", text: t}\n", nil, ""},
		{"a string bound to a list element", send + "    with: {to: [\"${steps.f.output.bytes}\"], subject: s, text: t}\n",
			[]string{"error binding-type"}, "with.to.0"},
		{"an ordered comparison of a string", "  - id: s\n    choice:\n      - when: {value: \"${steps.f.output.content_type}\", greater_than: 3}\n        next: end\n",
			[]string{"warning binding-type"}, "always false"},
		{"a not_equals that cannot match is always true", "  - id: s\n    choice:\n      - when: {value: \"${steps.f.output.content_type}\", not_equals: 3}\n        next: end\n",
			[]string{"warning binding-type"}, "the rule is always true"},
		{"an equals of the right type", "  - id: s\n    choice:\n      - when: {value: \"${steps.f.output.status}\", equals: 200}\n        next: end\n", nil, ""},
		{"a body item's member the items cannot have", "  - id: s\n    for_each:\n      items: \"${input.orders}\"\n      as: order\n      max_items: 10\n      steps:\n        - id: p\n          pass: {x: \"${order.qtty}\", i: \"${for_each.index}\"}\n",
			[]string{"error binding-shape"}, "did you mean ${order.qty}"},
		{"for_each items that cannot be a list", "  - id: s\n    for_each:\n      items: \"${input.n}\"\n      as: order\n      max_items: 10\n      steps:\n        - id: p\n          pass: {x: \"${order}\"}\n",
			[]string{"error binding-type"}, "never a list"},
		{"past the end of a pass step's list", "  - id: s\n    pass: {l: [1, 2]}\n    next: p\n  - id: p\n    pass: {y: \"${steps.s.l[2]}\"}\n",
			[]string{"error binding-shape"}, "the list at ${steps.s.l} has no element [2]"},
		{"a pass step's literal value", "  - id: s\n    pass: {x: 1}\n    next: p\n  - id: p\n    pass: {y: \"${steps.s.y}\", x: \"${steps.s.x}\"}\n",
			[]string{"error binding-shape"}, "has no member \"y\""},
		{"an execution field is a string", send + "    with: {to: \"${execution.name}\", subject: s, text: t}\n",
			[]string{"error binding-type"}, "can be string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, head+c.steps)
			if got := bindingDiags(res); !slices.Equal(got, c.want) {
				t.Fatalf("binding diagnostics %v, want %v; all: %v", got, c.want, res.Diagnostics)
			}
			for _, d := range res.Diagnostics {
				if d.Rule == RuleBindingShape || d.Rule == RuleBindingType {
					if !strings.Contains(d.Message, c.in) {
						t.Errorf("message %q does not say %q", d.Message, c.in)
					}
					break
				}
			}
		})
	}
}

func TestBindingChecksReadReviewAnswersAndDecisions(t *testing.T) {
	src := `solution: t
version: 1
steps:
  - id: ask
    review:
      of: s
      ask: {type: object, additionalProperties: false, properties: {tone: {type: string, maxLength: 20}, n: {type: integer, maximum: 9}}}
    on_approve: s
  - id: s
    tool: send-email
    with: {to: [a@example.com], subject: s, text: t}
    next: p
  - id: p
    pass: {a: "${reviews.ask.answer.tonne}", b: "${reviews.ask.answer.n}", c: "${reviews.ask.decision}", d: "${reviews.ask.approver}"}
    next: c
  - id: c
    choice:
      - when: {value: "${reviews.ask.answer.n}", greater_than: 3}
        next: end
      - when: {value: "${reviews.ask.approver}", less_than: 3}
        next: end
`
	res := compileString(t, src)
	if got, want := bindingDiags(res), []string{"error binding-shape", "warning binding-type"}; !slices.Equal(got, want) {
		t.Fatalf("binding diagnostics %v, want %v; all %v", got, want, res.Diagnostics)
	}
}
