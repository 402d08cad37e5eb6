package platform

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// The credentials' key (docs/credentials.md, "The key"; docs/infra.md,
// "The credentials key"): a customer-managed symmetric KMS key with
// automatic rotation, under which the publish function seals every
// credential (GenerateDataKey) and the functions that present them
// (mcp-call, http) open them (Decrypt). Its key policy is written here in
// whole: the CDK's default key policy grants the account kms:*, Decrypt
// included, to any principal an IAM policy allows.

// credentialEncryptionContextKeys are the only encryption context keys a
// credential's requests may carry (credential's context: purpose,
// toolset_name, target, origin, scope).
var credentialEncryptionContextKeys = []string{"purpose", "toolset_name", "target", "origin", "scope"}

// keyAdministrationActions are what the account may do to the key: every
// administrative action, and no cryptographic one (no Decrypt, Encrypt,
// GenerateDataKey or ReEncrypt) nor kms:CreateGrant, through which a
// principal could grant itself Decrypt. kms:PutKeyPolicy stays: CloudFormation
// updates the policy with it, and KMS refuses a policy that would lock
// the account out (the key policy lockout safety check). An account
// administrator can therefore still change the key policy (docs/infra.md).
var keyAdministrationActions = []string{
	"kms:DescribeKey", "kms:GetKeyPolicy", "kms:PutKeyPolicy", "kms:ListKeyPolicies", "kms:ListGrants", "kms:RevokeGrant",
	"kms:ListResourceTags", "kms:TagResource", "kms:UntagResource",
	"kms:EnableKey", "kms:DisableKey", "kms:GetKeyRotationStatus", "kms:EnableKeyRotation", "kms:DisableKeyRotation",
	"kms:ListKeyRotations", "kms:RotateKeyOnDemand", "kms:UpdateKeyDescription",
	"kms:CreateAlias", "kms:UpdateAlias", "kms:DeleteAlias",
	"kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion",
}

// webhookEncryptionContextKeys are the only encryption context keys a
// webhook secret's requests may carry: {purpose: webhook-subscription,
// subscription: <id>} (shared/webhook/store SealSecret).
var webhookEncryptionContextKeys = []string{"purpose", "subscription"}

// webhookSecretUses is the condition of the key policy's webhook
// statements: the webhook-subscription purpose, and no other context key.
func webhookSecretUses() *map[string]any {
	return &map[string]any{
		"StringEquals":              map[string]any{"kms:EncryptionContext:purpose": credential.PurposeWebhookSubscription},
		"ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": webhookEncryptionContextKeys},
	}
}

// credentialKeyAlias is the key's alias: alias/toolgate-<stage>-credentials.
func credentialKeyAlias(stage string) string { return "alias/toolgate-" + stage + "-credentials" }

// CredentialsProps configure NewCredentials.
type CredentialsProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
}

// Credentials is the credentials' KMS key and its alias.
type Credentials struct {
	constructs.Construct
	Key awskms.Key
}

// NewCredentials defines the credentials' key (newCredentialKey) and
// gives the publish, mcp-call, http and webhooks functions its ARN
// (publishapi.EnvCredentialKey), and publish and review-decision the
// credential admins (publishapi.EnvCredentialAdmins).
func NewCredentials(scope constructs.Construct, id string, props *CredentialsProps) *Credentials {
	c := newConcern(scope, id)
	fns := props.Functions.ByName
	key := newCredentialKey(c, props.Platform, fns)
	for _, name := range []string{fnPublish, fnMCPCall, fnHTTP, fnWebhooks} {
		fns[name].Function.AddEnvironment(jsii.String(publishapi.EnvCredentialKey), key.KeyArn(), nil)
	}
	// review-decision reads the same patterns: who may set a toolset's or
	// an end user's credential may resume a call parked on it
	// (docs/parking.md, "Who may").
	for _, name := range []string{fnPublish, fnReviewDecision} {
		fns[name].Function.AddEnvironment(jsii.String(publishapi.EnvCredentialAdmins), jsii.String(credentialAdminsJSON(props.Platform.CredentialAdmins)), nil)
	}
	return &Credentials{Construct: c, Key: key}
}

// credentialAdminsJSON is the publish function's EnvCredentialAdmins: the
// patterns as a JSON list ([] for none), since an IAM name may hold a
// comma.
func credentialAdminsJSON(patterns []string) string {
	if patterns == nil {
		patterns = []string{}
	}
	b, err := json.Marshal(patterns)
	if err != nil {
		panic(err) // a list of strings always encodes
	}
	return string(b)
}

