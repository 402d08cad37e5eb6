package solutioncomment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
)

// Comment is what a definition's top-level Comment says of the revision.
type Comment struct {
	// Solution is the Solution's name (shared/toolset NamePattern: 1 to 50
	// of a-z, 0-9 and "-", starting with a letter).
	Solution string
	// Version is the Solution's version as its file declares it
	// (docs/solutions.md): 1 to 2^31-1. It is the version the publish
	// function records for the Solution (ledger.Published.Version), not
	// Step Functions' own version number of the state machine.
	Version int
	// ToolsetID is the id of the Solution's toolset (tool.ToolsetIDPattern:
	// "ts_" and 32 lower-case hex digits).
	ToolsetID string
}

// pattern is Format's output and nothing else: the name as
// toolset.NamePattern, the version in canonical decimal (no sign, no
// leading zero), the toolset id as tool.ToolsetIDPattern.
var pattern = regexp.MustCompile(`^toolgate Solution ([a-z][a-z0-9-]{0,49}) version ([1-9][0-9]{0,9}) \(toolset (ts_[0-9a-f]{32})\)$`)

// Format returns the top-level Comment of a definition of version of
// Solution name with toolset toolsetID. Parse reads it back when the three
// have the shapes Comment's fields give.
func Format(name string, version int, toolsetID string) string {
	return fmt.Sprintf("toolgate Solution %s version %d (toolset %s)", name, version, toolsetID)
}

// String is c's Comment (Format).
func (c Comment) String() string { return Format(c.Solution, c.Version, c.ToolsetID) }

// Parse reads a Comment Format wrote; any other text, or a version over
// 2^31-1, is not one (false).
func Parse(s string) (Comment, bool) {
	m := pattern.FindStringSubmatch(s)
	if m == nil {
		return Comment{}, false
	}
	v, err := strconv.Atoi(m[2])
	if err != nil || v > math.MaxInt32 {
		return Comment{}, false
	}
	return Comment{Solution: m[1], Version: v, ToolsetID: m[3]}, true
}

// ErrNotObject is Read's error for a definition that is not a JSON object
// up to its top-level Comment.
var ErrNotObject = errors.New("the definition is not a JSON object")

// Read streams definition (Amazon States Language JSON) up to its
// top-level "Comment" member and Parses it: false when the definition has
// no top-level Comment, or its first one is not a string Format wrote. It
// stops at that member: the states after it are not read or held, and a
// later Comment member is not looked at. Member names match exactly, as
// in the Amazon States Language ("comment" is not the Comment). An error
// wraps ErrNotObject when the text read is not a JSON object, or is the
// reader's own.
func Read(definition io.Reader) (Comment, bool, error) {
	dec := json.NewDecoder(definition)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return Comment{}, false, readError(err)
	} else if tok != json.Delim('{') {
		return Comment{}, false, ErrNotObject
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Comment{}, false, readError(err)
		}
		key, _ := tok.(string)
		if key != "Comment" {
			if err := skip(dec); err != nil {
				return Comment{}, false, readError(err)
			}
			continue
		}
		tok, err = dec.Token()
		if err != nil {
			return Comment{}, false, readError(err)
		}
		s, ok := tok.(string)
		if !ok {
			return Comment{}, false, nil
		}
		c, ok := Parse(s)
		return c, ok, nil
	}
	return Comment{}, false, nil
}

// skip reads one JSON value from dec, token by token, holding none of it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// readError marks a decoding error as ErrNotObject; an error of the reader
// itself is returned as it is.
func readError(err error) error {
	var syntax *json.SyntaxError
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntax) {
		return fmt.Errorf("%w: %w", ErrNotObject, err)
	}
	return err
}
