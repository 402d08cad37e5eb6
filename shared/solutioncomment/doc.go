// Package solutioncomment is the top-level Comment of a compiled
// Solution's definition, "toolgate Solution <name> version <N> (toolset
// <id>)": which Solution, which of its published versions and which
// toolset a state machine revision runs (docs/webhooks.md, "The version
// a review names").
//
// The resolver writes it (Format, resolver/asl.go); review-request reads
// it back from the definition an execution runs, as Step Functions'
// DescribeStateMachineForExecution answers it, to name the version in a
// review.requested event (Read, shared/review/stepfunctions
// Executions.SolutionVersionOf). Both use this one format. Only the
// publish function writes definitions, so a Comment read here is the
// resolver's. The package holds no I/O beyond the reader it is given and
// links neither the compiler nor an AWS SDK: a Lambda function may
// import it.
package solutioncomment
