// Package functionconfig is the functions' configuration as the CDK app
// sets it and the functions read it, with no AWS client and no handler:
// the environment variable names, and the parse and validate functions
// the functions run at cold start (SendEmailFromEnv,
// ReviewRequestFromEnv, ParseFetchAllow), so that infra checks a value at
// synth with the very rules a function would refuse it by; and the names
// of the tool functions' ledger secrets (SSM parameters, their variables,
// the provisioning custom resource's properties).
//
// It imports pure rule packages only (shared/recipient, shared/hostlist,
// shared/caller, shared/lane, shared/review, shared/reviewer,
// shared/tool). The run-time packages (shared/sendemail, shared/fetch,
// shared/secrets, functions/review-request/request) keep their names as
// thin wrappers of these.
package functionconfig
