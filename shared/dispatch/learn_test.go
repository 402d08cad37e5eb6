package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/observed"
	observeddynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/tracing"
)

// learnToolset is the test toolset with p-learn, a platform tool that
// declares no output schema ({}: its results' shape is learned), registered
// on e's ledger.
func learnToolset(t testing.TB, e *env) *toolset.Toolset {
	t.Helper()
	ts := testToolset(t, 100)
	pt := ts.Tools["test-echo"]
	pt.Function, pt.TimeoutSeconds, pt.OutputSchema = "arn:aws:lambda:us-east-1:000000000000:function:p-learn", 10, json.RawMessage(`{}`)
	ts.Tools["p-learn"] = pt
	return registerAs(t, e, ts)
}

// answers is a tool that answers each call with the next of its results
// (the last one again once they run out).
type answers struct {
	n       atomic.Int64
	results []string
}

func (a *answers) run(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
	i := min(int(a.n.Add(1))-1, len(a.results)-1)
	return json.RawMessage(a.results[i]), nil
}

// learningDispatcher is a PlatformTools dispatcher on e learning through
// shapes (a store on its own counting client), logging into log.
func learningDispatcher(t *testing.T, e *env, shapes Shapes, run toolcall.Func, log *bytes.Buffer, mod ...any) *Dispatcher {
	t.Helper()
	mod = append(mod, func(c *Config) { c.Mode = PlatformTools }, func(d *Deps) {
		d.Shapes = shapes
		if log != nil {
			d.Log = slog.New(slog.NewJSONHandler(log, nil))
		}
	})
	return e.dispatcher(t, "", run, mod...)
}

// shapeItems are the table's shape items, whole, by a Scan.
func shapeItems(t *testing.T, e *env) []map[string]types.AttributeValue {
	t.Helper()
	out, err := e.db.API.(*dynamodb.Client).Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.store.Table())})
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]types.AttributeValue
	for _, it := range out.Items {
		if pk, ok := it[table.PK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, table.ShapePrefix) {
			items = append(items, it)
		}
	}
	return items
}

// storedShape is the one shape item's shape and version.
func storedShape(t *testing.T, e *env) (string, string) {
	t.Helper()
	items := shapeItems(t, e)
	if len(items) != 1 {
		t.Fatalf("%d shape items", len(items))
	}
	return items[0]["shape"].(*types.AttributeValueMemberS).Value, items[0]["version"].(*types.AttributeValueMemberN).Value
}

