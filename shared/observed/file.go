package observed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

// Bounds of a shapes file (docs/declarations.md, "Reading them").
const (
	// MaxFileBytes bounds a shapes file ParseFile reads: 4 MiB, under
	// Lambda's 6 MB response payload quota (Lambda quotas, "Invocation
	// payload"), which the publish function's answer holding one must
	// fit.
	MaxFileBytes = 4 << 20
	// MaxFileHosts is the most hosts one tool's entry names.
	MaxFileHosts = 256
)

// HostPattern is a host a shape is learned from (Identity.Host): a
// lower-case DNS name or IPv4 address of at most 254 bytes, or a bracketed
// IPv6 address of 2 to 45 characters, with an optional port of at most 5
// digits. Its counts are checked apart from the regular expression
// (tool.Pattern: RE2 unrolls a counted repetition, and {0,252} cost every
// function linking this package 0.4 MB at its cold start;
// docs/performance.md, "Cold init of the tool functions").
var HostPattern = tool.NewPattern(
	`^(?:[a-z0-9](?:[a-z0-9.-]{0,252}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(?::[0-9]{1,5})?$`,
	`^(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]{2,}\])(?::[0-9]+)?$`,
	254+len(":65535"), hostFits)

// hostFits checks HostPattern's counts on a match of its uncounted form:
// the name at most 254 bytes, the bracketed address at most 45, the port
// at most 5 digits. A DNS name holds no ':' and an address no ']', so the
// first of each ends the part it bounds.
func hostFits(m []string) bool {
	host, port := m[0], ""
	if address, ok := strings.CutPrefix(host, "["); ok {
		address, port, _ = strings.Cut(address, "]")
		if len(address) > 45 {
			return false
		}
	} else {
		host, port, _ = strings.Cut(host, ":")
		if len(host) > 254 {
			return false
		}
	}
	return len(strings.TrimPrefix(port, ":")) <= 5
}

// File is the shapes learned for one toolset's tools, as `toolgate
// shapes --json` writes it and a lock's "observed" member holds it
// (docs/declarations.md, "Reading them"). Like the shapes it holds, it
// names types and member names, never a value.
type File struct {
	// Toolset is the toolset's id.
	Toolset string
	// Tools are the tools that learned a shape, by their name in the
	// toolset.
	Tools map[string]ToolShapes
}

// ToolShapes is what one tool learned: the shape of its whole result
// (a tool that declares no output schema), or, for structured-data-fetch
// and http, the shape of the result's data member per host. Exactly one
// of Shape and Hosts is set.
type ToolShapes struct {
	// LearnedFrom is the item's learned_from (a lower bound of the results
	// learned from), at least 1 with Shape, 0 with Hosts.
	LearnedFrom int64
	// Shape is the whole result's shape.
	Shape *Shape
	// Hosts are the data member's shapes by host (HostPattern), at most
	// MaxFileHosts.
	Hosts map[string]HostShape
}

// HostShape is the data member's shape learned from one host.
type HostShape struct {
	// LearnedFrom is at least 1.
	LearnedFrom int64
	// Shape is never nil.
	Shape *Shape
}

// fileWire, toolWire and hostWire are File, ToolShapes and HostShape as
// JSON; shapes are the objects Shape.Marshal writes.
type fileWire struct {
	Toolset string              `json:"toolset"`
	Tools   map[string]toolWire `json:"tools"`
}

type toolWire struct {
	LearnedFrom int64               `json:"learned_from,omitempty"`
	Shape       json.RawMessage     `json:"shape,omitempty"`
	Hosts       map[string]hostWire `json:"hosts,omitempty"`
}

type hostWire struct {
	LearnedFrom int64           `json:"learned_from"`
	Shape       json.RawMessage `json:"shape"`
}

// wire is f as JSON, checked (check).
func (f *File) wire() (*fileWire, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	w := &fileWire{Toolset: f.Toolset, Tools: make(map[string]toolWire, len(f.Tools))}
	for name, t := range f.Tools {
		tw := toolWire{LearnedFrom: t.LearnedFrom}
		if t.Shape != nil {
			raw, err := t.Shape.Marshal()
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", name, err)
			}
			tw.Shape = raw
		}
		if len(t.Hosts) > 0 {
			tw.Hosts = make(map[string]hostWire, len(t.Hosts))
			for h, hs := range t.Hosts {
				raw, err := hs.Shape.Marshal()
				if err != nil {
					return nil, fmt.Errorf("tool %q, host %q: %w", name, h, err)
				}
				tw.Hosts[h] = hostWire{LearnedFrom: hs.LearnedFrom, Shape: raw}
			}
		}
		w.Tools[name] = tw
	}
	return w, nil
}

