package changelog

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Unreleased is the version Version names while the changelog has no
// release: its only version heading is "## [Unreleased]".
const Unreleased = "unreleased"

// Kinds are the subsection headings a version may have ("### Added"...),
// Keep a Changelog 1.1.0's types of changes. Their order under a version
// is free: bullets stay where they were written, so that branches adding
// bullets to one section merge.
var Kinds = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

// Changelog is a parsed CHANGELOG.md.
type Changelog struct {
	// Unreleased is the "## [Unreleased]" section, the first version
	// heading.
	Unreleased Version
	// Releases are the released versions, newest first: strictly
	// decreasing version numbers, dates never increasing.
	Releases []Version
	// Links are the link reference definitions at the bottom
	// ("[1.0.0]: https://..."), by label; each label is a version heading's.
	Links map[string]string
}

// Version is one "## " section.
type Version struct {
	// Name is "Unreleased" or a release's x.y.z (three decimal numbers
	// without leading zeros, SemVer 2.0.0's core; no pre-release or build
	// suffix).
	Name string
	// Date is a release's date (YYYY-MM-DD, a valid calendar date); zero
	// for Unreleased.
	Date time.Time
	// Yanked is a release heading ending in "[YANKED]".
	Yanked bool
	// Line is the heading's line, from 1.
	Line int
	// Sections are its "### " subsections, in file order.
	Sections []Section
}

// Section is one "### <kind>" subsection of a version.
type Section struct {
	Kind string
	Line int
	// Entries counts its bullets ("- " at the start of a line).
	Entries int
}

// Version is the version the changelog names: its newest release's x.y.z,
// or Unreleased when it has no release.
func (c *Changelog) Version() string {
	if len(c.Releases) == 0 {
		return Unreleased
	}
	return c.Releases[0].Name
}

var (
	releaseHeading = regexp.MustCompile(`^## \[((?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*))\] - ([0-9]{4}-[0-9]{2}-[0-9]{2})( \[YANKED\])?$`)
	linkDefinition = regexp.MustCompile(`^\[([^\]]+)\]: (\S+)$`)
)

// Parse reads a changelog. It refuses, naming the line ("line 12: ..."):
// a first line other than "# Changelog"; no header paragraph before the
// first version; a first version other than "## [Unreleased]"; a "## "
// heading that is not "## [x.y.z] - YYYY-MM-DD" (optionally followed by
// " [YANKED]") or whose date is not a calendar date; releases not newest
// first; a "### " heading that is not one of Kinds, or repeats one under
// the same version; text under a version outside its subsections; a
// deeper heading than "###"; a link reference definition before the last
// section, or labelled with no version heading's name; and, once there is
// a release, a version heading without its link reference.
func Parse(src []byte) (*Changelog, error) {
	c := &Changelog{Links: map[string]string{}}
	var cur *Version
	var sec *Section
	header := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if n == 1 {
			if line != "# Changelog" {
				return nil, fmt.Errorf("line 1: a changelog starts with the heading \"# Changelog\", not %.60q", line)
			}
			continue
		}
		if m := linkDefinition.FindStringSubmatch(line); m != nil {
			if _, dup := c.Links[m[1]]; dup {
				return nil, fmt.Errorf("line %d: the link reference [%s] is defined twice", n, m[1])
			}
			c.Links[m[1]] = m[2]
			continue
		}
		if len(c.Links) > 0 && line != "" {
			return nil, fmt.Errorf("line %d: link reference definitions end the changelog; nothing may follow them", n)
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "## "):
			v, err := versionHeading(line, n, cur == nil)
			if err != nil {
				return nil, err
			}
			if cur == nil && !header {
				return nil, fmt.Errorf("line %d: a header paragraph says what the file is before the first version", n)
			}
			if cur == nil {
				c.Unreleased = v
				cur = &c.Unreleased
			} else {
				if err := follows(c.Releases, v); err != nil {
					return nil, err
				}
				c.Releases = append(c.Releases, v)
				cur = &c.Releases[len(c.Releases)-1]
			}
			sec = nil
		case strings.HasPrefix(line, "### "):
			if cur == nil {
				return nil, fmt.Errorf("line %d: %.60q comes before any version heading", n, line)
			}
			kind := strings.TrimPrefix(line, "### ")
			if !slices.Contains(Kinds, kind) {
				return nil, fmt.Errorf("line %d: %.60q is not a Keep a Changelog section (%s)", n, line, strings.Join(Kinds, ", "))
			}
			if slices.ContainsFunc(cur.Sections, func(s Section) bool { return s.Kind == kind }) {
				return nil, fmt.Errorf("line %d: version %s has two %s sections", n, cur.Name, kind)
			}
			cur.Sections = append(cur.Sections, Section{Kind: kind, Line: n})
			sec = &cur.Sections[len(cur.Sections)-1]
		case strings.HasPrefix(line, "#"):
			return nil, fmt.Errorf("line %d: %.60q: a changelog has one \"# \" title, \"## \" versions and \"### \" sections", n, line)
		case cur == nil:
			header = true
		case sec == nil:
			return nil, fmt.Errorf("line %d: text under version %s outside a section: write it under one of %s", n, cur.Name, strings.Join(Kinds, ", "))
		case strings.HasPrefix(line, "- "):
			sec.Entries++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	if cur == nil {
		return nil, fmt.Errorf("line %d: no \"## [Unreleased]\" heading", n)
	}
	return c, c.checkLinks()
}

