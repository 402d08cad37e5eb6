// Package request is the review-request function's logic (docs/reviews.md).
// On the sfn lane it stores the pending review a compiled review Task asks
// for (the Task then waits for its task token) and answers a Solution's
// start Task, recording the execution's proven starter, and a workflow
// step's start record, once the child's input satisfies the input record
// of the version the step starts (shared/inputrecord); on the direct lane
// it stores a review of a `toolgate invoke` call and reports its decision
// to its requester. Every failure is a review.Code, as the decision
// function's.
package request
