// Package asl is the typed form of the Amazon States Language definitions
// the resolver writes: a Definition of named States (Task, Pass, Choice,
// Wait, Map, Fail), with their Retriers, Catchers and Choice rules, in the
// JSONPath query language (Amazon States Language specification,
// https://states-language.net/spec.html).
//
// Each struct declares its fields in the sorted order of their JSON names,
// the order encoding/json gives a map's keys, so that a definition
// marshals to the bytes the resolver wrote when it built its states as
// maps; a field that is absent from some states of its type is omitempty,
// or a pointer where its zero value is written (a Wait of 0 seconds, a
// Choice rule comparing with false or ""). Payload templates (Parameters,
// ResultSelector, ItemSelector) are values of the Solution's own shape:
// maps in Parameters form, or a typed struct such as LambdaInvoke.
package asl

import "encoding/json"

// Definition is a state machine's definition: the states by name, run
// from StartAt; TimeoutSeconds bounds the whole execution (Step Functions
// ends it with States.Timeout).
type Definition struct {
	Comment        string           `json:"Comment"`
	StartAt        string           `json:"StartAt"`
	States         map[string]State `json:"States"`
	TimeoutSeconds int              `json:"TimeoutSeconds"`
}

// State is one state of a definition: *Task, *Pass, *Choice, *Wait,
// *Map or *Fail.
type State interface {
	// StateType is the state's "Type": "Task", "Pass", ...
	StateType() string
}

// typeName is a state's "Type" member: a field of no size that always
// marshals to the state's type, so that no state can be written without
// it or with another's.
type typeName[T interface{ StateType() string }] struct{}

// MarshalJSON writes the type's name (plain ASCII: no escaping).
func (typeName[T]) MarshalJSON() ([]byte, error) {
	var t T
	return []byte(`"` + t.StateType() + `"`), nil
}

// Task is a Task state: Resource is the integration
// ("arn:aws:states:::lambda:invoke" and the like), Parameters its request
// (LambdaInvoke, or a map in Parameters form); TimeoutSeconds 0 is none
// written (Step Functions' default, 99 999 999 s).
type Task struct {
	Catch          []Catcher       `json:"Catch,omitempty"`
	Comment        string          `json:"Comment,omitempty"`
	Next           string          `json:"Next,omitempty"`
	Parameters     any             `json:"Parameters,omitempty"`
	Resource       string          `json:"Resource"`
	ResultPath     string          `json:"ResultPath,omitempty"`
	ResultSelector map[string]any  `json:"ResultSelector,omitempty"`
	Retry          []Retrier       `json:"Retry,omitempty"`
	TimeoutSeconds int             `json:"TimeoutSeconds,omitempty"`
	Type           typeName[*Task] `json:"Type"`
}

// StateType is "Task".
func (*Task) StateType() string { return "Task" }

// LambdaInvoke is the Parameters of a Task of the Lambda integration
// (arn:aws:states:::lambda:invoke): the function (an ARN, or a
// "${placeholder}" publishing substitutes) and its event.
type LambdaInvoke struct {
	FunctionName string `json:"FunctionName"`
	Payload      any    `json:"Payload"`
}

// Pass is a Pass state: it writes Parameters (always written, as the
// resolver's Pass states each build a value) at ResultPath, or ends the
// execution (End) with what OutputPath selects.
type Pass struct {
	Comment    string          `json:"Comment,omitempty"`
	End        bool            `json:"End,omitempty"`
	Next       string          `json:"Next,omitempty"`
	OutputPath string          `json:"OutputPath,omitempty"`
	Parameters any             `json:"Parameters"`
	ResultPath string          `json:"ResultPath,omitempty"`
	Type       typeName[*Pass] `json:"Type"`
}

// StateType is "Pass".
func (*Pass) StateType() string { return "Pass" }

// Choice is a Choice state: the first rule that matches names the next
// state, Default when none does.
type Choice struct {
	Choices []ChoiceRule      `json:"Choices"`
	Comment string            `json:"Comment,omitempty"`
	Default string            `json:"Default"`
	Type    typeName[*Choice] `json:"Type"`
}

// StateType is "Choice".
func (*Choice) StateType() string { return "Choice" }

