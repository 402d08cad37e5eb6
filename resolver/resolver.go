package resolver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Manifest is DIR/<solution>.json: what publishing needs besides the
// definition.
type Manifest struct {
	Solution    string `json:"solution"`
	Version     int    `json:"version"`
	Description string `json:"description,omitempty"`
	ToolsetID   string `json:"toolset_id"`
	// Definition is the definition's file name, beside the manifest.
	Definition string `json:"definition"`
	// Placeholders maps each DefinitionSubstitutions key in the definition
	// ("FunctionSendEmail") to the Lambda function whose ARN replaces
	// "${key}" at deploy.
	Placeholders map[string]string `json:"placeholders"`
	// ToolFunctions maps each platform tool's function placeholder key in
	// the definition ("FunctionCreateTicket") to the tool; publishing
	// replaces "${key}" with the ARN of SSM parameter
	// toolset.ToolFunctionParam(stage, key). Omitted when there is none.
	ToolFunctions map[string]string `json:"tool_functions,omitempty"`
	// Workflows maps each child Solution's placeholder key in the
	// definition (WorkflowPlaceholder) to what publishing checks and
	// substitutes: the child's published version ARN, recorded when the
	// child was published. Omitted when the Solution starts none.
	Workflows map[string]WorkflowPin `json:"workflows,omitempty"`
	// OutputBoundBytes bounds the run's output (output:), in bytes of
	// JSON: a parent that starts this Solution must allow that much in
	// the step's output_limit_bytes.
	OutputBoundBytes int `json:"output_bound_bytes"`
	// InputSchema is the Solution's JSON Schema for a run's input, if any.
	InputSchema any `json:"input_schema,omitempty"`
	// InputLimitBytes is policy.input_limit_bytes: a run's input at most,
	// in bytes of compact JSON (InputRecord).
	InputLimitBytes int `json:"input_limit_bytes"`
	// SourceDigest is "sha256:" and the hex SHA-256 of the source file.
	SourceDigest string `json:"source_digest"`
}

// Result is the outcome of compiling one Solution file.
type Result struct {
	File        string
	Diagnostics []Diagnostic // at most MaxDiagnostics
	// Counts are the file's errors and warnings, those past
	// MaxDiagnostics that Diagnostics leaves out included.
	Counts Counts
	// The rest is set only when there is no error.
	Solution   *Solution
	Toolset    *toolset.Toolset
	Definition []byte // indented JSON, as written to <solution>.asl.json
	Manifest   *Manifest
	States     int           // states in the definition
	Tools      []string      // tools used, sorted
	Gate       []GateVerdict // Gate A per gated tool step
	// Graph is the Solution's steps and edges, set whenever its steps
	// were decoded and checked, refused or not (nil: refused before, for
	// its syntax, its grammar or its toolset); Refused are the paths its
	// [review-before-tool] and [no-fallback] diagnostics name.
	Graph   *StepGraph
	Refused []RefusedPath
	// RunTimeout is the run's timeout and how it was set: written, or
	// derived from the longest path (docs/solutions.md, "The run timeout").
	RunTimeout RunTimeout
	// Literals are the literal fetch URLs and recipients of the compiled
	// steps, in source order, for the publish function to check against
	// the deployment's lists (Literal).
	Literals []Literal
}

// OK reports whether the Solution has no error (warnings allowed).
func (r *Result) OK() bool {
	for _, d := range r.Diagnostics {
		if d.Severity == SeverityError {
			return false
		}
	}
	return true
}

