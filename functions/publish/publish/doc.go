// Package publish is the publish function (functions/publish): it puts a
// compiled Solution on Step Functions. It checks its literal URLs and
// recipients against the deployment's allow-lists (Deployment), checks
// that its toolset is registered (registration is the deployment
// operator's, docs/ledger.md), creates or updates the state machine
// toolgate-<stage>_<solution> (deployment.StateMachineName) with the
// platform's function ARNs substituted in, and publishes a version whose
// description records the Solution's version and toolset id. It also
// registers and shows toolsets. Its requests, answers, error codes and
// caller proof bindings are shared/publishapi's, which its callers import
// instead of this package.
package publish
