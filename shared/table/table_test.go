package table

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The declaration is consistent: every access names attributes its kinds
// declare, the index's projection is its kind's, no Sid repeats.
func TestDeclarationIsConsistent(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
}

// Check finds an access naming an attribute no kind declares.
func TestCheckRefusesAnUndeclaredAttribute(t *testing.T) {
	saved := Accesses
	defer func() { Accesses = saved }()
	Accesses = append(slices.Clone(saved), Access{Sid: "Bad", By: []Principal{Publish}, On: []*Kind{Toolset},
		Actions: []Action{GetItem}, Attributes: []string{PK, "secret"}})
	if err := Check(); err == nil || !strings.Contains(err.Error(), "access Bad names secret") {
		t.Fatalf("Check() = %v, want the undeclared attribute named", err)
	}
}

// Names panics on an attribute its kind does not declare.
func TestNamesPanicsOnAnUndeclaredAttribute(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `item kind toolset has no attribute "nope"`) {
			t.Fatalf("recover() = %v", r)
		}
	}()
	Toolset.Names("body", "nope")
}

// Every kind's key prefix ends with '#' and no prefix starts another
// (dynamodb:LeadingKeys "<prefix>*" would reach it).
func TestPrefixesAreApart(t *testing.T) {
	ps := Prefixes()
	for _, a := range ps {
		if !strings.HasSuffix(a, "#") {
			t.Errorf("prefix %q does not end with #", a)
		}
		for _, b := range ps {
			if a != b && strings.HasPrefix(b, a) {
				t.Errorf("prefix %q starts %q", a, b)
			}
		}
	}
	for _, ix := range Indexes {
		if ix.PKPrefix != "" && slices.Contains(ps, ix.PKPrefix) {
			t.Errorf("index %s's prefix %q is an item prefix", ix.Name, ix.PKPrefix)
		}
	}
}

// Every kind's sort key is either constant (SKValue, which SKShape is),
// varies after its SKPrefix, with which SKShape starts, or varies around
// its SKInfix, which SKShape holds; likewise its partition key's shape
// starts with its prefix.
func TestSortKeyShapes(t *testing.T) {
	for _, k := range Kinds {
		set := 0
		for _, v := range []string{k.SKValue, k.SKPrefix, k.SKInfix} {
			if v != "" {
				set++
			}
		}
		if set != 1 {
			t.Errorf("kind %s: SKValue %q, SKPrefix %q, SKInfix %q: want exactly one", k.Name, k.SKValue, k.SKPrefix, k.SKInfix)
		}
		if k.SKInfix != "" && !strings.Contains(k.SKShape, k.SKInfix) {
			t.Errorf("kind %s: SKShape %q does not hold SKInfix %q", k.Name, k.SKShape, k.SKInfix)
		}
		if k.SKValue != "" && k.SKShape != k.SKValue {
			t.Errorf("kind %s: SKShape %q is not its constant sort key %q", k.Name, k.SKShape, k.SKValue)
		}
		if !strings.HasPrefix(k.SKShape, k.SKPrefix) {
			t.Errorf("kind %s: SKShape %q does not start with SKPrefix %q", k.Name, k.SKShape, k.SKPrefix)
		}
		if !strings.HasPrefix(k.PKShape, k.Prefix) {
			t.Errorf("kind %s: PKShape %q does not start with Prefix %q", k.Name, k.PKShape, k.Prefix)
		}
	}
}

func TestKeyAndID(t *testing.T) {
	if k := Review.Key("rv_1"); k != "REVIEW#rv_1" {
		t.Fatalf("Key = %q", k)
	}
	if id, ok := Review.ID("REVIEW#rv_1"); !ok || id != "rv_1" {
		t.Fatalf("ID = %q %v", id, ok)
	}
	if _, ok := Review.ID("RUN#x"); ok {
		t.Fatal("a run key read as a review's")
	}
}

// Conform finds a field of an item type that the kind does not declare,
// or declares with another type, and accepts one that fits.
func TestConform(t *testing.T) {
	type good struct {
		PK   string `dynamodbav:"pk"`
		SK   string `dynamodbav:"sk"`
		Body string `dynamodbav:"body"`
		Skip int    `dynamodbav:"-"`
	}
	if err := Conform(Toolset, good{}); err != nil {
		t.Fatal(err)
	}
	type extra struct {
		Body   string `dynamodbav:"body"`
		Secret string `dynamodbav:"secret,omitempty"`
	}
	if err := Conform(Toolset, &extra{}); err == nil || !strings.Contains(err.Error(), `maps to "secret"`) {
		t.Fatalf("Conform(extra) = %v", err)
	}
	type mistyped struct {
		Version string `dynamodbav:"version"`
	}
	if err := Conform(Published, mistyped{}); err == nil || !strings.Contains(err.Error(), "stored as S") {
		t.Fatalf("Conform(mistyped) = %v", err)
	}
}

// The operator reads digests, sizes and states, never what a call or a
// review holds: no recorded result, no reviewed input, no task token.
func TestOperatorReadsNoPayload(t *testing.T) {
	for _, a := range Of(Operator) {
		for _, n := range []string{"result", "input", "task_token", "reason"} {
			if slices.Contains(a.Attributes, n) {
				t.Errorf("access %s lets the operator read %s", a.Sid, n)
			}
		}
		for _, k := range a.On {
			if k == Review || k == Start || k == Proof || k == Binding {
				t.Errorf("access %s reaches %s items", a.Sid, k.Name)
			}
		}
		if a.On != nil && a.Attributes == nil {
			t.Errorf("access %s reads whole items", a.Sid)
		}
	}
}

// Conform reads the attributevalue options that change a field's type:
// []byte is B, ,stringset SS and ,unixtime N.
func TestConformReadsTypeOptions(t *testing.T) {
	type bin struct {
		Body []byte `dynamodbav:"body"`
	}
	if err := Conform(Toolset, bin{}); err == nil || !strings.Contains(err.Error(), "stored as B") {
		t.Fatalf("Conform([]byte) = %v", err)
	}
	type set struct {
		Body []string `dynamodbav:"body,stringset"`
	}
	if err := Conform(Toolset, set{}); err == nil || !strings.Contains(err.Error(), "stored as SS") {
		t.Fatalf("Conform(stringset) = %v", err)
	}
	type unix struct {
		Version time.Time `dynamodbav:"version,unixtime"`
	}
	if err := Conform(Published, unix{}); err != nil {
		t.Fatalf("Conform(unixtime into a number) = %v", err)
	}
}

// No kind's partition key prefix starts another's: an IAM grant's
// dynamodb:LeadingKeys "<prefix>*" reaches exactly the kinds of that
// prefix, so a tool role's "RUN#*" or "BIND#*" never reaches a
// reconciliation (RECON#), which only review-decision may write.
func TestNoKeyPrefixStartsAnother(t *testing.T) {
	for _, a := range Kinds {
		for _, b := range Kinds {
			if a.Prefix != b.Prefix && strings.HasPrefix(b.Prefix, a.Prefix) {
				t.Errorf("kind %s's prefix %q starts kind %s's %q", a.Name, a.Prefix, b.Name, b.Prefix)
			}
		}
	}
}
