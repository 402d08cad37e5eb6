package review

// Environment variables of the review functions (docs/reviews.md).
const (
	EnvTable = "TOOLGATE_TABLE" // the ledger table (required)
	// EnvAllowUnauthenticated is gone: every caller proves who they are
	// (shared/caller). A function that finds it set stops at cold start.
	EnvAllowUnauthenticated = "TOOLGATE_ALLOW_UNAUTHENTICATED"
	// EnvDirectReviewers is review-request's direct-lane reviewers: a JSON
	// object from tool name to IAM principal ARN patterns. A gated tool
	// without patterns cannot be reviewed on the direct lane.
	EnvDirectReviewers = "TOOLGATE_DIRECT_REVIEWERS"
	// EnvDirectMaxTimeout caps a direct-lane review's timeout, in seconds
	// (default DefaultDirectMaxTimeout).
	EnvDirectMaxTimeout = "TOOLGATE_DIRECT_REVIEW_MAX_SECONDS"
	// EnvReconcilers is review-decision's reconcilers: who may record a
	// reconciliation of a call whose outcome is unknown (toolgate ledger
	// reconcile; docs/fork.md, "Reconciling"), a JSON list of IAM
	// principal ARN patterns of the deployment's own account
	// (reviewer.ParseAdmins). Unset: the park operators
	// (park.EnvOperators), who may already stop any run.
	EnvReconcilers = "TOOLGATE_RECONCILERS"
)

// DefaultDirectMaxTimeout is the longest direct-lane review by default: an
// hour. `toolgate invoke` waits at most MaxReviewWait for the decision.
const DefaultDirectMaxTimeout = 3600
