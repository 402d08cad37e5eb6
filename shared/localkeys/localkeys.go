// Package localkeys is the local stack's identities: the keys file the
// local stack writes (Keys, Load, Save), the names `--as` accepts
// (ParseIdentity: NAME in the local account, ACCOUNT/NAME in another),
// each identity's static credentials (Keys.CredentialsIn), and the ARN the
// local STS stand-in answers for it (PrincipalIn). The CLI signs caller
// proofs with them (docs/identity.md); the STS stand-in (infra/local)
// derives the same credentials to check a proof's signature, and reads an
// access key ID back with Identity.
//
// It links the AWS SDK's credentials type only, and no stand-in: the CLI
// imports it instead of infra/local.
package localkeys

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/toolgate/toolgate/shared/caller"
)

const (
	// AccountID is the local stack's account.
	AccountID = "000000000000"
	// Region is the region the local stand-ins pretend to be in, and the
	// one local caller proofs are signed for.
	Region = "us-east-1"

	// keyPrefix starts every local access key ID; the rest is the
	// identity's name in base32 (RFC 4648, upper case, no padding).
	keyPrefix = "TGL"
	seedBytes = 32
)

var nameEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Keys derives each local identity's signing keys from a per-stack
// random seed.
type Keys struct{ seed []byte }

// New returns keys from a fresh 32-byte random seed.
func New() (*Keys, error) {
	seed := make([]byte, seedBytes)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("local: keys seed: %w", err)
	}
	return &Keys{seed: seed}, nil
}

// Load reads keys from a file written by Save: the seed in hex and a
// newline. The error names the file.
func Load(path string) (*Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("local: keys file: %w", err)
	}
	seed, err := hex.DecodeString(strings.TrimSuffix(string(b), "\n"))
	if err != nil || len(seed) != seedBytes {
		return nil, fmt.Errorf("local: keys file %s: not a hex %d-byte seed and a newline", path, seedBytes)
	}
	return &Keys{seed: seed}, nil
}

// Save writes the seed to path in hex with a newline, mode 0600.
func (k *Keys) Save(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("local: save keys: %w", err)
	}
	err = f.Chmod(0o600) // an existing file keeps its mode otherwise
	if err == nil {
		_, err = f.WriteString(hex.EncodeToString(k.seed) + "\n")
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("local: save keys %s: %w", path, err)
	}
	return nil
}

// ValidName accepts a local identity's name: 1 to 32 of [a-z0-9-],
// starting with a letter.
func ValidName(name string) error {
	ok := len(name) >= 1 && len(name) <= 32 && name[0] >= 'a' && name[0] <= 'z'
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
	}
	if !ok {
		return fmt.Errorf("local: identity name %q: want 1 to 32 of [a-z0-9-], starting with a letter", name)
	}
	return nil
}

// ParseIdentity reads what `--as` names on the local stack: NAME, a local
// identity of the local account (AccountID), or ACCOUNT/NAME, the same
// name in another 12-digit account, whose keys the STS stand-in answers
// for as real STS answers any account's (and toolgate's functions refuse).
func ParseIdentity(s string) (account, name string, err error) {
	account, name = AccountID, s
	if a, n, ok := strings.Cut(s, "/"); ok {
		if !caller.ValidAccount(a) {
			return "", "", fmt.Errorf("local: identity %q: the account before / must be 12 digits", s)
		}
		account, name = a, n
	}
	if err := ValidName(name); err != nil {
		return "", "", err
	}
	return account, name, nil
}

// Credentials returns name's static credentials in the local stack's
// account (AccountID): access key ID "TGL" and the name in base32
// (RFC 4648, upper case, no padding); secret access key the hex
// HMAC-SHA256 of "toolgate-local-secret/"+name keyed by the seed; no
// session token. The name must pass ValidName.
func (k *Keys) Credentials(name string) (aws.Credentials, error) {
	return k.CredentialsIn(AccountID, name)
}

// CredentialsIn returns the static credentials of name in account, a
// 12-digit AWS account id: Credentials for AccountID; for any other
// account, access key ID "TGL" and "ACCOUNT/NAME" in base32, and secret
// access key the hex HMAC-SHA256 of "toolgate-local-secret/ACCOUNT/NAME".
// Real STS answers GetCallerIdentity for the credentials of any account;
// so does the stand-in, so that tests can present another account's keys.
func (k *Keys) CredentialsIn(account, name string) (aws.Credentials, error) {
	if err := ValidName(name); err != nil {
		return aws.Credentials{}, err
	}
	if !caller.ValidAccount(account) {
		return aws.Credentials{}, fmt.Errorf("local: account %q: want 12 digits", account)
	}
	id := name
	if account != AccountID {
		id = account + "/" + name
	}
	mac := hmac.New(sha256.New, k.seed)
	mac.Write([]byte("toolgate-local-secret/" + id))
	return aws.Credentials{
		AccessKeyID:     keyPrefix + nameEncoding.EncodeToString([]byte(id)),
		SecretAccessKey: hex.EncodeToString(mac.Sum(nil)),
		Source:          "toolgate-local",
	}, nil
}

// Principal is the ARN the STS stand-in answers for name in the local
// account.
func Principal(name string) string { return PrincipalIn(AccountID, name) }

// PrincipalIn is the ARN the STS stand-in answers for name in account.
func PrincipalIn(account, name string) string { return "arn:aws:iam::" + account + ":user/" + name }

// Identity returns the account and name an access key ID of
// CredentialsIn stands for, or "" and "" if it stands for none: only the
// canonical encoding, with its prefix, of a valid name in a 12-digit
// account; a key ID naming the local account explicitly stands for
// nobody.
func Identity(akid string) (account, name string) {
	b, err := nameEncoding.DecodeString(strings.TrimPrefix(akid, keyPrefix))
	// Only the canonical encoding, with its prefix, stands for a name.
	if err != nil || keyPrefix+nameEncoding.EncodeToString(b) != akid {
		return "", ""
	}
	account, name = AccountID, string(b)
	if a, n, ok := strings.Cut(name, "/"); ok {
		if a == AccountID { // the local account's names have no account part
			return "", ""
		}
		account, name = a, n
	}
	if !caller.ValidAccount(account) || ValidName(name) != nil {
		return "", ""
	}
	return account, name
}
