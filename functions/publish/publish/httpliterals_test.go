package publish_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/resolver"
)

// httpSolution posts to the chat webhook after a review and reads the
// API; hooks is the chat host's URL.
func httpSolution(hooks string) string {
	return `solution: chat-notify
version: 1
policy:
  http_hosts:
    - {host: api.example.com, methods: [GET]}
    - {host: "*.chat.example.com", methods: [POST]}
    - {host: 127.0.0.1, methods: [POST]}
steps:
  - id: status
    tool: http
    with: {method: GET, url: "https://api.example.com/jobs/1"}
    next: approve
  - id: approve
    review: {of: post}
    on_approve: post
    on_reject: end
  - id: post
    tool: http
    with: {method: POST, url: "` + hooks + `", body: {text: done}}
`
}

// Publish refuses, as [deployment] at the entry or the URL, http_hosts
// the http function's allow-list does not cover and literal http URLs
// its allow-list or address rules refuse; the fetch allow-list has no
// say over http.
func TestDeploymentChecksHTTPHostsAndURLs(t *testing.T) {
	for _, c := range []struct {
		name       string
		env        map[string]string
		hooks      string
		want       []string // "line" of each [deployment] diagnostic
		mentioning string
	}{
		{"covered", map[string]string{publish.EnvHTTPAllow: "api.example.com *.example.com 127.0.0.1", publish.EnvHTTPAllowAddresses: "127.0.0.1/32"}, "https://hooks.chat.example.com/x", nil, ""},
		{"no http allow-list", map[string]string{publish.EnvFetchAllow: "api.example.com,*.example.com,127.0.0.1"}, "https://hooks.chat.example.com/x", []string{"5", "6", "7", "11", "19"}, publish.EnvHTTPAllow},
		{"one entry outside", map[string]string{publish.EnvHTTPAllow: "api.example.com,127.0.0.1", publish.EnvHTTPAllowAddresses: "127.0.0.1/32"}, "https://hooks.chat.example.com/x", []string{"6", "19"}, "*.chat.example.com"},
		{"an address the rules refuse", map[string]string{publish.EnvHTTPAllow: "api.example.com *.example.com 127.0.0.1"}, "http://127.0.0.1/hook", []string{"19"}, "address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.env[publish.EnvRecipientAllow] = "@example.com"
			dep, err := publish.DeploymentFromEnv(func(k string) string { return c.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			res := resolver.Compile("chat.yaml", []byte(httpSolution(c.hooks)), resolver.Options{})
			if !res.OK() {
				t.Fatal(res.Diagnostics)
			}
			var lines []string
			var text string
			for _, d := range dep.Check(res) {
				if d.Rule != publish.RuleDeployment {
					t.Fatalf("rule %s: %s", d.Rule, d)
				}
				lines = append(lines, fmt.Sprint(d.Line))
				text += d.String() + "\n"
			}
			if fmt.Sprint(lines) != fmt.Sprint(c.want) || !strings.Contains(text, c.mentioning) {
				t.Fatalf("diagnostics at lines %v, want %v mentioning %q:\n%s", lines, c.want, c.mentioning, text)
			}
		})
	}
}
