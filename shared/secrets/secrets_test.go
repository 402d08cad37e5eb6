package secrets_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/secrets"
)

// ssmOn starts the SSM stand-in (infra/local) and a client of it.
func ssmOn(t *testing.T) (*local.SSM, *ssm.Client) {
	t.Helper()
	s, err := local.StartSSM(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
}

// Ensure creates each secret (32 random bytes, base64, SecureString) and
// the since time once; a second Ensure changes none of them.
func TestEnsureCreatesOnceAndNeverOverwrites(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	a, b := secrets.NamesFor("test", "send-email"), secrets.NamesFor("test", "mcp-call")
	first := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := secrets.Provision{Secrets: []string{a.MAC, b.MAC, a.ExternalKey}, Since: a.Since, Now: first}
	created, err := secrets.Ensure(ctx, c, p)
	if err != nil || len(created) != 4 {
		t.Fatalf("Ensure = %v, %v; want 4 created", created, err)
	}
	values := map[string]string{}
	for _, n := range []string{a.MAC, b.MAC, a.ExternalKey} {
		v, typ, ok := s.Value(n)
		raw, err := base64.StdEncoding.DecodeString(v)
		if !ok || typ != "SecureString" || err != nil || len(raw) != secrets.SecretBytes {
			t.Fatalf("%s: %q %s %v, want a SecureString of 32 bytes, base64", n, v, typ, ok)
		}
		values[n] = v
	}
	if values[a.MAC] == values[b.MAC] {
		t.Fatal("two functions got the same secret")
	}
	p.Now = first.Add(time.Hour)
	if created, err := secrets.Ensure(ctx, c, p); err != nil || len(created) != 0 {
		t.Fatalf("second Ensure = %v, %v; want none created", created, err)
	}
	for n, v := range values {
		if got, _, _ := s.Value(n); got != v {
			t.Fatalf("%s changed on the second Ensure", n)
		}
	}
	if v, typ, _ := s.Value(a.Since); v != "2026-05-01T12:00:00Z" || typ != "String" {
		t.Fatalf("since = %q (%s), want the first Ensure's time as a String", v, typ)
	}
	l, err := secrets.Load(ctx, c, a)
	if err != nil || base64.StdEncoding.EncodeToString(l.MAC) != values[a.MAC] || !l.Since.Equal(first) || len(l.ExternalKey) != 32 {
		t.Fatalf("Load = %+v, %v", l, err)
	}
}

// Load names every missing parameter, and never prints a value.
func TestLoadNamesTheMissingParameters(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	n := secrets.NamesFor("test", "send-email")
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{n.ExternalKey}}); err != nil {
		t.Fatal(err)
	}
	_, err := secrets.Load(ctx, c, n)
	if err == nil || !strings.Contains(err.Error(), n.MAC) || !strings.Contains(err.Error(), n.Since) || strings.Contains(err.Error(), n.ExternalKey) {
		t.Fatalf("Load = %v, want an error naming %s and %s only", err, n.MAC, n.Since)
	}
	v, _, _ := s.Value(n.ExternalKey)
	s.Set(n.MAC, "junk-value")
	s.Set(n.Since, "2026-05-01T12:00:00Z")
	if _, err := secrets.Load(ctx, c, n); err == nil || strings.Contains(err.Error(), "junk-value") || strings.Contains(err.Error(), v) {
		t.Fatalf("Load of a bad secret = %v, want an error without the value", err)
	}
}

// The stand-in refuses as SSM does: an existing name without Overwrite is
// ParameterAlreadyExists, and GetParameters names what it did not find.
func TestTheSSMStandInRefusesAsSSMDoes(t *testing.T) {
	_, c := ssmOn(t)
	ctx := context.Background()
	put := func(overwrite bool) error {
		_, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/p"), Value: aws.String("v"), Type: types.ParameterTypeSecureString, Overwrite: aws.Bool(overwrite)})
		return err
	}
	if err := put(false); err != nil {
		t.Fatal(err)
	}
	var exists *types.ParameterAlreadyExists
	if err := put(false); !errors.As(err, &exists) {
		t.Fatalf("second put = %v, want ParameterAlreadyExists", err)
	}
	if err := put(true); err != nil {
		t.Fatalf("put with Overwrite = %v", err)
	}
	out, err := c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/p", "/missing"}})
	if err != nil || len(out.Parameters) != 1 || aws.ToString(out.Parameters[0].Value) == "v" || len(out.InvalidParameters) != 1 || out.InvalidParameters[0] != "/missing" {
		t.Fatalf("GetParameters without decryption = %+v %v, want /p's ciphertext and /missing invalid", out, err)
	}
	out, err = c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/p"}, WithDecryption: aws.Bool(true)})
	if err != nil || aws.ToString(out.Parameters[0].Value) != "v" || out.Parameters[0].Version != 2 {
		t.Fatalf("GetParameters with decryption = %+v %v, want v, version 2", out, err)
	}
	var pnf *types.ParameterNotFound
	if _, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/missing")}); !errors.As(err, &pnf) {
		t.Fatalf("GetParameter of a missing name = %v, want ParameterNotFound", err)
	}
	if _, err := c.GetParameters(ctx, &ssm.GetParametersInput{Names: make([]string, 11)}); err == nil {
		t.Fatal("GetParameters of 11 names was answered")
	}
}
