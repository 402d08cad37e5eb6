package resolver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

// askBound bounds an answer only where each part of the schema is
// bounded, and names the location of the first part that is not.
func TestAskBoundNamesWhereTheAnswerIsUnbounded(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         int
		where        string
	}{
		{"string with maxLength", `{"type":"string","maxLength":10}`, 62, ""},
		{"enum", `{"enum":["yes","no"]}`, 20, ""},
		{"const", `{"const":true}`, 5, ""},
		{"number", `{"type":"number"}`, numberBytes, ""},
		{"nullable string", `{"type":["string","null"],"maxLength":2}`, 14, ""},
		{"array", `{"type":"array","maxItems":2,"items":{"type":"boolean"}}`, 2 + 2*6, ""},
		{"closed object", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"boolean"}}}`, 2 + 6 + 4 + 5, ""},
		{"string without maxLength", `{"type":"string"}`, 0, ""},
		{"array without maxItems", `{"type":"array","items":{"type":"boolean"}}`, 0, ""},
		{"array of unbounded items", `{"type":"array","maxItems":3,"items":{"type":"string"}}`, 0, "/items"},
		{"open object", `{"type":"object","properties":{"a":{"type":"boolean"}}}`, 0, ""},
		{"unbounded property", `{"type":"object","additionalProperties":false,"properties":{"a/b":{"type":"string"}}}`, 0, "/properties/a~1b"},
		{"a combinator", `{"anyOf":[{"type":"string","maxLength":1}]}`, 0, "/anyOf"},
		{"no type", `{"minLength":1}`, 0, ""},
		{"true", `true`, 0, ""},
		// Under draft-04 "const" is no keyword: the schema admits any
		// value, though askBound would read the const.
		{"draft-04 const", `{"$schema":"http://json-schema.org/draft-04/schema#","const":"a"}`, 0, "/$schema"},
		{"draft-04 in a nested resource", `{"type":"object","additionalProperties":false,"properties":{"a":{"$id":"urn:a","$schema":"http://json-schema.org/draft-04/schema#","const":1}}}`, 0, "/properties/a/$schema"},
		{"2020-12 named", `{"$schema":"https://json-schema.org/draft/2020-12/schema","const":true}`, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := json.Unmarshal([]byte(tc.schema), &doc); err != nil {
				t.Fatal(err)
			}
			n, where, why := askBound(doc, "")
			bounded := tc.want > 0
			switch {
			case bounded && (why != "" || n != tc.want):
				t.Errorf("askBound = %d, %q, %q; want %d", n, where, why, tc.want)
			case !bounded && why == "":
				t.Errorf("askBound = %d: bounded, want unbounded at %q", n, tc.where)
			case !bounded && where != tc.where:
				t.Errorf("unbounded at %q (%s), want %q", where, why, tc.where)
			}
		})
	}
}

// An ask whose bound passes tool.MaxAnswerBytes is refused by
// [state-size] at the review; one within it compiles.
func TestAnAskOverTheAnswerBoundIsRefused(t *testing.T) {
	src := func(maxLength int) string {
		return "solution: t\nversion: 1\nsteps:\n" +
			"  - id: look\n    review: {show: {a: 1}, ask: {type: string, maxLength: " + itoa(maxLength) + "}}\n    on_approve: note\n" +
			"  - id: note\n    pass: {said: \"${reviews.look.answer}\"}\n"
	}
	over := tool.MaxAnswerBytes/6 + 1
	if res := compileString(t, src(over)); res.OK() || !strings.Contains(diagsOf(res.Diagnostics), "[state-size] step \"look\" review.ask admits an answer") {
		t.Errorf("maxLength %d: %s", over, diagsOf(res.Diagnostics))
	}
	if res := compileString(t, src(1000)); !res.OK() {
		t.Errorf("maxLength 1000: %s", diagsOf(res.Diagnostics))
	}
}

// A review that shows values binds them as a pass step does: each must
// be set on every path to the review.
func TestShowValuesMustBeSetOnEveryPathToTheReview(t *testing.T) {
	res := compileString(t, `solution: t
version: 1
input: {type: object, properties: {x: {type: string, maxLength: 10}}}
steps:
  - id: pick
    choice:
      - when: {value: "${input.x}", equals: x}
        next: look
    default: total
  - id: total
    pass: {n: 1}
    next: look
  - id: look
    review: {show: {n: "${steps.total.n}"}}
    on_approve: done
  - id: done
    succeed: {}
