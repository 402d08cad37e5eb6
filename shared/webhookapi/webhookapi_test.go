package webhookapi_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/toolgate/toolgate/shared/webhookapi"
)

// A status change's dates read as RFC 3339 with milliseconds whether the
// input transformer passes Step Functions' epoch milliseconds as a
// number or as a string; text is kept; null and absent are empty.
func TestStatusChangeDates(t *testing.T) {
	for _, c := range []struct{ doc, start, stop string }{
		{`{"start_date":1764669600000,"stop_date":1764669660123}`, "2025-12-02T10:00:00.000Z", "2025-12-02T10:01:00.123Z"},
		{`{"start_date":"1764669600000","stop_date":null}`, "2025-12-02T10:00:00.000Z", ""},
		{`{"start_date":"2025-12-02T10:00:00Z"}`, "2025-12-02T10:00:00Z", ""},
	} {
		var sc webhookapi.StatusChange
		if err := json.Unmarshal([]byte(c.doc), &sc); err != nil || string(sc.StartDate) != c.start || string(sc.StopDate) != c.stop {
			t.Errorf("%s: %q %q %v, want %q %q", c.doc, sc.StartDate, sc.StopDate, err, c.start, c.stop)
		}
	}
	var sc webhookapi.StatusChange
	if err := json.Unmarshal([]byte(`{"start_date":{"x":1}}`), &sc); err == nil {
		t.Error("an object was read as a date")
	}
}

// Every binding differs from every other: each names its action, target
// and operation, and a subscribe's covers its events and Solution.
func TestBindingsAreDistinct(t *testing.T) {
	r := webhookapi.SubscribeRequest{URL: "https://h.example.org/in", Events: []string{"run.*"}}
	withSolution, otherEvents, split := r, r, r
	withSolution.Solution = "digest"
	otherEvents.Events = []string{"review.*"}
	split.Events = []string{"run.*", ""}
	values := map[string]string{}
	for name, v := range map[string]string{
		"subscribe": webhookapi.SubscribeBinding(r).Value(), "with a Solution": webhookapi.SubscribeBinding(withSolution).Value(),
		"other events": webhookapi.SubscribeBinding(otherEvents).Value(), "an extra empty pattern": webhookapi.SubscribeBinding(split).Value(),
		"list": webhookapi.ListBinding().Value(), "rotate a": webhookapi.RotateBinding("sub_a").Value(), "rotate b": webhookapi.RotateBinding("sub_b").Value(),
		"disable a": webhookapi.DisableBinding("sub_a").Value(), "deliveries of e1": webhookapi.DeliveriesBinding("evt_1").Value(),
		"deliveries of e2": webhookapi.DeliveriesBinding("evt_2").Value(), "dlq list": webhookapi.DLQListBinding().Value(), "redrive": webhookapi.RedriveBinding().Value(),
	} {
		if other, ok := values[v]; ok {
			t.Errorf("%s and %s have one binding", name, other)
		}
		values[v] = name
	}
}

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// FuzzStatusChange: any document either is refused or gives dates that
// are RFC 3339 with milliseconds, text taken as it is, or empty; never a
// panic.
func FuzzStatusChange(f *testing.F) {
	for _, s := range []string{`{"start_date":1764669600000}`, `{"start_date":"1764669600000"}`, `{"stop_date":null}`, `{"start_date":-1e300}`, `{"start_date":"x"}`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var sc webhookapi.StatusChange
		if err := json.Unmarshal([]byte(doc), &sc); err != nil {
			return
		}
		var raw struct {
			StartDate any `json:"start_date"`
		}
		_ = json.Unmarshal([]byte(doc), &raw)
		if _, isNumber := raw.StartDate.(float64); isNumber && !rfc3339ms.MatchString(string(sc.StartDate)) {
			t.Fatalf("number %v read as %q", raw.StartDate, sc.StartDate)
		}
	})
}