// check applies the file's rules: a toolset id, tool names a toolset may
// pin, exactly one of a shape and hosts per tool, hosts matching
// HostPattern (at most MaxFileHosts), learned_from at least 1 beside
// each shape, no nil shape.
func (f *File) check() error {
	if f == nil {
		return errors.New("shapes file: none")
	}
	if !tool.ToolsetIDPattern.MatchString(f.Toolset) {
		return errors.New("shapes file: toolset is no toolset id (ts_ and 32 lower-case hex digits)")
	}
	for _, name := range sortedKeys(f.Tools) {
		t := f.Tools[name]
		if !tool.ValidToolName(name) {
			return errors.New("shapes file: a tool name that no toolset can pin")
		}
		switch {
		case t.Shape != nil && len(t.Hosts) > 0, t.Shape == nil && len(t.Hosts) == 0:
			return fmt.Errorf("shapes file: tool %q: exactly one of shape and hosts", name)
		case t.Shape != nil && t.LearnedFrom < 1:
			return fmt.Errorf("shapes file: tool %q: learned_from must be at least 1", name)
		case t.Shape == nil && t.LearnedFrom != 0:
			return fmt.Errorf("shapes file: tool %q: learned_from is per host", name)
		case len(t.Hosts) > MaxFileHosts:
			return fmt.Errorf("shapes file: tool %q: more than %d hosts", name, MaxFileHosts)
		}
		if t.Shape != nil && t.Shape.Root == nil {
			return fmt.Errorf("shapes file: tool %q: an empty shape", name)
		}
		for _, h := range sortedKeys(t.Hosts) {
			hs := t.Hosts[h]
			switch {
			case !HostPattern.MatchString(h):
				return fmt.Errorf("shapes file: tool %q: a host that is no lower-case host[:port]", name)
			case hs.LearnedFrom < 1:
				return fmt.Errorf("shapes file: tool %q, host %q: learned_from must be at least 1", name, h)
			case hs.Shape == nil || hs.Shape.Root == nil:
				return fmt.Errorf("shapes file: tool %q, host %q: no shape", name, h)
			}
		}
	}
	return nil
}

// Marshal writes f as indented JSON ending in a newline, the same bytes
// for the same file (tools and hosts sorted by name, each shape the
// object Shape.Marshal writes, indented):
//
//	{"toolset": "ts_…", "tools": {"crm.lookup": {"learned_from": 3, "shape": {…}},
//	 "structured-data-fetch": {"hosts": {"api.example.com": {"learned_from": 12, "shape": {…}}}}}}
//
// An error names the rule f breaks (check).
func (f *File) Marshal() ([]byte, error) {
	w, err := f.wire()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("shapes file: %w", err)
	}
	return append(out, '\n'), nil
}

// MarshalJSON is f's JSON, compact (as a lock's "observed" member holds
// it).
func (f *File) MarshalJSON() ([]byte, error) {
	w, err := f.wire()
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads f as ParseFile does.
func (f *File) UnmarshalJSON(data []byte) error {
	got, err := ParseFile(data)
	if err != nil {
		return err
	}
	*f = *got
	return nil
}

// ParseFile reads a shapes file (Marshal's, in any spacing). It is
// strict: at most MaxFileBytes; no member the file does not define, each
// once in its exact name (an RFC 8785 comparison of what was read with
// what was written); every shape read by Unmarshal (after removing
// spaces), and the rules of File (check). Errors name the rule, the tool
// and the host, never a shape's text.
func ParseFile(data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("shapes file: %d bytes, over %d", len(data), MaxFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w fileWire
	if err := dec.Decode(&w); err != nil {
		return nil, errors.New("shapes file: not a shapes document (toolset and tools, each tool learned_from and shape, or hosts)")
	}
	if dec.More() {
		return nil, errors.New("shapes file: data after the document")
	}
	if w.Tools == nil {
		return nil, errors.New("shapes file: no tools member")
	}
	f := &File{Toolset: w.Toolset, Tools: make(map[string]ToolShapes, len(w.Tools))}
	for _, name := range sortedKeys(w.Tools) {
		tw := w.Tools[name]
		if !tool.ValidToolName(name) {
			return nil, errors.New("shapes file: a tool name that no toolset can pin")
		}
		t := ToolShapes{LearnedFrom: tw.LearnedFrom}
		if tw.Shape != nil {
			s, err := readShape(tw.Shape)
			if err != nil {
				return nil, fmt.Errorf("shapes file: tool %q: %w", name, err)
			}
			t.Shape = s
		}
		if tw.Hosts != nil {
			if len(tw.Hosts) == 0 {
				return nil, fmt.Errorf("shapes file: tool %q: hosts is empty", name)
			}
			t.Hosts = make(map[string]HostShape, len(tw.Hosts))
			for _, h := range sortedKeys(tw.Hosts) {
				if !HostPattern.MatchString(h) {
					return nil, fmt.Errorf("shapes file: tool %q: a host that is no lower-case host[:port]", name)
				}
				hw := tw.Hosts[h]
				if hw.Shape == nil {
					return nil, fmt.Errorf("shapes file: tool %q, host %q: no shape", name, h)
				}
				s, err := readShape(hw.Shape)
				if err != nil {
					return nil, fmt.Errorf("shapes file: tool %q, host %q: %w", name, h, err)
				}
				t.Hosts[h] = HostShape{LearnedFrom: hw.LearnedFrom, Shape: s}
			}
		}
		f.Tools[name] = t
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	// What was decoded must be all the document says: Go's decoder
	// matches member names in any letter case and keeps the last of
	// duplicates.
	// Compared through the contract's one RFC 8785 digest (tool.InputDigest).
	_, shown, err := tool.InputDigest(data)
	if err != nil {
		return nil, errors.New("shapes file: not canonicalizable JSON (RFC 8785)")
	}
	again, err := f.MarshalJSON()
	var digest string
	if err == nil {
		_, digest, err = tool.InputDigest(again)
	}
	if err != nil || shown != digest {
		return nil, errors.New("shapes file: members that are not the file's, in their exact names, once each")
	}
	return f, nil
}

// readShape reads one shape object of a file, in any spacing.
func readShape(raw json.RawMessage) (*Shape, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, errors.New("unmarshal shape: not a shape document")
	}
	return Unmarshal(compact.Bytes())
}

// ToolNames are f's tools, sorted.
func (f *File) ToolNames() []string {
	return sortedKeys(f.Tools)
}
