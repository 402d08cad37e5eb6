package vault

import (
	"bytes"
	"errors"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/toolset"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
)

// bearer is an MCP server's auth: Authorization: Bearer <credential>.
var bearer = toolset.Auth{Header: "Authorization", Scheme: "Bearer"}

var crmTarget = credential.Target{ToolsetName: "crm", Name: "tickets", Origin: "https://mcp.example.com", Auth: bearer}

func TestSealThenOpenGivesTheSecretBack(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	secret := []byte("mF_9.B5f-4.1JqM")
	sealed, err := Seal(t.Context(), k, srv.Alias, crmTarget, credential.ScopeToolset, secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed.Ciphertext, secret) || len(sealed.Nonce) != 12 || len(sealed.EncryptedKey) == 0 {
		t.Fatalf("sealed: ciphertext holds the secret, or nonce %d bytes, or no encrypted key", len(sealed.Nonce))
	}
	if sealed.KeyID != srv.KeyARN {
		t.Errorf("KeyID %q, want the key's ARN %q", sealed.KeyID, srv.KeyARN)
	}
	got, err := Open(t.Context(), k, crmTarget, credential.ScopeToolset, sealed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, secret) {
		t.Error("Open gave another secret")
	}
	again, err := Seal(t.Context(), k, srv.Alias, crmTarget, credential.ScopeToolset, secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again.Nonce, sealed.Nonce) || bytes.Equal(again.EncryptedKey, sealed.EncryptedKey) {
		t.Error("two seals shared a nonce or a data key")
	}
}

func TestOpenRefusesACiphertextMovedToAnotherBinding(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	sealed, err := Seal(t.Context(), k, srv.KeyARN, crmTarget, credential.RunScope("run-1"), []byte("canary-token"))
	if err != nil {
		t.Fatal(err)
	}
	other := func(f func(*credential.Target)) credential.Target { c := crmTarget; f(&c); return c }
	for _, c := range []struct {
		name   string
		target credential.Target
		scope  credential.Scope
	}{
		{"another scope", crmTarget, credential.ScopeToolset},
		{"another run", crmTarget, credential.RunScope("run-2")},
		{"an end user's scope", crmTarget, credential.EndUserScope([]byte("k"), "alice")},
		{"another target", other(func(t *credential.Target) { t.Name = "billing" }), credential.RunScope("run-1")},
		{"another origin", other(func(t *credential.Target) { t.Origin = "https://mcp.example.com:8443" }), credential.RunScope("run-1")},
		{"another toolset", other(func(t *credential.Target) { t.ToolsetName = "crm2" }), credential.RunScope("run-1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(t.Context(), k, c.target, c.scope, sealed)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			var invalid *types.InvalidCiphertextException
			if !errors.As(err, &invalid) {
				t.Errorf("Open: %v, want KMS's InvalidCiphertextException", err)
			}
			if strings.Contains(err.Error(), "canary") {
				t.Errorf("error quotes the secret: %v", err)
			}
		})
	}
}

