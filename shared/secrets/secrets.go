package secrets

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// SecretBytes is the size of each secret Ensure creates: 32 random bytes,
// HMAC-SHA256's output size (seal.MinKeyBytes).
const SecretBytes = 32

// paramName is what SSM accepts as a hierarchical parameter name (SSM
// quotas: letters, digits and . - _ /, from a leading /).
var paramName = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// maxParamName is SSM's longest parameter name, in characters (SSM quotas).
const maxParamName = 1011

// NamesFromEnv reads functionconfig.SecretNames from the variables
// functionconfig.EnvMACParam, EnvExternalKeyParam and EnvSinceParam; an
// error names each variable unset or not a parameter
// name.
func NamesFromEnv(getenv func(string) string) (functionconfig.SecretNames, error) {
	n := functionconfig.SecretNames{MAC: getenv(functionconfig.EnvMACParam), ExternalKey: getenv(functionconfig.EnvExternalKeyParam), Since: getenv(functionconfig.EnvSinceParam)}
	var bad []string
	for env, v := range map[string]string{functionconfig.EnvMACParam: n.MAC, functionconfig.EnvExternalKeyParam: n.ExternalKey, functionconfig.EnvSinceParam: n.Since} {
		if len(v) > maxParamName || !paramName.MatchString(v) {
			bad = append(bad, fmt.Sprintf("%s=%q", env, v))
		}
	}
	if len(bad) > 0 {
		return functionconfig.SecretNames{}, fmt.Errorf("secrets: not SSM parameter names: %s", strings.Join(slices.Sorted(slices.Values(bad)), ", "))
	}
	return n, nil
}

// Ledger is what a tool function's dispatcher needs: its MAC key, the
// stage's external key (each SecretBytes long) and the stage's since time.
type Ledger struct {
	MAC, ExternalKey []byte
	Since            time.Time
	// SinceAbsent reports that the since parameter did not exist yet (the
	// deploy that writes it after every tool function's new code is live
	// was still in progress), so Since is the time of this load, this
	// container's own (docs/ledger.md, "The upgrade rule"). The caller
	// logs it once, as a warning.
	SinceAbsent bool
}

// GetAPI is the part of the SSM client Load uses.
type GetAPI interface {
	GetParameters(ctx context.Context, in *ssm.GetParametersInput, opts ...func(*ssm.Options)) (*ssm.GetParametersOutput, error)
}

