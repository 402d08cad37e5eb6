package cli

import (
	"strings"
	"testing"
)

func TestCheckRecipient(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"allowed by domain", []string{"--allow", "@example.com", "Bob@Example.COM"}, ExitOK, "allow"},
		{"allowed by address", []string{"--allow", "alice@example.com", "ALICE@example.com"}, ExitOK, "allow"},
		{"refused", []string{"--allow", "@example.com", "bob@evilexample.com"}, ExitErrors, "refuse: "},
		{"no list refuses", []string{"bob@example.com"}, ExitErrors, "refuse: "},
		{"invalid display name", []string{"--allow", "@example.com", "Bob <bob@example.com>"}, ExitInvalid, "invalid: "},
		{"invalid CRLF", []string{"--allow", "@example.com", "bob@example.com\r\nBcc: x@evil.test"}, ExitInvalid, "invalid: "},
		{"bad allow entry", []string{"--allow", "not an entry", "bob@example.com"}, ExitMisuse, ""},
		{"no address", []string{"--allow", "@example.com"}, ExitMisuse, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(append([]string{"check-recipient"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(out, c.out) {
				t.Fatalf("exit %d, out %q, err %q", code, out, errs)
			}
		})
	}
}