// newCredentialKey defines the key, retained when the stack is deleted
// (the credentials sealed under it would not open again), with its
// policy:
//   - KeyAdministration: the account, keyAdministrationActions only;
//   - PresentCredentials: kms:Decrypt to mcp-call's and http's roles;
//   - SealCredentials: kms:GenerateDataKey to publish's role;
//   - ListWithToolsetCredentials: kms:Decrypt to publish's role for the
//     toolset scope only (listing a draft's server that declares auth);
//
// each use conditioned on kms:EncryptionContext:purpose = tool-credential
// and on no encryption context key but credentialEncryptionContextKeys;
// and the webhook subscriptions' signing secrets (docs/webhooks.md), sealed
// under the same key with a purpose of their own:
//   - SealWebhookSecrets: kms:GenerateDataKey to the webhooks function's
//     role (subscribe, rotate-secret);
//   - OpenWebhookSecrets: kms:Decrypt to webhook-delivery's role, the only
//     one that signs;
//
// each conditioned on kms:EncryptionContext:purpose = webhook-subscription
// and on no encryption context key but webhookEncryptionContextKeys. No
// credential role may open a webhook secret, nor a webhook role a
// credential: the purposes differ.
func newCredentialKey(scope constructs.Construct, p *PlatformStackProps, fns map[string]*platformFunction) awskms.Key {
	uses := func(extra map[string]any) *map[string]any {
		equals := map[string]any{"kms:EncryptionContext:purpose": credential.PurposeToolCredential}
		for k, v := range extra {
			equals[k] = v
		}
		return &map[string]any{
			"StringEquals":              equals,
			"ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": credentialEncryptionContextKeys},
		}
	}
	role := func(name string) awsiam.IPrincipal {
		return awsiam.NewArnPrincipal(fns[name].Role.RoleArn())
	}
	policy := awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("KeyAdministration"),
			Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
			Actions:    jsii.Strings(keyAdministrationActions...),
			Resources:  jsii.Strings("*"),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("PresentCredentials"),
			Principals: &[]awsiam.IPrincipal{role(fnMCPCall), role(fnHTTP)},
			Actions:    jsii.Strings("kms:Decrypt"),
			Resources:  jsii.Strings("*"),
			Conditions: uses(nil),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("SealCredentials"),
			Principals: &[]awsiam.IPrincipal{role(fnPublish)},
			Actions:    jsii.Strings("kms:GenerateDataKey"),
			Resources:  jsii.Strings("*"),
			Conditions: uses(nil),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("SealWebhookSecrets"),
			Principals: &[]awsiam.IPrincipal{role(fnWebhooks)},
			Actions:    jsii.Strings("kms:GenerateDataKey"),
			Resources:  jsii.Strings("*"),
			Conditions: webhookSecretUses(),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("OpenWebhookSecrets"),
			Principals: &[]awsiam.IPrincipal{role(fnWebhookDelivery)},
			Actions:    jsii.Strings("kms:Decrypt"),
			Resources:  jsii.Strings("*"),
			Conditions: webhookSecretUses(),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ListWithToolsetCredentials"),
			Principals: &[]awsiam.IPrincipal{role(fnPublish)},
			Actions:    jsii.Strings("kms:Decrypt"),
			Resources:  jsii.Strings("*"),
			Conditions: uses(map[string]any{"kms:EncryptionContext:scope": string(credential.ScopeToolset)}),
		}),
	}})
	key := awskms.NewKey(scope, jsii.String("CredentialKey"), &awskms.KeyProps{
		Description:       jsii.String("toolgate " + p.Stage + ": seals the credentials of toolsets' MCP servers and http hosts"),
		EnableKeyRotation: jsii.Bool(true),
		Policy:            policy,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		Alias:             jsii.String(credentialKeyAlias(p.Stage)),
	})
	return key
}

// checkCredentialAdmins checks Config.CredentialAdmins: each a reviewer
// pattern naming its account (reviewer.CheckPattern); the publish
// function refuses at cold start one naming another account than its
// own, which is unknown at synth.
func (c *Config) checkCredentialAdmins() []error {
	var problems []error
	if len(c.CredentialAdmins) > reviewer.MaxReviewers {
		problems = append(problems, fmt.Errorf("credentialAdmins: %d patterns, over %d", len(c.CredentialAdmins), reviewer.MaxReviewers))
	}
	for _, p := range c.CredentialAdmins {
		if err := reviewer.CheckPattern(p); err != nil {
			problems = append(problems, fmt.Errorf("credentialAdmins: %w", err))
		}
	}
	return problems
}