// versionHeading reads the "## " heading at line n; first is the first one,
// which must be Unreleased.
func versionHeading(line string, n int, first bool) (Version, error) {
	if line == "## [Unreleased]" {
		if !first {
			return Version{}, fmt.Errorf("line %d: \"## [Unreleased]\" is the first version heading, and the only one", n)
		}
		return Version{Name: "Unreleased", Line: n}, nil
	}
	if first {
		return Version{}, fmt.Errorf("line %d: the first version heading is \"## [Unreleased]\", not %.60q", n, line)
	}
	m := releaseHeading.FindStringSubmatch(line)
	if m == nil {
		return Version{}, fmt.Errorf("line %d: %.60q is not a release heading \"## [x.y.z] - YYYY-MM-DD\"", n, line)
	}
	date, err := time.Parse(time.DateOnly, m[2])
	if err != nil {
		return Version{}, fmt.Errorf("line %d: release %s: %s is not a date", n, m[1], m[2])
	}
	return Version{Name: m[1], Date: date, Yanked: m[3] != "", Line: n}, nil
}

// follows checks that release v may come after releases, newest first:
// a lower version, on the same day or earlier.
func follows(releases []Version, v Version) error {
	if len(releases) == 0 {
		return nil
	}
	prev := releases[len(releases)-1]
	if compare(v.Name, prev.Name) >= 0 {
		return fmt.Errorf("line %d: release %s follows %s: releases are newest first, each a lower version", v.Line, v.Name, prev.Name)
	}
	if v.Date.After(prev.Date) {
		return fmt.Errorf("line %d: release %s (%s) is dated after %s (%s), which is newer", v.Line, v.Name, v.Date.Format(time.DateOnly), prev.Name, prev.Date.Format(time.DateOnly))
	}
	return nil
}

// compare orders two x.y.z versions as SemVer 2.0.0 §11 does: -1, 0 or 1.
func compare(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		x, _ := strconv.ParseUint(as[i], 10, 64)
		y, _ := strconv.ParseUint(bs[i], 10, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

// checkLinks checks that every link reference names a version heading and,
// once there is a release, that every version heading has one.
func (c *Changelog) checkLinks() error {
	names := []string{c.Unreleased.Name}
	for _, r := range c.Releases {
		names = append(names, r.Name)
	}
	for _, label := range slices.Sorted(maps.Keys(c.Links)) {
		if !slices.Contains(names, label) {
			return fmt.Errorf("the link reference [%s] names no version heading", label)
		}
	}
	if len(c.Releases) == 0 {
		return nil
	}
	for _, name := range names {
		if _, ok := c.Links[name]; !ok {
			return fmt.Errorf("version %s has no link reference \"[%s]: URL\" at the bottom", name, name)
		}
	}
	return nil
}
