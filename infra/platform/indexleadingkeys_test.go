package platform

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/table"
)

// TestIndexLeadingKeys: the index Query statements (review-decision's
// ListReviews, the Operator's LedgerIndexReads) name the index's partition
// key prefix in dynamodb:LeadingKeys only with toolgate:indexLeadingKeys.
// Off (the test configuration), they have none; on, they have it and keep
// their dynamodb:Attributes, every other ledger statement is the same,
// dynamo.Store.List's Query is still allowed, and an index Query of
// another partition key is denied.
func TestIndexLeadingKeys(t *testing.T) {
	cfg := testConfig()
	cfg.IndexLeadingKeys = true
	var on tmpl
	if err := try(func() {
		_, platform := NewApp(awscdk.NewApp(nil), cfg, filepath.Join("testdata", "assets"))
		on = *assertions.Template_FromStack(platform.Stack, nil).ToJSON()
	}); err != nil {
		t.Fatal(err)
	}
	var list ddbRequest
	for _, r := range codeRequests(t)[fnReviewDecision] {
		if r.What == "dynamo.Store.List" {
			list = r
		}
	}
	other := list
	other.LeadingKeys = []string{table.Review.Key(testReview)}
	ledgerOnly := func(all map[string][]tmpl, index bool) map[string]string {
		out := map[string]string{}
		for p, stmts := range all {
			for _, s := range stmts {
				onIndex := slices.ContainsFunc(strs(s["Resource"]), func(r string) bool { return strings.HasPrefix(r, tableARN+"/index/") })
				if slices.ContainsFunc(strs(s["Resource"]), mayBeTable) && onIndex == index {
					out[p+" "+text(s["Sid"])] = text(s)
				}
			}
		}
		return out
	}
	if d := cmp.Diff(ledgerOnly(principalStatements(platformJSON), false), ledgerOnly(principalStatements(on), false)); d != "" {
		t.Errorf("the flag changes statements on the table (-off +on):\n%s", d)
	}
	for _, c := range []struct {
		name string
		pj   tmpl
		keys []string
	}{{"off", platformJSON, nil}, {"on", on, []string{table.ReviewsByStatus.PKPrefix + "*"}}} {
		all := principalStatements(c.pj)
		var sids []string
		for p, stmts := range all {
			for _, s := range stmts {
				if !slices.Contains(strs(s["Resource"]), reviewIndexARN) {
					continue
				}
				sids = append(sids, p+" "+text(s["Sid"]))
				if keys, _ := conditionValues(s, "dynamodb:LeadingKeys"); !slices.Equal(keys, c.keys) {
					t.Errorf("%s: %s %s: dynamodb:LeadingKeys %v, want %v", c.name, p, text(s["Sid"]), keys, c.keys)
				}
				if attrs, _ := conditionValues(s, "dynamodb:Attributes"); s["Sid"] == "ListReviews" && !slices.Equal(attrs, sorted(table.ReviewsByStatus.Attributes()...)) {
					t.Errorf("%s: ListReviews: dynamodb:Attributes %v, want the index's", c.name, attrs)
				}
			}
		}
		slices.Sort(sids)
		if want := []string{"operator LedgerIndexReads", fnReviewDecision + " ListReviews"}; !slices.Equal(sids, want) {
			t.Errorf("%s: index statements %v, want %v", c.name, sids, want)
		}
		if len(allowedBy(all[fnReviewDecision], list)) == 0 {
			t.Errorf("%s: denied: %s", c.name, list)
		}
		if got := len(allowedBy(all[fnReviewDecision], other)) > 0; got != (c.keys == nil) {
			t.Errorf("%s: %s allowed: %v", c.name, other, got)
		}
	}
}
