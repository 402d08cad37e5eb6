// Package enduser is who a run acts for: end-user ids, the end-user
// mapping that says which principals may act for which end users, and
// the end-user scope a run's credentials are looked up under
// (docs/identity.md, "End users").
//
// An end-user id is chosen by whoever starts a run (toolgate run
// --end-user ID); it is recorded on the run's start record only when the
// mapping lets the run's verified starter act for it. Credentials never
// name the raw id: their scope is Scope(key, id), an HMAC-SHA256 of the
// id under the stage's end-user key, because a KMS encryption context
// (which holds the scope) is logged in clear by CloudTrail.
//
// It links no AWS SDK, so that the CDK app checks the mapping with the
// very parser the functions run at cold start.
package enduser
