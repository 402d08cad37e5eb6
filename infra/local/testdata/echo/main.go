// Command echo is a tiny Lambda for infra/local's tests: it returns its input.
// Two inputs are special:
//
//	{"fail": "message"}        fails with an *EchoError carrying message
//	{"getenv": ["NAME", ...]}  returns {"env": {"NAME": "value"|null, ...}}
//	{"sleep_ms": N}            sleeps N ms regardless of the deadline, then echoes
package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

// EchoError is the error the "fail" path returns; the runtime reports its
// type name as errorType.
type EchoError struct{ Msg string }

func (e *EchoError) Error() string { return e.Msg }

func handle(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
	var probe struct {
		Fail    string   `json:"fail"`
		Getenv  []string `json:"getenv"`
		SleepMS int      `json:"sleep_ms"`
	}
	_ = json.Unmarshal(in, &probe) // any JSON value is echoed; only objects can be special
	switch {
	case probe.Fail != "":
		return nil, &EchoError{Msg: probe.Fail}
	case probe.SleepMS > 0:
		time.Sleep(time.Duration(probe.SleepMS) * time.Millisecond) // ignores the deadline, as a hung tool would
	case probe.Getenv != nil:
		env := map[string]*string{}
		for _, k := range probe.Getenv {
			if v, ok := os.LookupEnv(k); ok {
				env[k] = &v
			} else {
				env[k] = nil
			}
		}
		return json.Marshal(map[string]any{"env": env})
	}
	return in, nil
}

func main() { lambda.Start(handle) }
