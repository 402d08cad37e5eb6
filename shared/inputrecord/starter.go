package inputrecord

import (
	"encoding/json"
	"errors"
	"fmt"
)

// StarterState is the state a compiled Solution with gated tools or
// workflow steps starts its runs with (after Init): it checks the run's
// start record (tool.RunStartCheck), so a run of such a Solution is
// started only once its start is recorded (docs/identity.md, "Four
// eyes"). The resolver names the state so (resolver.StarterState).
const StarterState = "Starter"

// ErrStarterOutdated is HasStarter's error for a definition published by
// an earlier toolgate, whose Starter state reads a start proof from the
// execution input: neither toolgate run nor inbound-start sends one
// (CHANGELOG.md, Migration: publish the Solution again).
var ErrStarterOutdated = errors.New("its Starter state was compiled by an earlier toolgate and needs a start proof in the execution input, which toolgate run no longer sends: publish the Solution again (toolgate publish), then run it")

// HasStarter reports whether a compiled state machine definition (the
// JSON DescribeStateMachine answers) starts its runs with StarterState,
// whose start a starter records before the execution starts (toolgate
// run, inbound-start); ErrStarterOutdated when that state still reads a
// start proof (its Parameters.Payload names "start_proof.$", as
// definitions compiled before start records did). A definition that is
// not JSON is an error saying so.
func HasStarter(definition []byte) (bool, error) {
	var d struct {
		States map[string]struct {
			Parameters struct {
				Payload map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(definition, &d); err != nil {
		return false, fmt.Errorf("its definition is not JSON: %v", err)
	}
	st, ok := d.States[StarterState]
	if !ok {
		return false, nil
	}
	if _, legacy := st.Parameters.Payload["start_proof.$"]; legacy {
		return false, ErrStarterOutdated
	}
	return true, nil
}
