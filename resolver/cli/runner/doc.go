// Package runner starts and follows the executions of published Solutions:
// what `toolgate run` does (docs/solutions.md, "The execution input";
// docs/identity.md, "Four eyes"). Start checks a run's input against the
// InputRecord the resolver wrote into the state machine's definition, has
// review-request record the run's start when the definition begins with
// the Starter state, and only then starts the execution; Follow polls its
// history until it ends.
//
// It calls Step Functions through SFNAPI (the SDK's client, or the local
// Step Functions endpoint's) and names state machines as
// shared/deployment does; it links nothing of the publish function.
package runner
