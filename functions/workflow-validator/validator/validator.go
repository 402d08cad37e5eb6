// Package validator is the workflow-validator tool: it checks a Solution
// with the resolver, the same code as `toolgate check --format json`, and
// returns its verdict and diagnostics, within the bounds its output schema
// in the catalog declares (MaxDiagnostics, MaxRuleRunes, MaxPosition). An
// invalid Solution is a successful call with valid false; only a missing
// or oversized input is TOOL_INPUT_INVALID.
package validator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// MaxSolutionBytes bounds the Solution text, in bytes: the catalog's
// schema admits 196 608 characters, and a Task's payload carries at most
// catalog.MaxInputBytes of input (Step Functions' 256 KiB).
const MaxSolutionBytes = 196608

// The bounds of a result, which workflow-validator's output schema in the
// catalog declares (shared/catalog/catalog.json: maxItems, maxLength,
// minimum and maximum) and Validate keeps, so that the dispatcher admits
// every result and the resolver's state-size check counts a result at
// that schema's bound, 30 319 bytes, not at the 64 KiB output limit
// (docs/solutions.md §7.2.1). A message is at most
// resolver.MaxMessageRunes characters (maxLength 400).
const (
	// MaxDiagnostics bounds the diagnostics of a result (maxItems): of
	// more, the first MaxDiagnostics-1 in source order are kept, and a
	// last one, a warning with rule "truncated", says how many were left
	// out.
	MaxDiagnostics = 10
	// MaxRuleRunes bounds a diagnostic's rule id (maxLength); the
	// resolver's are at most 18 characters.
	MaxRuleRunes = 32
	// MaxPosition bounds a diagnostic's line and column (maximum): one
	// past MaxSolutionBytes, as no position is further into the text.
	MaxPosition = MaxSolutionBytes + 1
)

// Input is the tool's input.
type Input struct {
	Solution string `json:"solution"`
	// Format is "yaml" or "json"; it names the diagnostics' file
	// (solution.yaml or solution.json) and so the grammar the text is read
	// in, as for a file (docs/solutions.md §2.1): json reads it as strict
	// JSON, with positioned [syntax] diagnostics. Default yaml, which reads
	// most JSON too, leniently.
	Format string `json:"format,omitempty"`
}

// Output is the tool's result.
type Output struct {
	Valid       bool                  `json:"valid"`
	ToolsetID   string                `json:"toolset_id,omitempty"`
	Diagnostics []resolver.Diagnostic `json:"diagnostics"`
}

// Validate checks one Solution text.
func Validate(in Input) (*Output, error) {
	if in.Solution == "" {
		return nil, tool.Errorf(tool.InputInvalid, "input solution is empty")
	}
	if len(in.Solution) > MaxSolutionBytes {
		return nil, tool.Errorf(tool.InputInvalid, "input solution is %d bytes, over the %d-byte limit", len(in.Solution), MaxSolutionBytes)
	}
	file := "solution.yaml"
	switch in.Format {
	case "", "yaml":
	case "json":
		file = "solution.json" // read as JSON, strictly (resolver.Compile)
	default:
		return nil, tool.Errorf(tool.InputInvalid, "input format %q is not yaml or json", in.Format)
	}
	res := resolver.Compile(file, []byte(in.Solution), resolver.Options{})
	out := &Output{Valid: res.OK(), Diagnostics: res.Diagnostics}
	if n := len(out.Diagnostics); n > MaxDiagnostics {
		// Keep the first ones, in source order, and say how many were
		// left out.
		last := out.Diagnostics[MaxDiagnostics-1]
		out.Diagnostics = append(out.Diagnostics[:MaxDiagnostics-1:MaxDiagnostics-1], resolver.Diagnostic{
			File: last.File, Line: last.Line, Column: last.Column, Severity: resolver.SeverityWarning, Rule: "truncated",
			Message: fmt.Sprintf("%d more diagnostics are left out of this result; toolgate check lists them all", n-MaxDiagnostics+1),
		})
	}
	for k, d := range out.Diagnostics {
		out.Diagnostics[k] = bounded(folded(d))
	}
	if out.Diagnostics == nil {
		out.Diagnostics = []resolver.Diagnostic{}
	}
	if res.Toolset != nil {
		out.ToolsetID = res.Toolset.ID
	}
	return out, nil
}

// folded is d with its notes appended to its message, cut as the resolver
// cuts a message (resolver.MaxMessageRunes): the output schema admits no
// notes, and each message stays within that bound.
func folded(d resolver.Diagnostic) resolver.Diagnostic {
	if len(d.Notes) == 0 {
		return d
	}
	d.Message, d.Notes = excerpt.RunesWithin(d.Message+" "+strings.Join(d.Notes, "; "), resolver.MaxMessageRunes, "…"), nil
	return d
}

// bounded is d within the bounds its output schema gives a diagnostic:
// its message cut to resolver.MaxMessageRunes and its rule to
// MaxRuleRunes characters (neither is longer from the resolver), its line
// and column within 1..MaxPosition.
func bounded(d resolver.Diagnostic) resolver.Diagnostic {
	d.Message, d.Rule = excerpt.RunesWithin(d.Message, resolver.MaxMessageRunes, "…"), excerpt.RunesWithin(d.Rule, MaxRuleRunes, "…")
	d.Line, d.Column = min(max(d.Line, 1), MaxPosition), min(max(d.Column, 1), MaxPosition)
	return d
}

// Tool is the workflow-validator tool, which its function runs behind
// the dispatcher (shared/toolfunction).
func Tool() toolcall.Func {
	return func(ctx context.Context, call *toolcall.Call) (json.RawMessage, error) {
		var in Input
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return nil, tool.Wrap(tool.InputInvalid, err, "input is not a workflow-validator input")
		}
		out, err := Validate(in)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode validator output: %w", err)
		}
		return raw, nil
	}
}
