package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	ledgertable "github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// update rewrites the generated parts of docs/infra.md from the templates
// (go test ./infra -run TestPolicyTable -update), as go/printer's golden
// files are.
var update = flag.Bool("update", false, "rewrite docs/infra.md's policy table from the synthesized template")

// docsInfra is docs/infra.md, from the package directory.
const docsInfra = "../docs/infra.md"

// The policy table's place in docs/infra.md.
const (
	tableStart = "<!-- policy-table: generated from the synthesized template by go test ./infra -run TestPolicyTable -update; the test fails when the two differ -->\n"
	tableEnd   = "<!-- end of policy-table -->\n"
)

// TestPolicyTable: docs/infra.md's table of every role and managed policy
// (statement by statement: actions, resources, item prefixes, conditions)
// is the synthesized template's, so neither drifts; a template widened by
// a statement no longer matches it.
func TestPolicyTable(t *testing.T) {
	doc, err := os.ReadFile(docsInfra)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(tableStart)), bytes.Index(doc, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no policy table between %q and %q", docsInfra, tableStart, tableEnd)
	}
	got, want := string(doc[i+len(tableStart):j]), prefixMatrix(platformJSON)+"\n"+policyTable(platformJSON)
	if *update && got != want {
		out := slices.Concat(doc[:i+len(tableStart)], []byte(want), doc[j:])
		if err := os.WriteFile(docsInfra, out, 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s's policy table is not the template's (-template +docs); go test ./infra -run TestPolicyTable -update rewrites it:\n%s", docsInfra, d)
	}
	// A table-wide write added to the fetch role shows.
	pj := clone(platformJSON)
	addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
	if d := cmp.Diff(policyTable(pj), policyTable(platformJSON)); !strings.Contains(d, "| `structured-data-fetch` | – | dynamodb: PutItem | ledger table | any |") {
		t.Errorf("a widened fetch role does not show in the table:\n%s", d)
	}
	widened := "| `structured-data-fetch` | GetItem, PutItem, UpdateItem | GetItem†, PutItem | GetItem†, PutItem | PutItem | GetItem, PutItem | GetItem, PutItem |"
	if m := prefixMatrix(pj); !strings.Contains(m, widened) || strings.Contains(prefixMatrix(platformJSON), widened) {
		t.Errorf("a widened fetch role does not show in the matrix:\n%s", cmp.Diff(m, prefixMatrix(platformJSON)))
	}
}

