package resolver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/resolver/asl"
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
	sources = append(sources, source{"blocks", generate(200)}, source{"loops", generateLoops(20)}, source{"diamonds", generateDiamonds(20)})
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
