package stack_test

import (
	"fmt"
	"io"
	"net/http"
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
	run := e.start(t, name, map[string]any{})
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	host := strings.ToLower(strings.TrimPrefix(e.st.DataURL, "http://"))
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
			if s, ok := it["shape"].(*dynamodbtypes.AttributeValueMemberS); ok && strings.Contains(s.Value, `"title"`) {
				shape = s.Value
			}
		}
	}
	for _, want := range []string{`"title":{"t":["string"]}`, `"count":{"t":["integer"]}`, `"by_mail":{"t":["object"],"v":{"t":["boolean"]}}`, `"big":{"t":["object"],"v":{"t":["integer"]}}`} {
		if !strings.Contains(shape, want) {
			t.Errorf("the shape learned for %s, %q, lacks %s", host, shape, want)
		}
	}
	for _, p := range e.st.Processes() {
		if strings.HasPrefix(p.Name, "rie:structured-data-fetch") {
			logs := p.Stdout() + p.Stderr()
			if strings.Contains(logs, canary) || strings.Contains(logs, "4242") {
				t.Errorf("%s's logs hold a value of the result", p.Name)
			}
			if strings.Contains(logs, "shape not learned") {
				t.Errorf("%s's logs say a shape was not learned", p.Name)
			}
		}
	}
}
