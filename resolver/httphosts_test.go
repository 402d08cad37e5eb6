package resolver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// httpSolution is a Solution with one http step, its with and its
// policy.http_hosts given, and a review of it when reviewed.
func httpSolution(hosts, with string, reviewed bool, extra string) string {
	src := "solution: http-case\nversion: 1\ninput: {type: object, properties: {url: {type: string}, method: {type: string}}}\n"
	if hosts != "" {
		src += "policy:\n  http_hosts: " + hosts + "\n"
	}
	src += "steps:\n"
	if reviewed {
		src += "  - id: approve\n    review: {of: call}\n    on_approve: call\n    on_reject: end\n"
	}
	return src + "  - id: call\n    tool: http\n    with: " + with + "\n" + extra
}

// errorsOf lists "rule line" of res's errors, in order.
func errorsOf(res *Result) []string {
	var out []string
	for _, d := range res.Diagnostics {
		if d.Severity == SeverityError {
			out = append(out, fmt.Sprintf("%s %d", d.Rule, d.Line))
		}
	}
	return out
}

// Gate A treats an http step by its method: a literal GET or HEAD needs no
// review, any other literal method and a bound one do;
// policy.review_before: [http] adds nothing to a read.
func TestHTTPGateByMethod(t *testing.T) {
	hosts := "[{host: api.example.com, methods: [GET, HEAD, POST, PUT, PATCH, DELETE]}]"
	for _, c := range []struct {
		name, with string
		gated      bool
	}{
		{"GET", "{method: GET, url: https://api.example.com/}", false},
		{"HEAD", "{method: HEAD, url: https://api.example.com/}", false},
		{"POST", "{method: POST, url: https://api.example.com/}", true},
		{"PUT", "{method: PUT, url: https://api.example.com/}", true},
		{"PATCH", "{method: PATCH, url: https://api.example.com/}", true},
		{"DELETE", "{method: DELETE, url: https://api.example.com/}", true},
		{"bound", `{method: "${input.method}", url: https://api.example.com/}`, true},
		{"GET with a bound URL", `{method: GET, url: "${input.url}"}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("h.yaml", []byte(httpSolution(hosts, c.with, false, "")), Options{})
			refused := slices.Contains(rules(res), RuleReviewBefore)
			if refused != c.gated {
				t.Fatalf("unreviewed: refused by Gate A %v, want %v: %v", refused, c.gated, res.Diagnostics)
			}
			res = Compile("h.yaml", []byte(httpSolution(hosts, c.with, true, "")), Options{})
			if !res.OK() {
				t.Fatalf("reviewed: %v", res.Diagnostics)
			}
			if got := len(res.Gate) == 1; got != c.gated {
				t.Fatalf("gate verdicts %+v, want gated %v", res.Gate, c.gated)
			}
			if got := strings.Contains(string(res.Definition), `"approval.$"`); got != c.gated {
				t.Fatalf("the envelope carries an approval: %v, want %v", got, c.gated)
			}
		})
	}
	res := Compile("h.yaml", []byte(strings.Replace(httpSolution(hosts, "{method: GET, url: https://api.example.com/}", false, ""),
		"policy:\n", "policy:\n  review_before: [http]\n", 1)), Options{})
	if !res.OK() || len(res.Gate) != 0 {
		t.Fatalf("a GET with review_before [http]: %v, gate %+v", res.Diagnostics, res.Gate)
	}
}

// An http step is retried by the catalog's retry only where the
// dispatcher's contract for it is idempotent: a read, or a method that is
// not one to a host whose entry declares an idempotency key. Otherwise it
// takes one attempt, and more need tolerate_duplicates.
func TestHTTPRetryFollowsTheContract(t *testing.T) {
	hosts := "[{host: api.example.com, methods: [GET, POST]}, {host: keyed.example.com, methods: [POST], idempotency: {header: Idempotency-Key}}]"
	for _, c := range []struct {
		name, with, extra string
		attempts          int // 0: refused as [retry]
	}{
		{"GET", "{method: GET, url: https://api.example.com/}", "", 3},
		{"POST", "{method: POST, url: https://api.example.com/}", "", 1},
		{"POST to a keyed host", "{method: POST, url: https://keyed.example.com/}", "", 3},
		{"POST to a bound URL", `{method: POST, url: "${input.url}"}`, "", 1},
		{"POST with retries", "{method: POST, url: https://api.example.com/}", "    retry: {max_attempts: 2}\n", 0},
		{"POST tolerating duplicates", "{method: POST, url: https://api.example.com/}", "    retry: {max_attempts: 2}\n    tolerate_duplicates: true\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("h.yaml", []byte(httpSolution(hosts, c.with, true, c.extra)), Options{})
			if c.attempts == 0 {
				if fmt.Sprint(errorsOf(res)) != "[retry 14]" {
					t.Fatalf("diagnostics %v, want one [retry]", res.Diagnostics)
				}
				return
			}
			if !res.OK() {
				t.Fatalf("%v", res.Diagnostics)
			}
			var def struct {
				States map[string]struct{ Retry []struct{ MaxAttempts int } }
			}
			if err := json.Unmarshal(res.Definition, &def); err != nil {
				t.Fatal(err)
			}
			got := 1
			if r := def.States["call"].Retry; len(r) == 1 {
				got += r[0].MaxAttempts
			}
			if got != c.attempts {
				t.Fatalf("%d attempts, want %d", got, c.attempts)
			}
		})
	}
}

// Literal values the http tool would refuse are refused at compile time,
// each at the value and with its rule.
func TestHTTPLiteralRefusals(t *testing.T) {
	hosts := "[{host: api.example.com, methods: [GET, POST], headers: [X-Api-Version]}, {host: keyed.example.com, methods: [POST], idempotency: {header: Idempotency-Key}}]"
	for _, c := range []struct {
		name, hosts, with string
		want              []string
	}{
		{"no hosts", "", "{method: GET, url: https://api.example.com/}", []string{"http-host 10"}},
		{"host not pinned", hosts, "{method: GET, url: https://other.example.com/}", []string{"http-host 13"}},
		{"port not pinned", hosts, "{method: GET, url: \"https://api.example.com:8443/\"}", []string{"http-host 13"}},
		{"host of a bound URL not pinned", hosts, `{method: GET, url: "https://other.example.com/${input.url}"}`, []string{"http-host 13"}},
		{"URL the tool cannot parse", hosts, `{method: GET, url: "https://api.example.com:x/"}`, []string{"fetch-url 13"}},
		{"method not pinned", hosts, "{method: PUT, url: https://api.example.com/}", []string{"http-method 13"}},
		{"body with GET", hosts, "{method: GET, url: https://api.example.com/, body: {a: 1}}", []string{"tool-input 13"}},
		{"forbidden header", hosts, "{method: GET, url: https://api.example.com/, headers: {authorization: x}}", []string{"http-header 13"}},
		{"custom header not named", hosts, "{method: GET, url: https://api.example.com/, headers: {X-Other: x}}", []string{"http-header 13"}},
		{"idempotency header set", hosts, "{method: POST, url: https://keyed.example.com/, headers: {Idempotency-Key: x}}", []string{"http-header 13"}},
		{"custom header no entry names, bound URL", hosts, `{method: GET, url: "${input.url}", headers: {X-Other: x}}`, []string{"http-header 13"}},
		{"header value with a control character", hosts, `{method: GET, url: https://api.example.com/, headers: {Accept: "a\u0001b"}}`, []string{"tool-input 13"}},
		{"custom header some entry names, bound URL", hosts, `{method: GET, url: "${input.url}", headers: {x-api-version: "1"}}`, nil},
		{"standard and named headers", hosts, "{method: POST, url: https://api.example.com/, headers: {Content-Type: text/plain, X-Api-Version: '1'}, body: hi}", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("h.yaml", []byte(httpSolution(c.hosts, c.with, true, "")), Options{})
			if got := errorsOf(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v: %v", got, c.want, res.Diagnostics)
			}
		})
	}
}

// policy.http_hosts entries are checked where they are written, pinned in
// their canonical form, and left out (with a warning) when no step uses
// the http tool.
func TestPolicyHTTPHosts(t *testing.T) {
	bad := `solution: bad-hosts
version: 1
policy:
  http_hosts:
    - {host: "*.github.io", methods: [GET]}
    - {host: api.example.com, methods: [FETCH], headers: [Cookie], idempotency: {header: Idempotency-Key, format: hex}}
    - {host: b.example.com, methods: [GET]}
    - {host: c.example.com, port: 1}
    - {host: b.example.com, methods: [POST]}
steps:
  - id: done
    succeed: {}
`
	res := Compile("bad.yaml", []byte(bad), Options{})
	want := []string{"http-host 5", "http-host 6", "http-host 6", "http-host 6", "missing-field 8", "unknown-field 8", "http-host 9"}
	if got := errorsOf(res); !slices.Equal(got, want) {
		t.Fatalf("errors %v, want %v: %v", got, want, res.Diagnostics)
	}

	res = Compile("h.yaml", []byte(httpSolution("[{host: B.example.com, methods: [POST, GET, POST], headers: [x-b, x-a]}, {host: a.example.com, methods: [GET]}]",
		"{method: GET, url: https://a.example.com/}", false, "")), Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	pinned, _ := json.Marshal(res.Toolset.HTTPHosts)
	if string(pinned) != `[{"host":"a.example.com","methods":["GET"]},{"host":"b.example.com","methods":["GET","POST"],"headers":["X-A","X-B"]}]` {
		t.Fatalf("pinned %s", pinned)
	}

	unused := "solution: unused\nversion: 1\npolicy:\n  http_hosts: [{host: a.example.com, methods: [GET]}]\nsteps:\n  - id: done\n    succeed: {}\n"
	res = Compile("unused.yaml", []byte(unused), Options{})
	if !res.OK() || len(res.Toolset.HTTPHosts) != 0 || fmt.Sprint(diagRules(res, RuleHTTPHost)) != "[warning http-host]" {
		t.Fatalf("unused http_hosts: %v, pinned %+v", res.Diagnostics, res.Toolset.HTTPHosts)
	}
}

// A Solution on a registered toolset takes its http_hosts from it, and
// cannot write its own.
func TestHTTPOnRegisteredToolset(t *testing.T) {
	const webhooks = "ts_c961e5039cff878b82186bc7624829ba" // testdata/toolsets/webhooks.lock.json
	src := "solution: chat-notify\nversion: 1\ntoolset: " + webhooks + `
steps:
  - id: approve
    review: {of: post}
    on_approve: post
    on_reject: end
  - id: post
    tool: http
    with: {method: POST, url: https://api.example.com/jobs, headers: {X-Api-Version: "2"}, body: {a: 1}}
`
	res := compileOnDemo(t, "on-webhooks.yaml", src)
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	if res.Toolset.ID != webhooks {
		t.Fatalf("pinned %s", res.Toolset.ID)
	}
	if !strings.Contains(string(res.Definition), `"MaxAttempts": 2`) {
		t.Fatalf("a POST to a host declaring an idempotency key is not retried: %s", res.Definition)
	}
	withHosts := strings.Replace(src, "steps:", "policy:\n  http_hosts: [{host: api.example.com, methods: [GET]}]\nsteps:", 1)
	if got := errorsOf(compileOnDemo(t, "on-webhooks.yaml", withHosts)); fmt.Sprint(got) != "[http-host 5]" {
		t.Fatalf("policy.http_hosts with a toolset: %v", got)
	}
	notPinned := strings.Replace(src, "https://api.example.com/jobs", "https://hooks.chat.example.com/x", 1)
	if got := errorsOf(compileOnDemo(t, "on-webhooks.yaml", notPinned)); fmt.Sprint(got) != "[http-header 11]" {
		t.Fatalf("a header the chat host does not name: %v", got)
	}
}