`)
	if got := diagsOf(res.Diagnostics); !strings.Contains(got, `[unset-binding] step "look" binds ${steps.total.n}, but step "total" has not completed on every path to "look"`) {
		t.Errorf("diagnostics:\n%s", got)
	}
}

// A review that shows values writes its decision JSON at
// $.reviews.<review id>, and its decision Passes read the answer of its
// ask from there; a timeout writes a null answer.
func TestAShowReviewsSlotIsItsOwnID(t *testing.T) {
	_, states, _ := compiledStates(t, `solution: t
version: 1
steps:
  - id: look
    review: {show: {a: 1}, ask: {enum: [red, green]}}
    on_approve: note
    on_timeout: done
  - id: note
    pass: {said: "${reviews.look.answer}"}
  - id: done
    succeed: {}
`, nil)
	if states == nil {
		return
	}
	if got := states["look"]["ResultPath"]; got != "$.reviews.look" {
		t.Errorf("the review's ResultPath is %v", got)
	}
	if got := jsonOf(t, states["look-approved"]["Parameters"]); !strings.Contains(got, `"answer.$":"$.reviews.look.answer"`) {
		t.Errorf("look-approved writes %s", got)
	}
	if got := jsonOf(t, states["look-timed-out"]["Parameters"]); !strings.Contains(got, `"answer":null`) {
		t.Errorf("look-timed-out writes %s", got)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Each malformed review option is refused at its own place, by its rule.
func TestReviewOptionsAreRefusedByRule(t *testing.T) {
	const head = "solution: t\nversion: 1\nsteps:\n  - id: look\n    review: "
	const tail = "\n    on_approve: send\n  - id: approve\n    review: {of: send}\n    on_approve: send\n  - id: send\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n    next: fetch\n" +
		"  - id: fetch\n    tool: structured-data-fetch\n    with: {url: \"https://data.example.com/x.json\", select: /a}\n    next: get\n" +
		"  - id: get\n    tool: http\n    with: {method: GET, url: \"https://data.example.com/y\"}\n"
	for _, tc := range []struct{ name, review, want string }{
		{"show not a mapping", `{show: [1]}`, "[invalid-value] step \"look\" review.show must be a non-empty mapping"},
		{"ask with a path key", `{show: {a: 1}, ask: {type: object, additionalProperties: false, properties: {"x.$": {type: boolean}}}}`, "[invalid-value] step \"look\" review.ask holds the key \"x.$\""},
		{"ask not a schema", `{show: {a: 1}, ask: {type: 7}}`, "[invalid-value] step \"look\" review.ask is not a valid JSON Schema (2020-12)"},
		{"ask over 8 KiB", `{show: {a: 1}, ask: {enum: ["` + strings.Repeat("x", tool.MaxAskSchemaBytes) + `"]}}`, "[quota] step \"look\" review.ask is"},
		{"ask without a type", `{show: {a: 1}, ask: {}}`, "[state-size] step \"look\" review.ask leaves the answer unbounded: it names no type"},
		{"editable twice", `{of: send, editable: [subject, subject]}`, "[invalid-value] step \"look\" review.editable lists \"subject\" twice"},
		{"editable empty", `{of: send, editable: []}`, "[invalid-value] step \"look\" review.editable must be a list of 1 to 32"},
		{"editable on an ungated step", `{of: fetch, editable: [select]}`, "[invalid-value] review \"look\": step \"fetch\" (structured-data-fetch) runs without an approval, so edits would never reach it"},
		{"editable on an http read", `{of: get, editable: [body]}`, "[invalid-value] review \"look\": step \"get\" (http) runs without an approval"},
		{"editable cc", `{of: send, editable: [cc]}`, "[review-edit] review \"look\": send-email's \"cc\" decides where the call's effect lands"},
		{"notify twice", `{show: {a: 1}, notify: [ops@example.com, OPS@example.com]}`, "[recipient] step \"look\" review.notify lists \"OPS@example.com\" twice"},
		{"notify empty", `{show: {a: 1}, notify: []}`, "[invalid-value] step \"look\" review.notify must be a list of 1 to 50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compileString(t, head+tc.review+tail)
			if got := diagsOf(res.Diagnostics); res.OK() || !strings.Contains(got, tc.want) {
				t.Errorf("want %q among:\n%s", tc.want, got)
			}
		})
	}
}

// The values a review shows count in its Task's payload, as a pass
// step's values do.
func TestShowValuesCountInTheReviewTasksPayload(t *testing.T) {
	res := compileString(t, `solution: t
