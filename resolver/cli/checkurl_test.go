package cli

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"allowed", []string{"--allow", "api.example.com", "--resolve", "api.example.com=93.184.216.34", "https://api.example.com/x"}, ExitOK, "allow"},
		{"resolve keys are normalised", []string{"--allow", "API.example.com", "--resolve", "Api.Example.com.=93.184.216.34", "https://api.example.com/x"}, ExitOK, "allow"},
		{"private address", []string{"--allow", "api.example.com", "--resolve", "api.example.com=10.0.0.1", "https://api.example.com/x"}, ExitErrors, "refuse: "},
		{"one bad answer refuses", []string{"--allow", "api.example.com", "--resolve", "api.example.com=93.184.216.34,169.254.169.254", "https://api.example.com/x"}, ExitErrors, "refuse: "},
		{"exempted address", []string{"--allow", "127.0.0.1:18080", "--allow-address", "127.0.0.1/32", "http://127.0.0.1:18080/data.json"}, ExitOK, "allow"},
		{"not on the list", []string{"--allow", "api.example.com", "https://evil.example.net/"}, ExitErrors, "refuse: "},
		{"no list", []string{"https://api.example.com/"}, ExitErrors, "refuse: "},
		{"userinfo", []string{"--allow", "api.example.com", "http://api.example.com@evil.test/"}, ExitErrors, "refuse: "},
		{"bad allow entry", []string{"--allow", "*.com", "https://a.com/"}, ExitMisuse, ""},
		{"bad resolve", []string{"--allow", "a.example.com", "--resolve", "a.example.com", "https://a.example.com/"}, ExitMisuse, ""},
		{"no url", []string{"--allow", "a.example.com"}, ExitMisuse, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(append([]string{"check-url"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(out, c.out) {
				t.Fatalf("exit %d, out %q, err %q", code, out, errs)
			}
		})
	}
}
