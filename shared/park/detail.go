package park

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxChangedPointers bounds Detail.ChangedPointers, and the PARKED row's
// changed_pointers: 32 JSON Pointers (docs/parking.md, "The PARKED row").
// A definition that differs in more places records the first 32 in
// sorted order.
const MaxChangedPointers = 32

// Detail is what a PARKED ledger row records of why its call parked
// (docs/parking.md, "The PARKED row"): its cause, and for
// tool.schema_changed the digests of the pinned and the server's current
// definition with the JSON Pointers (RFC 6901) where they differ, for
// credentials.expired the credential's target and scope as the vault
// names them. Names and digests only: never a secret, an input or text a
// server sent.
//
// A check or a credential resolver that parks a call returns it as the
// Err of its CALL_PARKED *tool.Error (the message stays the caller's);
// the dispatcher finds it with errors.As and writes it on the row.
type Detail struct {
	Cause Cause
	// PinnedDigest and CurrentDigest are "sha256:" and the hex SHA-256 of
	// the RFC 8785 form of the definition the toolset pinned and of the
	// one the server lists now (shared/mcptool, Check); CurrentDigest is
	// "" when the server lists the tool no more.
	PinnedDigest, CurrentDigest string
	// ChangedPointers are the JSON Pointers into the definition that were
	// added, removed or changed, sorted, at most MaxChangedPointers ("" is
	// the whole definition).
	ChangedPointers []string
	// AdditivePointers are those of ChangedPointers whose change is
	// additive (shared/mcptool, Classify; docs/parking.md, "Classifying a
	// change"), in their order; every other changed pointer is breaking.
	AdditivePointers []string
	// Target and Scope name the expired credential: the target's name in
	// its toolset (an MCP server's key, an http host entry) and its scope
	// ("toolset", "end_user:<hex>", "run:<execution name>";
	// shared/credential, Scope).
	Target, Scope string
	// Err is the cause behind the park, kept for logs; nil for most.
	Err error
}

// Error names the cause and its digests or target: what a log may hold.
func (d *Detail) Error() string {
	var b strings.Builder
	b.WriteString(string(d.Cause))
	switch {
	case d.PinnedDigest != "":
		fmt.Fprintf(&b, ": pinned %s, current %s, %d pointers", d.PinnedDigest, orNone(d.CurrentDigest), len(d.ChangedPointers))
	case d.Target != "":
		fmt.Fprintf(&b, ": target %s, scope %s", d.Target, orNone(d.Scope))
	}
	if d.Err != nil {
		fmt.Fprintf(&b, ": %v", d.Err)
	}
	return b.String()
}

// Unwrap is Err.
func (d *Detail) Unwrap() error { return d.Err }

// MaxPointerBytes bounds each pointer of ChangedPointers and
// AdditivePointers: 512 bytes. A server names its schema's members as it
// likes (a listing is up to 5 MiB), and MaxChangedPointers pointers of
// long names would take a PARKED row or a park item past DynamoDB's
// 400 KB item (DynamoDB quotas, "Item size") and a park.list answer past
// a Function URL's 6 MB; 32 pointers of 512 bytes stay near 16 KiB. A
// longer pointer is cut (CutPointer).
const MaxPointerBytes = 512

// CutPointer is p cut to MaxPointerBytes at a UTF-8 character boundary,
// ending "...": the form a longer pointer is kept in.
func CutPointer(p string) string {
	if len(p) <= MaxPointerBytes {
		return p
	}
	n := MaxPointerBytes - len("...")
	for n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return p[:n] + "..."
}

// SortedPointers is pointers, each cut to MaxPointerBytes (CutPointer),
// sorted, without repeats, cut to MaxChangedPointers: the form
// ChangedPointers holds.
func SortedPointers(pointers []string) []string {
	cut := make([]string, len(pointers))
	for i, p := range pointers {
		cut[i] = CutPointer(p)
	}
	out := slices.Compact(slices.Sorted(slices.Values(cut)))
	if len(out) > MaxChangedPointers {
		out = out[:MaxChangedPointers]
	}
	return out
}

// AdditiveOf is those of changed (ChangedPointers' form) that additive
// lists, in changed's order: the additive pointers a row or a park item
// keeps beside its changed ones. None is nil.
func AdditiveOf(changed, additive []string) []string {
	var out []string
	for _, p := range changed {
		if slices.Contains(additive, p) {
			out = append(out, p)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
