package table

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Conform checks that an adapter's item type maps onto kind k: every
// field's `dynamodbav` name (embedded structs included, "-" skipped) is a
// key attribute or one of k's attributes, and its Go type encodes, under
// the SDK's attributevalue rules, as one of the attribute's declared types
// (string and time.Time as S, integers and floats as N, bool as BOOL,
// maps and structs as M, []byte as B, other slices as L, a ,stringset
// field as SS, a ,unixtime one as N, a pointer as its element). A nil
// pointer, map or slice without omitempty is written as NULL: that the
// adapter never writes one nil is its own to keep, not checked here.
// v is a value or pointer of the item type.
func Conform(k *Kind, v any) error {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("table: %s is not a struct", t)
	}
	return conform(k, t)
}

func conform(k *Kind, t reflect.Type) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("dynamodbav")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if err := conform(k, ft); err != nil {
				return err
			}
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		want := []Type{String}
		if name != PK && name != SK {
			a := k.Attribute(name)
			if a == nil {
				return fmt.Errorf("table: %s.%s maps to %q, which item kind %s does not declare", t.Name(), f.Name, name, k.Name)
			}
			want = a.Types
		}
		opts := strings.Split(tag, ",")[1:]
		got := goType(f.Type)
		switch {
		case slices.Contains(opts, "unixtime"):
			got = Number
		case slices.Contains(opts, "stringset"):
			got = StringSet
		}
		ok := false
		for _, w := range want {
			ok = ok || w == Unknown || got == w
		}
		if !ok {
			return fmt.Errorf("table: %s.%s is stored as %s, but item kind %s declares %s as %v", t.Name(), f.Name, got, k.Name, name, want)
		}
	}
	return nil
}

// goType is the attribute type attributevalue writes for a Go type.
func goType(t reflect.Type) Type {
	if t == reflect.TypeOf(time.Time{}) {
		return String
	}
	switch t.Kind() {
	case reflect.Pointer:
		return goType(t.Elem())
	case reflect.String:
		return String
	case reflect.Bool:
		return Bool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return Number
	case reflect.Map, reflect.Struct:
		return Map
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return Binary
		}
		return List
	}
	return Unknown
}
