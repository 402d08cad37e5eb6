package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

//go:generate go test . -run ^TestBuiltinIsCatalogJSON$ -update

// Policy says how often a tool may run for one idempotency key: the
// per-tool policy of docs/design.md, "Toolsets".
type Policy string

const (
	// AtLeastOnce: the tool may run again for a key whose outcome is unknown.
	AtLeastOnce Policy = "at_least_once"
	// AtMostOnce: the tool must never run twice for one key (sending an
	// e-mail); an unknown outcome is refused, not retried.
	AtMostOnce Policy = "at_most_once"
)

// Timeouts of tool functions and their Tasks, in seconds.
const (
	// MaxFunctionTimeout is Lambda's longest function timeout, 900 seconds
	// (AWS Lambda quotas).
	MaxFunctionTimeout = 900
	// TaskTimeoutMargin is added to a tool function's timeout for its
	// Task's TimeoutSeconds: a synchronous invocation may first spend up
	// to 10 seconds in the function's Init phase (AWS Lambda, "Lambda
	// execution environment lifecycle"), so the Task never times out while
	// the function may still be running its tool (docs/solutions.md,
	// "timeout_seconds").
	TaskTimeoutMargin = 10
)

// MaxInputBytes is the most a tool's input can be: Step Functions passes a
// Task at most 256 KiB (AWS Step Functions quotas), and the envelope's
// other members take up to 12 KiB of it (resolver, "State size").
const MaxInputBytes = 256<<10 - 12<<10

// longestString returns the largest maxLength in a JSON Schema document,
// and the JSON Pointer of the schema that sets it: each of its characters
// takes at least one byte of the input.
func longestString(schema json.RawMessage) (string, int) {
	var doc any
	if json.Unmarshal(schema, &doc) != nil {
		return "", 0
	}
	at, most := "", 0
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch x := v.(type) {
		case map[string]any:
			if n, ok := x["maxLength"].(float64); ok && int(n) > most {
				at, most = ptr, int(n)
			}
			for k, sub := range x {
				walk(sub, ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k))
			}
		case []any:
			for i, sub := range x {
				walk(sub, fmt.Sprintf("%s/%d", ptr, i))
			}
		}
	}
	walk(doc, "")
	return at, most
}

// Retry is a tool's default retry, in the Solution grammar's units.
type Retry struct {
	// MaxAttempts counts all attempts, the first included: 1..10
	// (tool.MaxAttempts).
	MaxAttempts int `json:"max_attempts"`
	// IntervalSeconds is the wait before the first retry, in whole seconds
	// (Step Functions' Retrier IntervalSeconds, at least 1).
	IntervalSeconds int `json:"interval_seconds"`
	// BackoffRate multiplies the interval after each retry (at least 1.0).
	BackoffRate float64 `json:"backoff_rate"`
}

