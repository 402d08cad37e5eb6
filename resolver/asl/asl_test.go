package asl

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// types are every struct of the package that is marshalled.
var types = []any{Definition{}, Task{}, LambdaInvoke{}, Pass{}, Choice{}, ChoiceRule{}, Wait{}, Map{}, ItemProcessor{}, ProcessorConfig{}, Fail{}, Retrier{}, Catcher{}}

// Each struct declares its fields in the sorted order of their JSON
// names: the order encoding/json gives a map's keys, which the
// definitions have always had.
func TestFieldsAreInSortedKeyOrder(t *testing.T) {
	for _, v := range types {
		rt := reflect.TypeOf(v)
		var names []string
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" {
				t.Errorf("%s.%s has no JSON name", rt.Name(), rt.Field(i).Name)
			}
			names = append(names, name)
		}
		if !slices.IsSorted(names) {
			sorted := slices.Clone(names)
			slices.Sort(sorted)
			t.Errorf("%s declares %v; want the sorted order %v", rt.Name(), names, sorted)
		}
	}
}

// A definition marshals to the bytes of the same content held in maps:
// its fields in sorted order, Type written, zero values written where
// they are set (a Wait of 0 seconds, a comparison with false or "").
func TestDefinitionMarshalsAsItsMaps(t *testing.T) {
	no, empty, zero := false, "", 0
	present := true
	def := &Definition{
		Comment: "c", StartAt: "a", TimeoutSeconds: 60,
		States: map[string]State{
			"a": &Task{
				Resource:       "arn:aws:states:::lambda:invoke",
				Parameters:     LambdaInvoke{FunctionName: "${F}", Payload: map[string]any{"x.$": "$.x", "n": 0}},
				ResultSelector: map[string]any{"output.$": "$.Payload"},
				ResultPath:     "$.steps.a",
				TimeoutSeconds: 30,
				Retry:          []Retrier{{ErrorEquals: []string{"E"}, MaxAttempts: 2, IntervalSeconds: 1, BackoffRate: 2}},
				Catch:          []Catcher{{ErrorEquals: []string{"States.ALL"}, ResultPath: "$.e", Next: "f"}},
				Next:           "b",
			},
			"b": &Choice{Comment: "<&>", Default: "w", Choices: []ChoiceRule{
				{And: []ChoiceRule{{Variable: "$.v", IsPresent: &present}, Compare("$.v", Equals, Operand{Bool: &no})}, Next: "w"},
				{Not: &ChoiceRule{Or: []ChoiceRule{Compare("$.v", GreaterThanEquals, Operand{Path: "$.u", PathType: "Numeric"}), Compare("$.v", LessThan, Operand{String: &empty})}}, Next: "p"},
				{Variable: "$.v", IsNull: true, Next: "w"},
				{Variable: "$.v", IsPresent: &no, Next: "w"},
			}},
			"w": &Wait{Seconds: &zero, Next: "m"},
			"m": &Map{ItemsPath: "$.items", ItemSelector: map[string]any{"item.$": "$$.Map.Item.Value"}, MaxConcurrency: 0,
				ItemProcessor: ItemProcessor{ProcessorConfig: ProcessorConfig{Mode: "INLINE"}, StartAt: "i", States: map[string]State{
					"i": &Pass{Comment: "the iteration's result", Parameters: map[string]any{}, End: true},
				}},
				ResultPath: "$.out", Next: "p"},
			"p": &Pass{Parameters: nil, ResultPath: "$.p", OutputPath: "$.o", End: true},
			"f": &Fail{Comment: "failed", ErrorPath: "$.e.Error", CausePath: "$.e.Cause"},
		},
	}
	typed := encode(t, def)
	var asMaps any
	dec := json.NewDecoder(bytes.NewReader(typed))
	dec.UseNumber()
	if err := dec.Decode(&asMaps); err != nil {
		t.Fatal(err)
	}
	if maps := encode(t, asMaps); !bytes.Equal(typed, maps) {
		t.Fatalf("typed:\n%s\nas maps:\n%s", typed, maps)
	}
	for _, want := range []string{`"Seconds": 0`, `"BooleanEquals": false`, `"StringLessThan": ""`, `"IsPresent": false`, `"MaxConcurrency": 0`, `"Parameters": null`, `"Type": "Map"`, `"Comment": "<&>"`} {
		if !bytes.Contains(typed, []byte(want)) {
			t.Errorf("the definition has no %s:\n%s", want, typed)
		}
	}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Compare refuses what ASL has no comparison for: a boolean ordered, and
// an operand with nothing set.
func TestCompareRefusesWhatASLHasNot(t *testing.T) {
	yes := true
	for name, f := range map[string]func(){
		"boolean ordered":      func() { Compare("$.v", GreaterThan, Operand{Bool: &yes}) },
		"boolean path ordered": func() { Compare("$.v", LessThan, Operand{Path: "$.u", PathType: "Boolean"}) },
		"no operand":           func() { Compare("$.v", Equals, Operand{}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// Walk visits the states of a Map's ItemProcessor too.
func TestWalkVisitsItemProcessors(t *testing.T) {
	states := map[string]State{
		"m": &Map{ItemProcessor: ItemProcessor{States: map[string]State{"inner": &Pass{End: true}}}},
		"f": &Fail{Error: "E"},
	}
	var names []string
	Walk(states, func(name string, _ State) { names = append(names, name) })
	slices.Sort(names)
	if !slices.Equal(names, []string{"f", "inner", "m"}) {
		t.Fatalf("Walk visited %v", names)
	}
}
