package resolver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/resolver/resolvertest"
)

// encodeDefinition writes what json.Encoder with SetIndent("", "  ") and
// no HTML escaping writes of the whole definition, and the length of its
// compact form, from which the quota check's size is DeployedSize's, for
// every example Solution's definition and for generated ones with many
// states, for_each loops and choices.
func TestEncodeDefinitionIsTheEncodersTextAndItsCompactLength(t *testing.T) {
	type source struct {
		name string
		src  []byte
	}
	var sources []source
	for _, f := range solutionFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, source{filepath.Base(f), src})
	}
	sources = append(sources, source{"blocks", generate(200)}, source{"loops", generateLoops(20)}, source{"diamonds", resolvertest.Diamonds(20)})
	checked := 0
	for _, s := range sources {
		var def *asl.Definition
		res := compile(s.name, s.src, Options{}, func(d *asl.Definition) { def = d })
		if !res.OK() {
			continue
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(def); err != nil {
			t.Fatal(err)
		}
		indented, compactLen, err := encodeDefinition(def)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(indented, want.Bytes()) || !bytes.Equal(indented, res.Definition) {
			t.Errorf("%s: the indented text differs from json.Encoder's", s.name)
		}
		if len(indented) != cap(indented) {
			t.Errorf("%s: %d bytes of text in a buffer of %d: indentedLen miscounted", s.name, len(indented), cap(indented))
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, indented); err != nil {
			t.Fatal(err)
		}
		if got := compact.Len(); got != compactLen {
			t.Errorf("%s: compact length %d, json.Compact's %d", s.name, compactLen, got)
		}
		placeholders := map[string]string{"FunctionReviewRequest": "", "FunctionSendEmail": "", "FunctionStructuredDataFetch": ""}
		size, err := DeployedSize(indented, placeholders)
		if err != nil {
			t.Fatal(err)
		}
		if got := placeholderSize(compactLen, indented, placeholders); got != size {
			t.Errorf("%s: size %d, DeployedSize %d", s.name, got, size)
		}
		checked++
	}
	if checked < 11 {
		t.Fatalf("only %d Solutions compile", checked)
	}
}

// indentedLen counts what json.Indent writes, for any prefix: nested,
// empty and non-empty objects and arrays, and strings holding brackets,
// commas, colons, quotes and backslashes.
func TestIndentedLenIsWhatIndentWrites(t *testing.T) {
	for _, src := range []string{
		`1`, `"a"`, `{}`, `[]`, `[{}]`, `{"a":[]}`, `{"a":{"b":[1,2,{"c":null}]},"d":true}`,
		`{"a\\":"{[,:]}\"","b":["\\\"",""]}`, `[[],[[]],{"":{}}]`,
	} {
		for _, prefix := range []string{"", "  ", "    "} {
			var out bytes.Buffer
			if err := json.Indent(&out, []byte(src), prefix, "  "); err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if got := indentedLen([]byte(src), len(prefix)); got != out.Len() {
				t.Errorf("indentedLen(%s, %q) = %d; json.Indent wrote %d", src, prefix, got, out.Len())
			}
		}
	}
}
