package table

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// update rewrites the generated item table of docs/ledger.md from the
// declaration (go test ./shared/table -run TestItemsTable -update), as
// go/printer's golden files are.
var update = flag.Bool("update", false, "rewrite docs/ledger.md's item table from the declaration")

// docsLedger is docs/ledger.md, from the package directory.
const docsLedger = "../../docs/ledger.md"

// The item table's place in docs/ledger.md ("Items").
const (
	itemsStart = "<!-- items-table: generated from shared/table by go test ./shared/table -run TestItemsTable -update; the test fails when the two differ -->\n"
	itemsEnd   = "<!-- end of items-table -->\n"
)

// TestItemsTable: docs/ledger.md's item table (every item kind: its keys,
// attributes and types, its lifetime; the index) is the declaration's, so
// neither drifts.
func TestItemsTable(t *testing.T) {
	doc, err := os.ReadFile(docsLedger)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(itemsStart)), bytes.Index(doc, []byte(itemsEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no item table between %q and %q", docsLedger, itemsStart, itemsEnd)
	}
	got, want := string(doc[i+len(itemsStart):j]), itemsTable()
	if *update && got != want {
		out := slices.Concat(doc[:i+len(itemsStart)], []byte(want), doc[j:])
		if err := os.WriteFile(docsLedger, out, 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if got != want {
		t.Errorf("%s's item table is not the declaration's; go test ./shared/table -run TestItemsTable -update rewrites it.\ndocs:\n%s\ndeclaration:\n%s", docsLedger, got, want)
	}
}

// An attribute added to a kind shows in the table, with its type.
func TestItemsTableShowsAnAttribute(t *testing.T) {
	saved := Toolset.Attributes
	defer func() { Toolset.Attributes = saved }()
	Toolset.Attributes = append(slices.Clone(saved), attr("owner", String, "who registered it"))
	if got := itemsTable(); !strings.Contains(got, "`owner` S (who registered it)") {
		t.Errorf("the table does not show a new attribute:\n%s", got)
	}
}

// itemsTable renders every item kind, one row each in Kinds order, and
// every index.
func itemsTable() string {
	var b strings.Builder
	b.WriteString("| item | `pk` | `sk` | attributes (DynamoDB type) | lifetime |\n|---|---|---|---|---|\n")
	for _, k := range Kinds {
		var attrs []string
		for _, a := range k.Attributes {
			if a.Name != ExpiresAt {
				attrs = append(attrs, fmt.Sprintf("`%s` %s (%s)", a.Name, typeNames(a.Types), a.Doc))
			}
		}
		life := "kept: no `expires_at`"
		if k.Attribute(ExpiresAt) != nil {
			life = "TTL: `expires_at`"
		}
		fmt.Fprintf(&b, "| **%s** — %s | `%s` | `%s` | %s | %s |\n",
			k.Name, cell(k.Doc), k.PKShape, k.SKShape, cell(strings.Join(attrs, "; ")), life)
	}
	for _, ix := range Indexes {
		var kinds []string
		for _, k := range Kinds {
			if k.Carries(ix) {
				kinds = append(kinds, k.Name)
			}
		}
		pkType, skType := ix.KeyTypes()
		projects := "the keys only"
		if len(ix.Projects) > 0 {
			projects = "`" + strings.Join(ix.Projects, "`, `") + "`"
		}
		fmt.Fprintf(&b, "\nIndex `%s` (global secondary, on %s items): partition key `%s` %s, sort key `%s` %s (%s); it projects %s.\n",
			ix.Name, strings.Join(kinds, ", "), ix.PK, pkType, ix.SK, skType, text(ix.Doc), projects)
	}
	return b.String()
}

// typeNames is the types an attribute may hold: "S", "S or N"; "any".
func typeNames(ts []Type) string {
	var out []string
	for _, t := range ts {
		if t == Unknown {
			out = append(out, "any")
		} else {
			out = append(out, string(t))
		}
	}
	return strings.Join(out, " or ")
}

// cell is s as a table cell's text: text, its pipes escaped.
func cell(s string) string { return strings.ReplaceAll(text(s), "|", `\|`) }

// text is s as Markdown text: "<hex>" escaped, so that it shows rather
// than reading as an HTML tag.
func text(s string) string { return strings.ReplaceAll(s, "<", `\<`) }
