package publish

import (
	"encoding/json"
	"testing"

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
