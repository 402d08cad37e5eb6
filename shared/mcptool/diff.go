package mcptool

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// change is one difference between two JSON values.
type change struct {
	// op is "added", "removed" or "changed".
	op string
	// path is where, an RFC 6901 JSON Pointer ("" is the whole value).
	path string
}

func (c change) String() string {
	p := c.path
	if p == "" {
		p = "/"
	}
	return c.op + " " + clean(p, maxPathBytes)
}

// Bounds of a structural diff in a message.
const (
	maxDiffPaths = 20
	maxPathBytes = 120
)

// diff lists the differences from a to b, two values of the encoding/json
// data model (maps, slices, float64, strings, booleans, nil): a member or
// element only in b is added, only in a removed; a value of another type
// or another scalar value changed. Object members are visited in sorted
// order, arrays by index. It returns at most limit changes, and how many
// more there are.
func diff(a, b any, limit int) (changes []change, more int) {
	d := &differ{limit: limit}
	d.walk(a, b, "")
	return d.out, d.more
}

type differ struct {
	limit int
	out   []change
	more  int
}

func (d *differ) add(op, path string) {
	if len(d.out) < d.limit {
		d.out = append(d.out, change{op, path})
		return
	}
	d.more++
}

func (d *differ) walk(a, b any, path string) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			d.add("changed", path)
			return
		}
		keys := slices.Sorted(maps.Keys(av))
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			x, inA := av[k]
			y, inB := bv[k]
			p := path + "/" + escapeToken(k)
			switch {
			case !inB:
				d.add("removed", p)
			case !inA:
				d.add("added", p)
			default:
				d.walk(x, y, p)
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			d.add("changed", path)
			return
		}
		for i := range max(len(av), len(bv)) {
			p := path + "/" + strconv.Itoa(i)
			switch {
			case i >= len(bv):
				d.add("removed", p)
			case i >= len(av):
				d.add("added", p)
			default:
				d.walk(av[i], bv[i], p)
			}
		}
	default:
		switch b.(type) {
		case map[string]any, []any:
			d.add("changed", path)
			return
		}
		if a != b {
			d.add("changed", path)
		}
	}
}

// escapeToken escapes an object member name as an RFC 6901 reference
// token: "~" as "~0", "/" as "~1".
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// describe lists changes for a message: "changed /a, added /b/c, and 3
// more".
func describe(changes []change, more int) string {
	parts := make([]string, 0, len(changes)+1)
	for _, c := range changes {
		parts = append(parts, c.String())
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, ", ")
}
