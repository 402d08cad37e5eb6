package sources

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// An operator's add without a secret draws one in the scheme's form,
// answers it once, and stores it only sealed under the source's own
// context: the table and the log never hold it, and it opens for that
// source alone. The same proof presented again draws and answers no
// second secret (SOURCES_CONFLICT), and the source keeps its first.
func TestAddSourceDrawsASecretAnswersItOnceAndStoresItSealed(t *testing.T) {
	for _, c := range []struct {
		scheme string
		form   string
	}{
		{"standard-webhooks", `^whsec_[A-Za-z0-9+/]{43}=$`},
		{"github", `^[0-9a-f]{64}$`},
	} {
		t.Run(c.scheme, func(t *testing.T) {
			e := newEnv(t, false)
			r := inboundapi.AddSourceRequest{Name: "billing", Scheme: c.scheme, Solution: solution, EndUser: "cust-1"}
			proof := e.proof(t, operator, inboundapi.AddSourceBinding(r))
			out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r, Proof: proof})
			if code != "" {
				t.Fatalf("%s: %s", code, msg)
			}
			var res inboundapi.AddSourceResult
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			if !regexpMatch(c.form, res.Secret) || CheckSecret(inbound.Scheme(c.scheme), res.Secret) != nil {
				t.Fatalf("drawn secret %q is not in the form %s", res.Secret, c.form)
			}
			if strings.Count(string(out), res.Secret) != 1 {
				t.Fatalf("the answer holds the secret %d times", strings.Count(string(out), res.Secret))
			}
			want := inboundapi.SourceInfo{Name: "billing", Scheme: c.scheme, Solution: solution, MaxBodyBytes: DefaultMaxBodyBytes, EndUser: "cust-1",
				Route: "/in/billing", AddedBy: "arn:aws:iam::000000000000:user/ops", AddedAt: rfc3339(e.clock.Now()), UpdatedAt: rfc3339(e.clock.Now()), Version: 1, Secrets: 1}
			if res.Source != want {
				t.Fatalf("answered %+v, want %+v", res.Source, want)
			}
			if strings.Contains(e.items(t), res.Secret) || strings.Contains(e.logs.String(), res.Secret) {
				t.Fatal("the secret is in the table or the log")
			}
			src, err := e.st.Source(t.Context(), "billing")
			if err != nil || len(src.Secrets) != 1 {
				t.Fatalf("%+v, %v", src, err)
			}
			opened, err := store.OpenSecret(t.Context(), e.kms.Client(), "billing", src.Secrets[0].Sealed)
			if err != nil || string(opened) != res.Secret {
				t.Fatalf("the sealed secret opens to %d bytes, %v", len(opened), err)
			}
			if _, err := store.OpenSecret(t.Context(), e.kms.Client(), "other", src.Secrets[0].Sealed); err == nil {
				t.Fatal("the sealed secret opens for another source")
			}
			again, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r, Proof: proof})
			if code != inboundapi.CodeConflict || again != nil {
				t.Fatalf("the same proof again: %s %s, want %s and no answer", code, again, inboundapi.CodeConflict)
			}
			if after, _ := e.st.Source(t.Context(), "billing"); len(after.Secrets) != 1 || string(after.Secrets[0].Sealed.Ciphertext) != string(src.Secrets[0].Sealed.Ciphertext) {
				t.Fatal("the replay changed the source's secret")
			}
		})
	}
}

