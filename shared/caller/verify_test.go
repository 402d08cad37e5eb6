package caller_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
)

// memProofs is an in-memory proof table with ledger.ProofTable's semantics
// (the conditional put), which shared/ledger's tests check on dynalite.
type memProofs struct {
	mu   sync.Mutex
	recs map[string]caller.ProofRecord
}

func (m *memProofs) Record(_ context.Context, rec caller.ProofRecord) (caller.ProofRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.recs[rec.ID]; ok {
		return old, false, nil
	}
	m.recs[rec.ID] = rec
	return rec, true, nil
}

type fixture struct {
	sts    *local.STS
	keys   *local.LocalKeys
	v      *caller.Verifier
	now    time.Time
	proofs *memProofs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	sts, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sts.Close() })
	f := &fixture{sts: sts, keys: keys, now: time.Now().UTC().Truncate(time.Second), proofs: &memProofs{recs: map[string]caller.ProofRecord{}}}
	v, err := caller.NewVerifier(caller.Config{Endpoint: sts.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, f.proofs)
	if err != nil {
		t.Fatal(err)
	}
	f.v = v.WithClock(func() time.Time { return f.now })
	return f
}

func (f *fixture) sign(t *testing.T, name string, b caller.Binding, at time.Time) string {
	t.Helper()
	c, err := f.keys.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := caller.Sign(context.Background(), credentials.StaticCredentialsProvider{Value: c}, f.sts.Endpoint(), local.Region, b, at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var decideA = caller.Binding{Action: caller.ActionDecide, Target: "rv_00000000000000000000000000000001", Decision: "approve", InputDigest: "sha256:aa"}

func reason(err error) caller.Reason {
	var ce *caller.Error
	if errors.As(err, &ce) {
		return ce.Reason
	}
	return ""
}

func TestVerifyReturnsTheSignersIdentity(t *testing.T) {
	f := newFixture(t)
	id, err := f.v.Verify(context.Background(), f.sign(t, "alice", decideA, f.now), decideA)
	if err != nil {
		t.Fatal(err)
	}
	if id.ARN != local.LocalPrincipal("alice") || id.Principal != id.ARN {
		t.Fatalf("identity %+v, want %s", id, local.LocalPrincipal("alice"))
	}
}

func TestVerifyRefuses(t *testing.T) {
	f := newFixture(t)
	other := decideA
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		proof func() string
		b     caller.Binding
		want  caller.Reason
	}{
		{"no proof", func() string { return "" }, decideA, caller.Missing},
		{"a proof for another review", func() string { return f.sign(t, "alice", decideA, f.now) },
			caller.Binding{Action: decideA.Action, Target: "rv_00000000000000000000000000000002", Decision: "approve", InputDigest: "sha256:aa"}, caller.Refused},
		{"a proof for another decision", func() string { return f.sign(t, "alice", decideA, f.now) },
			caller.Binding{Action: decideA.Action, Target: decideA.Target, Decision: "reject", InputDigest: "sha256:aa"}, caller.Refused},
		{"a proof for other inputs", func() string { return f.sign(t, "alice", decideA, f.now) },
			caller.Binding{Action: decideA.Action, Target: decideA.Target, Decision: "approve", InputDigest: "sha256:bb"}, caller.Refused},
		{"a proof for another action", func() string {
			return f.sign(t, "alice", caller.Binding{Action: caller.ActionShow, Target: decideA.Target}, f.now)
		}, other, caller.Refused},
		{"a stale proof (61 s)", func() string { return f.sign(t, "alice", decideA, f.now.Add(-61*time.Second)) }, decideA, caller.Stale},
		{"a proof from the future", func() string { return f.sign(t, "alice", decideA, f.now.Add(time.Minute)) }, decideA, caller.Stale},
		{"a proof for a non-STS host", func() string {
			return strings.Replace(f.sign(t, "alice", decideA, f.now), f.sts.Endpoint(), "http://127.0.0.2:1", 1)
		}, decideA, caller.WrongHost},
		{"an https proof for another host", func() string {
			return strings.Replace(f.sign(t, "alice", decideA, f.now), f.sts.Endpoint(), "https://attacker.example", 1)
		}, decideA, caller.WrongHost},
		{"another path", func() string { return strings.Replace(f.sign(t, "alice", decideA, f.now), "/?", "/x?", 1) }, decideA, caller.Malformed},
		{"another action", func() string {
			return strings.Replace(f.sign(t, "alice", decideA, f.now), "Action=GetCallerIdentity", "Action=AssumeRole", 1)
		}, decideA, caller.Malformed},
		{"an extra query parameter", func() string { return f.sign(t, "alice", decideA, f.now) + "&RoleArn=x" }, decideA, caller.Malformed},
		{"a parameter twice", func() string { return f.sign(t, "alice", decideA, f.now) + "&Action=GetCallerIdentity" }, decideA, caller.Malformed},
		{"the binding header not signed", func() string {
			return strings.Replace(f.sign(t, "alice", decideA, f.now), "host%3Bx-toolgate-binding", "host", 1)
		}, decideA, caller.Unbound},
		{"an oversized proof", func() string { return f.sign(t, "alice", decideA, f.now) + strings.Repeat("A", caller.MaxProofBytes) }, decideA, caller.Malformed},
		{"a forged signature", func() string {
			p := f.sign(t, "alice", decideA, f.now)
			u, _ := url.Parse(p)
			q := u.Query()
			q.Set("X-Amz-Signature", strings.Repeat("0", 64))
			u.RawQuery = q.Encode()
			return u.String()
		}, decideA, caller.Refused},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.v.Verify(ctx, c.proof(), c.b)
			if got := reason(err); got != c.want {
				t.Fatalf("Verify: %v (reason %q), want reason %q", err, got, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "X-Amz-Signature") {
				t.Fatalf("the error shows the proof: %v", err)
			}
		})
	}
}

