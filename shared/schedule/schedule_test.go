package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Next gives the firings the EventBridge Scheduler User Guide describes for
// its examples, and for each wildcard, in UTC. The dates were worked out
// by hand from the calendar: 3 December 2026 is a Thursday; 1 May 2027 a
// Saturday; 31 January 2027 a Sunday; 1 January 1970 a Thursday.
func TestNextFiresWhenTheGuideSays(t *testing.T) {
	const after = "2026-12-03T17:04:30Z"
	for _, tc := range []struct {
		expr, after, want string // want "" for never
	}{
		// The guide's cron examples.
		{"cron(0 10 * * ? *)", after, "2026-12-04T10:00:00Z"},           // 10:00 every day
		{"cron(15 12 * * ? *)", after, "2026-12-04T12:15:00Z"},          // 12:15 every day
		{"cron(0 18 ? * MON-FRI *)", after, "2026-12-03T18:00:00Z"},     // 18:00 Monday to Friday
		{"cron(0 8 1 * ? *)", after, "2027-01-01T08:00:00Z"},            // 08:00 on the first of the month
		{"cron(0/15 * * * ? *)", after, "2026-12-03T17:15:00Z"},         // every 15 minutes
		{"cron(0/10 * ? * MON-FRI *)", after, "2026-12-03T17:10:00Z"},   // every 10 minutes, weekdays
		{"cron(0/5 8-17 ? * MON-FRI *)", after, "2026-12-03T17:05:00Z"}, // every 5 minutes 08:00-17:55, weekdays
		{"cron(0/5 8-17 ? * MON-FRI *)", "2026-12-04T17:55:00Z", "2026-12-07T08:00:00Z"},
		{"cron(0 9 ? * 2#1 *)", after, "2026-12-07T09:00:00Z"}, // 09:00 on the first Monday
		{"cron(0 8 * * ? *)", after, "2026-12-04T08:00:00Z"},
		// L, W and #.
		{"cron(0 0 L * ? *)", after, "2026-12-31T00:00:00Z"},
		{"cron(0 0 L * ? *)", "2027-02-01T00:00:00Z", "2027-02-28T00:00:00Z"},
		{"cron(0 0 L 2 ? 2028)", after, "2028-02-29T00:00:00Z"},
		{"cron(0 12 ? * 6L *)", after, "2026-12-25T12:00:00Z"}, // the last Friday
		{"cron(0 12 ? * FRIL *)", after, "2026-12-25T12:00:00Z"},
		{"cron(0 0 ? * L *)", after, "2026-12-05T00:00:00Z"}, // L alone: Saturday
		{"cron(0 12 15W * ? *)", after, "2026-12-15T12:00:00Z"},
		{"cron(0 12 5W * ? *)", after, "2026-12-04T12:00:00Z"},                   // Saturday the 5th: Friday the 4th
		{"cron(0 12 1W * ? *)", "2027-04-02T00:00:00Z", "2027-05-03T12:00:00Z"},  // Saturday the 1st: Monday the 3rd
		{"cron(0 12 31W * ? *)", "2027-01-01T00:00:00Z", "2027-01-29T12:00:00Z"}, // Sunday the 31st: Friday the 29th
		{"cron(0 12 30W 2 ? *)", after, ""},                                      // February has no 30th
		{"cron(0 9 ? * TUE#5 *)", after, "2026-12-29T09:00:00Z"},                 // December 2026 has five Tuesdays
		{"cron(0 9 ? * 3#5 2027)", "2027-01-01T00:00:00Z", "2027-03-30T09:00:00Z"},
		// Lists, ranges, increments, names, years.
		{"cron(30 2 ? JAN-MAR SUN 2027)", after, "2027-01-03T02:30:00Z"},
		{"cron(0 0 1 1 ? 2027-2029/2)", after, "2027-01-01T00:00:00Z"},
		{"cron(0 0 1 1 ? 2027-2029/2)", "2027-01-01T00:00:00Z", "2029-01-01T00:00:00Z"},
		{"cron(5,35 */6 ? * sat,sun *)", after, "2026-12-05T00:05:00Z"},
		{"cron(0 0 1/10 * ? *)", after, "2026-12-11T00:00:00Z"},
		{"cron(0 0 1 */5 ? *)", after, "2027-01-01T00:00:00Z"},
		{"cron(0 0 29 2 ? *)", after, "2028-02-29T00:00:00Z"},
		{"cron(0 0 30 2 ? *)", after, ""},
		{"cron(0 0 1 1 ? 2025)", after, ""},
		{"cron(59 23 31 12 ? 2199)", after, "2199-12-31T23:59:00Z"},
		{"cron(59 23 31 12 ? *)", "2199-12-31T23:59:00Z", ""},
		{"cron(0 0 1 1 ? *)", "1969-06-01T00:00:00Z", "1970-01-01T00:00:00Z"},
		// Strictly after: a firing time gives the next one.
		{"cron(0 10 * * ? *)", "2026-12-04T10:00:00Z", "2026-12-05T10:00:00Z"},
		{"cron(0 10 * * ? *)", "2026-12-04T09:59:59.999Z", "2026-12-04T10:00:00Z"},
		// Rates: multiples of the period since the Unix epoch.
		{"rate(5 minutes)", after, "2026-12-03T17:05:00Z"},
		{"rate(5 minutes)", "2026-12-03T17:05:00Z", "2026-12-03T17:10:00Z"},
		{"rate(1 minute)", after, "2026-12-03T17:05:00Z"},
		{"rate(1 hour)", after, "2026-12-03T18:00:00Z"},
		{"rate(1 day)", after, "2026-12-04T00:00:00Z"},
		{"rate(7 days)", after, "2026-12-10T00:00:00Z"}, // a Thursday, as 1 January 1970
		{"rate(1 minute)", "1969-12-31T23:59:30Z", "1970-01-01T00:00:00Z"},
	} {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}
		got := e.Next(at(tc.after))
		switch {
		case tc.want == "" && !got.IsZero():
			t.Errorf("%s after %s: %s, want none", tc.expr, tc.after, got.Format(time.RFC3339))
		case tc.want != "" && !got.Equal(at(tc.want)):
			t.Errorf("%s after %s: %s, want %s", tc.expr, tc.after, got.Format(time.RFC3339), tc.want)
		case tc.want != "" && (got.Location() != time.UTC || !e.Matches(got)):
			t.Errorf("%s: Next %v is not a UTC firing", tc.expr, got)
		}
		if e.String() != tc.expr {
			t.Errorf("String() = %q, want %q", e.String(), tc.expr)
		}
	}
}