// A given secret in its scheme's form is stored sealed and not answered;
// a secret of another form is SOURCES_INVALID, naming the rule, never the
// secret, and nothing is stored. Stripe makes its own secret, so a stripe
// source without one is refused.
func TestAddSourceTakesAGivenSecretInItsSchemesForm(t *testing.T) {
	e := newEnv(t, false)
	res, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "stripe-live", Scheme: "stripe", Solution: solution, Secret: "whsec_GivenByStripe0123"})
	if code != "" || res.Secret != "" || res.Source.Secrets != 1 {
		t.Fatalf("%+v, %s %s", res, code, msg)
	}
	if strings.Contains(e.items(t), "GivenByStripe") {
		t.Fatal("the given secret is stored in the clear")
	}
	for _, c := range []struct {
		name, scheme, secret, want string
	}{
		{"stripe without a secret", "stripe", "", "stripe makes"},
		{"stripe not whsec_", "stripe", "sk_live_canary-value", "a Stripe secret"},
		{"standard webhooks too short", "standard-webhooks", "whsec_Y2FuYXJ5", "a Standard Webhooks secret"},
		{"github with a newline", "github", "canary-value\nmore", "a GitHub secret"},
		{"github too long", "github", strings.Repeat("c", MaxSecretBytes+1), "a GitHub secret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "bad-secret", Scheme: c.scheme, Solution: solution, Secret: c.secret})
			if code != inboundapi.CodeInvalid || !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "secret") {
				t.Fatalf("%s %q, want %s naming %q", code, msg, inboundapi.CodeInvalid, c.want)
			}
			if c.secret != "" && strings.Contains(msg, c.secret) {
				t.Fatal("the message quotes the secret")
			}
			if e.count(t, "bad-secret") != 0 {
				t.Fatal("a refused source was stored")
			}
		})
	}
}

// A malformed add is SOURCES_INVALID naming its field, an unpublished
// Solution SOURCES_NOT_FOUND, and nothing is stored.
func TestAddSourceRefusesBadRequests(t *testing.T) {
	e := newEnv(t, false)
	ok := inboundapi.AddSourceRequest{Name: "billing", Scheme: "github", Solution: solution}
	for _, c := range []struct {
		name  string
		edit  func(r *inboundapi.AddSourceRequest)
		code  string
		field string
	}{
		{"an upper-case name", func(r *inboundapi.AddSourceRequest) { r.Name = "Billing" }, inboundapi.CodeInvalid, "name"},
		{"a name of 49 characters", func(r *inboundapi.AddSourceRequest) { r.Name = strings.Repeat("b", 49) }, inboundapi.CodeInvalid, "name"},
		{"an unknown scheme", func(r *inboundapi.AddSourceRequest) { r.Scheme = "svix" }, inboundapi.CodeInvalid, "scheme"},
		{"a body bound over the cap", func(r *inboundapi.AddSourceRequest) { r.MaxBodyBytes = MaxBodyBytes + 1 }, inboundapi.CodeInvalid, "max_body_bytes"},
		{"a negative body bound", func(r *inboundapi.AddSourceRequest) { r.MaxBodyBytes = -1 }, inboundapi.CodeInvalid, "max_body_bytes"},
		{"a bad end user", func(r *inboundapi.AddSourceRequest) { r.EndUser = "cust 1" }, inboundapi.CodeInvalid, "end_user"},
		{"no Solution", func(r *inboundapi.AddSourceRequest) { r.Solution = "" }, inboundapi.CodeInvalid, "solution"},
		{"an unpublished Solution", func(r *inboundapi.AddSourceRequest) { r.Solution = "nope" }, inboundapi.CodeNotFound, "solution"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			if _, code, msg := e.addSource(t, operator, r); code != c.code || !strings.HasPrefix(msg, c.field) {
				t.Fatalf("%s %q, want %s naming %s", code, msg, c.code, c.field)
			}
			if all, err := e.st.Sources(t.Context()); err != nil || len(all) != 0 {
				t.Fatalf("stored %+v, %v", all, err)
			}
		})
	}
	if res, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "billing", Scheme: "github", Solution: solution, MaxBodyBytes: MaxBodyBytes}); code != "" || res.Source.MaxBodyBytes != MaxBodyBytes {
		t.Fatalf("the cap itself: %+v, %s %s", res, code, msg)
	}
	if _, code, _ := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "billing", Scheme: "standard-webhooks", Solution: solution}); code != inboundapi.CodeConflict {
		t.Fatalf("a name in use: %s, want %s", code, inboundapi.CodeConflict)
	}
}