// ChoiceRule is a Choice state's rule: a comparison of Variable (a
// JSONPath) with one operand, or And, Or, Not of nested rules; Next is
// set on a top-level rule only. The operand fields follow the
// specification's names ("Choice Rules"); a *Path field compares with the
// value at that path. Set exactly one comparison (Compare does).
type ChoiceRule struct {
	And                          []ChoiceRule `json:"And,omitempty"`
	BooleanEquals                *bool        `json:"BooleanEquals,omitempty"`
	BooleanEqualsPath            string       `json:"BooleanEqualsPath,omitempty"`
	IsNull                       bool         `json:"IsNull,omitempty"`
	IsPresent                    *bool        `json:"IsPresent,omitempty"`
	IsString                     *bool        `json:"IsString,omitempty"`
	Next                         string       `json:"Next,omitempty"`
	Not                          *ChoiceRule  `json:"Not,omitempty"`
	NumericEquals                json.Number  `json:"NumericEquals,omitempty"`
	NumericEqualsPath            string       `json:"NumericEqualsPath,omitempty"`
	NumericGreaterThan           json.Number  `json:"NumericGreaterThan,omitempty"`
	NumericGreaterThanEquals     json.Number  `json:"NumericGreaterThanEquals,omitempty"`
	NumericGreaterThanEqualsPath string       `json:"NumericGreaterThanEqualsPath,omitempty"`
	NumericGreaterThanPath       string       `json:"NumericGreaterThanPath,omitempty"`
	NumericLessThan              json.Number  `json:"NumericLessThan,omitempty"`
	NumericLessThanEquals        json.Number  `json:"NumericLessThanEquals,omitempty"`
	NumericLessThanEqualsPath    string       `json:"NumericLessThanEqualsPath,omitempty"`
	NumericLessThanPath          string       `json:"NumericLessThanPath,omitempty"`
	Or                           []ChoiceRule `json:"Or,omitempty"`
	StringEquals                 *string      `json:"StringEquals,omitempty"`
	StringEqualsPath             string       `json:"StringEqualsPath,omitempty"`
	StringGreaterThan            *string      `json:"StringGreaterThan,omitempty"`
	StringGreaterThanEquals      *string      `json:"StringGreaterThanEquals,omitempty"`
	StringGreaterThanEqualsPath  string       `json:"StringGreaterThanEqualsPath,omitempty"`
	StringGreaterThanPath        string       `json:"StringGreaterThanPath,omitempty"`
	StringLessThan               *string      `json:"StringLessThan,omitempty"`
	StringLessThanEquals         *string      `json:"StringLessThanEquals,omitempty"`
	StringLessThanEqualsPath     string       `json:"StringLessThanEqualsPath,omitempty"`
	StringLessThanPath           string       `json:"StringLessThanPath,omitempty"`
	Variable                     string       `json:"Variable,omitempty"`
}

// Operator is a comparison of a Choice rule, for Compare.
type Operator int

// The comparisons of numbers and strings; booleans compare with Equals only.
const (
	Equals Operator = iota
	GreaterThan
	GreaterThanEquals
	LessThan
	LessThanEquals
)

// Operand is what a Choice rule compares Variable with: a number, a
// string, a boolean, or (Path set) the value at a JSONPath, as one type.
type Operand struct {
	Number json.Number
	String *string
	Bool   *bool
	// Path is a JSONPath; PathType says which of the *Path fields it is
	// compared by: "Numeric", "String" or "Boolean".
	Path     string
	PathType string
}

