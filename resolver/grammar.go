package resolver

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mapping is the keys one mapping of the Solution grammar may hold
// (docs/solutions.md): Keys are all it accepts, in the order the docs
// give them, and Required those it must hold. A key outside Keys is
// refused as [unknown-field], a missing required key as [missing-field].
type Mapping struct {
	Keys     []string
	Required []string
}

// The contexts of Grammar: each names one kind of mapping of a Solution.
// A step's context is GrammarStep(kind).
const (
	// GrammarSolution is the top level of a Solution file.
	GrammarSolution = "solution"
	// GrammarPolicy is the Solution's policy.
	GrammarPolicy = "policy"
	// GrammarHTTPHost is one entry of policy.http_hosts (and of a toolset
	// file's http tool, whose key list is the same).
	GrammarHTTPHost = "http_host"
	// GrammarIdempotency is an http host entry's idempotency.
	GrammarIdempotency = "idempotency"
	// GrammarAuth is a target's auth: written in a toolset file only (an
	// http host entry's or an MCP server's, docs/toolsets.md); a
	// Solution's http host entry refuses it.
	GrammarAuth = "auth"
	// GrammarForEach is a for_each step's for_each.
	GrammarForEach = "for_each"
	// GrammarRetry is a tool step's retry.
	GrammarRetry = "retry"
	// GrammarCatch is one entry of a step's on_error list.
	GrammarCatch = "on_error_entry"
	// GrammarChoiceRule is one rule of a choice step's list.
	GrammarChoiceRule = "choice_rule"
	// GrammarWhen is a choice rule's when: value and exactly one of
	// ChoiceOperators.
	GrammarWhen = "when"
	// GrammarReview is a review step's review.
	GrammarReview = "review"
	// GrammarWait is a wait step's wait.
	GrammarWait = "wait"
	// GrammarFail is a fail step's fail.
	GrammarFail = "fail"
)

// GrammarStep is the context of a step of kind k: "step:" and the kind.
func GrammarStep(k StepKind) string { return "step:" + string(k) }

// kindKeys are the step kinds' keys: a step holds exactly one of them.
var kindKeys = []string{"tool", "workflow", "pass", "choice", "review", "wait", "for_each", "succeed", "fail"}

// Choice operators and the ASL comparison each maps to.
var choiceOperators = []string{"equals", "not_equals", "greater_than", "greater_than_or_equals", "less_than", "less_than_or_equals", "is_present"}

// stepKeys are the keys of a step of each kind.
var stepKeys = map[StepKind][]string{
	KindTool:     {"id", "tool", "with", "retry", "timeout_seconds", "output_limit_bytes", "keep", "on_error", "next", "tolerate_duplicates"},
	KindWorkflow: {"id", "workflow", "with", "output_limit_bytes", "on_error", "next"},
	KindPass:     {"id", "pass", "next"},
	KindChoice:   {"id", "choice", "default"},
	KindReview:   {"id", "review", "on_approve", "on_reject", "on_timeout"},
	KindWait:     {"id", "wait", "next"},
	KindForEach:  {"id", "for_each", "next", "on_error"},
	KindSucceed:  {"id", "succeed"},
	KindFail:     {"id", "fail"},
}

// httpHostKeys are the keys of an http host entry, of its idempotency,
// and of a target's auth (an http host entry's or an MCP server's).
var (
	httpHostKeys    = []string{"host", "methods", "headers", "idempotency", "auth"}
	idempotencyKeys = []string{"header", "format"}
	authKeys        = []string{"header", "scheme", "path_segment", "origin_scheme"}
)