// Only an inbound operator with a proof of exactly that request may do
// anything: a stranger is SOURCES_REFUSED, a proof made for another
// source, operation or secret SOURCES_UNAUTHENTICATED, and nothing
// changes.
func TestOnlyAnOperatorWithAProofOfThatRequestManagesSources(t *testing.T) {
	e := newEnv(t, false)
	if _, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "billing", Scheme: "github", Solution: solution}); code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	r := inboundapi.AddSourceRequest{Name: "payments", Scheme: "github", Solution: solution, Secret: "canary-secret-one"}
	other := r
	other.Secret = "canary-secret-two"
	for _, c := range []struct {
		name string
		req  inboundapi.DirectRequest
		want string
	}{
		{"a stranger's add", inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r, Proof: e.proof(t, stranger, inboundapi.AddSourceBinding(r))}, inboundapi.CodeRefused},
		{"a proof for another secret", inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r, Proof: e.proof(t, operator, inboundapi.AddSourceBinding(other))}, inboundapi.CodeUnauthenticated},
		{"a stranger's list", inboundapi.DirectRequest{Action: inboundapi.ActionListSources, Proof: e.proof(t, stranger, inboundapi.ListSourcesBinding())}, inboundapi.CodeRefused},
		{"a remove proof for another source", inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSource, Name: "billing", Proof: e.proof(t, operator, inboundapi.RemoveSourceBinding("payments"))}, inboundapi.CodeUnauthenticated},
		{"a retire proof used to remove", inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSource, Name: "billing", Proof: e.proof(t, operator, inboundapi.RetireSecretsBinding("billing"))}, inboundapi.CodeUnauthenticated},
		{"a stranger's rotation", inboundapi.DirectRequest{Action: inboundapi.ActionRotateSecret, Name: "billing", Proof: e.proof(t, stranger, inboundapi.RotateSecretBinding("billing", inboundapi.RotateSecretRequest{}))}, inboundapi.CodeRefused},
		{"a stranger's redrive", inboundapi.DirectRequest{Action: inboundapi.ActionDLQRedrive, Proof: e.proof(t, stranger, inboundapi.RedriveBinding())}, inboundapi.CodeRefused},
		{"no proof", inboundapi.DirectRequest{Action: inboundapi.ActionListSources}, inboundapi.CodeUnauthenticated},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, code, msg := e.direct(t, c.req); code != c.want {
				t.Fatalf("%s %s, want %s", code, msg, c.want)
			}
		})
	}
	all, err := e.st.Sources(t.Context())
	if err != nil || len(all) != 1 || all[0].Name != "billing" || all[0].Version != 1 {
		t.Fatalf("sources %+v, %v", all, err)
	}
	if strings.Contains(e.logs.String(), "canary-secret") || strings.Contains(e.logs.String(), "X-Amz-Signature") {
		t.Fatal("the log holds a secret or a proof")
	}
	if !strings.Contains(e.logs.String(), "arn:aws:iam::000000000000:user/mallory is not an inbound operator") {
		t.Fatalf("the refusal is not logged with its principal:\n%s", e.logs.String())
	}
}

