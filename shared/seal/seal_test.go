package seal

import (
	"bytes"
	"testing"
	"time"
)

func testKey(t *testing.T, b byte) Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCheckTellsValidAbsentAndForgedSeals(t *testing.T) {
	a, b := testKey(t, 1), testKey(t, 2)
	mac := a.Sum(Call, "run/1", "send-email", "COMPLETED")
	tests := []struct {
		name string
		key  Key
		mac  string
		kind Kind
		in   []string
		want Status
	}{
		{"its own key over the same fields", a, mac, Call, []string{"run/1", "send-email", "COMPLETED"}, Valid},
		{"no seal", a, "", Call, []string{"run/1", "send-email", "COMPLETED"}, Absent},
		{"another function's key", b, mac, Call, []string{"run/1", "send-email", "COMPLETED"}, Forged},
		{"a changed field", a, mac, Call, []string{"run/1", "send-email", "FAILED"}, Forged},
		{"fields split elsewhere", a, mac, Call, []string{"run/1send-email", "", "COMPLETED"}, Forged},
		{"another kind", a, mac, Binding, []string{"run/1", "send-email", "COMPLETED"}, Forged},
		{"the zero key", Key{}, mac, Call, []string{"run/1", "send-email", "COMPLETED"}, Forged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key.Check(tt.mac, tt.kind, tt.in...); got != tt.want {
				t.Fatalf("Check = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNewKeyRefusesAShortKey(t *testing.T) {
	if _, err := NewKey(make([]byte, 31)); err != ErrShortKey {
		t.Fatalf("NewKey(31 bytes) = %v, want ErrShortKey", err)
	}
}

func TestAcceptTakesAnUnsealedItemOnlyForARunStartedBeforeSince(t *testing.T) {
	since := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		s     Status
		start time.Time
		known bool
		want  bool
	}{
		{"valid, any run", Valid, since.Add(time.Hour), true, true},
		{"valid, no run start", Valid, time.Time{}, false, true},
		{"absent, run started before since", Absent, since.Add(-time.Second), true, true},
		{"absent, run started at since", Absent, since, true, false},
		{"absent, run started after since", Absent, since.Add(time.Hour), true, false},
		{"absent, no run start", Absent, time.Time{}, false, false},
		{"forged, run started before since", Forged, since.Add(-time.Hour), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Accept(tt.s, tt.start, tt.known, since); got != tt.want {
				t.Fatalf("Accept = %v, want %v", got, tt.want)
			}
		})
	}
	if Accept(Absent, since, true, time.Time{}) {
		t.Fatal("an unsealed item was accepted with no since time")
	}
}

// Sum's encoding does not change: items sealed by earlier code must
// verify. The expected seals were computed by the field-by-field writer
// this one replaced (the length of each field as 4 bytes big-endian, then
// the field, after the domain and the kind).
func TestSumKeepsItsEncoding(t *testing.T) {
	k, err := NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind   Kind
		fields []string
		want   string
	}{
		{"call", []string{"pk", "", "é\x00", "a longer field with spaces"}, "GOkF808lnj0QWraeJ9+HOLLnCX+lYFPos+2zYHkQrK4="},
		{"x", nil, "oCEp7wZBHLGvyrmDUaPsHvSfgVJ91EHGu+aGmUdwSfs="},
	} {
		if got := k.Sum(c.kind, c.fields...); got != c.want {
			t.Errorf("Sum(%q, %q) = %s, want %s", c.kind, c.fields, got, c.want)
		}
	}
}
