package schedule

import (
	"math/rand/v2"
	"testing"
	"time"
)

// randomExpr builds a valid expression from pieces of every form each
// field takes.
func randomExpr(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	if r.IntN(5) == 0 {
		return pick("rate(1 minute)", "rate(7 minutes)", "rate(1 hour)", "rate(13 hours)", "rate(1 day)", "rate(3 days)")
	}
	minutes := pick("*", "0", "59", "0/15", "*/7", "5-10", "1,31,59", "10-50/20", "30/1")
	hours := pick("*", "0", "23", "*/6", "8-17", "2,14", "22/1")
	dom, dow := "?", "?"
	if r.IntN(2) == 0 {
		dom = pick("*", "1", "31", "L", "15W", "1W", "31W", "30W", "1/10", "10-20", "5,29", "29")
	} else {
		dow = pick("*", "1", "7", "MON-FRI", "SUN,SAT", "L", "6L", "2#1", "TUE#5", "3#5", "1-3")
	}
	month := pick("*", "1", "2", "FEB", "JAN-MAR", "*/5", "2,12", "DEC")
	year := pick("*", "*", "*", "2026", "2027-2029/2", "2199", "1970-1975", "2028,2032")
	return "cron(" + minutes + " " + hours + " " + dom + " " + month + " " + dow + " " + year + ")"
}

// For expressions of every form and times across the years a schedule
// may name, Next is a whole-minute UTC firing strictly after the time,
// no earlier minute after the time fires (checked minute by minute over
// the first two days), and Next of just before it is itself.
func TestNextIsTheFirstFiringStrictlyAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lo, hi := time.Date(1969, 6, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2200, 6, 1, 0, 0, 0, 0, time.UTC).Unix()
	n := 2000
	if testing.Short() {
		n = 200
	}
	for range n {
		expr := randomExpr(r)
		e, err := Parse(expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		after := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(int64(time.Second))).UTC()
		if r.IntN(3) == 0 { // near the present, where gaps are short and checked fully
			after = time.Date(2026, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
		}
		next := e.Next(after)
		window := after.Truncate(time.Minute).Add(2 * 24 * time.Hour)
		if next.IsZero() {
			if e.period > 0 {
				t.Fatalf("%s after %v: a rate always fires", expr, after)
			}
			for m := after.Truncate(time.Minute).Add(time.Minute); m.Before(window); m = m.Add(time.Minute) {
				if e.Matches(m) {
					t.Fatalf("%s after %v: no Next, but %v fires", expr, after, m)
				}
			}
			continue
		}
		if !next.After(after) || next.Location() != time.UTC || next.Second() != 0 || next.Nanosecond() != 0 || !e.Matches(next) {
			t.Fatalf("%s after %v: Next %v is not a whole-minute UTC firing after it", expr, after, next)
		}
		for m := after.Truncate(time.Minute).Add(time.Minute); m.Before(next) && m.Before(window); m = m.Add(time.Minute) {
			if m.After(after) && e.Matches(m) {
				t.Fatalf("%s after %v: Next %v, but %v fires before it", expr, after, next, m)
			}
		}
		if again := e.Next(next.Add(-time.Nanosecond)); !again.Equal(next) {
			t.Fatalf("%s: Next just before %v is %v", expr, next, again)
		}
	}
}
