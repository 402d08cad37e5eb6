package resolver

import (
	"strings"
	"testing"
)

// noticeHead is a Solution whose fetch's on_error reaches ping, an http
// GET (a read: no review), and whatever STEPS say after it.
const noticeHead = `solution: notice
version: 1
policy:
  fetch_hosts: [jobs.example.com]
  http_hosts: [{host: ping.example.com, methods: [GET]}]
steps:
`

const noticeFetch = `  - id: fetch
    tool: structured-data-fetch
    with: {url: "https://jobs.example.com/v1/run"}
    on_error: ping
`

const noticePing = `  - id: ping
    tool: http
    with: {method: GET, url: "https://ping.example.com/fail"}
`

// An error notification (docs/solutions.md §4.2): a tool on an on_error
// path without a review is accepted when every path from it ends in a
// fail step, and refused, naming a path to success, otherwise.
func TestErrorNotificationsEndInFailure(t *testing.T) {
	tests := []struct {
		name, steps string
		refused     string // "" when accepted; else the path to success the refusal names
	}{
		{"the notice and its failure end in a fail step", noticeFetch + noticePing + `    next: stop
    on_error: stop
  - id: stop
    fail: {error: Failed}
`, ""},
		{"a choice on the error, both branches fail", noticeFetch + noticePing + `    next: which
    on_error: which
  - id: which
    choice:
      - when: {value: "${steps.fetch.error.Error}", equals: TOOL_TIMEOUT}
        next: late
    default: stop
  - id: late
    fail: {error: Late}
  - id: stop
    fail: {error: Failed}
`, ""},
		{"the notice's own failure ends the run: accepted", noticeFetch + noticePing + `    next: stop
  - id: stop
    fail: {error: Failed}
`, ""},
		{"the notice then a succeed step", noticeFetch + noticePing + `    next: done
  - id: done
    succeed: {}
`, "ping → done (a succeed step)"},
		{"the notice's next left to end", noticeFetch + noticePing, "ping → end (ping's next)"},
		{"the notice's on_error to end", noticeFetch + noticePing + `    next: stop
    on_error: end
  - id: stop
    fail: {error: Failed}
`, "ping → end (ping's on_error)"},
		{"a loop back to the fetch, which can succeed", noticeFetch + `    next: end
` + noticePing + `    next: again
  - id: again
    choice:
      - when: {value: "${steps.fetch.error.Error}", equals: TOOL_TIMEOUT}
        next: fetch
    default: stop
  - id: stop
    fail: {error: Failed}
`, "ping → again → fetch → end (fetch's next)"},
		{"a notice in a for_each body whose own on_error can succeed", `  - id: each
    for_each:
      items: "${input.list}"
      as: it
      max_items: 3
      steps:
` + indent(noticeFetch+noticePing+`    next: stop
  - id: stop
    fail: {error: Failed}
`, "      ") + `    on_error: recover
  - id: recover
    pass: {recovered: true}
`, "ping, whose failure fails for_each \"each\""},
		{"a notice in a for_each body whose failure fails the run", `  - id: each
    for_each:
      items: "${input.list}"
      as: it
      max_items: 3
      steps:
` + indent(noticeFetch+noticePing+`    next: stop
  - id: stop
    fail: {error: Failed}
`, "      ") + `    on_error: stop_all
  - id: stop_all
    fail: {error: Failed}
`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := noticeHead + tc.steps
			if strings.Contains(src, "input.list") {
				src = strings.Replace(src, "steps:\n", "input: {type: object, properties: {list: {type: array}}}\nsteps:\n", 1)
			}
			res := Compile("notice.yaml", []byte(src), Options{})
			var fallbacks []string
			for _, d := range res.Diagnostics {
				if d.Rule == RuleNoFallback {
					fallbacks = append(fallbacks, d.Message)
				}
			}
			switch {
			case tc.refused == "" && len(fallbacks) > 0:
				t.Fatalf("refused: %v\n%s", fallbacks, src)
			case tc.refused != "" && (len(fallbacks) != 1 || !strings.Contains(fallbacks[0], "the run can still succeed: "+tc.refused)):
				t.Fatalf("[no-fallback] %v, want one naming %q\n%s", fallbacks, tc.refused, src)
			}
		})
	}
}

// Gate A is unchanged by error notifications: a send-email notice on an
// error path that ends in a fail step is no fallback, but it still needs
// an approved review before it runs.
func TestAnEmailNoticeOnAnErrorPathStillNeedsItsReview(t *testing.T) {
	src := noticeHead + noticeFetch + `  - id: ping
    tool: send-email
    with: {to: [ops@example.com], subject: The job failed, text: see the run}
    next: stop
  - id: stop
    fail: {error: Failed}
`
	res := Compile("notice.yaml", []byte(src), Options{})
	var errs []string
	for _, d := range res.Diagnostics {
		if d.Severity == SeverityError {
			errs = append(errs, d.Rule)
		}
	}
	if got := strings.Join(errs, " "); got != RuleReviewBefore {
		t.Fatalf("errors %q, want only %s\n%s", got, RuleReviewBefore, diagText(res))
	}
}
