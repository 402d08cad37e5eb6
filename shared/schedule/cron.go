package schedule

import (
	"strconv"
	"strings"
	"time"
)

// Years a cron expression may name (EventBridge Scheduler User Guide,
// "Schedule types": 1970-2199).
const (
	FirstYear = 1970
	LastYear  = 2199
)

// bits is a set of small non-negative integers (up to 255).
type bits [4]uint64

func (b *bits) set(i int)     { b[i/64] |= 1 << (i % 64) }
func (b bits) has(i int) bool { return i >= 0 && i < 256 && b[i/64]&(1<<(i%64)) != 0 }

// cron is a parsed cron expression. Years are stored less FirstYear.
type cron struct {
	minutes, hours, months, years bits
	dom                           domRule
	dow                           dowRule
}

// domRule is the day-of-month field: any (`?`), a set of days, the last
// day (`L`) or the weekday nearest a day (nW).
type domRule struct {
	any, last bool
	weekday   int // nW: n; 0 otherwise
	days      bits
}

// dowRule is the day-of-week field: any (`?`), a set of days (1 = Sunday),
// the month's last day d (dL), or its k-th day d (d#k).
type dowRule struct {
	any       bool
	lastOf    int // dL: d; 0 otherwise
	nth, nthK int // d#k: d and k; 0 otherwise
	days      bits
}

// field describes one cron field: its name as the guide gives it, its
// values, its names (index + min is the value), and its largest increment
// (0: no increments).
type field struct {
	name     string
	min, max int
	names    []string
	maxStep  int
}

var (
	minutesField = field{name: "minutes", min: 0, max: 59, maxStep: 59}
	hoursField   = field{name: "hours", min: 0, max: 23, maxStep: 23}
	domField     = field{name: "day-of-month", min: 1, max: 31, maxStep: 31}
	monthField   = field{name: "month", min: 1, max: 12, maxStep: 12,
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	dowField  = field{name: "day-of-week", min: 1, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	yearField = field{name: "year", min: FirstYear, max: LastYear, maxStep: LastYear - FirstYear}
)

// parseCron reads the six fields of cron(...).
func parseCron(s string) (*cron, *fieldError) {
	fs := strings.Split(s, " ")
	if len(fs) != 6 {
		return nil, errorf("expression", "cron takes six fields separated by single spaces (minutes hours day-of-month month day-of-week year), not %d", len(fs))
	}
	var c cron
	var err *fieldError
	if c.minutes, err = minutesField.parse(fs[0], 0); err != nil {
		return nil, err
	}
	if c.hours, err = hoursField.parse(fs[1], 0); err != nil {
		return nil, err
	}
	if c.dom, err = parseDOM(fs[2]); err != nil {
		return nil, err
	}
	if c.months, err = monthField.parse(fs[3], 0); err != nil {
		return nil, err
	}
	if c.dow, err = parseDOW(fs[4]); err != nil {
		return nil, err
	}
	if c.years, err = yearField.parse(fs[5], FirstYear); err != nil {
		return nil, err
	}
	if c.dom.any == c.dow.any {
		return nil, errorf("day-of-month", "exactly one of day-of-month and day-of-week is ? (the guide: a value or * in one of them takes ? in the other)")
	}
	return &c, nil
}

// parseDOM reads the day-of-month field.
func parseDOM(s string) (domRule, *fieldError) {
	switch {
	case s == "?":
		return domRule{any: true}, nil
	case s == "L":
		return domRule{last: true}, nil
	case strings.HasSuffix(s, "W"):
		n, ok := domField.value(s[:len(s)-1])
		if !ok {
			return domRule{}, errorf(domField.name, "%q: W follows one day, 1-31 (nW: the weekday nearest day n), alone in the field", s)
		}
		return domRule{weekday: n}, nil
	case strings.ContainsAny(s, "LW#"):
		return domRule{}, errorf(domField.name, "%q: L and W stand alone in the field (L, or nW with n 1-31); # is for day-of-week", s)
	}
	days, err := domField.parse(s, 0)
	return domRule{days: days}, err
}

// parseDOW reads the day-of-week field.
func parseDOW(s string) (dowRule, *fieldError) {
	switch {
	case s == "?":
		return dowRule{any: true}, nil
	case s == "L":
		var r dowRule
		r.days.set(7) // Saturday, the week's last day
		return r, nil
	case strings.HasSuffix(s, "L"):
		d, ok := dowField.value(s[:len(s)-1])
		if !ok {
			return dowRule{}, errorf(dowField.name, "%q: L stands alone or follows one day, 1-7 or SUN-SAT (dL: the month's last day d), alone in the field", s)
		}
		return dowRule{lastOf: d}, nil
	case strings.Contains(s, "#"):
		ds, ks, _ := strings.Cut(s, "#")
		d, ok := dowField.value(ds)
		k, err := strconv.Atoi(ks)
		if !ok || err != nil || k < 1 || k > 5 || len(ks) != 1 {
			return dowRule{}, errorf(dowField.name, "%q: # joins one day, 1-7 or SUN-SAT, and its instance in the month, 1-5 (3#2: the second Tuesday), alone in the field", s)
		}
		return dowRule{nth: d, nthK: k}, nil
	case strings.ContainsAny(s, "LW/"):
		return dowRule{}, errorf(dowField.name, "%q: day-of-week takes no increments or W, and L only alone or as dL", s)
	}
	days, err := dowField.parse(s, 0)
	return dowRule{days: days}, err
}

// parse reads a list of `*`, values and ranges, each with an increment
// where the field takes one, into the set of values less offset.
func (f field) parse(s string, offset int) (bits, *fieldError) {
	var b bits
	if s == "?" {
		return b, errorf(f.name, "? is for day-of-month or day-of-week only")
	}
	for item := range strings.SplitSeq(s, ",") {
		base, stepText, stepped := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		switch {
		case base == "*":
		case strings.Contains(base, "-"):
			a, z, _ := strings.Cut(base, "-")
			var ok1, ok2 bool
			lo, ok1 = f.value(a)
			hi, ok2 = f.value(z)
			if !ok1 || !ok2 {
				return b, errorf(f.name, "%q: a range is two values of %s", item, f.describe())
			}
			if lo > hi {
				return b, errorf(f.name, "%q: a range's first value is not after its last", item)
			}
		default:
			v, ok := f.value(base)
			if !ok {
				return b, errorf(f.name, "%q: each item is *, a value of %s, or a range a-b, separated by commas", item, f.describe())
			}
			lo = v
			if !stepped {
				hi = v
			}
		}
		step := 1
		if stepped {
			n, err := strconv.Atoi(stepText)
			switch {
			case f.maxStep == 0:
				return b, errorf(f.name, "%q: %s takes no increments (/)", item, f.name)
			case err != nil || n < 1 || n > f.maxStep || strings.Trim(stepText, "0123456789") != "":
				return b, errorf(f.name, "%q: an increment x/n has n from 1 to %d", item, f.maxStep)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			b.set(v - offset)
		}
	}
	return b, nil
}

// value reads one value of the field: digits within its bounds, or one of
// its names (any case).
func (f field) value(s string) (int, bool) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i, true
		}
	}
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	v, _ := strconv.Atoi(s)
	return v, v >= f.min && v <= f.max
}

