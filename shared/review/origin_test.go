package review_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/review"
)

const adder = "arn:aws:iam::123456789012:user/alice"

// A start request's origin: a kind of the two, a source's or schedule's
// name, the adder's ARN, and the event (a source's event id, a schedule's
// scheduled time); unknown members and null refused. The error names the
// member, never the value.
func TestDecodeStartRequestReadsAnOrigin(t *testing.T) {
	base := `{"action":"run.start","execution_arn":"` + forkChild + `","input_digest":"sha256:` + strings.Repeat("0", 64) + `","proof":"p"`
	origin := func(kind, name, addedBy, event string) string {
		return base + `,"origin":{"kind":"` + kind + `","name":"` + name + `","added_by":"` + addedBy + `","event":"` + event + `","holders":["` + adder + `"]}}`
	}
	holders := func(list string) string {
		return base + `,"origin":{"kind":"source","name":"billing","added_by":"` + adder + `","event":"evt_1","holders":` + list + `}}`
	}
	sixteen := `["` + adder + `"`
	for i := 1; i < 16; i++ {
		sixteen += `,"` + adder + strings.Repeat("x", i) + `"`
	}
	for name, c := range map[string]struct{ body, err string }{
		"a source's event":                {origin("source", "billing", adder, "evt_1"), ""},
		"a GitHub delivery id":            {origin("source", "gh", adder, "72d3162e-cc78-11e3-81ab-4c9367dc0958"), ""},
		"a schedule's firing":             {origin("schedule", "nightly", adder, "2026-12-03T18:00:00Z"), ""},
		"another kind":                    {origin("webhook", "billing", adder, "evt_1"), "kind must be"},
		"a name with a capital":           {origin("source", "Billing", adder, "evt_1"), "origin: name"},
		"a name over 48 characters":       {origin("source", strings.Repeat("a", 49), adder, "evt_1"), "origin: name"},
		"added_by no ARN":                 {origin("source", "billing", "alice", "evt_1"), "added_by must be an ARN"},
		"added_by with a space":           {origin("source", "billing", "arn:aws:iam::1:user/a b", "evt_1"), "added_by must be an ARN"},
		"an empty event id":               {origin("source", "billing", adder, ""), "event id"},
		"an event id with a space":        {origin("source", "billing", adder, "evt 1"), "event id"},
		"an event id over 256 bytes":      {origin("source", "billing", adder, strings.Repeat("e", 257)), "event id"},
		"a scheduled time with fractions": {origin("schedule", "nightly", adder, "2026-12-03T18:00:00.5Z"), "scheduled time"},
		"a scheduled time with an offset": {origin("schedule", "nightly", adder, "2026-12-03T19:00:00+01:00"), "scheduled time"},
		"a schedule with an event id":     {origin("schedule", "nightly", adder, "evt_1"), "scheduled time"},
		"an unknown member":               {base + `,"origin":{"kind":"source","name":"billing","added_by":"` + adder + `","event":"evt_1","holders":["` + adder + `"],"payload":{}}}`, "payload"},
		"16 holders":                      {holders(sixteen + `]`), ""},
		"17 holders":                      {holders(sixteen + `,"` + adder + `y"]`), "holders must list 1 to 16"},
		"no holders":                      {holders(`[]`), "holders must list 1 to 16"},
		"holders absent":                  {base + `,"origin":{"kind":"source","name":"billing","added_by":"` + adder + `","event":"evt_1"}}`, "holders"},
		"a holder no ARN":                 {holders(`["` + adder + `","alice"]`), "holders[1] must be an ARN"},
		"a holder twice":                  {holders(`["` + adder + `","` + adder + `"]`), "holders[1] repeats"},
		"a missing member":                {base + `,"origin":{"kind":"source","name":"billing","event":"evt_1"}}`, "added_by"},
		"origin null":                     {base + `,"origin":null}`, "origin"},
	} {
		r, err := review.DecodeStartRequest([]byte(c.body))
		switch {
		case c.err == "" && (err != nil || r.Origin == nil):
			t.Errorf("%s: %+v, %v", name, r, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", name, err, c.err)
		case c.err != "" && name == "an event id with a space" && strings.Contains(err.Error(), "evt 1"):
			t.Errorf("%s: the error echoes the value: %v", name, err)
		}
	}
}

// A start request without an origin binds exactly as before origins
// existed; with one, the origin's every member is bound, so that a proof
// made for one source's event, adder or kind records no other.
func TestStartBindingOfBindsTheOrigin(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0", 64)
	plain := review.StartRequest{ExecutionARN: forkChild, InputDigest: digest, EndUser: "customer-1"}
	if got, want := review.StartBindingOf(&plain), (caller.Binding{Action: caller.ActionStart, Target: forkChild, InputDigest: digest, Detail: "customer-1"}); got != want {
		t.Fatalf("without an origin: %+v, want %+v", got, want)
	}
	o := review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: adder, Event: "evt_1", Holders: []string{adder}}
	with := func(edit func(*review.StartOrigin)) caller.Binding {
		c := o
		edit(&c)
		r := review.StartRequest{ExecutionARN: forkChild, InputDigest: digest, Origin: &c}
		return review.StartBindingOf(&r)
	}
	b := with(func(*review.StartOrigin) {})
	if b.Detail != `["","",false,"source","billing","`+adder+`","evt_1",["`+adder+`"]]` {
		t.Fatalf("Detail = %s", b.Detail)
	}
	seen := map[string]string{b.Value(): "the origin", review.StartBindingOf(&review.StartRequest{ExecutionARN: forkChild, InputDigest: digest}).Value(): "no origin"}
	for name, other := range map[string]caller.Binding{
		"another kind":    with(func(c *review.StartOrigin) { c.Kind = review.OriginSchedule }),
		"another name":    with(func(c *review.StartOrigin) { c.Name = "payroll" }),
		"another adder":   with(func(c *review.StartOrigin) { c.AddedBy = adder + "2" }),
		"another event":   with(func(c *review.StartOrigin) { c.Event = "evt_2" }),
		"another holder":  with(func(c *review.StartOrigin) { c.Holders = []string{adder + "2"} }),
		"one more holder": with(func(c *review.StartOrigin) { c.Holders = []string{adder, adder + "2"} }),
	} {
		if prev, ok := seen[other.Value()]; ok {
			t.Errorf("%s binds as %s", name, prev)
		}
		seen[other.Value()] = name
	}
	if got := o.SessionName(); got != "src-billing" {
		t.Errorf("SessionName = %q, want src-billing", got)
	}
	if got := (review.StartOrigin{Kind: review.OriginSchedule, Name: "nightly"}).SessionName(); got != "sched-nightly" {
		t.Errorf("SessionName = %q, want sched-nightly", got)
	}
}
