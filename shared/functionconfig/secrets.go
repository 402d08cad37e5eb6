package functionconfig

import "fmt"

// The environment variables that tell a tool function its parameters'
// names (names are not secret; infra and the local stack set them).
const (
	EnvMACParam         = "TOOLGATE_LEDGER_MAC_PARAM"
	EnvExternalKeyParam = "TOOLGATE_EXTERNAL_KEY_PARAM"
	EnvSinceParam       = "TOOLGATE_LEDGER_SINCE_PARAM"
)

// ToolFunctions are the built-in functions that run the dispatcher, and
// so write call items and seal them with a MAC key of their own
// (docs/ledger.md, "Records are sealed by the function that writes
// them"): the deploy, the local stack and make size provision one for
// each. infra's functionSpecs mark the same functions Tool, and a test
// holds the two equal.
var ToolFunctions = []string{"send-email", "structured-data-fetch", "http", "mcp-call", "lambda-tool", "workflow-validator"}

// SecretsPrefix is the path under which a stage's secrets live,
// "/toolgate/<stage>/secret/": the provisioning role's grants end there.
func SecretsPrefix(stage string) string { return fmt.Sprintf("/toolgate/%s/secret/", stage) }

// MACParam names function's ledger MAC key in stage: a SecureString only
// that function's role may read.
func MACParam(stage, function string) string { return SecretsPrefix(stage) + "ledger-mac/" + function }

// ExternalKeyParam names stage's external key: a SecureString every tool
// role reads, and review-request's (its one secret: trace ids are derived
// under it, docs/reviews.md, "Trace context").
func ExternalKeyParam(stage string) string { return SecretsPrefix(stage) + "external-key" }

// EndUserKeyParam names stage's end-user key: a SecureString of 32 random
// bytes, created once by the deploy and never rotated (a new key would
// orphan every end user's credentials), which review-request and publish
// read to compute end-user scopes (shared/enduser Scope; docs/identity.md,
// "End users"). It lives under SecretsPrefix, as the external key, so
// that the provisioning function creates it.
func EndUserKeyParam(stage string) string { return SecretsPrefix(stage) + "end-user-key" }

// SinceParam names stage's since time: a String, RFC 3339, written once.
func SinceParam(stage string) string { return SecretsPrefix(stage) + "ledger-since" }

// SecretNames are a tool function's three secret parameters.
type SecretNames struct{ MAC, ExternalKey, Since string }

// SecretNamesFor returns function's SecretNames in stage.
func SecretNamesFor(stage, function string) SecretNames {
	return SecretNames{MAC: MACParam(stage, function), ExternalKey: ExternalKeyParam(stage), Since: SinceParam(stage)}
}

// The custom resource's properties (infra/platform: Custom::LedgerSecrets
// and Custom::LedgerSince; shared/secrets CustomResource). The handler (shared/secrets CustomResource) creates exactly the parameters they
// name: the deploy has one resource for the secrets, before the tool
// functions, and one for the since time, after every tool function's new
// code is live (docs/ledger.md, "The upgrade rule").
const (
	// PropSecrets lists the SecureString parameters to create.
	PropSecrets = "Secrets"
	// PropSince names the since parameter to create, with the time of the
	// request.
	PropSince = "Since"
)