// grammar is the one table of the Solution grammar's mappings: every
// mapping the decoder reads takes its keys from here (decoder.grammar),
// and resolver/declare's solution.schema.json is built from it.
var grammar = func() map[string]Mapping {
	g := map[string]Mapping{
		GrammarSolution:    {Keys: []string{"solution", "version", "description", "toolset", "policy", "input", "output", "start", "steps"}, Required: []string{"solution", "version", "steps"}},
		GrammarPolicy:      {Keys: []string{"review_before", "fetch_hosts", "http_hosts", "run_timeout_seconds", "park_timeout_seconds", "input_limit_bytes"}},
		GrammarHTTPHost:    {Keys: httpHostKeys, Required: []string{"host", "methods"}},
		GrammarIdempotency: {Keys: idempotencyKeys, Required: []string{"header"}},
		GrammarAuth:        {Keys: authKeys},
		GrammarForEach:     {Keys: []string{"items", "as", "max_items", "max_concurrency", "collect", "steps"}, Required: []string{"items", "as", "max_items", "steps"}},
		GrammarRetry:       {Keys: []string{"max_attempts", "interval_seconds", "backoff_rate", "errors"}},
		GrammarCatch:       {Keys: []string{"errors", "next"}, Required: []string{"next"}},
		GrammarChoiceRule:  {Keys: []string{"when", "next"}, Required: []string{"when", "next"}},
		GrammarWhen:        {Keys: append([]string{"value"}, choiceOperators...), Required: []string{"value"}},
		GrammarReview:      {Keys: []string{"of", "show", "ask", "editable", "notify", "timeout_seconds", "reviewers"}},
		GrammarWait:        {Keys: []string{"seconds", "until"}},
		GrammarFail:        {Keys: []string{"error", "cause"}, Required: []string{"error"}},
	}
	for k, keys := range stepKeys {
		// A step's id and its kind key are required: the decoder reports
		// a missing id, and a step without exactly one kind key has no
		// context at all (decoder.kindless).
		req := []string{"id", string(k)}
		if k == KindReview {
			req = append(req, "on_approve")
		}
		g[GrammarStep(k)] = Mapping{Keys: keys, Required: req}
	}
	return g
}()

// Grammar returns the Solution grammar's mappings by context (the
// Grammar* constants and GrammarStep of each kind): a copy, which the
// caller may change. The decoder checks every mapping's unknown and
// missing keys against this table (docs/solutions.md §2.1); a step's
// kind keys (KindKeys) and id are checked before its mapping.
func Grammar() map[string]Mapping {
	out := make(map[string]Mapping, len(grammar))
	for ctx, m := range grammar {
		out[ctx] = Mapping{Keys: slices.Clone(m.Keys), Required: slices.Clone(m.Required)}
	}
	return out
}

// KindKeys returns the step kinds' keys, a step holding exactly one of
// them (docs/solutions.md, "Steps"): a copy.
func KindKeys() []string { return slices.Clone(kindKeys) }

// ChoiceOperators returns the operators of a choice rule's when, of
// which a rule holds exactly one (docs/solutions.md, "choice"): a copy.
func ChoiceOperators() []string { return slices.Clone(choiceOperators) }

// StepKinds returns the step kinds in kindKeys' order.
func StepKinds() []StepKind {
	out := make([]StepKind, len(kindKeys))
	for i, k := range kindKeys {
		out[i] = StepKind(k)
	}
	return out
}

// grammar decodes v as the mapping of context ctx (Grammar), reporting
// unknown keys and missing required ones as decoder.mapping does.
func (d *decoder) grammar(v *value, what, ctx string) bool {
	m, ok := grammar[ctx]
	if !ok {
		panic(fmt.Sprintf("resolver: no grammar context %q", ctx))
	}
	return d.mapping(v, what, m.Keys, m.Required...)
}

// SolutionData parses a Solution file's text (YAML, or JSON when file
// ends in .json) into the encoding/json data model as the resolver reads
// it: maps, lists, strings, bools, nil and numbers as json.Number. Its
// error is the resolver's [syntax] error with its line and column.
func SolutionData(file string, src []byte) (any, error) {
	v, pos, err := parseValue(src, formatOf(file))
	if err != nil {
		return nil, fmt.Errorf("%s:%d:%d: %w", file, pos.Line, pos.Column, err)
	}
	if bad := refusedNumbers(v); len(bad) > 0 {
		var msgs []string
		for _, b := range bad {
			msgs = append(msgs, b.String())
		}
		return nil, fmt.Errorf("%s: %s", file, strings.Join(msgs, "; "))
	}
	return v.plain(), nil
}

