package publishapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/shared/caller"
)

// Environment of the publish function (docs/infra.md).
const (
	EnvTable      = "TOOLGATE_TABLE"       // the ledger table (required)
	EnvStage      = "TOOLGATE_STAGE"       // the platform stage (required): parameters under /toolgate/<stage>/
	EnvParamsFile = "TOOLGATE_PARAMS_FILE" // the local stack only: a parameters file instead of SSM
	// EnvCredentialKey names the KMS key credentials are sealed under (a
	// key ARN, id or alias; docs/credentials.md, "The key"). Unset: the
	// function stores no credential, and a draft whose server declares
	// auth is listed without one.
	EnvCredentialKey = "TOOLGATE_CREDENTIAL_KEY"
	// EnvCredentialAdmins is a JSON list of IAM principal ARN patterns of
	// the function's own account (as reviewer patterns,
	// reviewer.CheckPattern) who may set toolset-scope credentials,
	// set any end user's and allow toolset ids. Unset or []: nobody.
	EnvCredentialAdmins = "TOOLGATE_CREDENTIAL_ADMINS"
)

// ProofHeader carries the caller proof on the Function URL
// (caller.ProofHeader).
const ProofHeader = caller.ProofHeader

// DirectRequest is a direct invocation of the publish function (the local
// stack's CLI): {"action": "publish", "file", "source", "proof"},
// {"action": "register", "toolset", "proof"}, {"action": "show" or
// "shapes", "toolset_id", "proof"} or {"action": "credentials.set" (list, revoke,
// allow), "credentials", "proof"}.
type DirectRequest struct {
	Action    string `json:"action"`
	File      string `json:"file,omitempty"`
	Source    string `json:"source,omitempty"`
	Toolset   string `json:"toolset,omitempty"`    // register: the document as text, signed as sent
	ToolsetID string `json:"toolset_id,omitempty"` // show, shapes: the registered toolset's id
	// Credentials is the request of the actions ActionCredentials*.
	Credentials *CredentialRequest `json:"credentials,omitempty"`
	Proof       string             `json:"proof"`
}

// RegisterBody is the body of POST /toolsets on the Function URL.
type RegisterBody struct {
	// Toolset is the document as text (a string, so that no re-encoding
	// changes the bytes its proof's digest covers).
	Toolset string `json:"toolset"`
}

// Body is the body of POST /solutions on the Function URL.
type Body struct {
	File   string `json:"file"`
	Source string `json:"source"`
}

// ErrorBody is a Function URL error response's body; a direct invocation
// fails with the code as its errorType and this body, as JSON, as its
// message, so that diagnostics reach the CLI either way.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Diagnostics []string `json:"diagnostics,omitempty"`
}

// Result is a publish's answer.
type Result struct {
	Diagnostics     []string `json:"diagnostics"`
	StateMachineARN string   `json:"state_machine_arn,omitempty"`
	VersionARN      string   `json:"version_arn,omitempty"`
	Created         bool     `json:"created,omitempty"`
	ToolsetID       string   `json:"toolset_id,omitempty"`
	Publisher       string   `json:"publisher,omitempty"`
	// Warnings are the diagnostics of rule [invisible]
	// (resolver.RuleInvisible), also among Diagnostics: each names a line
	// of the source holding characters people cannot see or that reorder
	// what they see, and the code points, never the text
	// (resolver.InvisibleLines). They do not refuse the Solution.
	Warnings []string `json:"warnings,omitempty"`
}

// Error codes of the publish function (the Lambda errorType of a direct
// invocation, the "code" of a Function URL error body).
const (
	CodeInvalid         = "PUBLISH_INVALID"         // a malformed request, or a Solution the resolver refuses (with diagnostics)
	CodeUnauthenticated = "PUBLISH_UNAUTHENTICATED" // no valid caller proof
	CodeRefused         = "PUBLISH_REFUSED"         // the toolset is refused by the registration check, or a literal value by the deployment's allow-lists (with diagnostics)
	CodeUnavailable     = "PUBLISH_UNAVAILABLE"     // DynamoDB, SSM, Step Functions or STS failed; repeat the request
	CodeNotFound        = "PUBLISH_NOT_FOUND"       // a toolset read (ShowToolset) names no registered toolset, or a credential's target none that declares auth
)

