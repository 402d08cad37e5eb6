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

func TestCheckPattern(t *testing.T) {
	for p, ok := range map[string]bool{
		"arn:aws:sts::*:assumed-role/editors/*": true,
		"alice":                                 false,
		"arn:aws:iam::1:user/a b":               false,
		"arn:aws:iam::1:user/a\x01":             false,
		"arn:" + strings.Repeat("a", 2048):      false,
	} {
		if err := CheckPattern(p); (err == nil) != ok {
			t.Errorf("CheckPattern(%q) = %v, want ok %v", p, err, ok)
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
