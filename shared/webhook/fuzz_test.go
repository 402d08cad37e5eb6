package webhook

import (
	"encoding/base64"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzParsePatterns checks that what ParsePatterns accepts is a list of
// types or groups, each matching at least one type, and parses back.
func FuzzParsePatterns(f *testing.F) {
	for _, s := range []string{"run.*,review.requested", "call.unknown", "", ",", "run.*,,x", "*", "run.started.*", " tool.* "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePatterns(s)
		if err != nil {
			return
		}
		if len(ps) == 0 || len(ps) > MaxPatterns {
			t.Fatalf("%d patterns", len(ps))
		}
		for _, p := range ps {
			n := 0
			for _, typ := range Types {
				if Matches([]string{p}, typ) {
					n++
				}
			}
			if n == 0 {
				t.Fatalf("pattern %q matches no type", p)
			}
		}
		back, err := ParsePatterns(strings.Join(ps, ","))
		if err != nil || strings.Join(back, ",") != strings.Join(ps, ",") {
			t.Fatalf("round trip: %v, %v", back, err)
		}
	})
}

// FuzzParseSchedule checks the bounds of every accepted schedule and that
// String parses back to it.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"5s,5m,30m,2h", "1s", "12h", "12h1s", "1.5s", "", "5s,,5s", "1h30m,2h", "-1s", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseSchedule(s)
		if err != nil {
			return
		}
		if len(sc) < 1 || len(sc) > MaxRetryDelays {
			t.Fatalf("%d entries", len(sc))
		}
		for _, d := range sc {
			if d < MinDelay || d > MaxDelay || d%time.Second != 0 {
				t.Fatalf("delay %s out of bounds", d)
			}
		}
		back, err := ParseSchedule(sc.String())
		if err != nil || back.String() != sc.String() {
			t.Fatalf("round trip %s: %v, %v", sc, back, err)
		}
	})
}

// FuzzParseSecret checks that an accepted secret decodes to 24..64 bytes,
// that its padded and unpadded forms give the same key, and that an error
// never quotes the secret.
func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_====", "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseSecret(s)
		if err != nil {
			if rest := strings.TrimPrefix(s, SecretPrefix); len(rest) >= 8 && strings.Contains(err.Error(), rest) {
				t.Fatalf("error quotes the secret: %v", err)
			}
			return
		}
		if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
			t.Fatalf("%d bytes", len(key))
		}
		for _, form := range []string{base64.StdEncoding.EncodeToString(key), base64.RawStdEncoding.EncodeToString(key)} {
			again, err := ParseSecret(SecretPrefix + form)
			if err != nil || string(again) != string(key) {
				t.Fatalf("%s: %v", form, err)
			}
		}
	})
}

// FuzzEndpointRulesCheck checks that a URL Check allows is https (or http to the
// exempted loopback), carries no userinfo or fragment, is on the list,
// is not the deployment's own Function URL, and is a fixed point of Check.
func FuzzEndpointRulesCheck(f *testing.F) {
	r, err := ParseEndpointRules([]string{"hooks.example.com", "*.example.org", "127.0.0.1:8080", "abc.lambda-url.eu-west-1.on.aws", "[2001:4860::1]"},
		[]string{"127.0.0.1/32"}, []string{"abc.lambda-url.eu-west-1.on.aws"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"https://hooks.example.com/in", "http://127.0.0.1:8080/x", "https://a.example.org/#f", "https://u@hooks.example.com/",
		"https://abc.lambda-url.eu-west-1.on.aws/", "https://[2001:4860::1]/", "HTTPS://HOOKS.example.com:443/a?b=c", "http://hooks.example.com/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := r.Check(s)
		if err != nil {
			if _, ok := err.(*Refusal); !ok {
				t.Fatalf("error %T", err)
			}
			return
		}
		switch {
		case u.User != nil || u.Fragment != "" || strings.Contains(u.String(), "#"):
			t.Fatalf("%s: userinfo or fragment", u)
		case u.Scheme == "http" && net.ParseIP(u.Hostname()) != nil && u.Host != "127.0.0.1:8080":
			t.Fatalf("%s: plain http to an address that is not exempted", u)
		case u.Scheme != "http" && u.Scheme != "https":
			t.Fatalf("%s: scheme", u)
		case strings.HasPrefix(u.Hostname(), "abc.lambda-url."):
			t.Fatalf("%s: own Function URL", u)
		}
		again, err := r.Check(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("Check(%s) = %v, %v", u, again, err)
		}
	})
}

// FuzzParseOwnHost checks that an own host entry ParseOwnHost accepts is
// a fixed point of it, and that a rule built from it refuses the origin
// it names.
func FuzzParseOwnHost(f *testing.F) {
	for _, s := range []string{"abc.lambda-url.eu-west-1.on.aws", "*.toolgate.internal", "127.0.0.1:8081", "[::1]:8081", "::1", "[::1]",
		"*.example.org:8443", "127.0.0.1:080", "HOOKS.example.com."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseOwnHost(s)
		if err != nil {
			return
		}
		again, err := ParseOwnHost(h)
		if err != nil || again != h {
			t.Fatalf("ParseOwnHost(%q) = %q, then %q, %v", s, h, again, err)
		}
		if strings.HasPrefix(h, "*.") {
			return
		}
		host, port, _ := splitOwnHost(h)
		if port == "" {
			port = "443"
		}
		if why := (EndpointRules{OwnHosts: []string{h}}).own(host, port); why == "" {
			t.Fatalf("the own host %q does not refuse %s port %s", h, host, port)
		}
	})
}

// FuzzRunOf checks that what RunOf accepts gives a run and a Solution
// that an event's payload admits (its schema's 80 and 128 characters
// without control characters), both taken from the ARN.
func FuzzRunOf(f *testing.F) {
	for _, s := range []string{"arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_refunds:run-1",
		"arn:aws:states:us-east-1:000000000000:execution:toolgate-test:run-1", "direct/arn:aws:iam::000000000000:user/x/1",
		"arn:aws:states:r:1:execution:toolgate-dev_:x", "arn:aws:states:r:1:execution:toolgate-_a_b:x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		solution, run, ok := RunOf(s)
		if !ok {
			if solution != "" || run != "" {
				t.Fatalf("refused, with %q %q", solution, run)
			}
			return
		}
		if !strings.HasSuffix(s, ":"+run) || !plainName(run) {
			t.Fatalf("run %q of %q", run, s)
		}
		if solution != "" && (!strings.Contains(s, "_"+solution+":") || !plainName(solution) || strings.Contains(solution, ":")) {
			t.Fatalf("solution %q of %q", solution, s)
		}
	})
}