// SourceDigest is what a publish proof binds: "sha256:" and the hex
// SHA-256 of the source.
func SourceDigest(src []byte) string {
	sum := sha256.Sum256(src)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Binding is the caller proof binding of a publish of file with source.
func Binding(file string, src []byte) caller.Binding {
	return caller.Binding{Action: caller.ActionPublish, Target: file, InputDigest: SourceDigest(src)}
}

// RegisterResult is a registration's answer.
type RegisterResult struct {
	ToolsetID string `json:"toolset_id"`
	Created   bool   `json:"created"`
	Publisher string `json:"publisher"`
	// Body is the registered toolset as ShowResult.Body holds it: its
	// RFC 8785 form without its id (toolset.Canonical), whose digest the
	// id names. For a draft it is the only account of the tools the
	// servers listed and were pinned; the CLI writes the lock from it.
	Body string `json:"body"`
	// Warnings name each tool whose description, title or schema
	// descriptions and titles hold characters people cannot see or that
	// reorder what they see, with their code points
	// (toolset.InvisibleText). They do not refuse the toolset.
	Warnings []string `json:"warnings,omitempty"`
}

// RegisterBinding is the caller proof binding of a registration of
// toolset document doc, whose id is id.
func RegisterBinding(id string, doc []byte) caller.Binding {
	return caller.Binding{Action: caller.ActionRegister, Target: id, InputDigest: SourceDigest(doc)}
}

// RegisterDraftBinding is the caller proof binding of a registration of
// draft doc, named name: its id is known only once its servers are
// listed. A name never looks like an id (toolset.NamePattern has no "_").
func RegisterDraftBinding(name string, doc []byte) caller.Binding {
	return caller.Binding{Action: caller.ActionRegister, Target: name, InputDigest: SourceDigest(doc)}
}

// ShowResult is a read's answer: the registered toolset as the ledger
// table's item holds it.
type ShowResult struct {
	ToolsetID string `json:"toolset_id"`
	// Body is the item's body exactly as stored: the RFC 8785 form of the
	// toolset without its id (toolset.Canonical), whose SHA-256 the id
	// names. A reader parses it with toolset.ParseStored and checks that
	// it digests to the id it asked for.
	Body string `json:"body"`
}

// ShowBinding is the caller proof binding of a read of toolset id.
func ShowBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionShowToolset, Target: id}
}

// ActionShapes is the direct invocation action of `toolgate shapes`
// ({"action": "shapes", "toolset_id", "proof"}; GET /shapes/{id} on the
// Function URL).
const ActionShapes = "shapes"

// ShapesResult is the answer of a read of a toolset's learned shapes
// (docs/declarations.md, "Reading them").
type ShapesResult struct {
	// File is the shapes file (observed.File Marshal): every shape the
	// toolset's tools learned, as the table holds them.
	File string `json:"file"`
	// Skipped counts the shape items that did not read (observed.Unmarshal
	// refused them): left out of File.
	Skipped int `json:"skipped,omitempty"`
}

// ShapesBinding is the caller proof binding of a read of toolset id's
// learned shapes.
func ShapesBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionShapes, Target: id}
}

