package toolset

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

func mustBuild(t *testing.T, c *catalog.Catalog, names, review, hosts []string) *Toolset {
	t.Helper()
	ts, err := FromCatalog(c, names, review, hosts)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestIDIsContentAddressed(t *testing.T) {
	c := catalog.Default()
	a := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, nil, []string{"b.example", "a.example"})
	b := mustBuild(t, c, []string{"structured-data-fetch", "send-email"}, []string{"send-email"}, []string{"a.example", "b.example", "a.example"})
	if a.ID != b.ID {
		t.Fatalf("same content gave %s and %s", a.ID, b.ID)
	}
	if !IDPattern.MatchString(a.ID) {
		t.Fatalf("id %q", a.ID)
	}
	reviewed := mustBuild(t, c, []string{"structured-data-fetch", "send-email"}, []string{"structured-data-fetch"}, []string{"a.example", "b.example"})
	if reviewed.ID == a.ID {
		t.Fatal("review_required change kept the id")
	}
	fewer := mustBuild(t, c, []string{"send-email"}, nil, []string{"a.example", "b.example"})
	if fewer.ID == a.ID {
		t.Fatal("dropping a tool kept the id")
	}
}

func TestSchemaChangeChangesID(t *testing.T) {
	base := catalog.Default()
	send, _ := base.Lookup("send-email")
	doc, _ := json.Marshal(map[string]any{"tools": []any{send}})
	changed := strings.Replace(string(doc), `"maxLength":998`, `"maxLength":997`, 1)
	if changed == string(doc) {
		t.Fatal("fixture did not change the schema")
	}
	c2, err := catalog.Parse([]byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	a := mustBuild(t, base, []string{"send-email"}, nil, nil)
	b := mustBuild(t, c2, []string{"send-email"}, nil, nil)
	if a.ID == b.ID {
		t.Fatal("a schema change kept the id")
	}
	// Whitespace and key order in a schema are not content.
	respaced := strings.ReplaceAll(string(doc), `,"`, `, "`)
	c3, err := catalog.Parse([]byte(respaced))
	if err != nil {
		t.Fatal(err)
	}
	if c := mustBuild(t, c3, []string{"send-email"}, nil, nil); c.ID != a.ID {
		t.Fatal("whitespace in a schema changed the id")
	}
}

func TestParseRoundTrip(t *testing.T) {
	ts := mustBuild(t, catalog.Default(), []string{"workflow-validator"}, nil, nil)
	out, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != ts.ID {
		t.Fatalf("round trip id %s != %s", back.ID, ts.ID)
	}
	tampered := strings.Replace(string(out), `"idempotent": true`, `"idempotent": false`, 1)
	if _, err := Parse([]byte(tampered)); err == nil || !strings.Contains(err.Error(), "["+RuleDigest+"]") {
		t.Fatalf("tampered toolset: %v", err)
	}
}

func TestUnknownTool(t *testing.T) {
	if _, err := FromCatalog(catalog.Default(), []string{"send-slack-message"}, nil, nil); err == nil {
		t.Fatal("unknown tool admitted")
	}
}

func TestCheckAgainstCatalog(t *testing.T) {
	c := catalog.Default()
	ok := mustBuild(t, c, []string{"send-email", "structured-data-fetch"}, []string{"structured-data-fetch"}, nil)
	if err := ok.CheckAgainst(c); err != nil {
		t.Fatalf("a catalog toolset (with an added review): %v", err)
	}
	for name, weaken := range map[string]func(*Tool){
		"ungated":    func(t *Tool) { t.ReviewRequired = false },
		"at least":   func(t *Tool) { t.Policy = catalog.AtLeastOnce },
		"idempotent": func(t *Tool) { t.Idempotent = true },
	} {
		ts := mustBuild(t, c, []string{"send-email"}, nil, nil)
		tool := ts.Tools["send-email"]
		weaken(&tool)
		ts.Tools["send-email"] = tool
		if err := ts.CheckAgainst(c); err == nil {
			t.Errorf("%s: a weakened send-email passed", name)
		}
	}
}
