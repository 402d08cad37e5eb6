package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/localkeys"
)

// Environment of the caller proofs the CLI signs (docs/identity.md).
const (
	// EnvLocalKeys names the local stack's keys file (the local stack
	// writes it and exports it in its env.sh); `--as NAME` signs with NAME's
	// keys from it, and `--as ACCOUNT/NAME` with NAME's keys in another
	// account (localkeys.ParseIdentity), which every function refuses.
	EnvLocalKeys = "TOOLGATE_LOCAL_KEYS"
	// EnvSTSEndpoint is the standard AWS variable for STS's endpoint; the
	// proofs name it (default: the region's STS endpoint), and it must be
	// the one the functions verify against.
	EnvSTSEndpoint = "AWS_ENDPOINT_URL_STS"
)

// prover signs caller proofs: with the standard AWS configuration's
// credentials, or on the local stack with a local identity's keys.
type prover struct {
	creds    aws.CredentialsProvider
	endpoint string
	region   string
	as       string // the local identity, if any
}

// newProver returns the prover for --as (empty: the standard AWS
// configuration).
func (a *app) newProver(ctx context.Context, as string) (*prover, error) {
	if as != "" {
		account, name, err := localkeys.ParseIdentity(as)
		if err != nil {
			return nil, fmt.Errorf("--as %q: %v", as, err)
		}
		path := a.getenv(EnvLocalKeys)
		if path == "" {
			return nil, fmt.Errorf("--as signs with the local stack's keys, and %s is not set: source the local stack's env.sh", EnvLocalKeys)
		}
		keys, err := localkeys.Load(path)
		if err != nil {
			return nil, err
		}
		c, err := keys.CredentialsIn(account, name)
		if err != nil {
			return nil, err
		}
		endpoint := a.getenv(EnvSTSEndpoint)
		if endpoint == "" {
			return nil, fmt.Errorf("--as needs the local STS stand-in: %s is not set (source the local stack's env.sh)", EnvSTSEndpoint)
		}
		return &prover{creds: credentials.StaticCredentialsProvider{Value: c}, endpoint: endpoint, region: localkeys.Region, as: as}, nil
	}
	cfg, err := a.loadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region to sign the caller proof for: set AWS_REGION")
	}
	endpoint := a.getenv(EnvSTSEndpoint)
	if endpoint == "" {
		endpoint = caller.DefaultEndpoint(cfg.Region)
	}
	return &prover{creds: cfg.Credentials, endpoint: endpoint, region: cfg.Region}, nil
}

// sign makes a proof for b, now.
func (p *prover) sign(ctx context.Context, b caller.Binding) (string, error) {
	return caller.Sign(ctx, p.creds, p.endpoint, p.region, b, time.Now())
}

// whoAmI returns the caller's ARN as STS answers it.
func (p *prover) whoAmI(ctx context.Context) (string, error) {
	arn, err := caller.WhoAmI(ctx, p.creds, p.endpoint, p.region)
	if err != nil {
		return "", fmt.Errorf("ask STS (%s) who you are: %w", p.endpoint, err)
	}
	return arn, nil
}

// validAs checks --as: NAME or ACCOUNT/NAME (localkeys.ParseIdentity).
func validAs(as string) error {
	_, _, err := localkeys.ParseIdentity(as)
	return err
}
