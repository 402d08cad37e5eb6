package publish

import (
	"strings"
	"testing"
)

// Who may write each scope (docs/credentials.md): the toolset's, a
// credential admin only; an end user's, the mapping's principals for that
// end user or an admin; a run's, any caller (its start is checked apart).
// Anything else is refused, saying why.
func TestDecideWriteAdmitsEachScopesWriters(t *testing.T) {
	const alice = "arn:aws:iam::000000000000:user/alice"
	for _, c := range []struct {
		name      string
		admin     bool
		endUser   string
		mayActFor bool
		run       string
		allowed   bool
		reason    string
	}{
		{"toolset scope, an admin", true, "", false, "", true, "credential admin"},
		{"toolset scope, not an admin", false, "", false, "", false, "not a credential admin"},
		{"end user, mapped", false, "u1", true, "", true, "end-user mapping"},
		{"end user, an admin", true, "u1", false, "", true, "credential admin"},
		{"end user, neither", false, "u1", false, "", false, "neither a credential admin nor"},
		{"run, anyone", false, "", false, "arn:aws:states:eu-west-1:000000000000:execution:sm:r1", true, "who will start it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decideWrite(alice, c.admin, c.endUser, c.mayActFor, c.run)
			if d.Allowed != c.allowed || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("%+v, want allowed %v saying %q", d, c.allowed, c.reason)
			}
		})
	}
}

// Credential admins are reviewer patterns of the function's own account:
// another account's, a pattern that names none, or text that is not a
// JSON list stops the function at cold start.
func TestParseCredentialAdmins(t *testing.T) {
	const own = "123456789012"
	for _, c := range []struct {
		name, text string
		n          int
		bad        string
	}{
		{"unset", "", 0, ""},
		{"none", "[]", 0, ""},
		{"own account", `["arn:aws:sts::123456789012:assumed-role/Admins/*"]`, 1, ""},
		{"another account", `["arn:aws:iam::999999999999:user/mallory"]`, 0, "not this function's"},
		{"no account", `["arn:aws:iam::*:user/x"]`, 0, "must name its AWS account"},
		{"not a list", `arn:aws:iam::123456789012:user/a`, 0, "not a JSON list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCredentialAdmins(c.text, own)
			switch {
			case c.bad == "" && (err != nil || len(got) != c.n):
				t.Fatalf("%v, %v: want %d patterns", got, err, c.n)
			case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
				t.Fatalf("%v: want an error saying %q", err, c.bad)
			}
		})
	}
}

// A run scope names a Step Functions execution ARN; its name is the
// scope's.
func TestExecutionName(t *testing.T) {
	if n, err := executionName("arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_a:run-1"); err != nil || n != "run-1" {
		t.Fatalf("%q, %v", n, err)
	}
	for _, bad := range []string{"run-1", "arn:aws:states:eu-west-1:123456789012:stateMachine:toolgate-dev_a", "arn:aws:states:eu-west-1:123456789012:execution:sm:"} {
		if _, err := executionName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseCredentialAdmins: any text either is refused or gives patterns
// that each pass the reviewer rule and name the function's own account.
func FuzzParseCredentialAdmins(f *testing.F) {
	for _, s := range []string{"", "[]", `["arn:aws:iam::123456789012:user/a"]`, `["arn:aws:iam::999999999999:user/a"]`, `["*"]`, `[1]`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseCredentialAdmins(text, "123456789012")
		if err != nil {
			return
		}
		for _, p := range got {
			if !strings.HasPrefix(p, "arn:") || !strings.Contains(p, ":123456789012:") {
				t.Fatalf("%q accepted from %q", p, text)
			}
		}
	})
}