// CredentialRequest is a request of `toolgate credentials` to the publish
// function (docs/credentials.md): the body of POST /credentials (set),
// POST /credentials/revoke and POST /credentials/allow on the Function
// URL, and the "credentials" member of a direct invocation whose action is
// one of ActionCredentials*. GET /credentials/{toolset name} lists.
type CredentialRequest struct {
	// Toolset is the toolset name (toolset.NamePattern) the credential is
	// stored under: every toolset id of that name may be allowed to use
	// it. Set, list and revoke.
	Toolset string `json:"toolset,omitempty"`
	// Target is an MCP server's key or an exact http host entry of the
	// toolset that declares auth. Set and revoke.
	Target string `json:"target,omitempty"`
	// EndUser, with set or revoke, names the end user whose credential it
	// is (the end-user scope); the function stores it under the end
	// user's HMAC, never the id. Empty: not the end-user scope.
	EndUser string `json:"end_user,omitempty"`
	// Run, with set or revoke, is the execution ARN of a run not started
	// yet (the run scope). Empty: not the run scope.
	Run string `json:"run,omitempty"`
	// ExpiresAt, with set, is when the credential stops being presented,
	// RFC 3339; empty: never.
	ExpiresAt string `json:"expires_at,omitempty"`
	// Secret, with set, is the credential (base64 in JSON): at most
	// credential.MaxSecretBytes, checked against the target's auth
	// (credential.CheckSecret). It is never echoed, logged or quoted.
	Secret []byte `json:"secret,omitempty"`
	// Salt, with set, is SaltBytes random bytes (base64 in JSON) the
	// caller draws for this set alone, keying the secret's digest in the
	// set's proof (CredentialSetDigest), and never stored: the proof's
	// binding, which the function records, then tells nothing about the
	// secret to whoever reads the table, even of a guessable one.
	Salt []byte `json:"salt,omitempty"`
	// ToolsetID, with allow, is the registered toolset id to allow for
	// the credentials of each target of it that declares auth.
	ToolsetID string `json:"toolset_id,omitempty"`
	// Draft, with set, is a draft toolset document (as registration takes
	// it) whose MCP server Target declares auth: it gives the target's
	// origin and auth when no registered toolset of the name declares the
	// target yet, so that the draft's first registration can list the
	// server with its toolset-scope credential. Ignored otherwise.
	Draft string `json:"draft,omitempty"`
	// Origin, with set, is the origin the credential is for,
	// "<scheme>://<host>[:<port>]" as toolset.AuthTarget gives it: without
	// a draft it is required, and must be the target's origin in a
	// registered toolset of the name, so that a toolset registered by
	// someone else just before cannot choose where an admin's secret goes
	// (docs/credentials.md, "Storing"); with a draft, empty or the draft's.
	Origin string `json:"origin,omitempty"`
}

// The direct invocation actions of `toolgate credentials` (DirectRequest.Action),
// named as their caller proof actions are.
const (
	ActionCredentialsSet    = caller.ActionCredentialsSet
	ActionCredentialsList   = caller.ActionCredentialsList
	ActionCredentialsRevoke = caller.ActionCredentialsRevoke
	ActionCredentialsAllow  = caller.ActionCredentialsAllow
)

// SaltBytes is the length of a set's Salt: 32 bytes, HMAC-SHA256's key
// length (RFC 2104 §3 recommends at least the hash's output length).
const SaltBytes = 32

// NewSalt draws a set's Salt from crypto/rand.
func NewSalt() []byte {
	b := make([]byte, SaltBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24 and later)
	return b
}

// CredentialSetDigest is what a set's proof binds besides the target:
// "sha256:" and the hex SHA-256 of the JSON array
// ["toolgate-credentials-set/3", toolset, target, origin, end_user, run,
// expires_at, hex HMAC-SHA256 of the secret keyed by the request's Salt,
// hex SHA-256 of the draft], so that a proof made for one secret, origin,
// scope, expiry or draft is refused for any other. Neither the secret nor
// an unkeyed digest of it is in the proof: the salt, never stored, keys
// it.
func CredentialSetDigest(r CredentialRequest) string {
	mac := hmac.New(sha256.New, r.Salt)
	mac.Write(r.Secret)
	draft := sha256.Sum256([]byte(r.Draft))
	doc, _ := json.Marshal([]string{"toolgate-credentials-set/3", r.Toolset, r.Target, r.Origin, r.EndUser, r.Run, r.ExpiresAt,
		hex.EncodeToString(mac.Sum(nil)), hex.EncodeToString(draft[:])})
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CredentialTarget is the caller proof target of a set or revoke:
// "<toolset name>/<target>" (a toolset name has no "/").
func CredentialTarget(name, target string) string { return name + "/" + target }

// CredentialSetBinding is the caller proof binding of set r.
func CredentialSetBinding(r CredentialRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionCredentialsSet, Target: CredentialTarget(r.Toolset, r.Target), InputDigest: CredentialSetDigest(r)}
}

