package toolset

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxBodyBytes bounds a toolset's RFC 8785 form (Canonical), in bytes: the
// "body" attribute of its table item, which must fit in DynamoDB's item
// size limit of 400 KB (409 600 bytes, counting every attribute's name and
// value). The item's other attributes take 95 bytes: pk and its value,
// the toolset prefix, ts_ and 32 hex digits (2 + 43), sk and TOOLSET (2 + 7),
// the name "body" (4), and "registered_at" with its 24-character
// timestamp (13 + 24). The bound leaves 19 505 bytes more for attributes
// a toolset item may gain (docs/ledger.md, "Toolset items fit in an
// item"). Six schemas of MaxSchemaBytes are over it: every schema within
// its own bounds does not make a toolset that fits.
const MaxBodyBytes = 390_000

// PartSize is the size of one pinned tool's schema or description, for a
// refusal that names the largest.
type PartSize struct {
	Tool  string // the tool's name in the toolset
	Part  string // "input_schema", "output_schema" or "description"
	Bytes int    // the part's length as pinned (a schema's JSON, a description's UTF-8)
}

func (s PartSize) String() string { return fmt.Sprintf("%s %s (%d bytes)", s.Tool, s.Part, s.Bytes) }

// LargestParts returns ts's n largest pinned schemas and descriptions,
// largest first (ties in tool name order, then input schema, output
// schema, description).
func (ts *Toolset) LargestParts(n int) []PartSize {
	var all []PartSize
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		t := ts.Tools[name]
		all = append(all, PartSize{name, "input_schema", len(t.InputSchema)}, PartSize{name, "output_schema", len(t.OutputSchema)},
			PartSize{name, "description", len(t.Description)})
	}
	slices.SortStableFunc(all, func(a, b PartSize) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return all[:min(n, len(all))]
}

// CheckSize refuses, with a *Refusal for RuleSize, a toolset whose RFC
// 8785 form is over MaxBodyBytes: its table item could not be written
// (DynamoDB refuses it with a ValidationException). The reason gives the
// size and names the three largest schemas or descriptions, the usual
// cause.
func (ts *Toolset) CheckSize() error {
	body, err := ts.Canonical()
	if err != nil {
		return refuse(ts.ID, RuleFormat, "%v", err)
	}
	if len(body) <= MaxBodyBytes {
		return nil
	}
	return refuse(ts.ID, RuleSize, "%s", SizeReason(len(body), ts.LargestParts(3)))
}

// SizeReason is the reason of a RuleSize refusal of a toolset whose RFC
// 8785 form is size bytes, naming its largest parts.
func SizeReason(size int, largest []PartSize) string {
	names := make([]string, len(largest))
	for i, s := range largest {
		names[i] = s.String()
	}
	return fmt.Sprintf("its RFC 8785 form is %d bytes, over the %d-byte bound its table item allows (DynamoDB's 400 KB item limit); largest: %s",
		size, MaxBodyBytes, strings.Join(names, ", "))
}
