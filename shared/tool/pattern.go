package tool

import "regexp"

// Pattern is a regular expression whose counted repetitions are checked
// apart from it: RE2 unrolls a counted repetition such as {0,62} into one
// instruction per count, so compiling a package-level pattern with counts
// costs every tool function's cold start (docs/performance.md, "Cold init
// of the tool functions"). A Pattern matches exactly the strings its
// documented, counted form (String) matches, with the same submatches.
// The zero Pattern is not usable; build one with NewPattern.
type Pattern struct {
	re       *regexp.Regexp
	text     string
	maxBytes int
	fits     func(m []string) bool
}

// NewPattern is the pattern text (the counted form, shown by String)
// checked as uncounted (the same expression with its counts replaced by
// "*" or "+", and the same groups) and a length of at most maxBytes bytes
// (no bound when maxBytes < 0), and, when fits is not nil, fits of
// uncounted's submatches (for counts that bound one part only). maxBytes
// in bytes is exact only where every character the counted form admits is
// ASCII (one byte, one rune); fits counts runes (utf8.RuneCountInString)
// where a class admits more. It panics when uncounted does not compile,
// as regexp.MustCompile does.
func NewPattern(text, uncounted string, maxBytes int, fits func(m []string) bool) Pattern {
	return Pattern{re: regexp.MustCompile(uncounted), text: text, maxBytes: maxBytes, fits: fits}
}

// FindStringSubmatch is s and its submatches, as regexp.Regexp's, when s
// matches the pattern; nil otherwise.
func (p Pattern) FindStringSubmatch(s string) []string {
	if p.maxBytes >= 0 && len(s) > p.maxBytes {
		return nil
	}
	m := p.re.FindStringSubmatch(s)
	if m == nil || (p.fits != nil && !p.fits(m)) {
		return nil
	}
	return m
}

// MatchString reports whether s matches the pattern.
func (p Pattern) MatchString(s string) bool {
	if p.maxBytes >= 0 && len(s) > p.maxBytes {
		return false
	}
	if p.fits != nil {
		return p.FindStringSubmatch(s) != nil
	}
	return p.re.MatchString(s)
}

// String is the pattern's counted form, as error messages quote it.
func (p Pattern) String() string { return p.text }