// A result's shape is written once when first seen, never again while
// results add nothing (one read per container, then no request at all),
// and again when a result adds a member: a conditional update from the
// version read.
func TestLearningWritesOnceThenOnlyWhenAResultAddsSomething(t *testing.T) {
	e := newEnv(t)
	ts := learnToolset(t, e)
	shapeDB := &countingDB{API: e.db.API}
	a := &answers{results: []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`, `{"id":3,"name":"c"}`, `{"id":4,"name":"d","extra":[true]}`}}
	d := learningDispatcher(t, e, observeddynamo.New(shapeDB, e.store.Table()), a.run, nil)
	call := func() {
		t.Helper()
		if _, err := d.Handle(t.Context(), envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)); err != nil {
			t.Fatal(err)
		}
	}
	call()
	if g, u := shapeDB.gets.Load(), shapeDB.updates.Load(); g != 1 || u != 1 {
		t.Fatalf("first result: %d reads, %d writes; want 1, 1", g, u)
	}
	call()
	call()
	if g, u := shapeDB.gets.Load(), shapeDB.updates.Load(); g != 1 || u != 1 {
		t.Fatalf("results of the same shape: %d reads, %d writes in all; want 1, 1", g, u)
	}
	shape, version := storedShape(t, e)
	if version != "1" || shape != `{"t":["object"],"m":{"id":{"t":["integer"]},"name":{"t":["string"]}}}` {
		t.Fatalf("stored %s v%s", shape, version)
	}
	call()
	if u := shapeDB.updates.Load(); u != 2 {
		t.Fatalf("a new member: %d writes in all, want 2", u)
	}
	shape, version = storedShape(t, e)
	if version != "2" || !strings.Contains(shape, `"extra":{"t":["array"],"o":true,"i":{"t":["boolean"]}}`) {
		t.Fatalf("stored %s v%s", shape, version)
	}
	learned := shapeItems(t, e)[0]["learned_from"].(*types.AttributeValueMemberN).Value
	if learned != "4" {
		t.Errorf("learned_from %s, want 4", learned)
	}
	// A replay of a completed call learns nothing, and reads nothing.
	payload := envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)
	for range 2 {
		if _, err := d.Handle(t.Context(), payload); err != nil {
			t.Fatal(err)
		}
	}
	if g, u := shapeDB.gets.Load(), shapeDB.updates.Load(); g != 1 || u != 2 {
		t.Errorf("after a replay: %d reads, %d writes", g, u)
	}
}

// Two containers learning the same tool: the one whose update comes from
// a version another already replaced has its condition fail; the update
// is dropped and logged with the tool and its class only, the call
// succeeds and is recorded, and the container reads the item again at
// its next use, which then adds what it saw.
func TestAConflictingShapeUpdateIsDroppedWithoutFailingTheCall(t *testing.T) {
	e := newEnv(t)
	ts := learnToolset(t, e)
	store := observeddynamo.New(e.db.API, e.store.Table())
	a := &answers{results: []string{`{"a":1}`, `{"a":1,"b":"x"}`}}
	b := &answers{results: []string{`{"a":1}`, `{"a":1,"c":null}`}}
	var logB bytes.Buffer
	da := learningDispatcher(t, e, store, a.run, nil)
	db := learningDispatcher(t, e, store, b.run, &logB)
	call := func(d *Dispatcher) json.RawMessage {
		t.Helper()
		payload := envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)
		if _, err := d.Handle(t.Context(), payload); err != nil {
			t.Fatal(err)
		}
		return payload
	}
	call(da) // A creates v1
	call(db) // B reads v1: nothing new
	call(da) // A: b is new, v2
	payload := call(db)
	if !strings.Contains(logB.String(), `"error_class":"conflict"`) {
		t.Fatalf("no conflict logged: %s", logB.String())
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded {
		t.Fatalf("the call whose update was dropped: rows %+v", rows)
	}
	if _, v := storedShape(t, e); v != "2" {
		t.Fatalf("version %s after the dropped update", v)
	}
	call(db) // B reads v2 again and adds c: v3
	shape, v := storedShape(t, e)
	if v != "3" || !strings.Contains(shape, `"b":`) || !strings.Contains(shape, `"c":`) {
		t.Fatalf("stored %s v%s", shape, v)
	}
}

// A store that refuses every request (a table that does not exist) never
// changes a call: it succeeds, its row is recorded, and the log says the
// shape was not learned, with the tool and the class only.
func TestACallSucceedsAndIsRecordedWhenLearningFails(t *testing.T) {
	e := newEnv(t)
	ts := learnToolset(t, e)
	var log bytes.Buffer
	a := &answers{results: []string{`{"id":1}`}}
	d := learningDispatcher(t, e, observeddynamo.New(e.db.API, "no-such-table"), a.run, &log)
	payload := envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)
	out, err := d.Handle(t.Context(), payload)
	if err != nil || string(out) != `{"id":1}` {
		t.Fatalf("%s %v", out, err)
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded {
		t.Fatalf("rows %+v", rows)
	}
	if !strings.Contains(log.String(), `"msg":"shape not learned","tool":"p-learn","error_class":"read"`) {
		t.Fatalf("log: %s", log.String())
	}
	if strings.Contains(log.String(), "no-such-table") || strings.Contains(log.String(), "ResourceNotFound") {
		t.Errorf("the log holds the store's error text: %s", log.String())
	}
}

// Canary: results with distinctive values, data-like keys over the key
// limit and keys that are no plain identifier, through a traced, logging
// dispatcher: no canary reaches a shape item, the log or a span; the
// item holds the map without its keys.
func TestLearnedShapesHoldNoValueCanary(t *testing.T) {
	e := newEnv(t)
	ts := learnToolset(t, e)
	const canary = "cnry7f3a"
	var many []string
	for i := range observed.MaxKeys + 5 {
		many = append(many, fmt.Sprintf(`"%s_k%d":{"v":"%s-%d"}`, canary, i, canary, i))
	}
	results := []string{
		`{"email":"` + canary + `@example.com","n":7777777,"by_user":{"` + canary + `@example.com":{"seen":"` + canary + `"}},"big":{` + strings.Join(many, ",") + `}}`,
		`{"email":"other-` + canary + `","n":31415.926,"by_user":{"id-` + canary + `":{"seen":"x"}},"big":{},"list":["` + canary + `",{"` + canary + ` key":1}]}`,
	}
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	tr := tracing.New(rec.URL(), "lambda-tool", nil)
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	var log bytes.Buffer
	a := &answers{results: results}
	d := learningDispatcher(t, e, observeddynamo.New(e.db.API, e.store.Table()), a.run, &log, func(c *Config) { c.Tracer = tr })
	for range results {
		if _, err := d.Handle(t.Context(), envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)); err != nil {
			t.Fatal(err)
		}
	}
	items := shapeItems(t, e)
	if len(items) != 1 {
		t.Fatalf("%d shape items", len(items))
	}
	item := fmt.Sprint(items[0])
	spans, err := json.Marshal(rec.Spans())
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Spans()) == 0 {
		t.Fatal("no span was exported: the canary would prove nothing of spans")
	}
	for what, text := range map[string]string{"the shape item": item, "the log": log.String(), "the spans": string(spans)} {
		for _, c := range []string{canary, "7777777", "31415"} {
			if strings.Contains(text, c) {
				t.Errorf("%s holds %s: %s", what, c, text)
			}
		}
	}
	shape, _ := storedShape(t, e)
	for _, want := range []string{`"by_user":{"t":["object"],"v":`, `"big":{"t":["object"],"v":`, `"n":{"t":["integer","number"]}`} {
		if !strings.Contains(shape, want) {
			t.Errorf("shape %s lacks %s", shape, want)
		}
	}
}

// structured-data-fetch learns its results' data member, one shape per
// host: two hosts' results make two items, each naming its host, neither
// holding the other's members; the status, content type and bytes the
// catalog declares are not learned.
func TestFetchResultsAreLearnedPerHost(t *testing.T) {
	e := newEnv(t)
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"structured-data-fetch"}, nil, []string{"a.example.com", "b.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RegisterToolset(t.Context(), ts); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		data := `{"team_a_only":1}`
		if strings.Contains(strings.ToLower(string(c.Input)), "b.example.com") {
			data = `{"team_b_only":"x"}`
		}
		return json.RawMessage(`{"status":200,"content_type":"application/json","bytes":10,"data":` + data + `}`), nil
	}
	d := e.dispatcher(t, "structured-data-fetch", run, func(d *Deps) { d.Shapes = observeddynamo.New(e.db.API, e.store.Table()) })
	for _, host := range []string{"a.example.com", "B.example.com"} {
		if _, err := d.Handle(t.Context(), envelopeFor("structured-data-fetch", ts.ID, "", 1, `{"url":"https://`+host+`/x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	items := shapeItems(t, e)
	if len(items) != 2 {
		t.Fatalf("%d shape items, want one per host", len(items))
	}
	got := map[string]string{}
	for _, it := range items {
		got[it["from_host"].(*types.AttributeValueMemberS).Value] = it["shape"].(*types.AttributeValueMemberS).Value
	}
	want := map[string]string{"a.example.com": `{"t":["object"],"m":{"team_a_only":{"t":["integer"]}}}`,
		"b.example.com": `{"t":["object"],"m":{"team_b_only":{"t":["string"]}}}`}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("%s: %s, want %s", h, got[h], w)
		}
	}
}