version: 1
input: {type: object}
steps:
  - id: look
    review: {show: {a: "1 ${input}", b: "2 ${input}", c: "3 ${input}", d: "4 ${input}", e: "5 ${input}"}}
    on_approve: done
  - id: done
    succeed: {}
`)
	if got := diagsOf(res.Diagnostics); !strings.Contains(got, `[state-size] review "look": its Task's payload could reach`) || !strings.Contains(got, "and the values it shows") {
		t.Errorf("diagnostics:\n%s", got)
	}
}

// Nested maxItems whose product passes an int wrapped around: askBound
// read 0 bytes (and schemaBound, which bounds a tool's output in the
// state, a negative count). A bound that large is over every limit.
func TestABoundTooLargeForAnIntIsOverTheLimitNotWrapped(t *testing.T) {
	const s = `{"type":"array","maxItems":1073741817,"items":{"type":"array","maxItems":1073741824,"items":{"type":"array","maxItems":536870914,"items":{"type":"null"}}}}`
	var doc any
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	if n, _, why := askBound(doc, ""); why == "" && n <= tool.MaxAnswerBytes {
		t.Errorf("askBound = %d, within %d", n, tool.MaxAnswerBytes)
	}
	if n, ok := schemaBound(doc.(map[string]any)); ok && n <= MaxStateBytes {
		t.Errorf("schemaBound = %d, within %d", n, MaxStateBytes)
	}
}

// The decision JSON of an approval with edits carries the edited member
// names and the reviewed digest besides what reviewBytes bounds: a
// review with editable counts them in its slot, and so does the approval
// its tool Task sends.
func TestEditableNamesCountInTheReviewsSlot(t *testing.T) {
	res := compileString(t, `solution: t
version: 1
steps:
  - id: approve
    review: {of: send, editable: [subject, text]}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: [a@example.com], subject: s, text: t}
`)
	if res.Solution == nil {
		t.Fatalf("diagnostics:\n%s", diagsOf(res.Diagnostics))
	}
	c := &checker{sol: res.Solution}
	st := res.Solution.Steps[0]
	want := reviewBytes + len(`,"edited":["subject","text"],"reviewed_digest":"sha256:`) + 64 + 1
	if s := (&sizer{c: c}).slotOf(0, st); s == nil || s.bytes < want {
		t.Fatalf("the slot of review %q counts %v bytes, want at least %d", st.ID, s, want)
	}
	if n := c.reviewAnswerBytes("send"); n < want-reviewBytes {
		t.Fatalf("the approval of send counts %d bytes beyond reviewBytes, want at least %d", n, want-reviewBytes)
	}
}

// A review that shows values approves no call wherever it stands: before
// a gated tool in a for_each body, on a loop back to the tool after the
// tool's own approved review, or on one branch of a choice.
func TestAShowReviewNeverCountsForGateA(t *testing.T) {
	head := "solution: t\nversion: 1\ninput:\n  type: object\n  properties:\n    xs: {type: array, maxItems: 2, items: {type: integer, minimum: 0, maximum: 9}}\nsteps:\n"
	send := "tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	for name, src := range map[string]string{
		"in a body": head + "  - id: each\n    for_each:\n      items: \"${input.xs}\"\n      as: x\n      max_items: 2\n      steps:\n" +
			"        - {id: look, review: {show: {x: \"${x}\"}}, on_approve: send}\n" +
			"        - {id: send, tool: send-email, with: {to: [a@example.com], subject: s, text: t}}\n",
		"a loop back": head + "  - id: approve\n    review: {of: send}\n    on_approve: send\n  - id: send\n    " + send + "    next: look\n" +
			"  - id: look\n    review: {show: {a: 1}}\n    on_approve: send\n",
		"a choice": head + "  - id: which\n    choice:\n      - when: {value: 1, equals: 1}\n        next: look\n    default: approve\n" +
			"  - id: approve\n    review: {of: send}\n    on_approve: send\n  - id: look\n    review: {show: {a: 1}}\n    on_approve: send\n  - id: send\n    " + send,
	} {
		res := compileString(t, src)
		if d := diagsOf(res.Diagnostics); res.OK() || !strings.Contains(d, "[review-before-tool]") || !strings.Contains(d, "shows values and approves no tool call") {
			t.Errorf("%s: ok=%v\n%s", name, res.OK(), d)
		}
	}
}