// Tool is one catalog entry.
type Tool struct {
	// Name is the tool's identity as Solutions name it, e.g. "send-email".
	Name        string `json:"name"`
	Description string `json:"description"`
	// Idempotent reports whether the tool honours the idempotency key, so
	// that a retry cannot repeat its effect.
	Idempotent bool   `json:"idempotent"`
	Policy     Policy `json:"policy"`
	// ReviewRequired puts the tool on the review list: Gate A requires an
	// approved human review before every execution.
	ReviewRequired bool  `json:"review_required"`
	Retry          Retry `json:"retry"`
	// FunctionTimeoutSeconds is the tool function's Lambda timeout, in
	// seconds (1..900, Lambda's maximum): the CDK app deploys the function
	// with it (infra/functions.go), and a tool step's Task waits
	// TaskTimeoutSeconds for it. A step's own timeout_seconds bounds the
	// tool's work inside it (docs/solutions.md, "timeout_seconds").
	FunctionTimeoutSeconds int `json:"function_timeout_seconds"`
	// Function is the name of the Lambda function the tool runs in.
	Function string `json:"function"`
	// InputSchema and OutputSchema are JSON Schema documents (2020-12),
	// kept as the exact bytes of the catalog.
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// Placeholder returns the DefinitionSubstitutions key that stands for the
// tool's function ARN in a compiled definition: "Function" followed by the
// function name in CamelCase ("send-email" gives "FunctionSendEmail").
func (t *Tool) Placeholder() string { return FunctionPlaceholder(t.Function) }

// TaskTimeoutSeconds is the TimeoutSeconds of the tool's Task: the
// function's timeout plus TaskTimeoutMargin.
func (t *Tool) TaskTimeoutSeconds() int { return t.FunctionTimeoutSeconds + TaskTimeoutMargin }

// FunctionPlaceholder returns the DefinitionSubstitutions key for the named
// function: letters and digits only, as CloudFormation requires of
// substitution keys.
func FunctionPlaceholder(function string) string {
	var b strings.Builder
	b.WriteString("Function")
	for _, part := range strings.FieldsFunc(function, func(r rune) bool { return r == '-' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// Catalog is the set of admitted tools, by name.
type Catalog struct {
	tools map[string]*Tool
}

// NamePattern is the shape of a catalog tool's name, which toolsets pin
// and platform tools take, and of its function's name in the catalog:
// lower-case letters, digits and "-", at most 63 characters (a
// tool.Pattern: the bound is checked apart, docs/performance.md).
var NamePattern = tool.NewPattern(`^[a-z][a-z0-9-]{0,62}$`, `^[a-z][a-z0-9-]*$`, 63, nil)

// Parse reads a catalog document ({"tools": [...]}) and validates every
// entry: a unique name, a known policy, retry within 1..10 attempts, a
// positive timeout, and both schemas present.
func Parse(data []byte) (*Catalog, error) {
	var doc struct {
		Tools []*Tool `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	c := &Catalog{tools: make(map[string]*Tool, len(doc.Tools))}
	for i, t := range doc.Tools {
		switch {
		case !NamePattern.MatchString(t.Name):
			return nil, fmt.Errorf("catalog tool %d: name %q must match %s", i, t.Name, NamePattern)
		case c.tools[t.Name] != nil:
			return nil, fmt.Errorf("catalog tool %q: listed twice", t.Name)
		case t.Policy != AtLeastOnce && t.Policy != AtMostOnce:
			return nil, fmt.Errorf("catalog tool %q: policy %q is not at_least_once or at_most_once", t.Name, t.Policy)
		case t.Retry.MaxAttempts < 1 || t.Retry.MaxAttempts > tool.MaxAttempts:
			return nil, fmt.Errorf("catalog tool %q: retry.max_attempts %d is outside 1..%d", t.Name, t.Retry.MaxAttempts, tool.MaxAttempts)
		case t.Retry.IntervalSeconds < 1 || t.Retry.BackoffRate < 1:
			return nil, fmt.Errorf("catalog tool %q: retry needs interval_seconds >= 1 and backoff_rate >= 1.0", t.Name)
		case t.FunctionTimeoutSeconds < 1 || t.FunctionTimeoutSeconds > MaxFunctionTimeout:
			return nil, fmt.Errorf("catalog tool %q: function_timeout_seconds %d is outside 1..%d", t.Name, t.FunctionTimeoutSeconds, MaxFunctionTimeout)
		case !NamePattern.MatchString(t.Function):
			return nil, fmt.Errorf("catalog tool %q: function %q must match %s", t.Name, t.Function, NamePattern)
		case len(t.InputSchema) == 0 || len(t.OutputSchema) == 0:
			return nil, fmt.Errorf("catalog tool %q: input_schema and output_schema are required", t.Name)
		}
		if at, n := longestString(t.InputSchema); n > MaxInputBytes {
			return nil, fmt.Errorf("catalog tool %q: input_schema%s admits strings of %d characters, more than a Task's payload can carry (%d bytes of input, within Step Functions' 256 KiB)", t.Name, at, n, MaxInputBytes)
		}
		c.tools[t.Name] = t
	}
	return c, nil
}

// builtin is catalog.json as Go data (builtin.go, written by go generate
// from what Parse reads): a function's cold start neither decodes nor
// checks it again (docs/performance.md, "Bootstrap size and cold start").
var builtin = New(builtinTools)

// New returns a catalog of the given tools, as they are: it checks
// nothing, so the caller must have (the resolver builds the catalog of a
// registered toolset with it, whose tools toolset.Verify checked). A later
// tool of the same name replaces an earlier one.
func New(tools []*Tool) *Catalog {
	c := &Catalog{tools: make(map[string]*Tool, len(tools))}
	for _, t := range tools {
		c.tools[t.Name] = t
	}
	return c
}

// Default returns the embedded catalog. Callers must not modify its tools.
func Default() *Catalog { return builtin }

// Lookup returns the named tool, or false when it is not admitted.
func (c *Catalog) Lookup(name string) (*Tool, bool) {
	t, ok := c.tools[name]
	return t, ok
}

// Names returns the admitted tool names, sorted.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.tools))
	for n := range c.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
