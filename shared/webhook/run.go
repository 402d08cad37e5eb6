package webhook

import (
	"strings"
	"unicode/utf8"
)

// solutionPrefix begins the name of every state machine a Solution is
// published as, "toolgate-<stage>_<solution>" (tool.StateMachineName).
const solutionPrefix = "toolgate-"

// RunOf reads an execution ARN
// (arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>)
// into what an event names: the run, the execution's name (1 to 80
// characters, AWS Step Functions API reference, "name"), and the
// Solution, the part of its state machine's name after the stage when the
// name is "toolgate-<stage>_<solution>" (neither part holds "_",
// tool.StateMachineName), else "". ok is false for anything that is not an
// execution ARN, a direct-lane run id included: such a run is no
// Solution's and gets no event of the call and review producers
// (docs/webhooks.md, "How an event is produced").
func RunOf(executionARN string) (solution, run string, ok bool) {
	parts := strings.Split(executionARN, ":")
	if len(parts) != 8 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "execution" {
		return "", "", false
	}
	machine, name := parts[6], parts[7]
	if !plainName(machine) || !plainName(name) {
		return "", "", false
	}
	if rest, found := strings.CutPrefix(machine, solutionPrefix); found {
		if i := strings.IndexByte(rest, '_'); i > 0 && i < len(rest)-1 {
			solution = rest[i+1:]
		}
	}
	return solution, name, true
}

// plainName reports whether s is 1 to 80 characters of valid UTF-8
// without "/", white space or control characters (the names Step
// Functions accepts are narrower still).
func plainName(s string) bool {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > 80 {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || r == 0x7f || r == '/' || (r >= 0x80 && r <= 0x9f) })
}
