package tool

import "regexp"

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
