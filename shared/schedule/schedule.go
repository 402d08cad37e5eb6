package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxLength is the longest expression Parse takes, in bytes: 256, the
// bound of CreateSchedule's ScheduleExpression (EventBridge Scheduler API
// Reference).
const MaxLength = 256

// MaxRateValue is the largest value of a rate expression Parse takes:
// 999999999 (nine digits). EventBridge Scheduler documents only that the
// value is a positive integer; this bound keeps every period exact in
// seconds.
const MaxRateValue = 999_999_999

// ParseError is why an expression was refused: the expression, the part
// of it at fault (Field: "expression", "rate value", "rate unit", or a cron
// field as the guide names them: "minutes", "hours", "day-of-month",
// "month", "day-of-week", "year") and the rule it breaks.
type ParseError struct {
	Expr, Field, Rule string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("schedule expression %q: %s: %s", e.Expr, e.Field, e.Rule)
}

// Expr is a parsed schedule expression. The zero Expr never fires.
type Expr struct {
	text   string
	period int64 // a rate's period in seconds; 0 for cron
	cron   *cron
}

// Parse reads expr, an EventBridge Scheduler schedule expression
// (EventBridge Scheduler User Guide, "Schedule types"), evaluated in UTC:
//
//   - rate(value unit): value a whole number from 1 to MaxRateValue
//     without leading zeros, one space, and unit minute|minutes|hour|hours|
//     day|days, singular exactly when value is 1 (rate(1 hour),
//     rate(5 minutes)); the guide's rule, which CreateSchedule enforces;
//   - cron(minutes hours day-of-month month day-of-week year): six fields
//     separated by single spaces. minutes 0-59, hours 0-23, day-of-month
//     1-31, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT (1 =
//     Sunday), year 1970-2199; in each, `*`, a value, a range a-b (a not
//     after b), a list a,b,c of those, and for every field but
//     day-of-week an increment x/n (x `*`, a value or a range; n from 1 to
//     the field's largest value, 229 for years). One of day-of-month and
//     day-of-week is `?` (any), the other is not. Day-of-month may instead
//     be `L` (the month's last day) or nW (the weekday nearest day n
//     within the month); day-of-week may be `L` (Saturday, the week's last
//     day), dL (the month's last day d) or d#k (the month's k-th day d, k
//     1-5), each alone in its field. Month and day names are
//     case-insensitive.
//
// at(...) one-time schedules are refused: a toolgate schedule recurs. Any
// other text, or an expression over MaxLength bytes, is refused. The error
// is a *ParseError.
func Parse(expr string) (Expr, error) { return parse(expr, false) }

// ParseLocal is Parse that also takes rate(N second|seconds) (singular
// exactly when N is 1), which only the local stack's ticker fires; a
// schedule on AWS cannot hold it.
func ParseLocal(expr string) (Expr, error) { return parse(expr, true) }

func parse(expr string, local bool) (Expr, error) {
	fail := func(field, rule string, args ...any) (Expr, error) {
		return Expr{}, &ParseError{Expr: expr, Field: field, Rule: fmt.Sprintf(rule, args...)}
	}
	if len(expr) == 0 || len(expr) > MaxLength {
		return fail("expression", "1 to %d bytes (EventBridge Scheduler's ScheduleExpression)", MaxLength)
	}
	inner, ok := strings.CutSuffix(expr, ")")
	if !ok {
		return fail("expression", "rate(value unit) or cron(fields), ending in a closing parenthesis")
	}
	switch {
	case strings.HasPrefix(inner, "rate("):
		period, err := parseRate(inner[len("rate("):], local)
		if err != nil {
			return fail(err.field, "%s", err.rule)
		}
		return Expr{text: expr, period: period}, nil
	case strings.HasPrefix(inner, "cron("):
		c, err := parseCron(inner[len("cron("):])
		if err != nil {
			return fail(err.field, "%s", err.rule)
		}
		return Expr{text: expr, cron: c}, nil
	case strings.HasPrefix(inner, "at("):
		return fail("expression", "at(...) is a one-time schedule; a schedule here recurs: use rate(...) or cron(...)")
	}
	return fail("expression", "rate(value unit) or cron(fields)")
}

// fieldError is a rule broken in one field.
type fieldError struct{ field, rule string }

func errorf(field, rule string, args ...any) *fieldError {
	return &fieldError{field: field, rule: fmt.Sprintf(rule, args...)}
}

// rateUnits are the units of rate expressions, singular and plural, in
// seconds; second is ParseLocal's only.
var rateUnits = []struct {
	one, many string
	seconds   int64
	local     bool
}{
	{"minute", "minutes", 60, false},
	{"hour", "hours", 3600, false},
	{"day", "days", 86400, false},
	{"second", "seconds", 1, true},
}

// parseRate reads "value unit" and returns the period in seconds.
func parseRate(s string, local bool) (int64, *fieldError) {
	value, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, errorf("expression", "rate(value unit): a value, one space, a unit")
	}
	if value == "" || len(value) > 9 || value[0] == '0' || strings.Trim(value, "0123456789") != "" {
		return 0, errorf("rate value", "a whole number from 1 to %d without leading zeros", MaxRateValue)
	}
	n, _ := strconv.ParseInt(value, 10, 64)
	units := "minute, minutes, hour, hours, day or days"
	if local {
		units = "second, seconds, minute, minutes, hour, hours, day or days"
	}
	for _, u := range rateUnits {
		if u.local && !local {
			continue
		}
		switch {
		case unit == u.one && n == 1, unit == u.many && n != 1:
			return n * u.seconds, nil
		case unit == u.one:
			return 0, errorf("rate unit", "%q is for a value of 1; %d takes %q", u.one, n, u.many)
		case unit == u.many:
			return 0, errorf("rate unit", "a value of 1 takes %q, not %q", u.one, u.many)
		}
	}
	return 0, errorf("rate unit", "one of %s", units)
}

// String is the expression as it was parsed; "" for the zero Expr.
func (e Expr) String() string { return e.text }

// Next is the first firing of e strictly after after, in UTC (see the
// package doc): for cron the first whole minute after after whose fields
// all match, for rate the first multiple of the period since the Unix
// epoch after after. It is the zero time when there is none: a cron whose
// years are all past, or no date matches (cron(0 0 30 2 ? *)), or a time
// past year 2199; the zero Expr.
func (e Expr) Next(after time.Time) time.Time {
	switch {
	case e.period > 0:
		s := after.Unix()
		if s > math.MaxInt64/4 || s < math.MinInt64/4 { // far past any year a schedule fires in
			return time.Time{}
		}
		return time.Unix((floorDiv(s, e.period)+1)*e.period, 0).UTC()
	case e.cron != nil:
		return e.cron.next(after.UTC())
	}
	return time.Time{}
}

// Matches reports whether t is a firing of e: for cron, a whole UTC minute
// (no seconds) whose fields all match; for rate, a whole multiple of the
// period since the Unix epoch. The zero Expr matches nothing.
func (e Expr) Matches(t time.Time) bool {
	switch {
	case e.period > 0:
		return t.Nanosecond() == 0 && floorMod(t.Unix(), e.period) == 0
	case e.cron != nil:
		return e.cron.matches(t.UTC())
	}
	return false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
