package deployment

import (
	"fmt"

	"github.com/toolgate/toolgate/shared/tool"
)

// StateMachineName is the state machine a Solution is published as in a
// stage: "toolgate-<stage>_<solution>" (tool.StateMachineName, which
// review-request's start lane reads too).
func StateMachineName(stage, solution string) string { return tool.StateMachineName(stage, solution) }

// StagePattern is what a stage may be (tool.StagePattern): 1 to 20
// lower-case letters, digits and "-", starting with a letter.
var StagePattern = tool.StagePattern

// CheckStage refuses a stage StateMachineName cannot use.
func CheckStage(stage string) error {
	if !StagePattern.MatchString(stage) {
		return fmt.Errorf("stage %q must be 1 to 20 lower-case letters, digits or '-', starting with a letter", stage)
	}
	return nil
}

// ExecutionLogGroup is the log group Solution executions log to.
func ExecutionLogGroup(stage string) string { return "/aws/vendedlogs/states/toolgate-" + stage }
