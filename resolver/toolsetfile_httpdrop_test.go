package resolver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/toolset"
)

// A derived toolset file that leaves out an http host entry whose host a
// wider entry it keeps would govern with more methods is refused at the
// hosts it writes: the most specific entry governs a host, so leaving
// out api.example.com [GET] under *.example.com [GET, POST] would let a
// call POST to api.example.com.
func TestDerivedToolsetFileMayNotHandAHostToAWiderEntry(t *testing.T) {
	base := CompileToolset("wide.yaml", []byte(`toolset: wide
tools:
  http:
    hosts:
      - {host: "*.example.com", methods: [GET, POST]}
      - {host: api.example.com, methods: [GET]}
workflows: [x]
`), ToolsetOptions{})
	if !base.OK() {
		t.Fatalf("base: %v", base.Diagnostics)
	}
	lookup := func(id string) (*toolset.Toolset, error) {
		if id == base.Toolset.ID {
			return base.Toolset, nil
		}
		return nil, ErrToolsetNotFound
	}
	derive := func(hosts string) *ToolsetResult {
		src := fmt.Sprintf("toolset: narrow\nbase: %s\ntools:\n  http:\n    hosts:\n%sworkflows: [x]\n", base.Toolset.ID, hosts)
		return CompileToolset("narrow.yaml", []byte(src), ToolsetOptions{Lookup: lookup})
	}
	wider := derive(`      - {host: "*.example.com", methods: [GET, POST]}` + "\n")
	if wider.OK() || !strings.Contains(fmt.Sprint(wider.Diagnostics), "dropping http host api.example.com leaves its hosts to *.example.com") {
		t.Fatalf("leaving out api.example.com under *.example.com [GET, POST]: %v", wider.Diagnostics)
	}
	if narrower := derive(`      - {host: "*.example.com", methods: [GET]}` + "\n"); !narrower.OK() {
		t.Fatalf("leaving out api.example.com under *.example.com [GET]: %v", narrower.Diagnostics)
	}
}
