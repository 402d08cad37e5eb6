package tool

import (
	"fmt"
	"regexp"
)

// StateMachineName is the state machine a Solution is published as in a
// stage: "toolgate-<stage>_<solution>". Neither part may hold "_" (the
// resolver's Solution names and StagePattern), so one stage's names never
// match another's: a policy on "toolgate-dev_*" does not reach a stage
// "dev-2", and StateMachineName(stage, "") starts the names of exactly
// that stage's state machines. With a stage of at most 20 characters and a
// Solution name of at most 50 it fits Step Functions' 80-character limit
// on names (AWS Step Functions CreateStateMachine, "name").
func StateMachineName(stage, solution string) string { return "toolgate-" + stage + "_" + solution }

// StagePattern is what a stage may be: 1 to 20 lower-case letters, digits
// and "-", starting with a letter (never "_": StateMachineName).
var StagePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// EnvStage is the environment variable holding a function's platform
// stage: the publish function's, the platform tools' proxy's (its
// placeholders resolve under the stage's parameters) and review-request's
// (its start lane's StartScope).
const EnvStage = "TOOLGATE_STAGE"

// StageFromEnv returns EnvStage read with getenv, or an error naming it,
// with at most 40 characters of its value, when it is unset or not a
// StagePattern stage.
func StageFromEnv(getenv func(string) string) (string, error) {
	stage := getenv(EnvStage)
	if !StagePattern.MatchString(stage) {
		return "", fmt.Errorf("%s=%.40q must be 1 to 20 lower-case letters, digits or '-', starting with a letter", EnvStage, stage)
	}
	return stage, nil
}
