package inboundapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/toolgate/toolgate/shared/caller"
)

// MaxSecretBytes bounds a source's secret as an operator gives it, in
// bytes: GitHub takes a webhook secret of any text, and 255 characters
// hold every provider's (Stripe's "whsec_" and 32 letters and digits; a
// Standard Webhooks secret, "whsec_" and the base64 of at most 64 bytes,
// is 94). The store's own bound (store.MaxSecretBytes) is wider.
const MaxSecretBytes = 255

// Paths of the sources function's routes (the Route constants' paths),
// for a client building a request.
const (
	PathSources    = "/sources"
	PathSchedules  = "/schedules"
	PathDLQ        = "/dlq"
	PathDLQRedrive = "/dlq/redrive"
)

// Operations on one source or schedule: the last element of its route's
// path, and the operation a manage binding's Detail names.
const (
	OpAdd           = "add"
	OpList          = "list"
	OpRotateSecret  = "rotate-secret"
	OpRetireSecrets = "retire-secrets"
	OpRemove        = "remove"
	OpPause         = "pause"
	OpResume        = "resume"
	OpDLQList       = "dlq.list"
	OpDLQRedrive    = "dlq.redrive"
)

// SourcePath is the path of operation op on source name:
// /sources/<name>/<op>.
func SourcePath(name, op string) string { return PathSources + "/" + url.PathEscape(name) + "/" + op }

// SchedulePath is the path of operation op on schedule name:
// /schedules/<name>/<op>.
func SchedulePath(name, op string) string {
	return PathSchedules + "/" + url.PathEscape(name) + "/" + op
}

// The direct invocation actions of the sources function
// (DirectRequest.Action), one per route.
const (
	ActionAddSource      = "source.add"            // POST /sources
	ActionListSources    = "source.list"           // GET /sources
	ActionRotateSecret   = "source.rotate-secret"  // POST /sources/{name}/rotate-secret
	ActionRetireSecrets  = "source.retire-secrets" // POST /sources/{name}/retire-secrets
	ActionRemoveSource   = "source.remove"         // POST /sources/{name}/remove
	ActionAddSchedule    = "schedule.add"          // POST /schedules
	ActionListSchedules  = "schedule.list"         // GET /schedules
	ActionPauseSchedule  = "schedule.pause"        // POST /schedules/{name}/pause
	ActionResumeSchedule = "schedule.resume"       // POST /schedules/{name}/resume
	ActionRemoveSchedule = "schedule.remove"       // POST /schedules/{name}/remove
	ActionDLQList        = "dlq.list"              // GET /dlq
	ActionDLQRedrive     = "dlq.redrive"           // POST /dlq/redrive
)

// DirectRequest is a direct invocation of the sources function (the local
// stack's CLI): {"action", the action's members, "proof"}.
type DirectRequest struct {
	Action string `json:"action"`
	// AddSource is the request of ActionAddSource.
	AddSource *AddSourceRequest `json:"add_source,omitempty"`
	// AddSchedule is the request of ActionAddSchedule.
	AddSchedule *AddScheduleRequest `json:"add_schedule,omitempty"`
	// Rotate is the request of ActionRotateSecret (absent: a drawn
	// secret).
	Rotate *RotateSecretRequest `json:"rotate,omitempty"`
	// Name is the source or schedule of the actions on one.
	Name  string `json:"name,omitempty"`
	Proof string `json:"proof"`
}

// digestOf is "sha256:" and the hex SHA-256 of the JSON array parts.
func digestOf(parts ...string) string {
	doc, _ := json.Marshal(parts) // strings: it cannot fail
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// secretDigest is "" for no secret (one the function draws), else the
// digest of the secret's bytes: a proof made for one secret is refused
// with another, and the binding holds no byte of it.
func secretDigest(secret string) string {
	if secret == "" {
		return ""
	}
	return digestOf("toolgate-source-secret/1", secret)
}

// manageDetail is the Detail of a sources.manage or schedules.manage
// binding: the JSON array [operation].
func manageDetail(op string) string {
	doc, _ := json.Marshal([]string{op})
	return string(doc)
}

// AddSourceDigest is what an add proof binds besides the name: the digest
// of ["toolgate-sources-add/1", scheme, solution, max_body_bytes as
// written (decimal), end_user, the secret's digest or ""], so that a
// proof made for one Solution, bound or secret is refused for another.
func AddSourceDigest(r AddSourceRequest) string {
	return digestOf("toolgate-sources-add/1", r.Scheme, r.Solution, strconv.Itoa(r.MaxBodyBytes), r.EndUser, secretDigest(r.Secret))
}

// AddSourceBinding is the caller-proof binding of adding source r.Name
// (caller.ActionSourcesManage, Target the name).
func AddSourceBinding(r AddSourceRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: r.Name, Detail: manageDetail(OpAdd), InputDigest: AddSourceDigest(r)}
}

// ListSourcesBinding is the caller-proof binding of a listing of sources.
func ListSourcesBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: OpList, Detail: manageDetail(OpList)}
}

// RotateSecretBinding is the caller-proof binding of a secret rotation of
// source name with r: its secret's digest ("" for a drawn one).
func RotateSecretBinding(name string, r RotateSecretRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: name, Detail: manageDetail(OpRotateSecret), InputDigest: secretDigest(r.Secret)}
}

// RetireSecretsBinding is the caller-proof binding of retiring source
// name's previous secrets.
func RetireSecretsBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: name, Detail: manageDetail(OpRetireSecrets)}
}

// RemoveSourceBinding is the caller-proof binding of removing source name.
func RemoveSourceBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: name, Detail: manageDetail(OpRemove)}
}

// DLQListBinding is the caller-proof binding of a listing of the inbound
// dead-letter queue.
func DLQListBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: "dlq", Detail: manageDetail(OpDLQList)}
}

// RedriveBinding is the caller-proof binding of a redrive of the inbound
// dead-letter queue.
func RedriveBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionSourcesManage, Target: "dlq", Detail: manageDetail(OpDLQRedrive)}
}

// AddScheduleDigest is what an add proof binds besides the name: the
// digest of ["toolgate-schedules-add/1", solution, expression, end_user,
// the digest of the input's bytes as sent], so that a proof made for one
// Solution, expression or input is refused for another.
func AddScheduleDigest(r AddScheduleRequest) string {
	return digestOf("toolgate-schedules-add/1", r.Solution, r.Expression, r.EndUser, digestOf("toolgate-schedule-input/1", string(r.Input)))
}

// AddScheduleBinding is the caller-proof binding of adding schedule
// r.Name (caller.ActionSchedulesManage, Target the name).
func AddScheduleBinding(r AddScheduleRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionSchedulesManage, Target: r.Name, Detail: manageDetail(OpAdd), InputDigest: AddScheduleDigest(r)}
}

// ListSchedulesBinding is the caller-proof binding of a listing of
// schedules.
func ListSchedulesBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionSchedulesManage, Target: OpList, Detail: manageDetail(OpList)}
}

// PauseScheduleBinding is the caller-proof binding of pausing schedule
// name.
func PauseScheduleBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionSchedulesManage, Target: name, Detail: manageDetail(OpPause)}
}

// ResumeScheduleBinding is the caller-proof binding of resuming schedule
// name.
func ResumeScheduleBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionSchedulesManage, Target: name, Detail: manageDetail(OpResume)}
}

// RemoveScheduleBinding is the caller-proof binding of removing schedule
// name.
func RemoveScheduleBinding(name string) caller.Binding {
	return caller.Binding{Action: caller.ActionSchedulesManage, Target: name, Detail: manageDetail(OpRemove)}
}