// Next reads a time in any zone as the instant it is, and answers in UTC.
func TestNextReadsAnyZoneAndAnswersInUTC(t *testing.T) {
	e, err := Parse("cron(0 10 * * ? *)")
	if err != nil {
		t.Fatal(err)
	}
	berlin := time.FixedZone("CET", 3600)
	got := e.Next(time.Date(2026, 12, 4, 10, 30, 0, 0, berlin)) // 09:30 UTC
	if want := at("2026-12-04T10:00:00Z"); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("got %v, want %v", got, want)
	}
}

// ParseLocal also takes seconds, for the local stack's ticker; Parse, for
// AWS, does not.
func TestParseLocalAlsoTakesSeconds(t *testing.T) {
	for _, expr := range []string{"rate(1 second)", "rate(10 seconds)"} {
		if _, err := Parse(expr); err == nil {
			t.Errorf("Parse(%q): no error", expr)
		}
		e, err := ParseLocal(expr)
		if err != nil {
			t.Fatalf("ParseLocal(%q): %v", expr, err)
		}
		if got := e.Next(at("2026-12-03T17:04:30.5Z")); !got.Equal(at("2026-12-03T17:04:31Z")) && !got.Equal(at("2026-12-03T17:04:40Z")) {
			t.Errorf("%s: %v", expr, got)
		}
	}
	e, _ := ParseLocal("rate(10 seconds)")
	if got := e.Next(at("2026-12-03T17:04:30Z")); !got.Equal(at("2026-12-03T17:04:40Z")) {
		t.Errorf("rate(10 seconds): %v", got)
	}
	if _, err := ParseLocal("rate(1 seconds)"); err == nil {
		t.Error("ParseLocal took rate(1 seconds)")
	}
	if _, err := ParseLocal("cron(0 10 * * ? *)"); err != nil {
		t.Errorf("ParseLocal of a cron: %v", err)
	}
}

