// Command workflow-validator is the workflow-validator tool's Lambda
// function: the resolver's checks behind the governed dispatcher.
package main

import (
	"github.com/toolgate/toolgate/functions/workflow-validator/validator"
	"github.com/toolgate/toolgate/shared/dispatch"
)

func main() {
	dispatch.Main("workflow-validator", validator.Tool())
}
