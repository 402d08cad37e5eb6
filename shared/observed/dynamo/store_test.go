package dynamo_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// The package's tests share one dynalite, each on a table of its own.
func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }

func observe(t *testing.T, result string) *observed.Shape {
	t.Helper()
	s, err := observed.Observe([]byte(result))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A shape is created once (a second create's condition fails), updated
// only from the version read (a stale version's condition fails), read
// back as written, and its learned_from adds each update's count.
func TestAShapeIsUpdatedOnlyFromTheVersionRead(t *testing.T) {
	_, db, name := localtest.SharedTable(t, "shapes")
	at := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	s := dynamo.New(db, name).WithClock(func() time.Time { return at })
	id := observed.Identity{Tool: "structured-data-fetch", Source: observed.SourceCatalog, OutputSchemaDigest: "sha256:00", Host: "api.example.com"}
	ctx := t.Context()
	if shape, v, err := s.Get(ctx, id); shape != nil || v != 0 || err != nil {
		t.Fatalf("no item: %v %d %v", shape, v, err)
	}
	first := observe(t, `{"a":1}`)
	if ok, err := s.Put(ctx, id, first, 0, 3); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	if ok, err := s.Put(ctx, id, first, 0, 1); ok || err != nil {
		t.Fatalf("a second create: %v %v", ok, err)
	}
	got, v, err := s.Get(ctx, id)
	if err != nil || v != 1 {
		t.Fatalf("read: %d %v", v, err)
	}
	if a, b := mustMarshal(t, got), mustMarshal(t, first); a != b {
		t.Fatalf("read %s, wrote %s", a, b)
	}
	second := first.Clone()
	second.Merge(observe(t, `{"a":1,"b":"x"}`))
	if ok, err := s.Put(ctx, id, second, 1, 2); !ok || err != nil {
		t.Fatalf("update: %v %v", ok, err)
	}
	if ok, err := s.Put(ctx, id, second, 1, 1); ok || err != nil {
		t.Fatalf("a stale update: %v %v", ok, err)
	}
	item, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Shape.Key(id.PartitionKey())},
			table.SK: &types.AttributeValueMemberS{Value: table.ShapeSK(id.Host)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": "2", "learned_from": "5", "tool": "structured-data-fetch", "from_host": "api.example.com",
		"updated_at": "2026-12-03T20:00:00Z"}
	for k, w := range want {
		var g string
		switch v := item.Item[k].(type) {
		case *types.AttributeValueMemberS:
			g = v.Value
		case *types.AttributeValueMemberN:
			g = v.Value
		}
		if g != w {
			t.Errorf("%s = %q, want %q", k, g, w)
		}
	}
	for k := range item.Item {
		if table.Shape.Attribute(k) == nil && k != table.PK && k != table.SK {
			t.Errorf("undeclared attribute %s", k)
		}
	}
}

// An item whose shape does not read is ErrBadItem, never a shape.
func TestABadShapeItemIsRefused(t *testing.T) {
	_, db, name := localtest.SharedTable(t, "shapes-bad")
	id := observed.Identity{Tool: "p-echo", Source: "platform:x"}
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Shape.Key(id.PartitionKey())}, table.SK: &types.AttributeValueMemberS{Value: table.ShapeSK(id.Host)},
		"shape": &types.AttributeValueMemberS{Value: `{"t":["string"],"enum":["x"]}`}, "version": &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if shape, _, err := dynamo.New(db, name).Get(t.Context(), id); shape != nil || !errors.Is(err, observed.ErrBadItem) {
		t.Fatalf("%v %v", shape, err)
	}
}

func mustMarshal(t *testing.T, s *observed.Shape) string {
	t.Helper()
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// One Query of a tool's partition lists every host it learned from, and
// nothing of another tool or another output schema; an item that does
// not read is skipped.
func TestListReadsEveryHostOfOneToolsPartition(t *testing.T) {
	_, db, name := localtest.SharedTable(t, "shapes")
	s := dynamo.New(db, name)
	ctx := t.Context()
	base := observed.Identity{Tool: "structured-data-fetch", Source: observed.SourceCatalog, OutputSchemaDigest: "sha256:00"}
	for i, host := range []string{"b.example", "a.example:8443", "c.example"} {
		id := base
		id.Host = host
		if ok, err := s.Put(ctx, id, observe(t, `{"n":1}`), 0, int64(i+1)); !ok || err != nil {
			t.Fatalf("put %s: %v %v", host, ok, err)
		}
	}
	other := base
	other.OutputSchemaDigest, other.Host = "sha256:01", "a.example"
	if ok, err := s.Put(ctx, other, observe(t, `[1]`), 0, 1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	bad := base
	bad.Host = "d.example"
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Shape.Key(bad.PartitionKey())}, table.SK: &types.AttributeValueMemberS{Value: table.ShapeSK(bad.Host)},
		"shape": &types.AttributeValueMemberS{Value: `{"t":["string"],"x":"secret"}`}, "learned_from": &types.AttributeValueMemberN{Value: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	got, skipped, err := s.List(ctx, base)
	if err != nil || skipped != 1 || len(got) != 3 {
		t.Fatalf("list: %d shapes, %d skipped, %v", len(got), skipped, err)
	}
	for i, want := range []struct {
		host string
		n    int64
	}{{"a.example:8443", 2}, {"b.example", 1}, {"c.example", 3}} {
		if got[i].Host != want.host || got[i].LearnedFrom != want.n || mustMarshal(t, got[i].Shape) != `{"t":["object"],"m":{"n":{"t":["integer"]}}}` {
			t.Errorf("%d: %+v", i, got[i])
		}
	}
	whole := observed.Identity{Tool: "crm.lookup", Source: "mcp:https://crm.example#lookup"}
	if ok, err := s.Put(ctx, whole, observe(t, `{"id":1}`), 0, 5); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got, _, err := s.List(ctx, whole); err != nil || len(got) != 1 || got[0].Host != "" || got[0].LearnedFrom != 5 {
		t.Fatalf("whole result: %+v %v", got, err)
	}
}
