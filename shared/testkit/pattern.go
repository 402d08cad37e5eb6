package testkit

import (
	"reflect"
	"regexp"
	"testing"
)

// Matcher is what a pattern that replaces a regexp offers its callers
// (tool.Pattern): a match and its submatches, as regexp.Regexp gives them.
type Matcher interface {
	MatchString(s string) bool
	FindStringSubmatch(s string) []string
}

// SameAsRegexp fails t unless p answers s exactly as the regexp it
// replaces, counted: the same match and the same submatches (nil when
// neither matches). name names p in the failure.
func SameAsRegexp(t testing.TB, name string, p Matcher, counted *regexp.Regexp, s string) {
	t.Helper()
	if got, want := p.MatchString(s), counted.MatchString(s); got != want {
		t.Errorf("%s.MatchString(%q) = %v, the counted form %v", name, s, got, want)
	}
	if got, want := p.FindStringSubmatch(s), counted.FindStringSubmatch(s); !reflect.DeepEqual(got, want) {
		t.Errorf("%s.FindStringSubmatch(%q) = %q, the counted form %q", name, s, got, want)
	}
}
