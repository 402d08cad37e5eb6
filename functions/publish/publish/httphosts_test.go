package publish

import (
	"os"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// Covers: an allow-list covers an http host entry when it allows every
// host and port the entry allows.
func TestCoversHTTPHostEntries(t *testing.T) {
	allow, err := hostlist.ParseList([]string{"api.example.com", "*.hooks.example.com", "jobs.example.com:8443", "127.0.0.1", "*.example.org"})
	if err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]bool{
		"api.example.com":          true,
		"api.example.com:8443":     false,
		"a.hooks.example.com":      true,
		"*.hooks.example.com":      true,
		"*.team.hooks.example.com": true,
		"*.example.com":            false,
		"hooks.example.com":        false,
		"jobs.example.com:8443":    true,
		"jobs.example.com":         false,
		"127.0.0.1":                true,
		"127.0.0.2":                false,
		"*.example.org":            true,
		"*.example.org:8443":       false,
	} {
		e, err := hostlist.ParseEntry(entry)
		if err != nil {
			t.Fatal(err)
		}
		if got := Covers(allow, e); got != want {
			t.Errorf("%s: covered %v, want %v", entry, got, want)
		}
	}
}

// Registration refuses a toolset whose http_hosts fall outside the http
// function's platform allow-list [deployment], and registers it when the
// list covers them.
func TestRegisterChecksHTTPHostsAgainstTheAllowList(t *testing.T) {
	doc, err := os.ReadFile("../../../testdata/toolsets/webhooks.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	e := newToolsetEnv(t)
	for _, c := range []struct {
		name  string
		allow []string
		code  string
	}{
		{"no http allow-list", nil, publishapi.CodeRefused},
		{"one host outside", []string{"api.example.com"}, publishapi.CodeRefused},
		{"both hosts within", []string{"api.example.com", "*.chat.example.com"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := fetch.ParseConfig(c.allow, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.h.service.Deployment.HTTP = cfg
			_, code, msg := e.register(t, "platform-team", doc)
			if code != c.code {
				t.Fatalf("code %q (%s), want %q", code, msg, c.code)
			}
			if code != "" && (!strings.Contains(msg, "["+RuleDeployment+"]") || !strings.Contains(msg, "hooks.chat.example.com") || !strings.Contains(msg, EnvHTTPAllow)) {
				t.Fatalf("message %q does not name the rule, the host and the list", msg)
			}
		})
	}
}
