package park_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/park"
)

func TestCheckResume(t *testing.T) {
	const id = "pk_abcdefghijklmnopqrstuvwxyz"
	use := park.Use{ParkID: id, RunID: "arn:r", IdempotencyKey: "arn:r/2", Tool: "crm.create_ticket"}
	state := func(status park.Status) park.State {
		return park.State{ID: id, Status: status, RunID: "arn:r", IdempotencyKey: "arn:r/2", Tool: "crm.create_ticket", CurrentDigest: "sha256:bb", DecidedBy: "arn:aws:iam::1:user/a"}
	}
	for _, c := range []struct {
		name    string
		s       park.State
		allowed bool
		digest  string
		reason  string
	}{
		{"approved", state(park.StatusApproved), true, "sha256:bb", ""},
		{"resumed", state(park.StatusResumed), true, "", ""},
		{"still parked", state(park.StatusParked), false, "", "not decided yet"},
		{"rejected", state(park.StatusRejected), false, "", "is REJECTED"},
		{"cancelled", state(park.StatusCancelled), false, "", "is CANCELLED"},
		{"timed out", state(park.StatusTimedOut), false, "", "is TIMED_OUT"},
		{"no status", state(""), false, "", "only an approved or resumed park"},
		{"another run", func() park.State { s := state(park.StatusApproved); s.RunID = "arn:other"; return s }(), false, "", "another call"},
		{"another key", func() park.State { s := state(park.StatusApproved); s.IdempotencyKey = "arn:r/3"; return s }(), false, "", "another call"},
		{"another tool", func() park.State { s := state(park.StatusApproved); s.Tool = "crm.delete_ticket"; return s }(), false, "", "another call"},
		{"another id", func() park.State { s := state(park.StatusApproved); s.ID = "pk_bbbbbbbbbbbbbbbbbbbbbbbbbb"; return s }(), false, "", "not the park"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := park.CheckResume(c.s, use)
			if got.Allowed != c.allowed || got.ApprovedDigest != c.digest || !strings.Contains(got.Reason, c.reason) || (c.allowed && got.Reason != "") {
				t.Fatalf("%+v", got)
			}
		})
	}
}
