package reviewer

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, principal string
		want               bool
	}{
		{"arn:aws:sts::*:assumed-role/editors/*", "arn:aws:sts::123456789012:assumed-role/editors/alice", true},
		{"arn:aws:sts::*:assumed-role/editors/*", "arn:aws:sts::123456789012:assumed-role/editors-x/alice", false},
		{"arn:aws:sts::*:assumed-role/editors/*", "arn:aws:sts::123456789012:assumed-role/Editors/alice", false},
		{"arn:aws:iam::123456789012:role/queue-reviewers", "arn:aws:iam::123456789012:role/queue-reviewers", true},
		{"arn:aws:iam::123456789012:role/queue-reviewers", "arn:aws:iam::123456789012:role/queue-reviewers2", false},
		{"arn:aws:iam::12345678901?:user/*", "arn:aws:iam::123456789012:user/a/b/c", true},
		{"arn:aws:iam::12345678901?:user/*", "arn:aws:iam::12345678901:user/a", false},
		{"arn:*", "arn:", true},
		{"arn:*a*a*a*a*a*a*b", "arn:" + strings.Repeat("a", 60), false}, // no exponential backtracking
		{"*", "", true},
		{"", "", true},
		{"?", "", false},
	} {
		if got := Match(c.pattern, c.principal); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.principal, got, c.want)
		}
	}
}

func TestCheckPatternWantsOneAccountWrittenOut(t *testing.T) {
	for _, c := range []struct {
		pattern string
		ok      bool
		account string
	}{
		{"arn:aws:sts::123456789012:assumed-role/editors/*", true, "123456789012"},
		{"arn:aws:iam::123456789012:role/queue-reviewers", true, "123456789012"},
		{"arn:aws:iam::123456789012:user/*", true, "123456789012"},
		{"arn:aws:iam::123456789012:*", true, "123456789012"},
		{"arn:aws-us-gov:iam::123456789012:user/ops/?lice", true, "123456789012"},
		{"arn:aws-iso-b:sts::123456789012:assumed-role/r/s", true, "123456789012"},
		// A wildcard before the resource part: "*" matches ":", so it
		// spans accounts.
		{"arn:aws:sts::*:assumed-role/editors/*", false, ""},
		{"arn:aws:iam::12345678901?:user/*", false, ""},
		{"arn:aws:iam::*", false, ""},
		{"arn:*:iam::123456789012:user/a", false, ""},
		{"arn:aws*:iam::123456789012:user/a", false, ""},
		{"arn:aws:*::123456789012:user/a", false, ""},
		{"arn:*", false, ""},
		{"arn:aws:iam:*:123456789012:user/a", false, ""},
		// Not an IAM or STS principal, or no account written out.
		{"arn:aws:iam::1:user/a", false, ""},
		{"arn:aws:iam::1234567890123:user/a", false, ""},
		{"arn:aws:s3:::bucket", false, ""},
		{"arn:aws:iam::123456789012:", false, ""},
		{"arn:aws:iam:us-east-1:123456789012:user/a", false, ""},
		{"alice", false, ""},
		{"arn:aws:iam::123456789012:user/a b", false, "123456789012"},
		{"arn:aws:iam::123456789012:user/a\x01", false, "123456789012"},
		{"arn:aws:iam::123456789012:user/" + strings.Repeat("a", 2048), false, "123456789012"},
	} {
		err := CheckPattern(c.pattern)
		if (err == nil) != c.ok {
			t.Errorf("CheckPattern(%q) = %v, want ok %v", c.pattern, err, c.ok)
		}
		if got := Account(c.pattern); got != c.account {
			t.Errorf("Account(%q) = %q, want %q", c.pattern, got, c.account)
		}
		if err != nil && strings.Contains(err.Error(), "account") && !strings.Contains(err.Error(), "["+RulePattern+"]") {
			t.Errorf("CheckPattern(%q): %v does not name the rule", c.pattern, err)
		}
	}
}

// CheckRecorded takes what executions compiled before the account rule
// carry, and what CheckPattern takes.
func TestCheckRecordedTakesPatternsOfEarlierExecutions(t *testing.T) {
	for p, ok := range map[string]bool{
		"arn:aws:sts::*:assumed-role/editors/*":    true,
		"arn:aws:iam::123456789012:role/reviewers": true,
		"alice":                     false,
		"arn:aws:iam::1:user/a b":   false,
		"arn:aws:iam::1:user/a\x01": false,
		"arn:" + strings.Repeat("a", MaxPatternLength): false,
	} {
		if err := CheckRecorded(p); (err == nil) != ok {
			t.Errorf("CheckRecorded(%q) = %v, want ok %v", p, err, ok)
		}
	}
}

// FuzzMatch compares Match with a regular expression built from the
// pattern.
func FuzzMatch(f *testing.F) {
	f.Add("arn:aws:sts::*:assumed-role/editors/*", "arn:aws:sts::1:assumed-role/editors/a")
	f.Add("a?c*", "abcde")
	f.Add("**?*", "x")
	f.Fuzz(func(t *testing.T, pattern, principal string) {
		if len(pattern) > 64 || len(principal) > 64 {
			return
		}
		var b strings.Builder
		b.WriteString(`(?s)^`)
		for _, r := range pattern {
			switch r {
			case '*':
				b.WriteString(`.*`)
			case '?':
				b.WriteString(`.`)
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString(`$`)
		re, err := regexp.Compile(b.String())
		if err != nil {
			return
		}
		if got, want := Match(pattern, principal), re.MatchString(principal); got != want {
			t.Fatalf("Match(%q, %q) = %v, regexp says %v", pattern, principal, got, want)
		}
	})
}

// FuzzCheckPattern: a pattern CheckPattern accepts names one account, and
// matches no principal of any other account, whatever its resource part.
func FuzzCheckPattern(f *testing.F) {
	for _, s := range []string{"arn:aws:sts::123456789012:assumed-role/editors/*", "arn:aws:iam::123456789012:*", "arn:aws:sts::*:assumed-role/e/*",
		"arn:aws:iam::12345678901?:user/a", "arn:aws-us-gov:iam::123456789012:user/*:*", "arn:*"} {
		f.Add(s, "user/alice")
	}
	f.Fuzz(func(t *testing.T, pattern, resource string) {
		if CheckPattern(pattern) != nil {
			return
		}
		account := Account(pattern)
		if len(account) != 12 || strings.Trim(account, "0123456789") != "" {
			t.Fatalf("CheckPattern accepted %q, whose account is %q", pattern, account)
		}
		other := "999999999999"
		if account == other {
			other = "111111111111"
		}
		for _, svc := range []string{"iam", "sts"} {
			for _, part := range []string{"aws", "aws-cn", "aws-us-gov"} {
				principal := "arn:" + part + ":" + svc + "::" + other + ":" + resource
				if Match(pattern, principal) {
					t.Fatalf("%q, naming account %s, matches %q", pattern, account, principal)
				}
			}
		}
	})
}
