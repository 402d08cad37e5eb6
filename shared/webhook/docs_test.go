package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the payload section of docs/webhooks.md from schemas/ and the test's samples")

const docPath = "../../docs/webhooks.md"

// docSection is the generated part of docs/webhooks.md: for each type an
// example body (from samples, validated) and its schema file as it is.
func docSection(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	at := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	for _, typ := range Types {
		e, err := NewEvent(typ, "doc", "refunds", samples()[typ], at)
		if err != nil {
			t.Fatal(err)
		}
		body, err := Body(e)
		if err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, body, "", "  "); err != nil {
			t.Fatal(err)
		}
		doc, err := SchemaOf(typ)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n#### `%s`\n\nAn example body:\n\n```json\n%s\n```\n\n<details><summary>JSON Schema of <code>data</code> (<code>shared/webhook/schemas/%s.json</code>)</summary>\n\n```json\n%s```\n\n</details>\n",
			typ, pretty.String(), typ, doc)
	}
	return b.String() + "\n"
}

// TestDocShowsEverySchema checks that docs/webhooks.md shows every type's
// schema exactly as embedded, with an example body that validates.
func TestDocShowsEverySchema(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin := strings.Index(doc, "<!-- schemas:begin")
	end := strings.Index(doc, "<!-- schemas:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/webhooks.md has no schemas:begin / schemas:end markers")
	}
	begin += strings.Index(doc[begin:], "-->") + len("-->")
	want := docSection(t)
	if doc[begin:end] == want {
		return
	}
	if !*update {
		t.Fatal("docs/webhooks.md's payload section is not what schemas/ and the samples give; run go test ./shared/webhook -run TestDocShowsEverySchema -update")
	}
	if err := os.WriteFile(docPath, []byte(doc[:begin]+want+doc[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
}