// principalOrder is the table's order: the functions as functionSpecs has
// them (the publish function last), the Solution execution role, the
// managed policies.
func principalOrder(all map[string][]tmpl) []string {
	var order []string
	for _, s := range functionSpecs {
		order = append(order, s.Name)
	}
	order = append(order, "solution-execution", "publisher", "reviewer", "operator")
	for _, p := range slices.Sorted(maps.Keys(all)) {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	return order
}

// principalTitles name the principals that are not functions.
var principalTitles = map[string]string{
	"solution-execution": "Solution execution role",
	"publisher":          "Publisher (managed policy)",
	"reviewer":           "Reviewer (managed policy)",
	"operator":           "Operator (managed policy)",
}

// policyTable renders every principal's statements, one row each.
func policyTable(pj tmpl) string {
	all := principalStatements(pj)
	var b strings.Builder
	b.WriteString("| principal | statement | actions | on | items | conditions |\n|---|---|---|---|---|---|\n")
	for _, p := range principalOrder(all) {
		title, ok := principalTitles[p]
		if !ok {
			title = "`" + p + "`"
		}
		stmts := slices.Clone(all[p])
		slices.SortStableFunc(stmts, func(a, b tmpl) int { return strings.Compare(sidOf(a), sidOf(b)) })
		for _, s := range stmts {
			sid := "–"
			if id, ok := s["Sid"].(string); ok {
				sid = "`" + id + "`"
			}
			var on []string
			for _, r := range rawList(s["Resource"]) {
				on = append(on, resourceName(pj, r))
			}
			items := "any"
			if keys, ok := conditionValues(s, "dynamodb:LeadingKeys"); ok {
				items = "`" + strings.Join(keys, "`, `") + "`"
			} else if !slices.ContainsFunc(strs(s["Action"]), isItemAction) {
				items = ""
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", title, sid, actionsText(strs(s["Action"])),
				strings.Join(on, ", "), items, conditionsText(s))
		}
	}
	return cell.Replace(b.String())
}

// prefixMatrix renders, for every principal that reaches ledger items,
// the item actions it has on each key prefix and on the indexes; † marks
// an action allowed only on the attributes its statement names.
func prefixMatrix(pj tmpl) string {
	all := principalStatements(pj)
	var b strings.Builder
	b.WriteString("| principal |")
	for _, p := range ledgerPrefixes {
		b.WriteString(" `" + p + "` |")
	}
	b.WriteString(" index `" + dynamo.IndexName + "` |\n|---|" + strings.Repeat("---|", len(ledgerPrefixes)+1) + "\n")
	itemActions := slices.Concat(ledgerReadActions, ledgerWriteActions)
	for _, p := range principalOrder(all) {
		cells := make([]map[string]bool, len(ledgerPrefixes)+1) // action: restricted to named attributes
		for i := range cells {
			cells[i] = map[string]bool{}
		}
		add := func(i int, a string, named bool) {
			if r, ok := cells[i][a]; !ok || r {
				cells[i][a] = named
			}
		}
		for _, s := range all[p] {
			if s["Effect"] != "Allow" {
				continue
			}
			_, named := conditionValues(s, "dynamodb:Attributes")
			keys, restricted := conditionValues(s, "dynamodb:LeadingKeys")
			for _, r := range strs(s["Resource"]) {
				for _, a := range itemActions {
					if !allowsAction(s, a) {
						continue
					}
					if strings.HasPrefix(r, tableARN+"/index/") {
						add(len(ledgerPrefixes), a, named)
						continue
					}
					if !mayBeTable(r) {
						continue
					}
					for i, prefix := range ledgerPrefixes {
						if !restricted || slices.ContainsFunc(keys, func(k string) bool { return mayStartWith(k, prefix) }) {
							add(i, a, named)
						}
					}
				}
			}
		}
		if !slices.ContainsFunc(cells, func(c map[string]bool) bool { return len(c) > 0 }) {
			continue
		}
		title, ok := principalTitles[p]
		if !ok {
			title = "`" + p + "`"
		}
		b.WriteString("| " + title + " |")
		for _, c := range cells {
			var l []string
			for _, a := range slices.Sorted(maps.Keys(c)) {
				name := strings.TrimPrefix(a, "dynamodb:")
				if c[a] {
					name += "†"
				}
				l = append(l, name)
			}
			if len(l) == 0 {
				l = []string{"–"}
			}
			b.WriteString(" " + strings.Join(l, ", ") + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// sidOf sorts statements without a Sid (those CDK adds) last.
func sidOf(s tmpl) string {
	if id, ok := s["Sid"].(string); ok {
		return id
	}
	return "~"
}

// isItemAction: a DynamoDB action on items, which LeadingKeys can bound.
func isItemAction(a string) bool {
	return slices.Contains(ledgerReadActions, a) || slices.Contains(ledgerWriteActions, a)
}

func rawList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// actionsText groups actions by service: "dynamodb: GetItem, PutItem".
func actionsText(actions []string) string {
	var parts []string
	var service string
	for _, a := range actions {
		svc, name, _ := strings.Cut(a, ":")
		if svc != service {
			parts = append(parts, svc+": "+name)
			service = svc
			continue
		}
		parts[len(parts)-1] += ", " + name
	}
	return strings.Join(parts, "; ")
}

// arnPrefix is an ARN's partition, region and account, as the template
// writes them.
var arnPrefix = regexp.MustCompile(`^arn:\$\{AWS::Partition\}:([a-z0-9-]+):\$\{AWS::Region\}:\$\{AWS::AccountId\}:`)

// resourceName names a statement's resource: the ledger table, an index,
// a function's alias or log group, a role, else its ARN without
// partition, region and account.
func resourceName(pj tmpl, v any) string {
	r := text(v)
	switch {
	case r == tableARN:
		return "ledger table"
	case strings.HasPrefix(r, tableARN+"/index/"):
		return "index `" + strings.TrimPrefix(r, tableARN+"/index/") + "`"
	case r == "${SolutionExecutionRole.Arn}":
		return "Solution execution role"
	}
	if id := symbol(getAttID(v, "Arn")); strings.HasSuffix(id, "Logs") {
		if spec := specByLogicalID(strings.TrimSuffix(id, "Logs")); spec.Name != "" {
			return "log group of " + spec.Name
		}
	}
	if t := invokeTarget(pj, v); t != r {
		return "`" + t + "`"
	}
	return "`" + arnPrefix.ReplaceAllString(r, "$1:") + "`"
}

// conditionsText renders a statement's conditions but its item prefixes.
func conditionsText(s tmpl) string {
	c, _ := s["Condition"].(tmpl)
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(c)) {
		block := c[op].(tmpl)
		for _, key := range slices.Sorted(maps.Keys(block)) {
			if key == "dynamodb:LeadingKeys" {
				continue
			}
			values := strs(block[key])
			if l, ok := block[key].([]any); ok { // in the template's order
				values = nil
				for _, x := range l {
					values = append(values, text(x))
				}
			}
			name := strings.TrimPrefix(key, "dynamodb:")
			switch {
			case key == "dynamodb:Attributes" && slices.Equal(values, ledgertable.ReadAttributes):
				// By name: the list follows the ledger's rows.
				parts = append(parts, "only attributes of `ledger.ReadAttributes`")
			case key == "dynamodb:Attributes" && strings.HasPrefix(op, "ForAllValues:"):
				parts = append(parts, "only attributes "+strings.Join(values, ", "))
			case key == "ses:Recipients" && op == "ForAllValues:StringLike":
				// The test's allow-list stands for any: its entries as IAM
				// patterns, in canonical form.
				parts = append(parts, "every ses:Recipients like an entry of `recipientAllow` as IAM patterns (the test's: "+strings.Join(values, ", ")+")")
			case key == "aws:ResourceTag/"+ToolTagKey && slices.Equal(values, []string{"test"}):
				// The tag's value is the stage (the test's "test").
				parts = append(parts, name+" = <stage>")
			case op == "StringEquals" || op == "Bool":
				parts = append(parts, name+" = "+strings.Join(values, " or "))
			case op == "StringEqualsIfExists":
				parts = append(parts, name+" = "+strings.Join(values, " or ")+" when sent")
			case op == "ArnLike" || op == "StringLike":
				parts = append(parts, name+" like "+strings.Join(values, " or "))
			default:
				parts = append(parts, op+" "+name+": "+strings.Join(values, ", "))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// cell writes the test configuration's values as what they stand for, and
// escapes the table's separator.
var cell = strings.NewReplacer(
	"toolgate-test", "toolgate-<stage>",
	"toolgate/test/", "toolgate/<stage>/",
	"identity/example.org", "identity/<sender identity>",
	"noreply@mail.example.org", "<sender>",
)
