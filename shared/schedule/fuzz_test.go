package schedule

import (
	"errors"
	"testing"
	"time"
)

// Any text is either refused with a *ParseError or parsed into an
// expression that prints as it was written and whose Next is a firing
// strictly after the time, or none.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"rate(5 minutes)", "rate(1 second)", "cron(0 10 * * ? *)", "cron(0/5 8-17 ? * MON-FRI *)",
		"cron(0 9 ? * 2#1 *)", "cron(0 0 L * ? *)", "cron(0 12 15W * ? *)", "cron(0 12 ? * 6L 2027-2029/2)", "at(2026-12-03T18:00:00)"} {
		f.Add(s)
	}
	after := time.Date(2026, 12, 3, 17, 4, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (Expr, error){Parse, ParseLocal} {
			e, err := parse(s)
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Field == "" || pe.Rule == "" {
					t.Fatalf("%q: %v is not a *ParseError with a field and a rule", s, err)
				}
				continue
			}
			if e.String() != s {
				t.Fatalf("%q prints as %q", s, e.String())
			}
			if next := e.Next(after); !next.IsZero() && (!next.After(after) || !e.Matches(next)) {
				t.Fatalf("%q: Next %v", s, next)
			}
		}
	})
}
