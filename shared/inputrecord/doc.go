// Package inputrecord is a compiled Solution's input record: what a run's
// input must satisfy (the Solution's input JSON Schema and
// policy.input_limit_bytes), as the resolver writes it into the Start
// state's Comment of the definition (docs/solutions.md, "The execution
// input"), and the check of an input against it.
//
// The resolver writes the record (Record.Comment); toolgate run reads it
// back with DescribeStateMachine before it starts a run
// (resolver/cli/runner.CheckInput), and review-request before a parent's
// workflow step starts a child run (docs/solutions.md, "Workflow steps").
// Both read it with Read and check an input with Record.Check, so an input
// is measured and validated alike on either path. HasStarter tells,
// from the same definition, whether a run's start must be recorded before
// it starts (the Starter state): toolgate run and inbound-start ask it
// alike. The package holds no
// I/O and links neither the compiler nor an AWS SDK: a Lambda function
// may import it.
package inputrecord
