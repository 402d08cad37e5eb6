package table

import (
	"strings"
	"testing"
)

// ExpressionAttributes names each path's first element, resolving
// placeholders, and skips values, nested elements, indexes, functions and
// keywords.
func TestExpressionAttributes(t *testing.T) {
	names := map[string]string{"#0": "attempt_log", "#1": "0123abcd", "#status": "status"}
	for expr, want := range map[string]string{
		"SET #0.#1 = :0, bound_at = :at ADD invocations :one":                   "attempt_log bound_at invocations",
		"attribute_not_exists(bound_key) AND #status = :approved":               "bound_key status",
		"SET #status = if_not_exists(#status, :s) REMOVE error_code, list[2].x": "status status error_code list",
		"begins_with(sk, :p) AND size(body) > :n":                               "sk body",
	} {
		if got := strings.Join(ExpressionAttributes(&expr, names), " "); got != want {
			t.Errorf("ExpressionAttributes(%q) = %q, want %q", expr, got, want)
		}
	}
}
