// Package publish puts a compiled Solution on Step Functions: it checks
// its literal URLs and recipients against the deployment's allow-lists
// (Deployment), checks that its toolset is registered (registration is the
// deployment operator's, docs/ledger.md), creates or updates the state machine toolgate-<solution>
// with the platform's function ARNs substituted in, and publishes a version
// whose description records the Solution's version and toolset id. It also
// starts executions (`toolgate run`).
package publish
