// Package stepfunctions is the review functions' way out to Step
// Functions. It delivers review decisions to the review Tasks waiting for
// them, with SendTaskSuccess and SendTaskFailure (Sender, review-decision;
// docs/reviews.md), and reads what review-request checks of a child run
// (Executions; docs/solutions.md, "Workflow steps"): the version an
// execution runs (DescribeExecution) and a version's definition
// (DescribeStateMachine).
package stepfunctions