func TestVerifyGivesAReplayedProofItsFirstAnswerOnlyForTheSameBinding(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	p := f.sign(t, "alice", decideA, f.now)
	if _, err := f.v.Verify(ctx, p, decideA); err != nil {
		t.Fatal(err)
	}
	id, err := f.v.Verify(ctx, p, decideA)
	if err != nil || id.ARN != local.LocalPrincipal("alice") {
		t.Fatalf("the same proof for the same binding: %+v, %v", id, err)
	}
	// STS would refuse the proof for another binding anyway (the signed
	// header differs); the record refuses it even where a binding's value
	// collided, and refuses any other use of the same signature.
	f.proofs.mu.Lock()
	for k, r := range f.proofs.recs {
		r.Binding = "another"
		f.proofs.recs[k] = r
	}
	f.proofs.mu.Unlock()
	if _, err := f.v.Verify(ctx, p, decideA); reason(err) != caller.Replayed {
		t.Fatalf("a proof recorded for another binding: %v, want %s", err, caller.Replayed)
	}
}

func TestVerifyAtMeasuresTheWindowFromTheReference(t *testing.T) {
	f := newFixture(t)
	start := caller.Binding{Action: caller.ActionStart, Target: "arn:aws:states:us-east-1:000000000000:execution:m:run-1"}
	started := f.now.Add(-10 * time.Minute) // the Starter state runs long after the start
	f.sts.Now = func() time.Time { return started.Add(30 * time.Second) }
	p := f.sign(t, "alice", start, started.Add(-30*time.Second))
	if _, err := f.v.VerifyAt(context.Background(), p, start, started); err != nil {
		t.Fatalf("a start proof signed 30 s before the start: %v", err)
	}
	old := f.sign(t, "alice", start, started.Add(-2*time.Minute))
	if _, err := f.v.VerifyAt(context.Background(), old, start, started); reason(err) != caller.Stale {
		t.Fatalf("a start proof signed 2 min before the start: %v, want %s", err, caller.Stale)
	}
}

