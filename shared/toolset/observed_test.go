package toolset

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/observed"
)

// lockWithObserved is a lock of structured-data-fetch carrying shapes
// under "observed".
func lockWithObserved(t *testing.T) (*Toolset, []byte) {
	t.Helper()
	ts := mustBuild(t, catalog.Default(), []string{"structured-data-fetch"}, nil, []string{"api.example.com"})
	plain, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	shape, err := observed.Observe([]byte(`{"items":[{"id":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ts.Observed = &observed.File{Toolset: ts.ID, Tools: map[string]observed.ToolShapes{
		"structured-data-fetch": {Hosts: map[string]observed.HostShape{"api.example.com": {LearnedFrom: 4, Shape: shape}}},
	}}
	doc, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) == string(plain) {
		t.Fatal("observed left out of the lock")
	}
	return ts, doc
}

func TestLockObservedShapesAreNoPartOfTheID(t *testing.T) {
	ts, doc := lockWithObserved(t)
	back, err := Parse(doc)
	if err != nil {
		t.Fatalf("lock with observed refused: %v", err)
	}
	if back.ID != ts.ID || back.Observed == nil || back.Observed.Tools["structured-data-fetch"].Hosts["api.example.com"].LearnedFrom != 4 {
		t.Fatalf("read back %+v", back)
	}
	canon, err := back.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(canon), "observed") {
		t.Fatalf("the canonical content holds the shapes: %s", canon)
	}
	if _, err := ParseStored(ts.ID, canon); err != nil {
		t.Fatalf("stored body: %v", err)
	}
}

func TestLockObservedShapesAreReadStrictly(t *testing.T) {
	ts, doc := lockWithObserved(t)
	cases := map[string]string{
		"another toolset's shapes": strings.Replace(string(doc), `"toolset": "`+ts.ID, `"toolset": "ts_00000000000000000000000000000000`, 1),
		"a tool not in the toolset": strings.Replace(string(doc), `"tools": {
      "structured-data-fetch": {
        "hosts"`, `"tools": {
      "http": {
        "hosts"`, 1),
		"an unknown member":  strings.Replace(string(doc), `"learned_from": 4`, `"learned_from": 4, "seen": 1`, 1),
		"a value in a shape": strings.Replace(string(doc), `"id": {`, `"alice@example.com": {`, 1),
		"null":               strings.Replace(string(doc), `"observed": {`, `"observed": null, "x": {`, 1),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			if bad == string(doc) {
				t.Fatal("fixture did not change the lock")
			}
			if _, err := Parse([]byte(bad)); err == nil {
				t.Fatal("accepted")
			} else if strings.Contains(err.Error(), "alice") {
				t.Fatalf("refusal quotes the shape: %v", err)
			}
		})
	}
}
