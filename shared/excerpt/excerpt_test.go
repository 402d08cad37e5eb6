package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCuts(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(string, int, string) string
		s    string
		n    int
		more string
		want string
	}{
		{"ascii within the bound is whole", Bytes, "abcdef", 6, "...", "abcdef"},
		{"ascii over the bound", Bytes, "abcdefg", 6, "...", "abcdef..."},
		{"empty", Bytes, "", 0, "...", ""},
		{"n zero", Bytes, "a", 0, "…", "…"},
		{"n negative", Bytes, "abc", -5, "...", "..."},
		{"a 3-byte character across the cut is left out", Bytes, "ab€cd", 3, "…", "ab…"},
		{"a 3-byte character ending at the cut is kept", Bytes, "ab€cd", 5, "…", "ab€…"},
		{"a 4-byte character across the cut", Bytes, "a😀b", 4, "...", "a..."},
		{"a 4-byte character ending at the cut", Bytes, "a😀b", 5, "...", "a😀..."},
		{"a 2-byte character at the start", Bytes, "éé", 1, "...", "..."},
		{"invalid bytes are one character each", Bytes, "a\xff\xfe\xfdb", 3, "...", "a\xff\xfe..."},
		{"a stray continuation byte is a character", Bytes, "a\x80\x80\x80\x80\x80b", 4, "...", "a\x80\x80\x80..."},
		{"a truncated sequence is cut between its bytes", Bytes, "a\xe2\x82b", 2, "...", "a\xe2..."},
		{"a lead byte before a valid character", Bytes, "\xe2€x", 3, "...", "\xe2..."},

		{"within: whole", BytesWithin, "abcdef", 6, "...", "abcdef"},
		{"within: the marker counts", BytesWithin, "abcdefg", 6, "...", "abc..."},
		{"within: n equals the marker", BytesWithin, "abcd", 3, "...", "..."},
		{"within: n smaller than the marker", BytesWithin, "abcd", 2, "...", "..."},
		{"within: n negative", BytesWithin, "abcd", -1, "...", "..."},
		{"within: a character across the cut", BytesWithin, "ab€cdefgh", 7, "...", "ab..."},
		{"within: a multi-byte marker", BytesWithin, "abcdefgh", 6, "…", "abc…"},

		{"runes: whole", Runes, "€€€", 3, "…", "€€€"},
		{"runes: cut", Runes, "€€€€", 3, "…", "€€€…"},
		{"runes: ascii", Runes, "abcdef", 4, "...", "abcd..."},
		{"runes: n zero", Runes, "a", 0, "…", "…"},
		{"runes: n negative", Runes, "a", -2, "…", "…"},
		{"runes: invalid bytes count one each, kept as they are", Runes, "\xff\xfe\xfd\xfc", 2, "…", "\xff\xfe…"},

		{"runes within: whole", RunesWithin, "€€€", 3, "…", "€€€"},
		{"runes within: the marker counts", RunesWithin, "€€€€", 3, "…", "€€…"},
		{"runes within: n smaller than the marker", RunesWithin, "abcdef", 2, "...", "..."},
		{"runes within: ascii", RunesWithin, "abcdef", 5, "...", "ab..."},
		{"runes within: invalid bytes", RunesWithin, "\xffa\xfeb", 3, "…", "\xffa…"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f(c.s, c.n, c.more); got != c.want {
				t.Errorf("(%q, %d, %q) = %q, want %q", c.s, c.n, c.more, got, c.want)
			}
		})
	}
}

// boundaries are the offsets a range loop over s stops at, len(s)
// included: the places a cut may fall.
func boundaries(s string) []int {
	var out []int
	for i := range s {
		out = append(out, i)
	}
	return append(out, len(s))
}

// FuzzCuts holds the four cuts to their bounds: a kept prefix of s that
// ends where a range loop over s stops, as long as the bound allows, and
// s itself, unmarked, when it fits.
func FuzzCuts(f *testing.F) {
	for _, s := range []string{"", "abc", "ab€cd", "a😀b", "a\xff\xfe\xfdb", "a\x80\x80\x80\x80b", "\xe2€x", strings.Repeat("é", 50)} {
		f.Add(s, 3, "...")
		f.Add(s, 1, "…")
	}
	f.Fuzz(func(t *testing.T, s string, n int, more string) {
		n %= 300
		cuts := boundaries(s)
		check := func(name, got string, fits bool, room int, count func(string) int) {
			if fits {
				if got != s {
					t.Fatalf("%s(%q, %d, %q) = %q, want the whole", name, s, n, more, got)
				}
				return
			}
			kept, ok := strings.CutSuffix(got, more)
			if !ok || !strings.HasPrefix(s, kept) {
				t.Fatalf("%s(%q, %d, %q) = %q: not a prefix and the marker", name, s, n, more, got)
			}
			// The longest prefix at a boundary within room.
			want := 0
			for _, c := range cuts {
				if count(s[:c]) <= max(room, 0) {
					want = c
				}
			}
			if len(kept) != want {
				t.Fatalf("%s(%q, %d, %q) = %q: kept %d bytes, want %d", name, s, n, more, got, len(kept), want)
			}
		}
		byteLen := func(s string) int { return len(s) }
		check("Bytes", Bytes(s, n, more), len(s) <= max(n, 0), n, byteLen)
		check("BytesWithin", BytesWithin(s, n, more), len(s) <= max(n, 0), n-len(more), byteLen)
		runes := len(cuts) - 1
		check("Runes", Runes(s, n, more), runes <= max(n, 0), n, utf8.RuneCountInString)
		check("RunesWithin", RunesWithin(s, n, more), runes <= max(n, 0), n-utf8.RuneCountInString(more), utf8.RuneCountInString)
	})
}