func TestVerifyFollowsNoRedirect(t *testing.T) {
	hits := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	keys, _ := local.NewLocalKeys()
	v, err := caller.NewVerifier(caller.Config{Endpoint: redirect.URL, AllowHTTP: true, Account: local.LocalAccountID}, &memProofs{recs: map[string]caller.ProofRecord{}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := keys.Credentials("alice")
	p, _ := caller.Sign(context.Background(), credentials.StaticCredentialsProvider{Value: c}, redirect.URL, local.Region, decideA, time.Now())
	if _, err := v.Verify(context.Background(), p, decideA); err == nil || hits != 0 {
		t.Fatalf("a redirecting STS: %v, %d requests followed", err, hits)
	}
}

func TestConfigAcceptsHTTPOnlyForTheLocalStandIn(t *testing.T) {
	for _, c := range []struct {
		env map[string]string
		ok  bool
	}{
		{map[string]string{"AWS_REGION": "eu-west-1", caller.EnvAccount: "123456789012"}, true},
		{map[string]string{caller.EnvSTSEndpoint: "http://127.0.0.1:9"}, false},
		{map[string]string{caller.EnvSTSEndpoint: "http://127.0.0.1:9", caller.EnvSTSAllowHTTP: "true", caller.EnvAccount: "000000000000"}, true},
		{map[string]string{caller.EnvSTSEndpoint: "http://sts.example.com", caller.EnvSTSAllowHTTP: "true"}, false},
		{map[string]string{caller.EnvSTSEndpoint: "https://sts.eu-west-1.amazonaws.com/x"}, false},
		{map[string]string{caller.EnvSTSEndpoint: "https://sts.eu-west-1.amazonaws.com", caller.EnvSTSAllowHTTP: "yes"}, false},
		{map[string]string{}, false},
	} {
		_, err := caller.ConfigFromEnv(func(k string) string { return c.env[k] })
		if (err == nil) != c.ok {
			t.Errorf("%v: %v, want ok %v", c.env, err, c.ok)
		}
	}
}

func TestIdentityOfMapsRoleSessionsToTheirRoleUnlessSessionsCount(t *testing.T) {
	for _, c := range []struct {
		arn, want string
		roles     []string
		refused   bool
	}{
		{arn: "arn:aws:sts::123456789012:assumed-role/editors/alice", want: "arn:aws:iam::123456789012:role/editors"},
		{arn: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Editors_0123/alice@example.com", roles: []string{"AWSReservedSSO_Editors_0123"},
			want: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Editors_0123/alice@example.com"},
		{arn: "arn:aws-us-gov:sts::123456789012:assumed-role/editors/bob", want: "arn:aws-us-gov:iam::123456789012:role/editors"},
		{arn: "arn:aws:iam::123456789012:user/ops/carol", want: "arn:aws:iam::123456789012:user/ops/carol"},
		{arn: "arn:aws:sts::123456789012:federated-user/dave", refused: true},
		{arn: "arn:aws:iam::123456789012:root", refused: true},
		{arn: "arn:aws:sts::123456789012:assumed-role/editors", refused: true},
		{arn: "alice", refused: true},
		{arn: "arn:aws:iam::123456789012:user/a b", refused: true},
	} {
		id, err := caller.IdentityOf(c.arn, c.roles)
		if c.refused != (err != nil) || (!c.refused && id.Principal != c.want) {
			t.Errorf("IdentityOf(%q) = %+v, %v; want %q (refused %v)", c.arn, id, err, c.want, c.refused)
		}
	}
}

// STS answers a presigned GetCallerIdentity for the credentials of any
// account; the verifier admits principals of the deployment's own account,
// and of the accounts it is given besides (review-decision's reviewer
// accounts), only.
func TestVerifyRefusesPrincipalsOfAccountsItDoesNotAdmit(t *testing.T) {
	const outside, sibling = "999999999999", "111122223333"
	for _, c := range []struct {
		name    string
		signer  string // account
		others  []string
		refused bool
	}{
		{"the deployment's own account", local.LocalAccountID, nil, false},
		{"another account", outside, nil, true},
		{"a reviewer account where none is admitted", sibling, nil, true},
		{"an admitted reviewer account", sibling, []string{sibling}, false},
		{"another account where a reviewer account is admitted", outside, []string{sibling}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			var logs bytes.Buffer
			cfg := caller.Config{Endpoint: f.sts.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID,
				Log: slog.New(slog.NewJSONHandler(&logs, nil))}
			v, err := caller.NewVerifier(cfg.WithAccounts(c.others), f.proofs)
			if err != nil {
				t.Fatal(err)
			}
			v = v.WithClock(func() time.Time { return f.now })
			creds, err := f.keys.CredentialsIn(c.signer, "alice")
			if err != nil {
				t.Fatal(err)
			}
			proof, err := caller.Sign(context.Background(), credentials.StaticCredentialsProvider{Value: creds}, f.sts.Endpoint(), local.Region, decideA, f.now)
			if err != nil {
				t.Fatal(err)
			}
			id, err := v.Verify(context.Background(), proof, decideA)
			if !c.refused {
				if err != nil || id.Account != c.signer || id.Principal != local.PrincipalIn(c.signer, "alice") {
					t.Fatalf("Verify = %+v, %v; want alice of %s", id, err, c.signer)
				}
				return
			}
			if reason(err) != caller.WrongAccount || !strings.Contains(err.Error(), "["+string(caller.WrongAccount)+"]") {
				t.Fatalf("Verify = %+v, %v; want a %s refusal", id, err, caller.WrongAccount)
			}
			if len(f.proofs.recs) != 0 {
				t.Fatalf("a refused proof was recorded: %v", f.proofs.recs)
			}
			line := logs.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, `"reason":"caller-account"`) || !strings.Contains(line, c.signer) {
				t.Fatalf("want one log line naming the reason and the account, got %q", line)
			}
			for _, secret := range []string{"X-Amz-Signature", creds.AccessKeyID, creds.SecretAccessKey} {
				if strings.Contains(line, secret) || strings.Contains(err.Error(), secret) {
					t.Fatalf("the refusal or its log line shows the proof (%s): %v / %s", secret, err, line)
				}
			}
		})
	}
}

func TestConfigFromEnvWantsTheDeploymentsAccount(t *testing.T) {
	env := map[string]string{"AWS_REGION": "eu-west-1"}
	for _, c := range []struct {
		account string
		ok      bool
	}{
		{"123456789012", true}, {"", false}, {"12345678901", false}, {"1234567890123", false}, {"12345678901x", false}, {"*", false},
	} {
		env[caller.EnvAccount] = c.account
		cfg, err := caller.ConfigFromEnv(func(k string) string { return env[k] })
		if (err == nil) != c.ok || (c.ok && cfg.Account != c.account) {
			t.Errorf("%s=%q: %+v, %v; want ok %v", caller.EnvAccount, c.account, cfg, err, c.ok)
		}
	}
	for _, c := range []struct {
		list string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"111122223333", []string{"111122223333"}, true},
		{" 111122223333 , 444455556666 ", []string{"111122223333", "444455556666"}, true},
		{"111122223333,111122223333", nil, false},
		{"*", nil, false},
		{"arn:aws:iam::111122223333:root", nil, false},
	} {
		got, err := caller.ReviewerAccountsFromEnv(func(k string) string { return map[string]string{caller.EnvReviewerAccounts: c.list}[k] })
		if (err == nil) != c.ok || (c.ok && !slices.Equal(got, c.want)) {
			t.Errorf("%s=%q: %v, %v; want %v (ok %v)", caller.EnvReviewerAccounts, c.list, got, err, c.want, c.ok)
		}
	}
}
