package dynamo

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/table"
)

// Each item type maps onto its declared kind (table.Conform: every field
// an attribute the kind declares, of a declared type), and the type the
// reads map an item into holds every attribute the kind declares, so that
// an attribute added to the declaration is read or deliberately left out
// here.
func TestItemTypesConformToTheirKinds(t *testing.T) {
	for _, c := range []struct {
		name  string
		kind  *table.Kind
		item  any
		whole bool // the type the reads map the kind's items into
	}{
		{"askedItem", table.Review, askedItem{}, false},
		{"reviewItem", table.Review, reviewItem{}, true},
		{"bindingItem", table.Binding, bindingItem{}, true},
		{"startItem", table.Start, startItem{}, false},
		{"childStartItem", table.Start, childStartItem{}, false},
		{"runStartItem", table.Start, runStartItem{}, false},
		{"storedStart", table.Start, storedStart{}, true},
		{"forkItem", table.Fork, forkItem{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := table.Conform(c.kind, c.item); err != nil {
				t.Fatal(err)
			}
			if !c.whole {
				return
			}
			names := fieldNames(reflect.TypeOf(c.item))
			for _, n := range c.kind.AllNames() {
				if !slices.Contains(names, n) {
					t.Errorf("%s has no field for %s's attribute %s", c.name, c.kind.Name, n)
				}
			}
		})
	}
}

// Create writes what the access CreateReviews allows, all of it.
func TestAskedItemIsWhatCreateReviewsAllows(t *testing.T) {
	for _, a := range table.Accesses {
		if a.Sid != "CreateReviews" {
			continue
		}
		got, want := fieldNames(reflect.TypeOf(askedItem{})), slices.Clone(a.Attributes)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("askedItem maps %v, CreateReviews allows %v", got, want)
		}
		return
	}
	t.Fatal("no access CreateReviews")
}

// fieldNames is every dynamodbav name of a struct type, embedded structs'
// included.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, fieldNames(f.Type)...)
		case name != "-" && f.IsExported():
			out = append(out, name)
		}
	}
	return out
}
