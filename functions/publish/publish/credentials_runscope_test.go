package publish

import (
	"encoding/json"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/publishapi"
)

// A run's credential set by the run's future starter must not be replaced
// by another principal who learned or guessed the execution ARN: the run
// would then find a credential whose setter is not its starter, skip it,
// and present the end user's or the toolset's instead of the one its
// starter chose (docs/credentials.md, "Run credentials").
func TestSetRunCredentialIsNotReplacedByAnotherPrincipal(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	run := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-7"
	if _, code, msg := e.set(t, alice, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret)}); code != "" {
		t.Fatalf("alice's set: %s %s", code, msg)
	}
	_, code, _ := e.set(t, mallory, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret + "m")})
	out, lcode, msg := e.list(t, alice, "webhooks")
	if lcode != "" {
		t.Fatalf("list: %s %s", lcode, msg)
	}
	var l publishapi.CredentialListResult
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Credentials {
		if c.ExecutionARN == run && c.SetBy != arnOf(alice) {
			t.Fatalf("mallory's set (code %q) replaced alice's run credential: set_by %s", code, c.SetBy)
		}
	}
}

// A credential admin's set, or rotation, names its origin, bound by the
// proof: a toolset of the same name registered by someone else just
// before, with the target at another origin, neither chooses where the
// admin's secret is stored nor is allowed it (docs/credentials.md,
// "Storing").
func TestSetCredentialIsNotRedirectedByALaterRegistration(t *testing.T) {
	e := newCredEnv(t)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	store := vault.NewStore(e.db, e.table, func() time.Time { return now })
	e.h.service.Credentials.Store = store
	good := e.registerWebhooks(t, "") // https://api.example.com
	set := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Origin: "https://api.example.com", Secret: []byte(secret), Salt: publishapi.NewSalt()}
	if _, code, msg := e.set(t, admin, set); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	now = now.Add(time.Minute)
	evil := e.registerWebhooks(t, "http") // http://api.example.com
	set.Secret = []byte(secret + "2")
	res, code, msg := e.set(t, admin, set)
	if code != "" {
		t.Fatalf("the rotation: %s %s", code, msg)
	}
	if res.Origin != "https://api.example.com" || slices.Contains(res.Allowed, evil.ID) {
		t.Errorf("the admin's rotation went to %s allowing %v; want %s's https://api.example.com, never %s", res.Origin, res.Allowed, good.ID, evil.ID)
	}
	// A proof for one origin does not carry a set for another.
	other := set
	other.Origin = "http://api.example.com"
	proof := e.callers.Proof(t, admin, publishapi.CredentialSetBinding(set))
	if _, code, _ := e.direct(t, publishapi.DirectRequest{Action: publishapi.ActionCredentialsSet, Credentials: &other, Proof: proof}); code == "" {
		t.Error("a proof bound to one origin set a credential for another")
	}
}
