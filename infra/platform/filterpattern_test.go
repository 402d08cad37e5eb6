package platform

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// CloudWatch Logs has no local stand-in, so the tests evaluate the app's
// metric filter patterns with matchJSONFilter, a matcher for the JSON
// filter pattern forms the app uses and no others. The syntax and meaning
// follow the CloudWatch Logs User Guide, "Filter pattern syntax for metric
// filters, subscription filters, and filter log events"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html),
// section "Using filter patterns to match terms in JSON log events"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/matching-terms-json-log-events.html):
//
//	pattern    = "{" expr "}"
//	expr       = term { "&&" term } | term { "||" term }
//	term       = "(" expr ")" | comparison
//	comparison = selector ( "=" | "!=" ) string
//	selector   = "$" { "." name }      name: letters, digits, _
//	string     = a double-quoted value, compared exactly
//
// A JSON pattern matches JSON log events only: an event that is not a JSON
// object matches none. A comparison with a property that does not exist is
// false for "="; for "!=" the guide does not say, so the matcher refuses
// it. Anything else is refused with an error rather than guessed at: an
// unquoted value, a wildcard (*) in a value, an escape, numeric
// comparisons (<, >, …), IS NULL, EXISTS, array selectors ($.a[0]),
// mixing && and || without parentheses (the guide gives no precedence),
// a comparison of a string with a property that is not a string.
func matchJSONFilter(pattern, event string) (bool, error) {
	e, err := parseJSONFilter(pattern)
	if err != nil {
		return false, err
	}
	var obj map[string]any
	if json.Unmarshal([]byte(event), &obj) != nil || obj == nil {
		return false, nil
	}
	return e.eval(obj)
}

// filterExpr is a parsed JSON filter pattern expression.
type filterExpr interface {
	// eval evaluates every part (no short cut), so that a part the matcher
	// cannot decide is an error even where the result would not need it.
	eval(event map[string]any) (bool, error)
}

type filterAnd []filterExpr
type filterOr []filterExpr

type filterCompare struct {
	path  []string // property names after "$"
	op    string   // "=" or "!="
	value string
}