// Options tune a compilation.
type Options struct {
	// Catalog is the set of admitted tools; nil means catalog.Default().
	Catalog *catalog.Catalog
	// Toolsets finds the registered toolset a Solution names (toolset:
	// ts_...): LockLookup of the toolsets directory (check, compile), or
	// the ledger's registered item (the publish function). It returns an
	// error wrapping ErrToolsetNotFound when there is none. nil: a
	// Solution naming a toolset is refused.
	Toolsets func(id string) (*toolset.Toolset, error)
	// ChildRunTimeout returns the run timeout, in seconds, of the version
	// of Solution name a workflow step starts: the publish function reads
	// it from the child's published record. The derived run timeout then
	// counts each workflow step as its child's run timeout plus
	// ChildStartSeconds (docs/solutions.md, "The run timeout"); an error
	// is reported as [run-timeout]. nil (check, compile offline): a
	// derived run timeout leaves the children out, names them in
	// RunTimeout.Pending and warns that publishing adds them.
	ChildRunTimeout func(name string) (int, error)
	// Observed holds the shapes learned from the results of the toolset's
	// tools (a shapes file, observed.ParseFile, or a lock's observed
	// member): a binding into the result of a tool that declares no output
	// schema is checked against its shape, a path never observed being a
	// warning, never an error (docs/declarations.md, "Observed shapes",
	// "In the binding checks"). They are used when their toolset is the
	// one the Solution names (or they name none); shapes of another
	// toolset are a [binding-shape] warning and unused. nil: the shapes
	// the named toolset's lock carries (toolset.Toolset.Observed, as
	// LockLookup reads it), if any.
	Observed *observed.File
}

// Compile checks the Solution in src and, when it has no error, compiles
// it. file names the source in diagnostics and chooses its format: JSON
// when it ends in ".json", YAML otherwise (formatOf, docs/solutions.md
// §2.1). Once src parses, its lines holding invisible or bidirectional
// characters are warnings ([invisible], InvisibleLines).
func Compile(file string, src []byte, opts Options) *Result {
	return compile(file, src, opts, nil)
}

// compile is Compile; when the definition is built, emitted (nil: none)
// is given it, for the tests of its encoding.
func compile(file string, src []byte, opts Options, emitted func(*asl.Definition)) *Result {
	res := &Result{File: file}
	ds := &diags{file: file}
	defer func() { res.Diagnostics, res.Counts = ds.sorted() }()
	if opts.Catalog == nil {
		opts.Catalog = catalog.Default()
	}
	v, ok := parseChecked(src, ds)
	if !ok {
		return res
	}
	checkInvisible(ds, src)
	sol := (&decoder{ds: ds}).decodeSolution(v)
	if sol == nil || len(sol.Steps) == 0 {
		return res
	}
	if sol.Input != nil {
		if _, err := schema.CompileValue(sol.Input.plain()); err != nil {
			for _, p := range schema.Problems(err, nil) {
				at := locate(sol.Input, p.Location)
				ds.errorf(at, RuleInputSchema, "input is not a valid JSON Schema (2020-12): input%s: %s", strings.ReplaceAll(p.Location, "/", "."), p.Message)
			}
		}
	}
	var named *toolset.Toolset
	if sol.Toolset.Set {
		if named = namedToolset(ds, sol, opts); named == nil {
			return res
		}
		opts.Catalog = toolsetCatalog(opts.Catalog, named)
	}
	c := &checker{ds: ds, cat: opts.Catalog, sol: sol, named: named, childRunTimeout: opts.ChildRunTimeout}
	c.observed = observedFor(ds, sol, named, opts.Observed)
	c.recordInput()
	c.resolve()
	c.admit()
	g := c.graph()
	c.reach(g)
	c.compileValues()
	c.checkSet(g)
	c.checkToolInputs()
	c.checkBindings()
	c.checkEditable()
	c.checkGates()
	c.checkHosts()
	c.checkHTTP()
	c.checkMail()
	c.checkReviewers()
	c.deriveRunTimeout()
	c.checkRunTimeout()
	c.checkWaits(g)
	c.checkRetries()
	c.checkCatches()
	c.checkRetryErrors()
	c.checkToolTimeouts()
	// The plan is built once check found no error; the state-size bound
	// reads the steps' values from it and writes its bounds into it.
	var p *plan
	if !ds.hasErrors() {
		p = c.plan(g)
		c.checkStateSize(g, p)
	}
	res.Gate = c.verdicts
	res.Graph, res.Refused = c.stepGraph(), c.refused
	res.RunTimeout = c.runTimeout
	res.Tools = c.usedTools()
	if ds.hasErrors() {
		return res
	}

	var reviewBefore []string
	for _, r := range sol.ReviewBefore {
		reviewBefore = append(reviewBefore, r.Name)
	}
	var ts *toolset.Toolset
	var err error
	if named != nil {
		ts, err = pinNamed(named, reviewBefore)
	} else {
		ts, err = toolset.FromCatalog(c.cat, res.Tools, reviewBefore, c.hosts.Strings(), c.pinnedHTTPHosts()...)
	}
	if err != nil {
		ds.errorf(sol.StepsPos, RuleUnknownTool, "build toolset: %v", err)
		return res
	}
	at := sol.StepsPos
	if named != nil {
		at = sol.Toolset.Pos
	}
	if !checkToolsetSize(ds, at, "the toolset the Solution pins ("+ts.ID+")", ts) {
		return res
	}
	e := &emitter{p: p, toolsetID: ts.ID}
	def := e.emit()
	if emitted != nil {
		emitted(def)
	}
	encoded, compactLen, err := encodeDefinition(def)
	if err != nil {
		ds.errorf(sol.StepsPos, RuleSyntax, "encode definition: %v", err)
		return res
	}
	c.checkQuotas(def, encoded, compactLen, e.placeholders())
	if ds.hasErrors() {
		return res
	}
	sum := sha256.Sum256(src)
	m := &Manifest{
		Solution:         sol.Name,
		Version:          sol.Version,
		Description:      sol.Description,
		ToolsetID:        ts.ID,
		Definition:       sol.Name + ".asl.json",
		Placeholders:     e.funcs,
		ToolFunctions:    e.toolFuncs,
		InputLimitBytes:  sol.InputLimit,
		OutputBoundBytes: p.outputBound,
		SourceDigest:     "sha256:" + hex.EncodeToString(sum[:]),
	}
	if len(e.workflows) > 0 {
		m.Workflows = map[string]WorkflowPin{}
		for key, w := range e.workflows {
			m.Workflows[key] = *w
		}
	}
	if sol.Input != nil {
		m.InputSchema = sol.Input.plain()
	}
	res.Solution, res.Toolset, res.Definition, res.Manifest = sol, ts, encoded, m
	res.Literals = c.literals
	res.States = len(e.states)
	return res
}