// A refused expression's error names the field and the rule it breaks.
func TestParseRefusalsNameTheFieldAndTheRule(t *testing.T) {
	for _, tc := range []struct{ expr, field, rule string }{
		{"", "expression", "1 to 256 bytes"},
		{"cron(" + strings.Repeat("0", 300) + ")", "expression", "1 to 256 bytes"},
		{"rate(5 minutes", "expression", "closing parenthesis"},
		{"rate(5 minutes) ", "expression", "closing parenthesis"},
		{"every(5 minutes)", "expression", "rate(value unit) or cron(fields)"},
		{"at(2026-12-03T18:00:00)", "expression", "one-time"},
		{"rate(5)", "expression", "a value, one space, a unit"},
		{"rate(1 minutes)", "rate unit", `a value of 1 takes "minute"`},
		{"rate(5 minute)", "rate unit", `5 takes "minutes"`},
		{"rate(0 minutes)", "rate value", "from 1 to 999999999"},
		{"rate(05 minutes)", "rate value", "without leading zeros"},
		{"rate(-5 minutes)", "rate value", "whole number"},
		{"rate(1000000000 minutes)", "rate value", "from 1 to 999999999"},
		{"rate(5 weeks)", "rate unit", "one of minute, minutes, hour, hours, day or days"},
		{"rate(5 seconds)", "rate unit", "one of minute, minutes"},
		{"rate(5  minutes)", "rate unit", "one of"},
		{"rate(5 Minutes)", "rate unit", "one of"},
		{"cron(0 10 * * ?)", "expression", "six fields"},
		{"cron(0 10 * * ? * *)", "expression", "six fields"},
		{"cron(0 10  * * ? *)", "expression", "six fields"},
		{"cron(0 10 * * * *)", "day-of-month", "exactly one of day-of-month and day-of-week is ?"},
		{"cron(0 10 ? * ? *)", "day-of-month", "exactly one of day-of-month and day-of-week is ?"},
		{"cron(60 10 * * ? *)", "minutes", "0-59"},
		{"cron(0 24 * * ? *)", "hours", "0-23"},
		{"cron(0 10 0 * ? *)", "day-of-month", "1-31"},
		{"cron(0 10 32 * ? *)", "day-of-month", "1-31"},
		{"cron(0 10 * 13 ? *)", "month", "1-12 or JAN-DEC"},
		{"cron(0 10 * JANUARY ? *)", "month", "1-12 or JAN-DEC"},
		{"cron(0 10 ? * 0 *)", "day-of-week", "1-7 or SUN-SAT"},
		{"cron(0 10 ? * 8 *)", "day-of-week", "1-7 or SUN-SAT"},
		{"cron(0 10 * * ? 1969)", "year", "1970-2199"},
		{"cron(0 10 * * ? 2200)", "year", "1970-2199"},
		{"cron(0 10 ? * 3#1,6#3 *)", "day-of-week", "alone in the field"}, // the guide's invalid example
		{"cron(0 10 ? * 3#6 *)", "day-of-week", "1-5"},
		{"cron(0 10 ? * 8#1 *)", "day-of-week", "1-7 or SUN-SAT"},
		{"cron(0 10 ? * MON/2 *)", "day-of-week", "no increments"},
		{"cron(0 10 ? * 1W *)", "day-of-week", "no increments or W"},
		{"cron(0 10 ? * 9L *)", "day-of-week", "dL"},
		{"cron(0/0 * * * ? *)", "minutes", "from 1 to 59"},
		{"cron(0/60 * * * ? *)", "minutes", "from 1 to 59"},
		{"cron(0/+5 * * * ? *)", "minutes", "from 1 to 59"},
		{"cron(0 10 10-5 * ? *)", "day-of-month", "not after its last"},
		{"cron(0 10 1W,15 * ? *)", "day-of-month", "alone in the field"},
		{"cron(0 10 L-3 * ? *)", "day-of-month", "alone in the field"},
		{"cron(0 10 LW * ? *)", "day-of-month", "nW"},
		{"cron(0 10 32W * ? *)", "day-of-month", "nW"},
		{"cron(0 10 3#1 * ? *)", "day-of-month", "# is for day-of-week"},
		{"cron(0 ? * * ? *)", "hours", "? is for day-of-month or day-of-week only"},
		{"cron(1,,2 10 * * ? *)", "minutes", "separated by commas"},
		{"cron(1- 10 * * ? *)", "minutes", "two values"},
		{"cron(x 10 * * ? *)", "minutes", "0-59"},
	} {
		_, err := Parse(tc.expr)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want a *ParseError", tc.expr, err)
			continue
		}
		if pe.Field != tc.field || !strings.Contains(pe.Rule, tc.rule) || pe.Expr != tc.expr {
			t.Errorf("%q: field %q rule %q; want field %q, a rule with %q", tc.expr, pe.Field, pe.Rule, tc.field, tc.rule)
		}
		if !strings.Contains(err.Error(), tc.field+": ") {
			t.Errorf("%q: the message %q does not name the field", tc.expr, err)
		}
	}
}

// The zero Expr never fires.
func TestZeroExprNeverFires(t *testing.T) {
	var e Expr
	if !e.Next(time.Now()).IsZero() || e.Matches(at("2026-12-03T17:00:00Z")) || e.String() != "" {
		t.Error("the zero Expr fires")
	}
}