// rotate-secret adds a new secret, current, and keeps the ones that
// verified until then verifying for 24 hours; a second rotation within a
// proof's validity is refused (a replayed proof must not draw again);
// retire-secrets then keeps the newest alone; remove deletes the source.
func TestRotateRetireAndRemoveASourcesSecrets(t *testing.T) {
	e := newEnv(t, false)
	first, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "billing", Scheme: "standard-webhooks", Solution: solution})
	if code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	rotate := func(r inboundapi.RotateSecretRequest) (inboundapi.RotateSecretResult, string, string) {
		out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionRotateSecret, Name: "billing", Rotate: &r,
			Proof: e.proof(t, operator, inboundapi.RotateSecretBinding("billing", r))})
		var res inboundapi.RotateSecretResult
		if code == "" {
			_ = json.Unmarshal(out, &res)
		}
		return res, code, msg
	}
	if _, code, _ := rotate(inboundapi.RotateSecretRequest{}); code != inboundapi.CodeRefused {
		t.Fatalf("a rotation right after the add: %s, want %s", code, inboundapi.CodeRefused)
	}
	e.clock.Add(rotateInterval)
	rotatedAt := e.clock.Now()
	res, code, msg := rotate(inboundapi.RotateSecretRequest{})
	if code != "" || res.Secret == "" || res.Secret == first.Secret || res.PreviousRetiresAt != rfc3339(rotatedAt.Add(RotationGrace)) {
		t.Fatalf("%+v, %s %s", res, code, msg)
	}
	src, err := e.st.Source(t.Context(), "billing")
	if err != nil || len(src.Secrets) != 2 || src.Version != 2 || !src.Secrets[0].RetiresAt.Equal(rotatedAt.Add(RotationGrace)) || !src.Secrets[1].RetiresAt.IsZero() {
		t.Fatalf("after the rotation: %+v, %v", src, err)
	}
	for i, want := range []string{first.Secret, res.Secret} {
		if got, err := store.OpenSecret(t.Context(), e.kms.Client(), "billing", src.Secrets[i].Sealed); err != nil || string(got) != want {
			t.Fatalf("secret %d opens to another, %v", i, err)
		}
	}
	if _, code, _ := rotate(inboundapi.RotateSecretRequest{Secret: "whsec_c2Vjb25kLXJvdGF0aW9uLXRvby1zb29uLTAw"}); code != inboundapi.CodeRefused {
		t.Fatalf("a second rotation within the interval: %s", code)
	}
	out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionListSources, Proof: e.proof(t, operator, inboundapi.ListSourcesBinding())})
	if code != "" || !strings.Contains(string(out), `"secrets":2`) || strings.Contains(string(out), res.Secret) || strings.Contains(string(out), first.Secret) {
		t.Fatalf("list: %s %s %s", out, code, msg)
	}
	out, code, msg = e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionRetireSecrets, Name: "billing", Proof: e.proof(t, operator, inboundapi.RetireSecretsBinding("billing"))})
	if code != "" || !strings.Contains(string(out), `"retired":1`) {
		t.Fatalf("retire: %s %s %s", out, code, msg)
	}
	src, _ = e.st.Source(t.Context(), "billing")
	if len(src.Secrets) != 1 || !src.Secrets[0].RetiresAt.IsZero() {
		t.Fatalf("after retire-secrets: %+v", src.Secrets)
	}
	if got, err := store.OpenSecret(t.Context(), e.kms.Client(), "billing", src.Secrets[0].Sealed); err != nil || string(got) != res.Secret {
		t.Fatal("retire-secrets kept another than the newest")
	}
	if strings.Contains(e.items(t)+e.logs.String(), res.Secret) || strings.Contains(e.items(t)+e.logs.String(), first.Secret) {
		t.Fatal("a secret is in the table or the log")
	}
	if _, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSource, Name: "billing", Proof: e.proof(t, operator, inboundapi.RemoveSourceBinding("billing"))}); code != "" {
		t.Fatalf("remove: %s", code)
	}
	if _, err := e.st.Source(t.Context(), "billing"); err == nil {
		t.Fatal("the source is still there")
	}
	if _, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionRemoveSource, Name: "billing", Proof: e.proof(t, operator, inboundapi.RemoveSourceBinding("billing"))}); code != inboundapi.CodeNotFound {
		t.Fatalf("remove again: %s, want %s", code, inboundapi.CodeNotFound)
	}
}

// A rotation drops the secrets that retired already, and one that would
// keep more than MaxSecrets is refused until they retire (or
// retire-secrets).
func TestRotationDropsRetiredSecretsAndBoundsTheRest(t *testing.T) {
	e := newEnv(t, false)
	if _, code, msg := e.addSource(t, operator, inboundapi.AddSourceRequest{Name: "gh", Scheme: "github", Solution: solution}); code != "" {
		t.Fatalf("%s %s", code, msg)
	}
	rotate := func() string {
		e.clock.Add(rotateInterval)
		r := inboundapi.RotateSecretRequest{}
		_, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionRotateSecret, Name: "gh", Proof: e.proof(t, operator, inboundapi.RotateSecretBinding("gh", r))})
		return code
	}
	for i := 1; i < MaxSecrets; i++ {
		if code := rotate(); code != "" {
			t.Fatalf("rotation %d: %s", i, code)
		}
	}
	if code := rotate(); code != inboundapi.CodeRefused {
		t.Fatalf("a rotation keeping %d secrets: %s, want %s", MaxSecrets+1, code, inboundapi.CodeRefused)
	}
	e.clock.Add(RotationGrace)
	if code := rotate(); code != "" {
		t.Fatalf("a rotation once the others retired: %s", code)
	}
	if src, _ := e.st.Source(t.Context(), "gh"); len(src.Secrets) != 2 || src.Secrets[0].RetiresAt.IsZero() {
		t.Fatalf("%d secrets kept, want the one current until then, retiring, and the new one", len(src.Secrets))
	}
}
