// Package validator is the workflow-validator tool: it checks a Solution
// with the resolver, the same code as `toolgate check --format json`, and
// returns its verdict and diagnostics. An invalid Solution is a successful
// call with valid false; only a missing or oversized input is
// TOOL_INPUT_INVALID.
package validator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// MaxSolutionBytes bounds the Solution text, in bytes: the catalog's
// schema admits 196 608 characters, and a Task's payload carries at most
// catalog.MaxInputBytes of input (Step Functions' 256 KiB).
const MaxSolutionBytes = 196608

// MaxDiagnostics bounds the diagnostics in one result. With messages of at
// most resolver.MaxMessageRunes, the result stays well under the
// dispatcher's 64 KiB inline limit.
const MaxDiagnostics = 50

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
	for k, d := range out.Diagnostics {
		out.Diagnostics[k] = folded(d)
	}
	if n := len(out.Diagnostics); n > MaxDiagnostics {
		// The result must fit the dispatcher's inline limit (64 KiB): keep
		// the first ones, in source order, and say how many were left out.
		last := out.Diagnostics[MaxDiagnostics-1]
		out.Diagnostics = append(out.Diagnostics[:MaxDiagnostics-1:MaxDiagnostics-1], resolver.Diagnostic{
			File: last.File, Line: last.Line, Column: last.Column, Severity: resolver.SeverityWarning, Rule: "truncated",
			Message: fmt.Sprintf("%d more diagnostics are left out of this result; toolgate check lists them all", n-MaxDiagnostics+1),
		})
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
// cuts a message (resolver.MaxMessageRunes): each diagnostic of a result
// stays within that bound, which MaxDiagnostics counts on.
func folded(d resolver.Diagnostic) resolver.Diagnostic {
	if len(d.Notes) == 0 {
		return d
	}
	msg := d.Message + " " + strings.Join(d.Notes, "; ")
	if r := []rune(msg); len(r) > resolver.MaxMessageRunes {
		msg = string(r[:resolver.MaxMessageRunes-1]) + "…"
	}
	d.Message, d.Notes = msg, nil
	return d
}

// Tool is the workflow-validator tool for dispatch.Main.
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
