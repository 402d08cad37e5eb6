package review

import (
	"testing"
)

func TestAuthorize(t *testing.T) {
	const home = "123456789012"
	editors := []string{"arn:aws:sts::123456789012:assumed-role/editors/*"}
	for _, c := range []struct {
		name      string
		reviewers []string
		caller    Caller
		home      string
		want      bool
	}{
		{"no reviewers, a caller of the deployment's account", nil, Caller{Principal: "arn:aws:iam::123456789012:user/alice", Account: home}, home, true},
		{"no reviewers, a caller of a reviewer account", nil, Caller{Principal: "arn:aws:iam::111122223333:user/alice", Account: "111122223333"}, home, false},
		{"no reviewers, a caller without an account", nil, Caller{Principal: "alice"}, home, false},
		{"no reviewers, no home account configured", nil, Caller{Principal: "arn:aws:iam::123456789012:user/alice", Account: home}, "", false},
		{"no principal", nil, Caller{Account: home}, home, false},
		{"matching principal", editors, Caller{Principal: "arn:aws:sts::123456789012:assumed-role/editors/alice", Account: home, Authenticated: true}, home, true},
		{"other principal", editors, Caller{Principal: "arn:aws:sts::123456789012:assumed-role/ops/bob", Account: home, Authenticated: true}, home, false},
		{"the same role in another account", editors, Caller{Principal: "arn:aws:sts::999999999999:assumed-role/editors/alice", Account: "999999999999", Authenticated: true}, home, false},
		{"a local name matches no ARN pattern", editors, Caller{Principal: "alice"}, home, false},
		{"an account wildcard recorded before, a caller of home", []string{"arn:aws:iam::*:role/reviewers"}, Caller{Principal: "arn:aws:iam::123456789012:role/reviewers", Account: home}, home, true},
		{"an account wildcard recorded before, a caller of a reviewer account", []string{"arn:aws:iam::*:role/reviewers"}, Caller{Principal: "arn:aws:iam::111122223333:role/reviewers", Account: "111122223333"}, home, false},
		{"a pattern naming a reviewer account, its caller", []string{"arn:aws:iam::111122223333:role/reviewers"}, Caller{Principal: "arn:aws:iam::111122223333:role/reviewers", Account: "111122223333"}, home, true},
	} {
		if got := Authorize(c.reviewers, c.caller, c.home); got.Allowed != c.want || got.Reason == "" {
			t.Errorf("%s: %+v, want allowed %v with a reason", c.name, got, c.want)
		}
	}
}
