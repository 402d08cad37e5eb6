package kms_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/shared/testkit"
)

func TestStartCreatesTheStageKeyWithAliasAndRotation(t *testing.T) {
	s := kms.StartForTest(t, "test")
	if s.Alias != "alias/toolgate-test-credentials" {
		t.Errorf("alias %q", s.Alias)
	}
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Errorf("endpoint %q is not on 127.0.0.1", s.Endpoint())
	}
	c := s.Client()
	d, err := c.DescribeKey(t.Context(), &awskms.DescribeKeyInput{KeyId: aws.String(s.Alias)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(d.KeyMetadata.Arn); got != s.KeyARN {
		t.Errorf("alias names %s, want %s", got, s.KeyARN)
	}
	if d.KeyMetadata.KeySpec != types.KeySpecSymmetricDefault || d.KeyMetadata.KeyUsage != types.KeyUsageTypeEncryptDecrypt {
		t.Errorf("key %s / %s, want a symmetric encrypt-decrypt key", d.KeyMetadata.KeySpec, d.KeyMetadata.KeyUsage)
	}
	r, err := c.GetKeyRotationStatus(t.Context(), &awskms.GetKeyRotationStatusInput{KeyId: aws.String(s.KeyARN)})
	if err != nil {
		t.Fatal(err)
	}
	if !r.KeyRotationEnabled {
		t.Error("key rotation is not enabled")
	}
}

func TestDataKeyDecryptsOnlyUnderItsEncryptionContext(t *testing.T) {
	var log testkit.Buffer
	s, err := kms.Start(t.Context(), kms.Options{Stage: "test", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	c := s.Client()
	ctx := map[string]string{"purpose": "tool-credential", "scope": "toolset"}
	k, err := c.GenerateDataKey(t.Context(), &awskms.GenerateDataKeyInput{KeyId: aws.String(s.Alias), KeySpec: types.DataKeySpecAes256, EncryptionContext: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Plaintext) != 32 {
		t.Fatalf("data key of %d bytes, want 32", len(k.Plaintext))
	}
	got, err := c.Decrypt(t.Context(), &awskms.DecryptInput{CiphertextBlob: k.CiphertextBlob, EncryptionContext: ctx})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Plaintext, k.Plaintext) {
		t.Error("Decrypt gave another data key")
	}
	other := map[string]string{"purpose": "tool-credential", "scope": "run:x"}
	_, err = c.Decrypt(t.Context(), &awskms.DecryptInput{CiphertextBlob: k.CiphertextBlob, EncryptionContext: other})
	var invalid *types.InvalidCiphertextException
	if !errors.As(err, &invalid) {
		t.Errorf("Decrypt under another context: %v, want InvalidCiphertextException", err)
	}
	if n := s.Calls("Decrypt"); n != 2 {
		t.Errorf("Calls(Decrypt) = %d, want 2", n)
	}
	// local-kms logs each operation to Options.Log; never the data key.
	if !strings.Contains(log.String(), "Decryption called") {
		t.Errorf("Log did not receive local-kms's lines: %q", log.String())
	}
	for _, enc := range []string{base64.StdEncoding.EncodeToString(k.Plaintext), string(k.Plaintext)} {
		if strings.Contains(log.String(), enc) {
			t.Error("local-kms logged the data key's plaintext")
		}
	}
}

func TestStopIsIdempotentAndEndsServing(t *testing.T) {
	s, err := kms.Start(t.Context(), kms.Options{Stage: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().DescribeKey(t.Context(), &awskms.DescribeKeyInput{KeyId: aws.String(s.KeyARN)}); err == nil {
		t.Error("the server still answers after Stop")
	}
}

func TestStartRefusesAnEmptyStage(t *testing.T) {
	if _, err := kms.Start(t.Context(), kms.Options{}); err == nil {
		t.Error("Start with no stage succeeded")
	}
}
