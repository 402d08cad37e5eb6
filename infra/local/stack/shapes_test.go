package stack_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/table"
)

// The structured-data-fetch function, as the stack runs it, learns the
// shape of its results' data for the data server's host: one shape item
// naming the host, with the members and types its answers had, and none
// of their values or data-like keys, which neither the item nor the
// function's logs hold.
//
// The shape is per host, and the stack's data server is every test's
// host, so the item is the union of this test's answers with the other
// tests' (members this test's answers always have may be optional in it).
// Learning is bounded in time (dispatch.LearnTimeout) and a concurrent
// writer may win the conditional update: an update dropped for either
// reason is logged and the next call learns again, so the run is
// repeated, at most three times, until the shape holds this test's members.
func TestFetchFunctionLearnsTheDataShapeOfItsHost(t *testing.T) {
	e := sharedEnv(t)
	const canary = "cnry-shape-91d0"
	path := "/" + fresh("shapes") + ".json"
	var big []string
	for i := range observed.MaxKeys + 3 {
		big = append(big, fmt.Sprintf(`"%s_%d":%d`, strings.ReplaceAll(canary, "-", "_"), i, i))
	}
	e.route(t, path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"title":"`+canary+`","count":4242,"by_mail":{"`+canary+`@example.com":true},"big":{`+strings.Join(big, ",")+`}}`)
	}))
	name := fresh("e2e-shapes")
	e.publish(t, name, `solution: `+name+`
version: 1
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA`+path+`"}
`)
	host := strings.ToLower(strings.TrimPrefix(e.st.DataURL, "http://"))
	var shape string
	for attempt := 0; attempt < 3 && shape == ""; attempt++ {
		run := e.start(t, name, map[string]any{})
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		shape = e.learnedShape(t, host, canary)
	}
	// The members of this test's answers, each with the types it had; a
	// data-like object is a map (v), its keys not stored.
	var got struct {
		M map[string]struct {
			T []string        `json:"t"`
			V json.RawMessage `json:"v"`
			M json.RawMessage `json:"m"`
		} `json:"m"`
	}
	if err := json.Unmarshal([]byte(shape), &got); err != nil {
		t.Fatalf("the shape learned for %s, %q: %v", host, shape, err)
	}
	for member, want := range map[string]string{"title": "string", "count": "integer", "by_mail": "object", "big": "object"} {
		m, ok := got.M[member]
		if !ok || !slices.Contains(m.T, want) {
			t.Errorf("the shape learned for %s, %q, lacks %s of type %s", host, shape, member, want)
		}
	}
	for _, member := range []string{"by_mail", "big"} {
		if m := got.M[member]; len(m.V) == 0 || len(m.M) != 0 {
			t.Errorf("%s is not a map type, its keys unstored, in %q", member, shape)
		}
	}
	if !strings.Contains(string(got.M["big"].V), `"integer"`) || !strings.Contains(string(got.M["by_mail"].V), `"boolean"`) {
		t.Errorf("the map types lack their values' types: %q", shape)
	}
	for _, p := range e.st.Processes() {
		if strings.HasPrefix(p.Name, "rie:structured-data-fetch") {
			logs := p.Stdout() + p.Stderr()
			if strings.Contains(logs, canary) || strings.Contains(logs, "4242") {
				t.Errorf("%s's logs hold a value of the result", p.Name)
			}
			for _, class := range []string{"result", "bad-item", "panic", "read", "write"} {
				if strings.Contains(logs, `"error_class":"`+class+`"`) && strings.Contains(logs, "shape not learned") {
					t.Errorf("%s's logs say a shape was not learned for a reason other than time or a concurrent writer (%s)", p.Name, class)
				}
			}
		}
	}
}

// learnedShape scans the stack's table for the shape items of host and
// returns the shape of the one holding this test's "big" member (no
// other test's answers have it; "" when none does yet), failing t when any of them holds canary.
func (e *env) learnedShape(t *testing.T, host, canary string) string {
	t.Helper()
	var shape string
	scan := dynamodb.NewScanPaginator(local.DynamoDB(e.st.Dynamo.Endpoint()), &dynamodb.ScanInput{TableName: aws.String(stack.Table)})
	for scan.HasMorePages() {
		page, err := scan.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			pk, _ := it[table.PK].(*dynamodbtypes.AttributeValueMemberS)
			h, _ := it["from_host"].(*dynamodbtypes.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, table.ShapePrefix) || h == nil || h.Value != host {
				continue
			}
			if strings.Contains(fmt.Sprint(it), canary) || strings.Contains(fmt.Sprint(it), strings.ReplaceAll(canary, "-", "_")) {
				t.Errorf("the shape item holds the canary: %v", it)
			}
			if s, ok := it["shape"].(*dynamodbtypes.AttributeValueMemberS); ok && strings.Contains(s.Value, `"big"`) {
				shape = s.Value
			}
		}
	}
	return shape
}
