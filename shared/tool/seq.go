package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// Seq is a call's place in its run, the second half of its idempotency key
// "<run_id>/<seq>" (docs/solutions.md, "One key per call"): decimal
// components joined by ".". At the top level of a Solution it is the run's
// call counter, "4" for the fourth call; inside a for_each body it is the
// enclosing counter's value the loop took, the 0-based item index and the
// iteration's own counter, "4.17.2" for the second call of item 17 of the
// loop that took 4.
//
// Components are written without leading zeros (one spelling per call, so
// that one call never holds two keys); the first and every iteration
// counter are at least 1; each fits an int64. A seq has 1 + 2n components,
// n at most MaxSeqDepth. On the wire it is a JSON string; a JSON number
// (a positive integer, as envelopes carried it before for_each) is read as
// the same seq, so that an execution started by an earlier definition
// keeps its keys.
type Seq string

// MaxSeqDepth bounds how many loops a seq may be inside. The resolver
// refuses a nested for_each, so it emits 0 or 1; the contract leaves room
// for one more level without a change of the ledger's keys.
const MaxSeqDepth = 2

// SeqOf is the top-level seq n.
func SeqOf(n int64) Seq { return Seq(strconv.FormatInt(n, 10)) }

// ParseSeq checks s as a Seq and returns its components.
func ParseSeq(s string) ([]int64, error) {
	if s == "" {
		return nil, fmt.Errorf("seq is empty")
	}
	parts := strings.Split(s, ".")
	if len(parts)%2 == 0 || len(parts) > 1+2*MaxSeqDepth {
		return nil, fmt.Errorf("seq %q is not a counter, or a counter and (index, counter) pairs", excerpt.Bytes(s, maxQuotedBytes, "..."))
	}
	out := make([]int64, len(parts))
	for i, p := range parts {
		if p == "" || len(p) > 19 || (len(p) > 1 && p[0] == '0') || strings.Trim(p, "0123456789") != "" {
			return nil, fmt.Errorf("seq %q: component %d is not a decimal without leading zeros", excerpt.Bytes(s, maxQuotedBytes, "..."), i+1)
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seq %q: component %d is too large", excerpt.Bytes(s, maxQuotedBytes, "..."), i+1)
		}
		// Even positions are counters (from 1), odd ones item indexes (from 0).
		if i%2 == 0 && n < 1 {
			return nil, fmt.Errorf("seq %q: counter %d must be at least 1", excerpt.Bytes(s, maxQuotedBytes, "..."), i+1)
		}
		out[i] = n
	}
	return out, nil
}

// Valid reports whether s is a well-formed seq (ParseSeq).
func (s Seq) Valid() error {
	_, err := ParseSeq(string(s))
	return err
}

// LoopPath is the loop index path of s: its item indexes (the components
// at odd positions, ParseSeq), [17] for "4.17.2", none for "3" or an
// invalid seq. Two calls, or two workflow steps' children, at one path are
// in the same iteration of the same loops (docs/fork.md, "Matching").
func (s Seq) LoopPath() []int64 {
	parts, err := ParseSeq(string(s))
	if err != nil {
		return nil
	}
	var path []int64
	for i := 1; i < len(parts); i += 2 {
		path = append(path, parts[i])
	}
	return path
}

// SortKey is s with each component zero-padded to 19 digits (any int64),
// joined by "."; sort keys of valid seqs order as the calls were made: a
// call before a loop, the loop's items in order and within an item its
// calls, then the calls after the loop. It is the ledger's call sort key
// (docs/ledger.md). An invalid seq gives "".
func (s Seq) SortKey() string {
	parts, err := ParseSeq(string(s))
	if err != nil {
		return ""
	}
	var b strings.Builder
	for i, n := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprintf(&b, "%019d", n)
	}
	return b.String()
}

// SeqOfSortKey is the seq whose SortKey is k: each component without its
// zero padding. An error when k is no valid seq's sort key.
func SeqOfSortKey(k string) (Seq, error) {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		if len(p) != 19 || strings.Trim(p, "0123456789") != "" {
			return "", fmt.Errorf("sort key %q is not a seq's", excerpt.Bytes(k, maxQuotedBytes, "..."))
		}
		if parts[i] = strings.TrimLeft(p, "0"); parts[i] == "" {
			parts[i] = "0"
		}
	}
	s := Seq(strings.Join(parts, "."))
	if err := s.Valid(); err != nil {
		return "", err
	}
	return s, nil
}

// UnmarshalJSON reads a JSON string, or a JSON number written as a
// positive integer in plain digits (the contract before for_each).
// Well-formedness is Valid's to check.
func (s *Seq) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var str string
		if err := json.Unmarshal(data, &str); err != nil {
			return err
		}
		*s = Seq(str)
		return nil
	}
	if len(data) == 0 || strings.Trim(string(data), "0123456789") != "" {
		return fmt.Errorf("want a string such as \"4\" or \"4.17.2\", or a positive integer")
	}
	*s = Seq(data)
	return nil
}

// KeyIn is the idempotency key of the call at s in the run runID:
// "<run id>/<seq>" (Envelope.IdempotencyKey; docs/ledger.md, "Items").
func (s Seq) KeyIn(runID string) string { return runID + "/" + string(s) }
