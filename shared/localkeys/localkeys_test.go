package localkeys

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func newKeys(t *testing.T) *Keys {
	t.Helper()
	k, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func localCreds(t *testing.T, k *Keys, name string) aws.Credentials {
	t.Helper()
	c, err := k.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCredentialsAreTheNameAndASeededSecret(t *testing.T) {
	keys := newKeys(t)
	c := localCreds(t, keys, "alice")
	if c.AccessKeyID != "TGLMFWGSY3F" || c.SessionToken != "" || len(c.SecretAccessKey) != 64 {
		t.Errorf("credentials = %q, secret of %d chars, token %q; want TGLMFWGSY3F, 64 hex chars, none", c.AccessKeyID, len(c.SecretAccessKey), c.SessionToken)
	}
	if other := localCreds(t, newKeys(t), "alice"); other.AccessKeyID != c.AccessKeyID || other.SecretAccessKey == c.SecretAccessKey {
		t.Error("another seed must give the same access key ID and another secret")
	}
	if got := Principal("alice"); got != "arn:aws:iam::000000000000:user/alice" {
		t.Errorf("Principal = %q", got)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"ci-runner-2", true}, {strings.Repeat("a", 32), true},
		{"", false}, {strings.Repeat("a", 33), false}, {"2fast", false}, {"-x", false}, {"Alice", false}, {"a_b", false}, {"a.b", false}, {"é", false},
	} {
		if err := ValidName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
		if _, err := keys.Credentials(tc.name); (err == nil) != tc.ok {
			t.Errorf("Credentials(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestKeysFileRoundTrip(t *testing.T) {
	keys := newKeys(t)
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := keys.Save(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(b) {
		t.Errorf("file %q, want 64 hex digits and a newline", b)
	}
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if localCreds(t, loaded, "alice") != localCreds(t, keys, "alice") {
		t.Error("loaded keys give other credentials")
	}
}

func TestBadKeysFileIsRefusedNamingIt(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":     "",
		"not-hex":   strings.Repeat("zz", 32) + "\n",
		"short":     strings.Repeat("ab", 31) + "\n",
		"long":      strings.Repeat("ab", 33) + "\n",
		"two-lines": strings.Repeat("ab", 32) + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("Load = %v, want an error naming %s", err, path)
			}
		})
	}
	missing := filepath.Join(dir, "missing")
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load of a missing file = %v, want an error naming it", err)
	}
}

func TestParseIdentityReadsANameOrAnAccountAndAName(t *testing.T) {
	for _, c := range []struct {
		in, account, name string
		ok                bool
	}{
		{"alice", AccountID, "alice", true},
		{"999999999999/alice", "999999999999", "alice", true},
		{"000000000000/alice", AccountID, "alice", true},
		{"99999999999/alice", "", "", false},
		{"*/alice", "", "", false},
		{"999999999999/", "", "", false},
		{"999999999999/a/b", "", "", false},
		{"Alice", "", "", false},
	} {
		account, name, err := ParseIdentity(c.in)
		if (err == nil) != c.ok || account != c.account || name != c.name {
			t.Errorf("ParseIdentity(%q) = %q, %q, %v; want %q, %q (ok %v)", c.in, account, name, err, c.account, c.name, c.ok)
		}
	}
}
