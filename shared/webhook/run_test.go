package webhook

import "testing"

// RunOf reads a Solution's execution ARN into its Solution and run, a
// state machine that is no Solution's into its run alone, and refuses
// what is not an execution ARN (a direct-lane run id, a state machine's
// ARN).
func TestRunOfReadsTheSolutionAndTheRun(t *testing.T) {
	for name, c := range map[string]struct {
		arn, solution, run string
		ok                 bool
	}{
		"a Solution's run":      {"arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_refunds:run-1", "refunds", "run-1", true},
		"a stage with a hyphen": {"arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev-2_refunds:r", "refunds", "r", true},
		"no Solution":           {"arn:aws:states:us-east-1:000000000000:execution:toolgate-test:run-1", "", "run-1", true},
		"another prefix":        {"arn:aws:states:us-east-1:000000000000:execution:other-dev_refunds:run-1", "", "run-1", true},
		"an empty Solution":     {"arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_:run-1", "", "run-1", true},
		"a direct-lane run id":  {"direct/arn:aws:iam::000000000000:user/x/1", "", "", false},
		"a state machine's ARN": {"arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-dev_refunds", "", "", false},
		"a version's execution": {"arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_refunds:1:run-1", "", "", false},
		"a name with a space":   {"arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_refunds:run 1", "", "", false},
		"a name over 80":        {"arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_refunds:" + string(make([]byte, 81)), "", "", false},
		"another service's ARN": {"arn:aws:lambda:us-east-1:000000000000:execution:toolgate-dev_refunds:run-1", "", "", false},
	} {
		t.Run(name, func(t *testing.T) {
			solution, run, ok := RunOf(c.arn)
			if solution != c.solution || run != c.run || ok != c.ok {
				t.Fatalf("RunOf = %q, %q, %v; want %q, %q, %v", solution, run, ok, c.solution, c.run, c.ok)
			}
		})
	}
}
