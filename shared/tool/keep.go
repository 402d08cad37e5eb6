package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// keepPattern is a keep path: member names joined by dots, each a letter
// or underscore then letters, digits or underscores (the names a binding's
// PATH can write, docs/solutions.md "Bindings"), at most 256 bytes.
var keepPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// KeepPath splits a keep path ("data.title") into its member names, or
// returns an error naming the path.
func KeepPath(p string) ([]string, error) {
	if len(p) > 256 || !keepPattern.MatchString(p) {
		return nil, fmt.Errorf("%q is not a field path (member names joined by dots, such as data.title)", excerpt.Bytes(p, maxQuotedBytes, "..."))
	}
	return strings.Split(p, "."), nil
}

// Keep returns the members of the JSON object out that paths name, nested
// as they are in out, members sorted by name, values as out has them
// (compacted); a path whose member is
// absent (or whose parent is not an object) is left out. No paths: out as
// it is. Two paths of which one is the other's prefix keep the shorter's
// whole value. out must be a JSON object without duplicate member names
// (the dispatcher has validated it against the pinned output schema).
func Keep(out json.RawMessage, paths []string) (json.RawMessage, error) {
	if len(paths) == 0 {
		return out, nil
	}
	var whole map[string]json.RawMessage
	if err := json.Unmarshal(out, &whole); err != nil {
		return nil, fmt.Errorf("the result is not a JSON object: %w", err)
	}
	kept := map[string]any{}
	for _, p := range paths {
		names, err := KeepPath(p)
		if err != nil {
			return nil, err
		}
		if err := keepOne(whole, names, kept); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(kept); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// keepOne copies the value at names from obj into dst.
func keepOne(obj map[string]json.RawMessage, names []string, dst map[string]any) error {
	raw, ok := obj[names[0]]
	if !ok {
		return nil
	}
	if len(names) == 1 {
		dst[names[0]] = raw
		return nil
	}
	if _, whole := dst[names[0]].(json.RawMessage); whole {
		return nil // a shorter path keeps the whole value already
	}
	var inner map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &inner) != nil {
		return nil // not an object: nothing under it to keep
	}
	sub, _ := dst[names[0]].(map[string]any)
	if sub == nil {
		sub = map[string]any{}
	}
	if err := keepOne(inner, names[1:], sub); err != nil {
		return err
	}
	if len(sub) > 0 {
		dst[names[0]] = sub
	}
	return nil
}
