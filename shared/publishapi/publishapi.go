package publishapi

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/toolgate/toolgate/shared/caller"
)

// Environment of the publish function (docs/infra.md).
const (
	EnvTable      = "TOOLGATE_TABLE"       // the ledger table (required)
	EnvStage      = "TOOLGATE_STAGE"       // the platform stage (required): parameters under /toolgate/<stage>/
	EnvParamsFile = "TOOLGATE_PARAMS_FILE" // the local stack only: a parameters file instead of SSM
)

// ProofHeader carries the caller proof on the Function URL
// (caller.ProofHeader).
const ProofHeader = caller.ProofHeader

// DirectRequest is a direct invocation of the publish function (the local
// stack's CLI): {"action": "publish", "file", "source", "proof"},
// {"action": "register", "toolset", "proof"} or {"action": "show",
// "toolset_id", "proof"}.
type DirectRequest struct {
	Action    string `json:"action"`
	File      string `json:"file,omitempty"`
	Source    string `json:"source,omitempty"`
	Toolset   string `json:"toolset,omitempty"`    // register: the document as text, signed as sent
	ToolsetID string `json:"toolset_id,omitempty"` // show: the registered toolset's id
	Proof     string `json:"proof"`
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
	CodeNotFound        = "PUBLISH_NOT_FOUND"       // a toolset read (ShowToolset) names no registered toolset
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
