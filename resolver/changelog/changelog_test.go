package changelog

import (
	"strings"
	"testing"
)

// head is a changelog's title and header paragraph.
const head = "# Changelog\n\nAll notable changes.\n\n"

// released is a changelog with two releases and their link references.
const released = head + `## [Unreleased]

### Security

- a refusal.
  Its second line.

### Added

- a command.

## [1.10.0] - 2026-12-01 [YANKED]

### Changed

- something.

## [1.9.2] - 2026-11-30

[Unreleased]: https://example.com/compare/v1.10.0...HEAD
[1.10.0]: https://example.com/compare/v1.9.2...v1.10.0
[1.9.2]: https://example.com/releases/tag/v1.9.2
`

func TestParseReadsVersionsSectionsAndLinks(t *testing.T) {
	cases := []struct {
		name        string
		src         string
		wantVersion string
		wantEntries map[string]int // section kind of Unreleased: bullets
		wantRelease int
	}{
		{"no release names unreleased", head + "## [Unreleased]\n\n### Changed\n\n- one\n- two\n", Unreleased, map[string]int{"Changed": 2}, 0},
		{"an empty Unreleased section", head + "## [Unreleased]\n", Unreleased, map[string]int{}, 0},
		{"the newest release is the version, numbers compared as numbers", released, "1.10.0", map[string]int{"Security": 1, "Added": 1}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := Parse([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.Version(); got != c.wantVersion {
				t.Errorf("Version() = %q, want %q", got, c.wantVersion)
			}
			if len(cl.Releases) != c.wantRelease {
				t.Errorf("%d releases, want %d", len(cl.Releases), c.wantRelease)
			}
			got := map[string]int{}
			for _, s := range cl.Unreleased.Sections {
				got[s.Kind] = s.Entries
			}
			if len(got) != len(c.wantEntries) {
				t.Errorf("Unreleased sections %v, want %v", got, c.wantEntries)
			}
			for k, n := range c.wantEntries {
				if got[k] != n {
					t.Errorf("Unreleased sections %v, want %v", got, c.wantEntries)
				}
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	unrel := head + "## [Unreleased]\n\n"
	rel := func(v, date string) string { return "## [" + v + "] - " + date + "\n\n" }
	cases := []struct{ name, src, want string }{
		{"another title", "# Changes\n\ntext\n\n## [Unreleased]\n", `line 1: a changelog starts with the heading "# Changelog"`},
		{"no header paragraph", "# Changelog\n\n## [Unreleased]\n", "line 3: a header paragraph"},
		{"no Unreleased heading", head, `no "## [Unreleased]" heading`},
		{"a release before Unreleased", head + rel("1.0.0", "2026-01-01") + "## [Unreleased]\n", `line 5: the first version heading is "## [Unreleased]"`},
		{"Unreleased twice", unrel + "## [Unreleased]\n", `line 7: "## [Unreleased]" is the first version heading, and the only one`},
		{"a heading without brackets", unrel + "## 1.0.0 - 2026-01-01\n", `line 7: "## 1.0.0 - 2026-01-01" is not a release heading`},
		{"a v prefix", unrel + "## [v1.0.0] - 2026-01-01\n", "is not a release heading"},
		{"a leading zero", unrel + "## [1.01.0] - 2026-01-01\n", "is not a release heading"},
		{"no date", unrel + "## [1.0.0]\n", "is not a release heading"},
		{"a day that does not exist", unrel + rel("1.0.0", "2026-02-30"), "line 7: release 1.0.0: 2026-02-30 is not a date"},
		{"a month that does not exist", unrel + rel("1.0.0", "2026-13-01"), "2026-13-01 is not a date"},
		{"releases oldest first", unrel + rel("1.0.0", "2026-01-01") + rel("1.1.0", "2026-02-01"), "line 9: release 1.1.0 follows 1.0.0: releases are newest first"},
		{"a version twice", unrel + rel("1.0.0", "2026-01-01") + rel("1.0.0", "2026-01-01"), "release 1.0.0 follows 1.0.0"},
		{"an older release dated later", unrel + rel("1.1.0", "2026-01-01") + rel("1.0.0", "2026-02-01"), "line 9: release 1.0.0 (2026-02-01) is dated after 1.1.0 (2026-01-01)"},
		{"a section that is not a kind", unrel + "### Refused now\n", `line 7: "### Refused now" is not a Keep a Changelog section`},
		{"a section twice", unrel + "### Added\n\n- a\n\n### Added\n", "line 11: version Unreleased has two Added sections"},
		{"a section before any version", head + "### Added\n", "line 5: \"### Added\" comes before any version heading"},
		{"a bullet outside a section", unrel + "- loose\n", "line 7: text under version Unreleased outside a section"},
		{"a deeper heading", unrel + "### Added\n\n#### Detail\n", `line 9: "#### Detail": a changelog has one "# " title`},
		{"text after the link references", unrel + "[Unreleased]: https://example.com\n\n### Added\n", "line 9: link reference definitions end the changelog"},
		{"a link naming no heading", unrel + "[2.0.0]: https://example.com\n", "the link reference [2.0.0] names no version heading"},
		{"a link defined twice", unrel + "[Unreleased]: https://a.example\n[Unreleased]: https://b.example\n", "line 8: the link reference [Unreleased] is defined twice"},
		{"a release without its link", unrel + rel("1.0.0", "2026-01-01") + "[Unreleased]: https://example.com\n", `version 1.0.0 has no link reference "[1.0.0]: URL"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// FuzzParse: Parse never panics, and what it accepts names a version that
// is Unreleased or its first release's, releases newest first.
func FuzzParse(f *testing.F) {
	f.Add([]byte(released))
	f.Add([]byte(head + "## [Unreleased]\n"))
	f.Add([]byte(head + "## [Unreleased]\n\n## [0.0.1] - 2026-02-29\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cl, err := Parse(src)
		if err != nil {
			return
		}
		if len(cl.Releases) == 0 && cl.Version() != Unreleased {
			t.Fatalf("no release, Version() = %q", cl.Version())
		}
		for i := 1; i < len(cl.Releases); i++ {
			if compare(cl.Releases[i].Name, cl.Releases[i-1].Name) >= 0 || cl.Releases[i].Date.After(cl.Releases[i-1].Date) {
				t.Fatalf("releases out of order: %s after %s", cl.Releases[i].Name, cl.Releases[i-1].Name)
			}
		}
	})
}
