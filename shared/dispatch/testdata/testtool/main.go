// Command testtool is a tool function for the dispatcher's end-to-end
// tests: it runs the dispatcher with one of the test tools (TOOLGATE_TOOL:
// test-echo, at_least_once; test-send, at_most_once). Its input's "fail"
// field names what to do: a contract code to raise, "panic", "crash" (exit
// the process after the side effect), or nothing for success. Each run
// appends one line to TEST_EFFECTS_FILE: that is its side effect.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolfunction"
)

func main() {
	name := os.Getenv("TOOLGATE_TOOL")
	log := coldstart.Logger()
	d := toolfunction.Dispatcher(log, coldstart.AWSConfig(log), dispatch.OneTool(name), nil, func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		var in struct{ Text, Fail string }
		if err := json.Unmarshal(c.Input, &in); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(os.Getenv("TEST_EFFECTS_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "%s %s\n", c.Envelope.IdempotencyKey, in.Text)
		f.Close()
		switch in.Fail {
		case "":
			if name == "test-send" {
				return json.Marshal(map[string]string{"message_id": "m-" + in.Text})
			}
			return json.Marshal(map[string]string{"text": in.Text})
		case "crash":
			os.Exit(3) // after the side effect, before the record completes
		case "panic":
			panic("test panic")
		}
		return nil, tool.Errorf(tool.Code(in.Fail), "raised %s", in.Fail)
	})
	lambda.Start(d.Handle)
}
