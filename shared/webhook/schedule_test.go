package webhook

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDefaultSchedule checks the documented numbers: eight attempts (the
// deliveries queue's maxReceiveCount), 27 h 35 min 5 s in all, each delay
// within SQS's visibility bounds.
func TestDefaultSchedule(t *testing.T) {
	if n := DefaultSchedule.Attempts(); n != 8 {
		t.Errorf("Attempts = %d, want 8", n)
	}
	if got, want := DefaultSchedule.Total(), 27*time.Hour+35*time.Minute+5*time.Second; got != want {
		t.Errorf("Total = %s, want %s", got, want)
	}
	back, err := ParseSchedule(DefaultSchedule.String())
	if err != nil || back.String() != DefaultSchedule.String() {
		t.Errorf("ParseSchedule(%s) = %v, %v", DefaultSchedule, back, err)
	}
}

func TestDelay(t *testing.T) {
	s := Schedule{5 * time.Second, time.Minute}
	for _, c := range []struct {
		n    int
		want time.Duration
		ok   bool
	}{{0, 5 * time.Second, true}, {1, 5 * time.Second, true}, {2, time.Minute, true}, {3, 0, false}, {9, 0, false}} {
		if d, ok := s.Delay(c.n); d != c.want || ok != c.ok {
			t.Errorf("Delay(%d) = %s, %v; want %s, %v", c.n, d, ok, c.want, c.ok)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "5s,5m,30m,2h", want: "5s,5m0s,30m0s,2h0m0s"},
		{in: " 1s , 12h ", want: "1s,12h0m0s"},
		{in: "", err: "empty"},
		{in: "5s,,1m", err: `entry 2 ""`},
		{in: "5s,soon", err: `entry 2 "soon": not a duration`},
		{in: "500ms", err: "out of range"},
		{in: "13h", err: "out of range"},
		{in: "-5s", err: "out of range"},
		{in: "1.5s", err: "not whole seconds"},
		{in: strings.Repeat("1s,", 20) + "1s", err: "21 entries"},
	} {
		got, err := ParseSchedule(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSchedule(%q) = %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status int
		err    error
		want   Outcome
	}{
		{200, nil, Delivered}, {204, nil, Delivered}, {299, nil, Delivered},
		{410, nil, Gone}, {301, nil, Retry}, {400, nil, Retry}, {404, nil, Retry}, {429, nil, Retry},
		{500, nil, Retry}, {503, nil, Retry}, {100, nil, Retry}, {0, errors.New("timeout"), Retry},
		{200, errors.New("cut"), Retry},
	} {
		if got := Classify(c.status, c.err); got != c.want {
			t.Errorf("Classify(%d, %v) = %s, want %s", c.status, c.err, got, c.want)
		}
	}
}
