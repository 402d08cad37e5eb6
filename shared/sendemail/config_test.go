package sendemail

import (
	"slices"
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	cfg, err := ConfigFromEnv(env(map[string]string{
		EnvSender:            " Toolgate@Bücher.example ",
		EnvSenderIdentityARN: "arn:aws:ses:eu-west-1:123456789012:identity/xn--bcher-kva.example",
		EnvRecipientAllow:    " alice@example.com , @Example.ORG,@bücher.example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.From != "Toolgate@xn--bcher-kva.example" || cfg.IdentityARN != "arn:aws:ses:eu-west-1:123456789012:identity/xn--bcher-kva.example" {
		t.Fatalf("config %+v", cfg)
	}
	if got := cfg.Allow.Entries(); !slices.Equal(got, []string{"alice@example.com", "@example.org", "@xn--bcher-kva.example"}) {
		t.Fatalf("allow-list %q", got)
	}

	for _, arn := range []string{
		"arn:aws:ses:us-east-1:123456789012:identity/toolgate@example.com",
		"arn:aws:ses:us-east-1:123456789012:identity/TOOLGATE@example.com",
		"arn:aws:ses:us-east-1:123456789012:identity/example.com",
		"arn:aws-us-gov:ses:us-gov-west-1:123456789012:identity/example.com",
		"arn:aws:ses:us-east-1:123456789012:identity/eu.mail.example.com",
	} {
		from := "toolgate@example.com"
		if strings.HasSuffix(arn, "eu.mail.example.com") {
			from = "toolgate@eu.mail.example.com"
		}
		if _, err := ConfigFromEnv(env(map[string]string{EnvSender: from, EnvSenderIdentityARN: arn, EnvRecipientAllow: "@example.com"})); err != nil {
			t.Errorf("%s: %v", arn, err)
		}
	}
}

func TestConfigFromEnvErrors(t *testing.T) {
	good := map[string]string{EnvSender: "toolgate@example.com", EnvRecipientAllow: "@example.com"}
	tests := []struct {
		name string
		set  map[string]string
		want []string // parts of the one error
	}{
		{"nothing set", map[string]string{EnvSender: "", EnvRecipientAllow: ""}, []string{EnvSender + " is not set", EnvRecipientAllow + " is empty"}},
		{"allow-list missing", map[string]string{EnvRecipientAllow: ""}, []string{EnvRecipientAllow + " is empty"}},
		{"allow-list blank", map[string]string{EnvRecipientAllow: " , "}, []string{EnvRecipientAllow + ": entry 0 is empty"}},
		{"stray comma", map[string]string{EnvRecipientAllow: "@example.com,"}, []string{"entry 1 is empty"}},
		{"bad entry", map[string]string{EnvRecipientAllow: "@example.com,@a.test"}, []string{`entry 1 "@a.test"`, "special-use"}},
		{"wildcard entry", map[string]string{EnvRecipientAllow: "@*.example.com"}, []string{`"@*.example.com"`, "subdomains"}},
		{"sender with display name", map[string]string{EnvSender: "Toolgate <toolgate@example.com>"}, []string{EnvSender, "display name"}},
		{"sender trailing dot", map[string]string{EnvSender: "toolgate@example.com."}, []string{EnvSender, "trailing dot"}},
		{"not an arn", map[string]string{EnvSenderIdentityARN: "example.com"}, []string{EnvSenderIdentityARN, "not an SES identity ARN"}},
		{"arn of another service", map[string]string{EnvSenderIdentityARN: "arn:aws:sns:us-east-1:123456789012:identity/example.com"}, []string{"not an SES identity ARN"}},
		{"arn of another domain", map[string]string{EnvSenderIdentityARN: "arn:aws:ses:us-east-1:123456789012:identity/evilexample.com"}, []string{"covers neither"}},
		{"arn of a subdomain", map[string]string{EnvSenderIdentityARN: "arn:aws:ses:us-east-1:123456789012:identity/mail.example.com"}, []string{"covers neither"}},
		{"arn of another address", map[string]string{EnvSenderIdentityARN: "arn:aws:ses:us-east-1:123456789012:identity/ceo@example.com"}, []string{"is not the sender"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			for k, v := range good {
				m[k] = v
			}
			for k, v := range tt.set {
				m[k] = v
			}
			cfg, err := ConfigFromEnv(env(m))
			if err == nil {
				t.Fatalf("ConfigFromEnv accepted %v: %+v", m, cfg)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "send-email config: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q is not one line starting with send-email config:", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Fatalf("error %q does not mention %q", msg, w)
				}
			}
			if cfg.From != "" || cfg.Allow.Len() != 0 {
				t.Fatalf("config %+v returned with an error", cfg)
			}
		})
	}
}
