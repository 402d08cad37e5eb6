package httptool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

var contractHosts = []toolset.HTTPHost{
	{Host: "*.example.com", Methods: []string{"GET", "POST"}},
	{Host: "api.example.com", Methods: []string{"GET"}},
	{Host: "hooks.example.com", Methods: []string{"DELETE", "POST"}, Idempotency: &toolset.HTTPIdempotency{Header: "Idempotency-Key", Format: "raw"}},
	{Host: "hooks.example.com:8443", Methods: []string{"PUT"}},
}

// contractEntries are the entries TestContract's allowed calls go to.
var contractEntries = map[string]string{
	"GET": "api.example.com", "POST to a wildcard host": "*.example.com", "POST to a keyed host": "hooks.example.com",
	"DELETE to a keyed host": "hooks.example.com", "PUT to the port entry": "hooks.example.com:8443",
}

// The contract comes from the method actually sent and the host's entry,
// whatever the step was compiled for.
func TestContract(t *testing.T) {
	reviewed := httprule.Contract{Review: true, Policy: catalog.AtMostOnce}
	read := httprule.Contract{Policy: catalog.AtLeastOnce, Idempotent: true}
	keyedWrite := httprule.Contract{Review: true, Policy: catalog.AtLeastOnce, Idempotent: true}
	for _, tc := range []struct {
		name, input string
		hosts       []toolset.HTTPHost
		want        httprule.Contract
		code        tool.Code
		says        string
	}{
		{name: "GET", input: `{"method":"GET","url":"https://api.example.com/x"}`, want: read},
		{name: "POST to a wildcard host", input: `{"method":"POST","url":"https://www.example.com/x"}`, want: reviewed},
		{name: "POST to a keyed host", input: `{"method":"POST","url":"https://hooks.example.com/x","body":{}}`, want: keyedWrite},
		{name: "DELETE to a keyed host", input: `{"method":"DELETE","url":"https://hooks.example.com/x"}`, want: keyedWrite},
		{name: "PUT to the port entry", input: `{"method":"PUT","url":"https://hooks.example.com:8443/x"}`, want: reviewed},
		{name: "the exact entry governs over the wildcard", input: `{"method":"POST","url":"https://api.example.com/x"}`, code: tool.PermissionDenied, says: "rule http-method: POST is not pinned for api.example.com"},
		{name: "method not pinned", input: `{"method":"PATCH","url":"https://hooks.example.com/x"}`, code: tool.PermissionDenied, says: "rule http-method"},
		{name: "host not pinned", input: `{"method":"GET","url":"https://evil.test/x"}`, code: tool.PermissionDenied, says: "rule http-host: host evil.test is not on this run's toolset (http_hosts)"},
		{name: "port not pinned", input: `{"method":"GET","url":"https://api.example.com:444/x"}`, code: tool.PermissionDenied, says: "rule http-host: port 444"},
		{name: "no http_hosts", input: `{"method":"GET","url":"https://api.example.com/x"}`, hosts: []toolset.HTTPHost{}, code: tool.PermissionDenied, says: "no http request is possible"},
		{name: "url refused", input: `{"method":"GET","url":"https://api.example.com\\@evil.test/"}`, code: tool.PermissionDenied},
		{name: "unknown method", input: `{"method":"TRACE","url":"https://api.example.com/x"}`, code: tool.InputInvalid},
		{name: "not an object", input: `[1]`, code: tool.InputInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := contractHosts
			if tc.hosts != nil {
				hosts = tc.hosts
			}
			got, err := Contract(&toolcall.Call{Input: json.RawMessage(tc.input), Toolset: &toolset.Toolset{HTTPHosts: hosts}})
			if tc.code != "" {
				code, _ := codeOf(t, err)
				if code != tc.code || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Contract = %+v, %v; want %s saying %q", got, err, tc.code, tc.says)
				}
				return
			}
			if err != nil || got.Contract != tc.want {
				t.Fatalf("Contract = %+v, %v; want %+v", got, err, tc.want)
			}
			if want := contractEntries[tc.name]; got.Host == nil || got.Host.Host != want {
				t.Fatalf("Contract's entry = %+v; want %s, whose auth the dispatcher resolves", got.Host, want)
			}
		})
	}
	if _, err := Contract(&toolcall.Call{Input: json.RawMessage(`{"method":"GET","url":"https://api.example.com/"}`)}); err == nil {
		t.Fatal("a call without a toolset has a contract")
	}
}

func TestEntryForPicksTheMostSpecific(t *testing.T) {
	hosts := []toolset.HTTPHost{
		{Host: "*.example.com", Methods: []string{"GET"}},
		{Host: "*.eu.example.com", Methods: []string{"HEAD"}},
		{Host: "a.eu.example.com", Methods: []string{"POST"}},
		{Host: "example.com", Methods: []string{"PUT"}},
		{Host: "example.com:443", Methods: []string{"PATCH"}},
	}
	for url, want := range map[string]string{
		"https://x.example.com/":      "*.example.com",
		"https://b.eu.example.com/":   "*.eu.example.com",
		"https://a.eu.example.com/":   "a.eu.example.com",
		"http://example.com/":         "example.com",
		"https://example.com/":        "example.com:443",
		"https://A.EU.example.com./x": "a.eu.example.com",
	} {
		u, err := fetchurl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EntryFor(hosts, u)
		if err != nil || e.Host != want {
			t.Errorf("EntryFor(%s) = %+v, %v; want %s", url, e, err, want)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{
		"TOOLGATE_HTTP_ALLOW": "api.example.com, *.hooks.example.com", "TOOLGATE_HTTP_ALLOW_ADDRESSES": "127.0.0.1/32",
		"TOOLGATE_HTTP_TIMEOUT_SECONDS": "12", "TOOLGATE_HTTP_MAX_REQUEST_BYTES": "196608",
	}))
	if err != nil || len(c.Allow) != 2 || len(c.AllowAddresses) != 1 || c.Timeout.Seconds() != 12 || c.maxRequestBytes() != MaxRequestBody {
		t.Fatalf("ConfigFromEnv = %+v, %v", c, err)
	}
	if c, err := ConfigFromEnv(env(nil)); err != nil || len(c.Allow) != 0 || c.maxRequestBytes() != DefaultMaxRequestBody || c.EffectiveTimeout().Seconds() != 30 {
		t.Fatalf("empty environment: %+v, %v", c, err)
	}
	for _, tc := range []struct{ name, key, value, says string }{
		{"bad allow entry", "TOOLGATE_HTTP_ALLOW", "*.co.uk", "http allow-list"},
		{"metadata exemption", "TOOLGATE_HTTP_ALLOW_ADDRESSES", "169.254.0.0/16", "http allow-address 0"},
		{"timeout zero", "TOOLGATE_HTTP_TIMEOUT_SECONDS", "0", "TOOLGATE_HTTP_TIMEOUT_SECONDS"},
		{"timeout over 30", "TOOLGATE_HTTP_TIMEOUT_SECONDS", "31", "1..30"},
		{"body bound over the maximum", "TOOLGATE_HTTP_MAX_REQUEST_BYTES", "196609", "1..196608"},
		{"body bound not a number", "TOOLGATE_HTTP_MAX_REQUEST_BYTES", "64k", "TOOLGATE_HTTP_MAX_REQUEST_BYTES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigFromEnv(env(map[string]string{tc.key: tc.value}))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want it to say %q", err, tc.says)
			}
		})
	}
}
