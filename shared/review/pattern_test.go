package review

import (
	"testing"
)

func TestAuthorize(t *testing.T) {
	editors := []string{"arn:aws:sts::*:assumed-role/editors/*"}
	for _, c := range []struct {
		name      string
		reviewers []string
		caller    Caller
		want      bool
	}{
		{"no reviewers, any caller", nil, Caller{Principal: "alice"}, true},
		{"no principal", nil, Caller{}, false},
		{"matching principal", editors, Caller{Principal: "arn:aws:sts::1:assumed-role/editors/alice", Authenticated: true}, true},
		{"other principal", editors, Caller{Principal: "arn:aws:sts::1:assumed-role/ops/bob", Authenticated: true}, false},
		{"a local name matches no ARN pattern", editors, Caller{Principal: "alice"}, false},
	} {
		if got := Authorize(c.reviewers, c.caller); got.Allowed != c.want || got.Reason == "" {
			t.Errorf("%s: %+v, want allowed %v with a reason", c.name, got, c.want)
		}
	}
}