// Compare is the rule comparing variable with operand by op. It panics on
// a comparison ASL does not have (a boolean ordered, an operand with
// nothing set): the resolver's own bug.
func Compare(variable string, op Operator, operand Operand) ChoiceRule {
	r := ChoiceRule{Variable: variable}
	num := [...]*json.Number{&r.NumericEquals, &r.NumericGreaterThan, &r.NumericGreaterThanEquals, &r.NumericLessThan, &r.NumericLessThanEquals}
	numPath := [...]*string{&r.NumericEqualsPath, &r.NumericGreaterThanPath, &r.NumericGreaterThanEqualsPath, &r.NumericLessThanPath, &r.NumericLessThanEqualsPath}
	str := [...]**string{&r.StringEquals, &r.StringGreaterThan, &r.StringGreaterThanEquals, &r.StringLessThan, &r.StringLessThanEquals}
	strPath := [...]*string{&r.StringEqualsPath, &r.StringGreaterThanPath, &r.StringGreaterThanEqualsPath, &r.StringLessThanPath, &r.StringLessThanEqualsPath}
	switch {
	case operand.Path != "" && operand.PathType == "Numeric":
		*numPath[op] = operand.Path
	case operand.Path != "" && operand.PathType == "String":
		*strPath[op] = operand.Path
	case operand.Path != "" && operand.PathType == "Boolean" && op == Equals:
		r.BooleanEqualsPath = operand.Path
	case operand.Number != "":
		*num[op] = operand.Number
	case operand.String != nil:
		*str[op] = operand.String
	case operand.Bool != nil && op == Equals:
		r.BooleanEquals = operand.Bool
	default:
		panic("asl: no such comparison")
	}
	return r
}

// Wait is a Wait state: Seconds (nil when not written), or the seconds
// or RFC 3339 timestamp at a JSONPath.
type Wait struct {
	Next          string          `json:"Next,omitempty"`
	Seconds       *int            `json:"Seconds,omitempty"`
	SecondsPath   string          `json:"SecondsPath,omitempty"`
	TimestampPath string          `json:"TimestampPath,omitempty"`
	Type          typeName[*Wait] `json:"Type"`
}

// StateType is "Wait".
func (*Wait) StateType() string { return "Wait" }

// Map is an inline Map state: each item of the list at ItemsPath runs
// ItemProcessor with the state data ItemSelector builds, at most
// MaxConcurrency at once (0: as many as Step Functions allows).
type Map struct {
	Catch          []Catcher      `json:"Catch,omitempty"`
	ItemProcessor  ItemProcessor  `json:"ItemProcessor"`
	ItemSelector   map[string]any `json:"ItemSelector"`
	ItemsPath      string         `json:"ItemsPath"`
	MaxConcurrency int            `json:"MaxConcurrency"`
	Next           string         `json:"Next,omitempty"`
	ResultPath     string         `json:"ResultPath,omitempty"`
	Type           typeName[*Map] `json:"Type"`
}

// StateType is "Map".
func (*Map) StateType() string { return "Map" }

// ItemProcessor is a Map's iteration: its own states, whose names are
// unique across the whole definition.
type ItemProcessor struct {
	ProcessorConfig ProcessorConfig  `json:"ProcessorConfig"`
	StartAt         string           `json:"StartAt"`
	States          map[string]State `json:"States"`
}

// ProcessorConfig is a Map's mode: "INLINE" here.
type ProcessorConfig struct {
	Mode string `json:"Mode"`
}

// Fail is a Fail state: it ends the execution with Error and Cause, or
// the values at ErrorPath and CausePath.
type Fail struct {
	Cause     string          `json:"Cause,omitempty"`
	CausePath string          `json:"CausePath,omitempty"`
	Comment   string          `json:"Comment,omitempty"`
	Error     string          `json:"Error,omitempty"`
	ErrorPath string          `json:"ErrorPath,omitempty"`
	Type      typeName[*Fail] `json:"Type"`
}

// StateType is "Fail".
func (*Fail) StateType() string { return "Fail" }

// Retrier is a Task's retry of the errors ErrorEquals names: MaxAttempts
// retries after the first attempt, the first IntervalSeconds after it,
// each next one BackoffRate times longer.
type Retrier struct {
	BackoffRate     float64  `json:"BackoffRate"`
	ErrorEquals     []string `json:"ErrorEquals"`
	IntervalSeconds int      `json:"IntervalSeconds"`
	MaxAttempts     int      `json:"MaxAttempts"`
}

// Catcher routes a state's failure with an error ErrorEquals names to
// Next, the error object {Error, Cause} written at ResultPath.
type Catcher struct {
	ErrorEquals []string `json:"ErrorEquals"`
	Next        string   `json:"Next"`
	ResultPath  string   `json:"ResultPath"`
}

// Walk calls f for each state of states, and of the Map states'
// ItemProcessors within, with its name.
func Walk(states map[string]State, f func(name string, s State)) {
	for name, s := range states {
		f(name, s)
		if m, ok := s.(*Map); ok {
			Walk(m.ItemProcessor.States, f)
		}
	}
}