// CredentialScopeDetail is the Detail of a revoke's binding: the JSON
// array [end_user, run] of r, so that a proof to revoke one scope's
// credential is refused for another's.
func CredentialScopeDetail(r CredentialRequest) string {
	doc, _ := json.Marshal([]string{r.EndUser, r.Run})
	return string(doc)
}

// CredentialRevokeBinding is the caller proof binding of revoke r.
func CredentialRevokeBinding(r CredentialRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionCredentialsRevoke, Target: CredentialTarget(r.Toolset, r.Target), Detail: CredentialScopeDetail(r)}
}

// CredentialListBinding is the caller proof binding of a listing of
// toolset name's credentials.
func CredentialListBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionCredentialsList, Target: name}
}

// CredentialAllowBinding is the caller proof binding of allowing toolset
// id for its name's credentials.
func CredentialAllowBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionCredentialsAllow, Target: id}
}

// CredentialSetResult is a set's answer: what was stored, never the
// secret.
type CredentialSetResult struct {
	Toolset string `json:"toolset"`
	Target  string `json:"target"`
	// Origin is the origin the credential is bound to
	// ("<scheme>://<host>[:<port>]"): that of the most recently
	// registered toolset of the name declaring the target.
	Origin string `json:"origin"`
	// Scope is "toolset", "end_user:<hex HMAC>" or "run:<execution name>".
	Scope   string `json:"scope"`
	Version int64  `json:"version"`
	SetBy   string `json:"set_by"`
	// Allowed are the toolset ids of the name registered with this target
	// and origin, each now allowed for its credentials.
	Allowed []string `json:"allowed"`
	// OtherOrigins are origins other toolset ids of the name give the
	// target: they get no credential from this set (a new set is needed
	// once one of them is the most recently registered).
	OtherOrigins []string `json:"other_origins,omitempty"`
}

// CredentialInfo is one stored credential as a listing shows it:
// metadata only, never the ciphertext or the secret.
type CredentialInfo struct {
	Target    string `json:"target"`
	Origin    string `json:"origin"`
	Scope     string `json:"scope"`
	Version   int64  `json:"version"`
	CreatedAt string `json:"created_at"`
	SetBy     string `json:"set_by"`
	// ExpiresAt is when the credential stops being presented, RFC 3339;
	// empty: never.
	ExpiresAt    string `json:"expires_at,omitempty"`
	ExecutionARN string `json:"execution_arn,omitempty"`
}

// CredentialToolset is one toolset id registered under a name with a
// target that declares auth, and whether it is allowed for the
// credentials of that target and origin.
type CredentialToolset struct {
	ToolsetID string `json:"toolset_id"`
	Target    string `json:"target"`
	Origin    string `json:"origin"`
	AllowedBy string `json:"allowed_by,omitempty"` // empty: not allowed
	AllowedAt string `json:"allowed_at,omitempty"`
}

// CredentialListResult is a listing's answer.
type CredentialListResult struct {
	Toolset     string              `json:"toolset"`
	Credentials []CredentialInfo    `json:"credentials"`
	Toolsets    []CredentialToolset `json:"toolsets"`
	// HiddenRuns counts the run-scope credentials left out: those set by
	// another principal than the caller, shown to credential admins only
	// (a run's execution name is its setter's until the run starts).
	HiddenRuns int `json:"hidden_runs,omitempty"`
}

// CredentialRevokeResult is a revoke's answer: Revoked is false when
// there was no such credential.
type CredentialRevokeResult struct {
	Revoked bool `json:"revoked"`
}

// CredentialAllowResult is an allow's answer: the targets (and their
// origins) toolset id is now allowed for.
type CredentialAllowResult struct {
	ToolsetID string   `json:"toolset_id"`
	Targets   []string `json:"targets"`
	AllowedBy string   `json:"allowed_by"`
}
