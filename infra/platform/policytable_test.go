package platform

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

	"github.com/toolgate/toolgate/infra/toolfunction"
	"github.com/toolgate/toolgate/shared/table"
)

// update rewrites the generated parts of docs/infra.md from the templates
// (go test ./infra/platform -run TestPolicyTable -update), as go/printer's golden
// files are.
var update = flag.Bool("update", false, "rewrite docs/infra.md's policy table from the synthesized template")

// docsInfra is docs/infra.md, from the package directory.
const docsInfra = "../../docs/infra.md"

// The policy table's place in docs/infra.md.
const (
	tableStart = "<!-- policy-table: generated from the synthesized template by go test ./infra/platform -run TestPolicyTable -update; the test fails when the two differ -->\n"
	tableEnd   = "<!-- end of policy-table -->\n"
)

// The place in docs/infra.md ("Ledger items, per key prefix") of the
// tables generated from the table's declaration (shared/table).
const (
	accessesStart = "<!-- ledger-accesses: generated from shared/table by go test ./infra/platform -run TestPolicyTable -update; the test fails when the two differ -->\n"
	accessesEnd   = "<!-- end of ledger-accesses -->\n"
)

// TestPolicyTable: docs/infra.md's table of every role and managed policy
// (statement by statement: actions, resources, item prefixes, conditions)
// is the synthesized template's, and its tables of the ledger's accesses
// are the declaration's (accessMatrix, accessTable), so neither drifts; a
// template widened by a statement no longer matches it.
func TestPolicyTable(t *testing.T) {
	doc, err := os.ReadFile(docsInfra)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []struct{ start, end, want string }{
		{accessesStart, accessesEnd, accessMatrix() + "\n" + accessTable()},
		{tableStart, tableEnd, policyTable(platformJSON)},
	} {
		i, j := bytes.Index(doc, []byte(part.start)), bytes.Index(doc, []byte(part.end))
		if i < 0 || j < i {
			t.Fatalf("%s has no generated part between %q and %q", docsInfra, part.start, part.end)
		}
		got := string(doc[i+len(part.start) : j])
		if *update && got != part.want {
			doc = slices.Concat(doc[:i+len(part.start)], []byte(part.want), doc[j:])
			if err := os.WriteFile(docsInfra, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			got = part.want
		}
		if d := cmp.Diff(part.want, got); d != "" {
			t.Errorf("%s's part after %q is not generated (-want +docs); go test ./infra/platform -run TestPolicyTable -update rewrites it:\n%s", docsInfra, part.start, d)
		}
	}
	// A table-wide write added to the fetch role shows.
	pj := clone(platformJSON)
	addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
	if d := cmp.Diff(policyTable(pj), policyTable(platformJSON)); !strings.Contains(d, "| `structured-data-fetch` | – | dynamodb: PutItem | ledger table | any |") {
		t.Errorf("a widened fetch role does not show in the table:\n%s", d)
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
	// The credentials key's policy (credentials.go): who may do what with
	// the key, whatever their roles say.
	_, stmts := keyPolicy(pj)
	for _, s := range stmts {
		sid := "–"
		if id, ok := s["Sid"].(string); ok {
			sid = "`" + id + "`"
		}
		fmt.Fprintf(&b, "| credentials key policy: %s | %s | %s | credentials key |  | %s |\n", strings.Join(keyPrincipals(pj, s), ", "), sid,
			actionsText(strs(s["Action"])), conditionsText(s))
	}
	return cell.Replace(b.String())
}

// accessPrincipals are the declaration's principals, in the order
// table.Accesses first names them.
func accessPrincipals() []table.Principal {
	var out []table.Principal
	for _, a := range table.Accesses {
		for _, p := range a.By {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// principalTitle names a principal of the declaration, with the functions
// it stands for (functionSpec.Principal) when they are other than its
// name and withFunctions is set.
func principalTitle(p table.Principal, withFunctions bool) string {
	var fns []string
	for _, s := range functionSpecs {
		if s.Principal == p {
			fns = append(fns, s.Name)
		}
	}
	switch {
	case p == table.Operator:
		return principalTitles["operator"]
	case len(fns) == 1 && fns[0] == string(p):
		return "`" + fns[0] + "`"
	case !withFunctions || len(fns) == 0: // a principal whose function is not deployed yet
		return string(p)
	}
	return string(p) + " (`" + strings.Join(fns, "`, `") + "`)"
}

// accessMatrix renders, for every principal of the declaration, the item
// actions it has on each key prefix and on each index; † marks an action
// allowed only on the attributes its access names.
func accessMatrix() string {
	var b strings.Builder
	b.WriteString("| principal |")
	for _, prefix := range table.Prefixes() {
		var kinds []string
		for _, k := range table.KindsOf(prefix) {
			kinds = append(kinds, k.Name)
		}
		fmt.Fprintf(&b, " `%s` (%s) |", prefix, strings.Join(kinds, ", "))
	}
	for _, ix := range table.Indexes {
		fmt.Fprintf(&b, " index `%s` |", ix.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(table.Prefixes())+len(table.Indexes)) + "\n")
	for _, p := range accessPrincipals() {
		b.WriteString("| " + principalTitle(p, true) + " |")
		cell := func(reaches func(table.Access) bool) {
			named := map[table.Action]bool{} // action: only on named attributes
			for _, a := range table.Of(p) {
				for _, x := range a.Actions {
					if r, ok := named[x]; reaches(a) && (!ok || r) {
						named[x] = a.Attributes != nil
					}
				}
			}
			var l []string
			for _, x := range slices.Sorted(maps.Keys(named)) {
				name := strings.TrimPrefix(string(x), "dynamodb:")
				if named[x] {
					name += "†"
				}
				l = append(l, name)
			}
			if l == nil {
				l = []string{"–"}
			}
			b.WriteString(" " + strings.Join(l, ", ") + " |")
		}
		for _, prefix := range table.Prefixes() {
			cell(func(a table.Access) bool { return slices.Contains(a.Prefixes(), prefix) })
		}
		for _, ix := range table.Indexes {
			cell(func(a table.Access) bool { return a.Index == ix })
		}
		b.WriteString("\n")
	}
	return b.String()
}

// accessTable renders every access of the declaration, one row each: the
// statement it is, its principals, the items it reaches, its actions, what
// its conditions bound besides the items, and the code that makes it.
func accessTable() string {
	var b strings.Builder
	b.WriteString("| statement | principals | items | actions | conditions | code |\n|---|---|---|---|---|---|\n")
	for _, a := range table.Accesses {
		var by, items, actions, conds []string
		for _, p := range a.By {
			by = append(by, principalTitle(p, false))
		}
		for _, prefix := range a.Prefixes() {
			var kinds []string
			for _, k := range a.On {
				if k.Prefix == prefix {
					kinds = append(kinds, k.Name)
				}
			}
			items = append(items, "`"+prefix+"` ("+strings.Join(kinds, ", ")+")")
		}
		if a.Index != nil {
			items = append(items, "index `"+a.Index.Name+"`")
		}
		for _, x := range a.Actions {
			actions = append(actions, strings.TrimPrefix(string(x), "dynamodb:"))
		}
		switch {
		case slices.Equal(a.Attributes, table.ReadAttributes):
			conds = append(conds, "only attributes of `table.ReadAttributes`")
		case a.Attributes != nil:
			conds = append(conds, "only attributes "+strings.Join(a.Attributes, ", "))
		case a.Index != nil:
			conds = append(conds, "what the index projects")
		default:
			conds = append(conds, "whole items")
		}
		if a.ReturnValues != "" {
			conds = append(conds, "ReturnValues = "+a.ReturnValues)
		}
		if a.SpecificAttributes {
			conds = append(conds, "Select = SPECIFIC_ATTRIBUTES when sent")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s: %s |\n", a.Sid, strings.Join(by, ", "), strings.Join(items, ", "),
			strings.Join(actions, ", "), strings.Join(conds, "; "), a.Code, a.Doc)
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
			case key == "dynamodb:Attributes" && slices.Equal(values, table.ReadAttributes):
				// By name: the list follows the ledger's rows.
				parts = append(parts, "only attributes of `table.ReadAttributes`")
			case key == "dynamodb:Attributes" && strings.HasPrefix(op, "ForAllValues:"):
				parts = append(parts, "only attributes "+strings.Join(values, ", "))
			case key == "ses:Recipients" && op == "ForAllValues:StringLike":
				// The test's allow-list stands for any: its entries as IAM
				// patterns, in canonical form. Review notices have their
				// own list.
				list := "recipientAllow"
				if s["Sid"] == "SendReviewNoticesAsTheSenderOnly" {
					list = "reviewNotices"
				}
				parts = append(parts, "every ses:Recipients like an entry of `"+list+"` as IAM patterns (the test's: "+strings.Join(values, ", ")+")")
			case key == "aws:ResourceTag/"+toolfunction.TagKey && slices.Equal(values, []string{"test"}):
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