// describe names the field's values for an error.
func (f field) describe() string {
	d := strconv.Itoa(f.min) + "-" + strconv.Itoa(f.max)
	if len(f.names) > 0 {
		d += " or " + f.names[0] + "-" + f.names[len(f.names)-1]
	}
	return d
}

// next is the first whole minute strictly after after (UTC) whose fields
// match; the zero time when none does by LastYear.
func (c *cron) next(after time.Time) time.Time {
	start := after.Truncate(time.Minute).Add(time.Minute)
	if start.Year() < FirstYear {
		start = time.Date(FirstYear, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	sy, smo, sd := start.Date()
	sh, smi := start.Hour(), start.Minute()
	for y := max(sy, FirstYear); y <= LastYear; y++ {
		if !c.years.has(y - FirstYear) {
			continue
		}
		for mo := time.January; mo <= time.December; mo++ {
			if !c.months.has(int(mo)) || y == sy && mo < smo {
				continue
			}
			for d := 1; d <= daysIn(y, mo); d++ {
				startDay := y == sy && mo == smo && d == sd
				if y == sy && mo == smo && d < sd || !c.day(y, mo, d) {
					continue
				}
				for h := 0; h < 24; h++ {
					if !c.hours.has(h) || startDay && h < sh {
						continue
					}
					for mi := 0; mi < 60; mi++ {
						if c.minutes.has(mi) && (!startDay || h > sh || mi >= smi) {
							return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
						}
					}
				}
			}
		}
	}
	return time.Time{}
}

// matches reports whether t (UTC) is a whole minute whose fields match.
func (c *cron) matches(t time.Time) bool {
	y, mo, d := t.Date()
	return t.Second() == 0 && t.Nanosecond() == 0 && y >= FirstYear && y <= LastYear &&
		c.years.has(y-FirstYear) && c.months.has(int(mo)) && c.day(y, mo, d) &&
		c.hours.has(t.Hour()) && c.minutes.has(t.Minute())
}

// day reports whether day d of month mo of year y matches the day field
// that is not `?`.
func (c *cron) day(y int, mo time.Month, d int) bool {
	last := daysIn(y, mo)
	if !c.dom.any {
		switch {
		case c.dom.last:
			return d == last
		case c.dom.weekday > 0:
			return d == nearestWeekday(y, mo, c.dom.weekday)
		}
		return c.dom.days.has(d)
	}
	wd := int(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday()) + 1 // 1 = Sunday
	switch {
	case c.dow.lastOf > 0:
		return wd == c.dow.lastOf && d+7 > last
	case c.dow.nth > 0:
		return wd == c.dow.nth && (d-1)/7+1 == c.dow.nthK
	}
	return c.dow.days.has(wd)
}

// nearestWeekday is the Monday-to-Friday day of month mo nearest day n,
// within the month (a Saturday the 1st gives Monday the 3rd; a Sunday the
// last gives Friday); 0 when the month has no day n.
func nearestWeekday(y int, mo time.Month, n int) int {
	last := daysIn(y, mo)
	if n > last {
		return 0
	}
	switch time.Date(y, mo, n, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}

// daysIn is the number of days of month mo of year y.
func daysIn(y int, mo time.Month) int {
	return time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
