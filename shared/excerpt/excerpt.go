package excerpt

import "unicode/utf8"

// Bytes returns s when it is at most n bytes long; otherwise the longest
// prefix of s that is at most n bytes and ends between two characters,
// followed by more. The result is at most n+len(more) bytes; a negative n
// counts as 0.
func Bytes(s string, n int, more string) string {
	if len(s) <= max(n, 0) {
		return s
	}
	return s[:prefixBytes(s, n)] + more
}

// BytesWithin returns s when it is at most n bytes long; otherwise the
// longest prefix of s that ends between two characters and leaves room
// for more within n bytes, followed by more. The result is at most n
// bytes, or more alone when more is longer than n; a negative n counts
// as 0.
func BytesWithin(s string, n int, more string) string {
	if len(s) <= max(n, 0) {
		return s
	}
	return s[:prefixBytes(s, n-len(more))] + more
}

// Runes returns s when it has at most n characters; otherwise its first
// n characters, followed by more. A negative n counts as 0.
func Runes(s string, n int, more string) string {
	if i, cut := prefixRunes(s, n); cut {
		return s[:i] + more
	}
	return s
}

// RunesWithin returns s when it has at most n characters; otherwise the
// first characters of s that leave room for more within n characters,
// followed by more. The result has at most n characters, or is more
// alone when more has more than n; a negative n counts as 0.
func RunesWithin(s string, n int, more string) string {
	if _, cut := prefixRunes(s, n); !cut {
		return s
	}
	i, _ := prefixRunes(s, n-utf8.RuneCountInString(more))
	return s[:i] + more
}

// prefixBytes is the length of the longest prefix of s of at most n bytes
// (0 when n < 0) that ends between two characters.
func prefixBytes(s string, n int) int {
	if n <= 0 {
		return 0
	}
	if n >= len(s) {
		return len(s)
	}
	// A character is at most utf8.UTFMax bytes: the one holding s[n], if
	// it started before n, started at most UTFMax-1 bytes before it.
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if !utf8.RuneStart(s[i-1]) {
			continue
		}
		if _, w := utf8.DecodeRuneInString(s[i-1:]); i-1+w > n {
			return i - 1 // the character at i-1 would cross the bound
		}
		return n
	}
	return n
}

// prefixRunes is the length in bytes of the first n characters of s (0
// when n < 0), and whether s has more than n.
func prefixRunes(s string, n int) (int, bool) {
	k := 0
	for i := range s {
		if k == max(n, 0) {
			return i, true
		}
		k++
	}
	return len(s), false
}