// A credential set to be presented one way does not open for a target of
// the same toolset, name and origin that declares another way: another
// header, another scheme, or a {secret} path segment, where logs and
// proxies would record it. KMS opens the data key (the context is the
// same); GCM refuses the ciphertext.
func TestOpenRefusesAnotherPresentationOfTheSameTarget(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	sealed, err := Seal(t.Context(), k, srv.KeyARN, crmTarget, credential.ScopeToolset, []byte("canary-token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []toolset.Auth{
		{Header: "X-Debug-Echo"},
		{Header: "Authorization"},
		{Header: "Authorization", Scheme: "Token"},
		{PathSegment: 1},
	} {
		target := crmTarget
		target.Auth = auth
		_, err := Open(t.Context(), k, target, credential.ScopeToolset, sealed)
		if err == nil {
			t.Errorf("a credential set for %+v opened for %+v", crmTarget.Auth, auth)
			continue
		}
		if !strings.Contains(err.Error(), "presentation") || strings.Contains(err.Error(), "canary") {
			t.Errorf("Open for %+v: %v, want the presentation named and no secret", auth, err)
		}
	}
	if _, err := Open(t.Context(), k, crmTarget, credential.ScopeToolset, sealed); err != nil {
		t.Errorf("the same presentation: %v", err)
	}
}

// The data key alone is bound to the whole context, purpose included; and
// the ciphertext to it again through GCM's additional data.
func TestDataKeyAndCiphertextAreBoundToThePurpose(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	sealed, err := Seal(t.Context(), k, srv.KeyARN, crmTarget, credential.ScopeToolset, []byte("canary-token"))
	if err != nil {
		t.Fatal(err)
	}
	ec := EncryptionContext(crmTarget, credential.ScopeToolset)
	ec[ContextPurpose] = credential.PurposeWebhookSource
	_, err = k.Decrypt(t.Context(), &kms.DecryptInput{CiphertextBlob: sealed.EncryptedKey, EncryptionContext: ec})
	var invalid *types.InvalidCiphertextException
	if !errors.As(err, &invalid) {
		t.Fatalf("Decrypt under purpose %s: %v, want InvalidCiphertextException", credential.PurposeWebhookSource, err)
	}
	out, err := k.Decrypt(t.Context(), &kms.DecryptInput{CiphertextBlob: sealed.EncryptedKey, EncryptionContext: EncryptionContext(crmTarget, credential.ScopeToolset), KeyId: aws.String(sealed.KeyID)})
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := newGCM(out.Plaintext)
	if err != nil {
		t.Fatal(err)
	}
	aad, err := additionalData(ec, crmTarget.Auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gcm.Open(nil, sealed.Nonce, sealed.Ciphertext, aad); err == nil {
		t.Error("the ciphertext opened with another purpose as additional data")
	}
	right, _ := additionalData(EncryptionContext(crmTarget, credential.ScopeToolset), crmTarget.Auth)
	if _, err := gcm.Open(nil, sealed.Nonce, sealed.Ciphertext, right); err != nil {
		t.Errorf("the ciphertext did not open with its own context: %v", err)
	}
}

func TestAdditionalDataIsTheContextAndThePresentationInRFC8785Form(t *testing.T) {
	got, err := additionalData(EncryptionContext(credential.Target{ToolsetName: "crm", Name: "tickets", Origin: "https://h"}, credential.ScopeToolset), bearer)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"origin":"https://h","presentation":"{\"header\":\"Authorization\",\"scheme\":\"Bearer\"}","purpose":"tool-credential","scope":"toolset","target":"tickets","toolset_name":"crm"}`
	if string(got) != want {
		t.Errorf("additional data %s, want %s", got, want)
	}
}

func TestSealRefusesABadSecretOrBindingBeforeCallingKMS(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	for _, c := range []struct {
		name   string
		target credential.Target
		scope  credential.Scope
		secret string
	}{
		{"secret with LF", crmTarget, credential.ScopeToolset, "canary\nX"},
		{"no origin", credential.Target{ToolsetName: "crm", Name: "tickets", Auth: bearer}, credential.ScopeToolset, "abc"},
		{"bad scope", crmTarget, "run:", "abc"},
	} {
		if _, err := Seal(t.Context(), k, srv.KeyARN, c.target, c.scope, []byte(c.secret)); err == nil {
			t.Errorf("%s: Seal succeeded", c.name)
		}
	}
	if n := srv.Calls("GenerateDataKey"); n != 0 {
		t.Errorf("GenerateDataKey called %d times", n)
	}
}

// local-kms logs each operation; a seal and an open under it never put the
// secret, nor the data key, into that log.
func TestLocalKMSNeverLogsTheSecret(t *testing.T) {
	var log strings.Builder
	var mu sync.Mutex
	srv, err := localkms.Start(t.Context(), localkms.Options{Stage: "test", Log: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	const canary = "canary-7f3a9c"
	sealed, err := Seal(t.Context(), srv.Client(), srv.Alias, crmTarget, credential.ScopeToolset, []byte(canary))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), srv.Client(), crmTarget, credential.ScopeToolset, sealed); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), "Decryption called") {
		t.Fatalf("local-kms's log was not captured: %q", log.String())
	}
	if strings.Contains(log.String(), canary) {
		t.Error("local-kms logged the secret")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// SealWith and OpenWith bind a value to the encryption context (checked
// by KMS) and to the additional data (checked by GCM): either changed,
// the value does not open, and the error quotes none of it.
func TestOpenWithRefusesAnotherContextOrAdditionalData(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	ec := map[string]string{ContextPurpose: credential.PurposeWebhookSubscription, "subscription": "sub_a"}
	aad, err := ContextAAD(ec)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := SealWith(t.Context(), k, srv.Alias, ec, aad, []byte("canary-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := OpenWith(t.Context(), k, ec, aad, sealed); err != nil || string(got) != "canary-secret" {
		t.Fatalf("OpenWith = %q, %v", got, err)
	}
	other := map[string]string{ContextPurpose: credential.PurposeWebhookSubscription, "subscription": "sub_b"}
	_, kmsErr := OpenWith(t.Context(), k, other, aad, sealed)
	var invalid *types.InvalidCiphertextException
	if !errors.As(kmsErr, &invalid) {
		t.Errorf("OpenWith under another context: %v, want KMS's InvalidCiphertextException", kmsErr)
	}
	otherAAD, err := ContextAAD(other)
	if err != nil {
		t.Fatal(err)
	}
	_, gcmErr := OpenWith(t.Context(), k, ec, otherAAD, sealed)
	if !errors.Is(gcmErr, ErrNotAuthentic) {
		t.Errorf("OpenWith with other additional data: %v, want ErrNotAuthentic", gcmErr)
	}
	for _, e := range []error{kmsErr, gcmErr} {
		if e != nil && strings.Contains(e.Error(), "canary") {
			t.Errorf("error quotes the secret: %v", e)
		}
	}
}

// ContextAAD is the map's RFC 8785 form: keys sorted, whatever order the
// map was built in, and no HTML escaping.
func TestContextAADIsCanonical(t *testing.T) {
	got, err := ContextAAD(map[string]string{"subscription": "sub_<1>", ContextPurpose: "webhook-subscription"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"purpose":"webhook-subscription","subscription":"sub_<1>"}`; string(got) != want {
		t.Errorf("ContextAAD = %s, want %s", got, want)
	}
}
