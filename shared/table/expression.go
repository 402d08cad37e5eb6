package table

import (
	"slices"
	"strings"
)

// ExpressionAttributes returns the top-level attributes a DynamoDB
// expression (projection, condition, update or key condition) names, in
// order, repeats kept: each document path's first element (a #placeholder resolved by
// names), never a value (:v), a function or a keyword (DynamoDB Developer
// Guide, "Expressions"). Tests check the requests the adapters make against
// the declared accesses with it; nil names nothing.
func ExpressionAttributes(expr *string, names map[string]string) []string {
	if expr == nil {
		return nil
	}
	e := *expr
	var out []string
	ident := func(c byte) bool {
		return c == '_' || c == '#' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(e); {
		if !ident(e[i]) {
			i++
			continue
		}
		j := i
		for j < len(e) && ident(e[j]) {
			j++
		}
		tok := e[i:j]
		prev := strings.TrimRight(e[:i], " ")
		next := strings.TrimLeft(e[j:], " ")
		i = j
		switch {
		case strings.HasPrefix(tok, ":"), strings.HasSuffix(prev, "."), strings.HasPrefix(next, "("):
			continue // a value, a nested element, a function
		case tok[0] >= '0' && tok[0] <= '9':
			continue // a list index
		case slices.Contains([]string{"SET", "REMOVE", "ADD", "DELETE", "AND", "OR", "NOT", "BETWEEN", "IN"}, strings.ToUpper(tok)):
			continue
		case strings.HasPrefix(tok, "#"):
			out = append(out, names[tok])
		default:
			out = append(out, tok)
		}
	}
	return out
}