func (a filterAnd) eval(ev map[string]any) (bool, error) {
	all := true
	for _, e := range a {
		ok, err := e.eval(ev)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

func (o filterOr) eval(ev map[string]any) (bool, error) {
	anyOf := false
	for _, e := range o {
		ok, err := e.eval(ev)
		if err != nil {
			return false, err
		}
		anyOf = anyOf || ok
	}
	return anyOf, nil
}

func (c filterCompare) eval(ev map[string]any) (bool, error) {
	var v any = ev
	for _, name := range c.path {
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		if v, ok = m[name]; !ok {
			v = nil
			break
		}
	}
	sel := "$." + strings.Join(c.path, ".")
	if v == nil {
		if c.op == "=" {
			return false, nil
		}
		return false, fmt.Errorf("filter pattern: %s %s on a missing or null property: undefined in this matcher", sel, c.op)
	}
	s, ok := v.(string)
	if !ok {
		return false, fmt.Errorf("filter pattern: %s is %T, not a string: undefined in this matcher", sel, v)
	}
	return (s == c.value) == (c.op == "="), nil
}

// parseJSONFilter parses pattern, or says which part it does not understand.
func parseJSONFilter(pattern string) (filterExpr, error) {
	p := &filterParser{src: pattern}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok != "{" {
		return nil, p.errorf("want { (only JSON filter patterns are supported)")
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok != "}" {
		return nil, p.errorf("want }")
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok != "" {
		return nil, p.errorf("want the end of the pattern")
	}
	return e, nil
}

// filterParser reads tokens: { } ( ) && || = != a selector ($…) or a
// quoted string ("…", kept with its quotes); "" is the end.
type filterParser struct {
	src string
	pos int    // where the next token starts
	at  int    // where tok starts
	tok string // the current token
}

func (p *filterParser) errorf(format string, a ...any) error {
	return fmt.Errorf("filter pattern %q: at offset %d (%q): %s", p.src, p.at, p.tok, fmt.Sprintf(format, a...))
}

func (p *filterParser) next() error {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	p.at = p.pos
	rest := p.src[p.pos:]
	switch {
	case rest == "":
		p.tok = ""
		return nil
	case strings.HasPrefix(rest, "&&"), strings.HasPrefix(rest, "||"), strings.HasPrefix(rest, "!="):
		p.tok = rest[:2]
	case strings.ContainsRune("{}()=", rune(rest[0])):
		p.tok = rest[:1]
	case rest[0] == '$':
		n := 1
		for n < len(rest) && (isNameByte(rest[n]) || rest[n] == '.') {
			n++
		}
		p.tok = rest[:n]
	case rest[0] == '"':
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			p.tok = rest
			return p.errorf("unterminated string")
		}
		p.tok = rest[:end+2]
	default:
		n := 1
		for n < len(rest) && !strings.ContainsRune(" \t\r\n{}()", rune(rest[n])) {
			n++
		}
		p.tok = rest[:n]
		return p.errorf("not a form this matcher understands")
	}
	p.pos += len(p.tok)
	return nil
}

func isNameByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// expr reads terms joined by one operator, && or ||.
func (p *filterParser) expr() (filterExpr, error) {
	first, err := p.term()
	if err != nil {
		return nil, err
	}
	terms, op := []filterExpr{first}, ""
	for p.tok == "&&" || p.tok == "||" {
		if op != "" && p.tok != op {
			return nil, p.errorf("&& and || mixed without parentheses")
		}
		op = p.tok
		if err := p.next(); err != nil {
			return nil, err
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	switch op {
	case "&&":
		return filterAnd(terms), nil
	case "||":
		return filterOr(terms), nil
	}
	return first, nil
}

func (p *filterParser) term() (filterExpr, error) {
	if p.tok == "(" {
		if err := p.next(); err != nil {
			return nil, err
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if p.tok != ")" {
			return nil, p.errorf("want )")
		}
		return e, p.next()
	}
	if !strings.HasPrefix(p.tok, "$.") {
		return nil, p.errorf("want ( or a selector $.name")
	}
	path := strings.Split(p.tok[2:], ".")
	for _, name := range path {
		if name == "" {
			return nil, p.errorf("empty property name in the selector")
		}
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok != "=" && p.tok != "!=" {
		return nil, p.errorf("want = or !=")
	}
	op := p.tok
	if err := p.next(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(p.tok, `"`) {
		return nil, p.errorf("want a double-quoted string")
	}
	value := p.tok[1 : len(p.tok)-1]
	if strings.ContainsAny(value, `*\`) {
		return nil, p.errorf("a wildcard or escape in a value: not exact matching")
	}
	return filterCompare{path: path, op: op, value: value}, p.next()
}

func TestMatchJSONFilter(t *testing.T) {
	const (
		unknownRow = `{"time":"2026-11-02T09:15:00Z","level":"WARN","msg":"tool invocation","ledger_status":"UNKNOWN","tool":"send-email"}`
		okRow      = `{"time":"2026-11-02T09:15:00Z","level":"INFO","msg":"tool invocation","ledger_status":"COMPLETED","tool":"send-email"}`
		refused    = `{"time":"2026-11-02T09:15:00Z","level":"ERROR","msg":"toolset refused","toolset_id":"ts_0123","rule":"toolset-review-required"}`
		nested     = `{"msg":"x","detail":{"status":"FAILED"},"n":3}`
		both       = `{ ($.msg = "tool invocation") && ($.ledger_status = "UNKNOWN") }`
		either     = `{ ($.type = "ExecutionFailed") || ($.type = "ExecutionTimedOut") }`
	)
	for _, c := range []struct {
		name, pattern, event string
		want                 bool
	}{
		{"plain =", `{ $.msg = "toolset refused" }`, refused, true},
		{"plain = other value", `{ $.msg = "toolset refused" }`, okRow, false},
		{"parenthesised", `{ ($.msg = "toolset refused") }`, refused, true},
		{"&& both hold", both, unknownRow, true},
		{"&& one fails", both, okRow, false},
		{"&& missing key", both, refused, false},
		{"|| first", either, `{"type":"ExecutionFailed"}`, true},
		{"|| second", either, `{"type":"ExecutionTimedOut"}`, true},
		{"|| neither", either, `{"type":"ExecutionSucceeded"}`, false},
		{"|| missing key", either, refused, false},
		{"nested parentheses", `{ (($.msg = "x") && ($.detail.status = "FAILED")) || ($.msg = "y") }`, nested, true},
		{"nested property", `{ $.detail.status = "FAILED" }`, nested, true},
		{"nested property missing", `{ $.detail.cause = "FAILED" }`, nested, false},
		{"through a string", `{ $.msg.status = "FAILED" }`, nested, false},
		{"exact, not a substring", `{ $.msg = "toolset" }`, refused, false},
		{"exact case", `{ $.msg = "Toolset Refused" }`, refused, false},
		{"!=", `{ $.level != "INFO" }`, refused, true},
		{"!= equal", `{ $.level != "ERROR" }`, refused, false},
		{"not JSON", `{ $.msg = "toolset refused" }`, `START RequestId: 1 Version: $LATEST`, false},
		{"JSON, not an object", `{ $.msg = "toolset refused" }`, `["toolset refused"]`, false},
		{"empty", `{ $.msg = "toolset refused" }`, ``, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := matchJSONFilter(c.pattern, c.event)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("%s on %s: %v, want %v", c.pattern, c.event, got, c.want)
			}
		})
	}
}

// Forms the matcher does not understand are errors, never a silent match
// or non-match.
func TestMatchJSONFilterRefuses(t *testing.T) {
	for _, c := range []struct{ name, pattern, event string }{
		{"not JSON pattern", `ERROR`, `{}`},
		{"quoted term", `"toolset refused"`, `{}`},
		{"space-delimited", `[ip, user, ...]`, `{}`},
		{"unquoted value", `{ $.msg = toolset }`, `{}`},
		{"wildcard value", `{ $.msg = "toolset*" }`, `{}`},
		{"escape", `{ $.msg = "a\"b" }`, `{}`},
		{"number", `{ $.n = 3 }`, `{"n":3}`},
		{"greater than", `{ $.n > 3 }`, `{"n":4}`},
		{"IS NULL", `{ $.msg IS NULL }`, `{}`},
		{"NOT EXISTS", `{ $.msg NOT EXISTS }`, `{}`},
		{"array selector", `{ $.a[0] = "x" }`, `{"a":["x"]}`},
		{"== operator", `{ $.msg == "x" }`, `{}`},
		{"mixed && ||", `{ ($.a = "1") && ($.b = "2") || ($.c = "3") }`, `{}`},
		{"unclosed", `{ ($.msg = "x" }`, `{}`},
		{"no closing brace", `{ $.msg = "x"`, `{}`},
		{"trailing text", `{ $.msg = "x" } extra`, `{}`},
		{"unterminated string", `{ $.msg = "x }`, `{}`},
		{"empty selector", `{ $. = "x" }`, `{}`},
		{"!= on a missing key", `{ $.gone != "x" }`, `{"msg":"x"}`},
		{"string against a number", `{ $.n = "3" }`, `{"n":3}`},
		{"string against a boolean", `{ $.ok = "true" }`, `{"ok":true}`},
		{"undecidable part of ||", `{ ($.msg = "x") || ($.n = "3") }`, `{"msg":"x","n":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := matchJSONFilter(c.pattern, c.event); err == nil {
				t.Fatalf("%s on %s: %v, want an error", c.pattern, c.event, got)
			} else {
				t.Log(err)
			}
		})
	}
}

// The app's own patterns are forms the matcher understands.
func TestAppPatternsParse(t *testing.T) {
	for _, p := range []string{ledgerUnknownPattern, toolsetRefusedPattern, executionFailedPattern} {
		if _, err := parseJSONFilter(p); err != nil {
			t.Error(err)
		}
	}
}
