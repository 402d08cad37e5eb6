package credential

import (
	"time"

	"github.com/toolgate/toolgate/shared/toolset"
)

// The KMS purposes of toolgate's envelope encryption: the "purpose"
// member of every encryption context, which the key policy conditions
// each role's kms:Decrypt on (docs/credentials.md, "The key").
const (
	PurposeToolCredential      = "tool-credential"
	PurposeWebhookSubscription = "webhook-subscription"
	PurposeWebhookSource       = "webhook-source"
)

// CauseExpired starts the message of the CALL_PARKED error of a call whose
// credential has expired: found expired before the claim (Resolve), or
// refused by the server as RFC 6750's invalid_token after it was sent
// (docs/credentials.md, "Expiry").
const CauseExpired = "credentials.expired"

// MaxSecretBytes bounds a credential, in bytes: 8 KiB.
const MaxSecretBytes = 8 << 10

// Scope is whose a credential is, as the encryption context's "scope"
// and the item's sort key write it: "toolset", "end_user:<hex HMAC>" or
// "run:<execution name>".
type Scope string

// ScopeToolset is the toolset's own scope.
const ScopeToolset Scope = "toolset"

// Target is one place a toolset declares auth: the toolset's name, the
// target's name there (an MCP server's key, or an exact http host entry),
// the origin the credential is bound to ("<scheme>://<host>[:<port>]")
// and how it is presented.
type Target struct {
	ToolsetName string
	Name        string
	Origin      string
	Auth        toolset.Auth
}

// Credential is a resolved credential, ready to present: its target and
// scope, the item's version and expiry, and the plaintext, which only
// Transport and Redact read.
type Credential struct {
	Target    Target
	Scope     Scope
	Version   int64
	ExpiresAt time.Time // zero: none
	secret    []byte
}

// Opened is the credential secret, opened by Open for target t under scope
// s, ready to present through Transport: for a credential read outside
// Resolve, which the publish function does to list a server that needs
// one at registration (scope toolset; docs/credentials.md, "Which
// toolsets may use a credential"). version and expires are the item's.
func Opened(t Target, s Scope, version int64, expires time.Time, secret []byte) *Credential {
	return &Credential{Target: t, Scope: s, Version: version, ExpiresAt: expires, secret: secret}
}

// Request is what a call resolves a credential for: the target, the run's
// toolset id (which must be allowed for the target's credentials), the
// run id (an execution ARN; "direct/..." on the direct lane, which has no
// run scope), the run's verified starter (run-scope credentials are used
// only when their setter is that starter) and the run's end-user scope
// ("" when the run has no end user).
type Request struct {
	Target    Target
	ToolsetID string
	RunID     string
	Starter   string
	EndUser   Scope
	// Fresh asks for the store's credentials, not what a resolver read
	// within its cache's time: a call sent again under a decided park,
	// which for an expired credential waited for a new one to be set
	// (docs/parking.md, "Sending a parked call again").
	Fresh bool
}
