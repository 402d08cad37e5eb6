// Package stepfunctions is the review functions' way out to Step
// Functions. It delivers review decisions to the review Tasks waiting for
// them, with SendTaskSuccess and SendTaskFailure (Sender, review-decision;
// docs/reviews.md), and reads what review-request checks of a child run
// (Executions; docs/solutions.md, "Workflow steps"): the version an
// execution runs (DescribeExecution) and a version's definition
// (DescribeStateMachine); and the Solution version a reviewed run executes,
// which its review.requested event names, from the definition its
// execution runs (DescribeStateMachineForExecution; docs/webhooks.md, "The
// version a review names").
package stepfunctions
