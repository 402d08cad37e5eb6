package schedule

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docRefusal is a refusal quoted in docs/schedules.md.
var docRefusal = regexp.MustCompile(`^schedule expression ("(?:[^"\\]|\\.)*"): `)

// docExample is an expression docs/schedules.md gives as an example, in a
// code block or a table's first column.
var docExample = regexp.MustCompile("^(?:\\| `)?((?:rate|cron)\\([^)]*\\))")

// docs/schedules.md, in its section "Expressions", quotes Parse's
// refusals word for word, and every expression it shows as an example
// parses (but those of "Seconds, on the local stack only").
func TestDocsQuoteParsesRefusalsAndExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/schedules.md")
	if err != nil {
		t.Fatal(err)
	}
	var refusals, examples int
	inExpressions, section := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			inExpressions = line == "## Expressions"
		}
		if strings.HasPrefix(line, "#") {
			section = line
		}
		if !inExpressions {
			continue
		}
		if m := docRefusal.FindStringSubmatch(line); m != nil {
			refusals++
			expr, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if _, err := Parse(expr); err == nil || err.Error() != line {
				t.Errorf("docs quote\n\t%s\nParse says\n\t%v", line, err)
			}
			continue
		}
		if m := docExample.FindStringSubmatch(line); m != nil && !strings.Contains(section, "Seconds") {
			examples++
			if _, err := Parse(m[1]); err != nil {
				t.Errorf("docs example %s: %v", m[1], err)
			}
		}
	}
	if refusals < 3 || examples < 10 {
		t.Errorf("found %d refusals and %d examples in docs/schedules.md", refusals, examples)
	}
}
