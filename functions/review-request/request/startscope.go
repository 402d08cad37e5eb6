package request

import "github.com/toolgate/toolgate/shared/review"

// StartScope is what the start lane admits a start record for
// (review.StartScope, which run.fork checks a parent and its fork
// against too).
type StartScope = review.StartScope

// Reason words of an execution ARN the start lane does not admit
// (review.ReasonStartChildName and the others).
const (
	ReasonStartChildName    = review.ReasonStartChildName
	ReasonStartAccount      = review.ReasonStartAccount
	ReasonStartRegion       = review.ReasonStartRegion
	ReasonStartStateMachine = review.ReasonStartStateMachine
)