// Load reads n's three parameters in one GetParameters request
// (WithDecryption). It fails when a secret is missing (SSM's
// InvalidParameters) or is not base64 of SecretBytes bytes, or when the
// since time is not RFC 3339; the error names the parameters, never a
// value. A missing since parameter is no error: the deploy writes it only
// once every tool function's new code is live, so a new function can cold
// start before it exists; Load then returns the time of the request (UTC)
// as Since, with SinceAbsent set. That is safe for the records this
// function reads, which it alone writes (docs/ledger.md, "The upgrade
// rule"): its previous code was no longer invoked once this code ran, so
// every unsealed record of it belongs to a run started before now.
func Load(ctx context.Context, api GetAPI, n functionconfig.SecretNames) (Ledger, error) {
	now := time.Now().UTC()
	out, err := api.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{n.MAC, n.ExternalKey, n.Since}, WithDecryption: aws.Bool(true)})
	if err != nil {
		return Ledger{}, fmt.Errorf("secrets: get parameters: %w", err)
	}
	var missing []string
	var l Ledger
	for _, name := range out.InvalidParameters {
		if name == n.Since {
			l.SinceAbsent = true
			continue
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		return Ledger{}, fmt.Errorf("secrets: parameters missing (the deploy provisions them): %s", strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	got := map[string]string{}
	for _, p := range out.Parameters {
		got[aws.ToString(p.Name)] = aws.ToString(p.Value)
	}
	if l.MAC, err = secret(got, n.MAC); err != nil {
		return Ledger{}, err
	}
	if l.ExternalKey, err = secret(got, n.ExternalKey); err != nil {
		return Ledger{}, err
	}
	if l.SinceAbsent {
		l.Since = now
		return l, nil
	}
	v, ok := got[n.Since]
	if !ok {
		return Ledger{}, fmt.Errorf("secrets: parameter %s missing from the answer", n.Since)
	}
	if l.Since, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return Ledger{}, fmt.Errorf("secrets: parameter %s is not an RFC 3339 time", n.Since)
	}
	return l, nil
}

// LoadExternalKey reads the stage's external key alone, parameter name
// (functionconfig.ExternalKeyParam), in one GetParameters request
// (WithDecryption), as LoadKeys does: review-request derives a run's
// trace id under it as the tool functions do (shared/tracecontext).
func LoadExternalKey(ctx context.Context, api GetAPI, name string) ([]byte, error) {
	keys, err := LoadKeys(ctx, api, name)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// LoadKeys reads the SecureString keys names (each base64 of SecretBytes
// bytes: the external key, functionconfig.ExternalKeyParam; the end-user
// key, functionconfig.EndUserKeyParam) in one GetParameters request
// (WithDecryption, at most 10 names: SSM's limit), and returns them in
// the order named. It fails when a name is not a parameter name, when a
// parameter is missing, or when one is not base64 of SecretBytes bytes;
// the error names the parameters, never a value.
func LoadKeys(ctx context.Context, api GetAPI, names ...string) ([][]byte, error) {
	if len(names) == 0 || len(names) > 10 {
		return nil, fmt.Errorf("secrets: %d keys asked for, want 1 to 10 (one GetParameters request)", len(names))
	}
	for _, name := range names {
		if len(name) > maxParamName || !paramName.MatchString(name) {
			return nil, fmt.Errorf("secrets: %q is not an SSM parameter name", name)
		}
	}
	out, err := api.GetParameters(ctx, &ssm.GetParametersInput{Names: names, WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("secrets: get parameters: %w", err)
	}
	if len(out.InvalidParameters) > 0 {
		return nil, fmt.Errorf("secrets: parameters missing (the deploy provisions them): %s", strings.Join(slices.Sorted(slices.Values(out.InvalidParameters)), ", "))
	}
	got := map[string]string{}
	for _, p := range out.Parameters {
		got[aws.ToString(p.Name)] = aws.ToString(p.Value)
	}
	keys := make([][]byte, len(names))
	for i, name := range names {
		if keys[i], err = secret(got, name); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func secret(got map[string]string, name string) ([]byte, error) {
	v, ok := got[name]
	if !ok {
		return nil, fmt.Errorf("secrets: parameter %s missing from the answer", name)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != SecretBytes {
		return nil, fmt.Errorf("secrets: parameter %s is not base64 of %d bytes", name, SecretBytes)
	}
	return b, nil
}

// PutAPI is the part of the SSM client Ensure uses.
type PutAPI interface {
	PutParameter(ctx context.Context, in *ssm.PutParameterInput, opts ...func(*ssm.Options)) (*ssm.PutParameterOutput, error)
}

// Provision lists what Ensure creates: SecureStrings of SecretBytes random
// bytes (base64), and the since time.
type Provision struct {
	Secrets []string
	// Since names the since parameter; "" creates none.
	Since string
	// Now is the since time written when Since is absent (UTC, RFC 3339
	// with ns).
	Now time.Time
}

// Ensure creates each of p's parameters that does not exist, and never
// changes one that does: each is one PutParameter with Overwrite false,
// and SSM's ParameterAlreadyExists is success. A secret's value is
// SecretBytes from crypto/rand; it appears in no template, log or error.
// It returns the names it created.
func Ensure(ctx context.Context, api PutAPI, p Provision) ([]string, error) {
	var created []string
	put := func(name, value string, typ types.ParameterType) error {
		_, err := api.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(false),
			Description: aws.String("toolgate: created once by the deploy, never overwritten (docs/ledger.md)")})
		var exists *types.ParameterAlreadyExists
		switch {
		case errors.As(err, &exists):
			return nil
		case err != nil:
			return fmt.Errorf("secrets: put parameter %s: %w", name, err)
		}
		created = append(created, name)
		return nil
	}
	for _, name := range p.Secrets {
		var b [SecretBytes]byte
		if _, err := rand.Read(b[:]); err != nil {
			return created, fmt.Errorf("secrets: random bytes: %w", err)
		}
		if err := put(name, base64.StdEncoding.EncodeToString(b[:]), types.ParameterTypeSecureString); err != nil {
			return created, err
		}
	}
	if p.Since != "" {
		if err := put(p.Since, p.Now.UTC().Format(time.RFC3339Nano), types.ParameterTypeString); err != nil {
			return created, err
		}
	}
	return created, nil
}
