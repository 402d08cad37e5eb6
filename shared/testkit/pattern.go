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

// Counted is a pattern beside the counted regexp it replaces
// (tool.Pattern), under the name failures give.
type Counted struct {
	Name   string
	P      CountedMatcher
	Regexp *regexp.Regexp
}

// CountedMatcher is a Matcher that shows the counted form it replaces.
type CountedMatcher interface {
	Matcher
	String() string
}

// SameAsCounted fails t unless each pattern shows its counted form
// (String) and answers each of cases exactly as that form does
// (SameAsRegexp).
func SameAsCounted(t testing.TB, patterns []Counted, cases ...string) {
	t.Helper()
	for _, c := range patterns {
		if c.P.String() != c.Regexp.String() {
			t.Errorf("%s shows %s, not its counted form %s", c.Name, c.P, c.Regexp)
		}
		for _, s := range cases {
			SameAsRegexp(t, c.Name, c.P, c.Regexp, s)
		}
	}
}
