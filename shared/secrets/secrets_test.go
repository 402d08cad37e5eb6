package secrets_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
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
	a, b := functionconfig.SecretNamesFor("test", "send-email"), functionconfig.SecretNamesFor("test", "mcp-call")
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

// Load names every missing secret, and never prints a value; a missing
// since time is not among them.
func TestLoadNamesTheMissingSecrets(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	n := functionconfig.SecretNamesFor("test", "send-email")
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{n.ExternalKey}}); err != nil {
		t.Fatal(err)
	}
	_, err := secrets.Load(ctx, c, n)
	if err == nil || !strings.Contains(err.Error(), n.MAC) || strings.Contains(err.Error(), n.Since) || strings.Contains(err.Error(), n.ExternalKey) {
		t.Fatalf("Load = %v, want an error naming %s only", err, n.MAC)
	}
	v, _, _ := s.Value(n.ExternalKey)
	s.Set(n.MAC, "junk-value")
	s.Set(n.Since, "2026-05-01T12:00:00Z")
	if _, err := secrets.Load(ctx, c, n); err == nil || strings.Contains(err.Error(), "junk-value") || strings.Contains(err.Error(), v) {
		t.Fatalf("Load of a bad secret = %v, want an error without the value", err)
	}
}

// While the deploy has not written the since time (it does so once every
// tool function's new code is live), Load takes the time of its own
// request as since, and says so; once the parameter exists, Load takes it,
// and a since time that is not RFC 3339 is still an error.
func TestLoadTakesItsOwnTimeUntilSinceIsWritten(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	n := functionconfig.SecretNamesFor("test", "send-email")
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{n.MAC, n.ExternalKey}}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	l, err := secrets.Load(ctx, c, n)
	after := time.Now()
	if err != nil || !l.SinceAbsent || l.Since.Before(before) || l.Since.After(after) || len(l.MAC) != secrets.SecretBytes || len(l.ExternalKey) != secrets.SecretBytes {
		t.Fatalf("Load without since = %+v, %v; want the secrets, SinceAbsent and a since between %v and %v", l, err, before, after)
	}
	if l.Since.Location() != time.UTC {
		t.Fatalf("since %v is not UTC", l.Since)
	}
	written := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Since: n.Since, Now: written}); err != nil {
		t.Fatal(err)
	}
	if l, err := secrets.Load(ctx, c, n); err != nil || l.SinceAbsent || !l.Since.Equal(written) {
		t.Fatalf("Load with since = %+v, %v; want since %v", l, err, written)
	}
	s.Set(n.Since, "yesterday")
	if _, err := secrets.Load(ctx, c, n); err == nil || !strings.Contains(err.Error(), n.Since) {
		t.Fatalf("Load of a bad since = %v, want an error naming %s", err, n.Since)
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

// The custom resource creates exactly what its properties name: the
// secrets' resource no since time, the since resource nothing but the
// since time, at the request's time. A Create gives the physical id (the
// since parameter, else the prefix), an Update keeps the one it has, and a
// Delete, even of properties it cannot read, succeeds and deletes nothing.
func TestCustomResourceCreatesWhatItsPropertiesName(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	a, b := functionconfig.SecretNamesFor("test", "send-email"), functionconfig.SecretNamesFor("test", "mcp-call")
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	handle := secrets.CustomResource(c, func() time.Time { return at })
	event := func(typ cfn.RequestType, id string, props map[string]any) cfn.Event {
		return cfn.Event{RequestType: typ, PhysicalResourceID: id, ResourceProperties: props}
	}
	secretsProps := map[string]any{secrets.PropSecrets: []any{a.MAC, b.MAC, a.ExternalKey}}
	id, data, err := handle(ctx, event(cfn.RequestCreate, "", secretsProps))
	if err != nil || id != functionconfig.SecretsPrefix("test") || data["Created"] != 3 {
		t.Fatalf("secrets Create = %q, %v, %v; want the prefix, 3 created", id, data, err)
	}
	if _, _, ok := s.Value(a.Since); ok {
		t.Fatal("the secrets' resource wrote the since time")
	}
	sinceProps := map[string]any{secrets.PropSince: a.Since}
	id, data, err = handle(ctx, event(cfn.RequestCreate, "", sinceProps))
	if err != nil || id != a.Since || data["Created"] != 1 {
		t.Fatalf("since Create = %q, %v, %v; want %s, 1 created", id, data, err, a.Since)
	}
	if v, typ, _ := s.Value(a.Since); v != "2026-05-01T12:00:00Z" || typ != "String" {
		t.Fatalf("since = %q (%s), want the request's time as a String", v, typ)
	}
	at = at.Add(time.Hour)
	if id, data, err := handle(ctx, event(cfn.RequestUpdate, "kept-id", sinceProps)); err != nil || id != "kept-id" || data["Created"] != 0 {
		t.Fatalf("since Update = %q, %v, %v; want the old id kept, none created", id, data, err)
	}
	if v, _, _ := s.Value(a.Since); v != "2026-05-01T12:00:00Z" {
		t.Fatalf("since = %q after an Update, want it unchanged", v)
	}
	if id, _, err := handle(ctx, event(cfn.RequestDelete, "kept-id", map[string]any{})); err != nil || id != "kept-id" {
		t.Fatalf("Delete = %q, %v; want success, the id kept", id, err)
	}
	for _, bad := range []map[string]any{
		{},
		{secrets.PropSince: "ledger-since"},
		{secrets.PropSince: a.Since, secrets.PropSecrets: []any{"/toolgate/other/secret/external-key"}},
		{secrets.PropSecrets: []any{a.MAC, "/elsewhere/key"}},
	} {
		if _, _, err := handle(ctx, event(cfn.RequestCreate, "", bad)); err == nil {
			t.Errorf("Create of %v succeeded", bad)
		}
	}
	if s.Puts() != 5 {
		t.Fatalf("%d PutParameter requests, want 5: 3 secrets, the since time, the Update's (refused as existing), none for a Delete or a bad Create", s.Puts())
	}
}

// LoadExternalKey reads the external key alone, the same bytes Load gives
// a tool function; a missing or malformed key, or a name that is none, is
// an error naming the parameter and never its value.
func TestLoadExternalKeyReadsTheKeyAlone(t *testing.T) {
	s, c := ssmOn(t)
	ctx := context.Background()
	n := functionconfig.SecretNamesFor("test", "send-email")
	if _, err := secrets.LoadExternalKey(ctx, c, n.ExternalKey); err == nil || !strings.Contains(err.Error(), n.ExternalKey) {
		t.Fatalf("a missing key: %v", err)
	}
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{n.ExternalKey, n.MAC}, Since: n.Since, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	key, err := secrets.LoadExternalKey(ctx, c, n.ExternalKey)
	l, lerr := secrets.Load(ctx, c, n)
	if err != nil || lerr != nil || len(key) != secrets.SecretBytes || string(key) != string(l.ExternalKey) {
		t.Fatalf("LoadExternalKey = %x, %v; Load's %x, %v", key, err, l.ExternalKey, lerr)
	}
	s.Set(n.ExternalKey, "junk-value")
	if _, err := secrets.LoadExternalKey(ctx, c, n.ExternalKey); err == nil || strings.Contains(err.Error(), "junk-value") || !strings.Contains(err.Error(), n.ExternalKey) {
		t.Fatalf("a malformed key: %v", err)
	}
	if _, err := secrets.LoadExternalKey(ctx, c, "external key"); err == nil {
		t.Fatal("a name that is no parameter name was read")
	}
}

// LoadKeys reads the external key and the end-user key, which the deploy
// creates as it creates the external key (Ensure), in the order named;
// either missing is an error naming it, never a value.
func TestLoadKeysReadsTheExternalAndEndUserKeysInOrder(t *testing.T) {
	_, c := ssmOn(t)
	ctx := context.Background()
	ext, eu := functionconfig.ExternalKeyParam("test"), functionconfig.EndUserKeyParam("test")
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{ext}}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadKeys(ctx, c, ext, eu); err == nil || !strings.Contains(err.Error(), eu) || strings.Contains(err.Error(), ext+",") {
		t.Fatalf("a missing end-user key: %v", err)
	}
	if _, err := secrets.Ensure(ctx, c, secrets.Provision{Secrets: []string{eu}}); err != nil {
		t.Fatal(err)
	}
	keys, err := secrets.LoadKeys(ctx, c, ext, eu)
	if err != nil || len(keys) != 2 {
		t.Fatal(err)
	}
	one, _ := secrets.LoadExternalKey(ctx, c, ext)
	if string(keys[0]) != string(one) || string(keys[0]) == string(keys[1]) || len(keys[1]) != secrets.SecretBytes {
		t.Fatal("the keys are not the external key and then a distinct end-user key")
	}
}
