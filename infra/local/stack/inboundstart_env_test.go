package stack

import (
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/schedule"
)

// inbound-start runs without lanes, with its own identity's keys (which
// the STS stand-in trusts with the inbound-start role), the role, and
// review-request's start instance; review-request names the role too.
func TestInboundStartHasNoLanesAndItsOwnIdentity(t *testing.T) {
	if laned(InboundStartFunction) || len(lanesOf(InboundStartFunction)) != 1 {
		t.Errorf("%s has lanes %v", InboundStartFunction, lanesOf(InboundStartFunction))
	}
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	sts, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	defer sts.Close()
	ssm := local.NewSSM(nil)
	s := &Stack{Keys: keys, STS: sts, SSM: ssm, SFN: &local.Process{Addr: "127.0.0.1:4001"}, StartEndpoint: "http://127.0.0.1:4002"}
	env := functionEnv(InboundStartFunction, s, "", allowLists{})
	creds, err := keys.Credentials(InboundStartIdentity)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"AWS_ACCESS_KEY_ID": creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": creds.SecretAccessKey,
		inboundapi.EnvRole: InboundRoleARN(), inboundapi.EnvRunStartFunction: s.StartEndpoint, "AWS_ENDPOINT_URL_STS": sts.Endpoint(),
		"AWS_ENDPOINT_URL_SFN": "http://127.0.0.1:4001", inboundapi.EnvExternalKeyParam: functionconfig.ExternalKeyParam(Stage)} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	if got := functionEnv("review-request", &Stack{SFN: s.SFN, SSM: ssm, SES: s.SFN}, "", allowLists{})[inboundapi.EnvRole]; got != InboundRoleARN() {
		t.Errorf("review-request's %s=%q", inboundapi.EnvRole, got)
	}
	if k, v := sessionRolesEnv(); k != "TOOLGATE_SESSION_ROLES" || v != InboundRoleName {
		t.Errorf("session roles %s=%s", k, v)
	}
}

// The ticker sends each firing once, oldest first, at most max a tick,
// and nothing before its schedule was added.
func TestTheTickerSendsEachDueFiringOnce(t *testing.T) {
	expr, err := schedule.ParseLocal("rate(2 seconds)")
	if err != nil {
		t.Fatal(err)
	}
	added := time.Date(2026, 12, 3, 18, 0, 1, 0, time.UTC)
	at := func(sec int) time.Time { return added.Add(time.Duration(sec) * time.Second) }
	if got := dueFirings(expr, added, at(0), 10); len(got) != 0 {
		t.Errorf("at once: %v", got)
	}
	got := dueFirings(expr, added, at(4), 10)
	if want := []time.Time{at(1), at(3)}; !slices.Equal(got, want) {
		t.Fatalf("after 4 s: %v, want %v", got, want)
	}
	if again := dueFirings(expr, got[len(got)-1], at(4), 10); len(again) != 0 {
		t.Errorf("the next tick sends %v again", again)
	}
	if capped := dueFirings(expr, added, at(100), 10); len(capped) != 10 || !capped[9].Equal(at(19)) {
		t.Errorf("a tick after 100 s: %v", capped)
	}
}