// BindingPatternECMA is a regular expression, in the syntax ECMA-262 and
// Go's regexp (RE2) share, that matches a string holding at least one
// binding where every ${…} is a binding of the grammar (bindingPattern,
// docs/solutions.md "Bindings") and "$${" writes a literal "${": the
// strings a Solution's value compiles to a JSONPath or States.Format
// expression. A for_each item binding must not be named like a binding
// root (input, steps, execution, reviews, for_each), which no for_each
// may name its item (decodeForEach), so the pattern refuses those.
// resolver/declare's solution.schema.json allows a binding wherever a
// value is written as a string matching it. Read-only: nothing assigns
// it after package initialisation.
var BindingPatternECMA = bindingPatternECMA()

// bindingPatternECMA builds BindingPatternECMA. A run of "$" followed by
// "{" opens a binding when it is one "$" and is literal text when it is
// more (parseTemplate reads "$${" as "${"); a run followed by anything
// else, or by the end, is literal.
func bindingPatternECMA() string {
	const (
		id   = `[a-z][a-z0-9_]{0,62}` // StepIDPattern
		path = `(?:\.[A-Za-z_][A-Za-z0-9_]*|\[(?:0|[1-9][0-9]{0,8})\])*`
	)
	execution := slices.Sorted(maps.Keys(executionFields))
	var answer []string
	for _, f := range decisionFields {
		if f == "answer" {
			f += path
		}
		answer = append(answer, f)
	}
	b := `(?:input` + path +
		`|for_each\.index` +
		`|steps\.` + id + path +
		`|execution\.(?:` + strings.Join(execution, "|") + `)` +
		`|reviews\.` + id + `\.(?:` + strings.Join(answer, "|") + `)` +
		`|` + idOutside(bindingRoots) + path + `)`
	lit := `(?:[^$]|\$+[^${]|\$\$+\{)`
	one := `\$\{` + b + `\}`
	return `^` + lit + `*` + one + `(?:` + lit + `|` + one + `)*\$*$`
}

// idOutside returns a regexp matching a step id ([a-z][a-z0-9_]{0,62},
// StepIDPattern) that is none of words (each itself a step id), built
// without lookahead, which RE2 lacks: along the words' common prefixes,
// any other next character starts an id outside them.
func idOutside(words []string) string {
	const maxLen = 63
	var walk func(prefix string) string
	walk = func(prefix string) string {
		d := len(prefix)
		var alts []string
		if d > 0 && !slices.Contains(words, prefix) {
			alts = append(alts, "")
		}
		if d == maxLen {
			return "(?:" + strings.Join(alts, "|") + ")"
		}
		next := map[byte]bool{}
		for _, w := range words {
			if len(w) > d && strings.HasPrefix(w, prefix) {
				next[w[d]] = true
			}
		}
		for _, c := range slices.Sorted(maps.Keys(next)) {
			alts = append(alts, string(c)+walk(prefix+string(c))) // a letter, digit or "_": no escaping
		}
		allowed := "abcdefghijklmnopqrstuvwxyz"
		if d > 0 {
			allowed = "0123456789_abcdefghijklmnopqrstuvwxyz"
		}
		var class []byte
		for i := 0; i < len(allowed); i++ {
			if !next[allowed[i]] {
				class = append(class, allowed[i])
			}
		}
		if len(class) > 0 {
			tail := ""
			if rest := maxLen - d - 1; rest > 0 {
				tail = fmt.Sprintf("[a-z0-9_]{0,%d}", rest)
			}
			alts = append(alts, "["+classRanges(class)+"]"+tail)
		}
		return "(?:" + strings.Join(alts, "|") + ")"
	}
	return walk("")
}

// classRanges writes sorted bytes (letters, digits, "_") as the inside of
// a character class, runs of three or more as ranges: "0-9_a-df-z".
func classRanges(sorted []byte) string {
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			b.WriteByte(sorted[i])
			b.WriteByte('-')
			b.WriteByte(sorted[j])
		default:
			b.Write(sorted[i : j+1])
		}
		i = j + 1
	}
	return b.String()
}