// Summary is the one-line account `make run` prints per Solution: states,
// tools, toolset id, the run timeout and how it was set, the Gate A
// verdict with its path, and how many warnings there are, if any. A
// refused Solution's says how many errors and warnings it has (Counts,
// listed or not) and its first error.
func (r *Result) Summary() string {
	if !r.OK() {
		first := ""
		for _, d := range r.Diagnostics {
			if d.Severity == SeverityError {
				first = d.Head()
				break
			}
		}
		return fmt.Sprintf("%s: refused (%s); first: %s", r.File, r.Counts, first)
	}
	warnings := ""
	if r.Counts.Warnings > 0 {
		warnings = ", " + r.Counts.String()
	}
	gate := "gate A: no gated tool"
	for i, v := range r.Gate {
		if i == 0 {
			gate = "gate A: pass"
		}
		gate += fmt.Sprintf(" [%s (%s): on every path the last review before the call must approve it: %s]", v.Step, v.Tool, strings.Join(v.Last, " or "))
	}
	return fmt.Sprintf("%s: %s v%d: %d states, tools %v, toolset %s, run timeout %s, %s%s", r.File, r.Solution.Name, r.Solution.Version, r.States, r.Tools, r.Toolset.ID, r.RunTimeout, gate, warnings)
}

// parseChecked parses a Solution or toolset file, in the format its name
// ds.file chooses (formatOf), into its value tree and refuses numbers JSON
// cannot carry, reporting each problem as [syntax]; ok is false when there
// was any.
func parseChecked(src []byte, ds *diags) (v *value, ok bool) {
	v, pos, err := parseValue(src, formatOf(ds.file))
	if err != nil {
		ds.errorf(pos, RuleSyntax, "%v", err)
		return nil, false
	}
	if bad := refusedNumbers(v); len(bad) > 0 {
		for _, b := range bad {
			ds.errorf(b.pos, RuleSyntax, "%s", b)
		}
		return nil, false
	}
	return v, true
}
