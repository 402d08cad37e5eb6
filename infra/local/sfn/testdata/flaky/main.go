// Command flaky is a Lambda for the local Step Functions tests (run under
// the RIE). It appends every event it receives, as one JSON line, to the
// file named by FLAKY_LOG (when set), then acts on the event's behavior:
// event.input.behavior, else event.behavior, an object
//
//	{"code": "TOOL_TIMEOUT", "times": 2, "message": "..."}
//	    fail with errorType code for the first `times` attempts of one
//	    idempotency_key (every attempt when times is 0), then succeed
//	{"crash": true}     exit the process (the runtime dies mid-invocation)
//	{"sleep_ms": 1500}  sleep first, ignoring the deadline
//
// On success it returns FLAKY_RESPONSE (a JSON object, {} when unset) with
// "event" set to the event it received and "calls" to the number of calls
// made with that idempotency_key so far. Attempts are counted in files in
// the working directory (the bootstrap's own directory), so a restarted
// runtime keeps counting.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
)

type behavior struct {
	Code    string `json:"code"`
	Times   int    `json:"times"`
	Message string `json:"message"`
	Crash   bool   `json:"crash"`
	SleepMS int    `json:"sleep_ms"`
}

func handle(_ context.Context, raw json.RawMessage) (map[string]any, error) {
	if path := os.Getenv("FLAKY_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = f.Write(append(compact(raw), '\n'))
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	var ev struct {
		IdempotencyKey string    `json:"idempotency_key"`
		Behavior       *behavior `json:"behavior"`
		Input          struct {
			Behavior *behavior `json:"behavior"`
		} `json:"input"`
	}
	_ = json.Unmarshal(raw, &ev) // any JSON value is accepted
	b := ev.Input.Behavior
	if b == nil {
		b = ev.Behavior
	}
	if b == nil {
		b = &behavior{}
	}
	calls, err := count(ev.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if b.SleepMS > 0 {
		time.Sleep(time.Duration(b.SleepMS) * time.Millisecond)
	}
	if b.Crash {
		fmt.Fprintln(os.Stderr, "flaky: crashing as asked")
		os.Exit(3)
	}
	if b.Code != "" && (b.Times == 0 || calls <= b.Times) {
		msg := b.Message
		if msg == "" {
			msg = fmt.Sprintf("%s on call %d", b.Code, calls)
		}
		return nil, messages.InvokeResponse_Error{Type: b.Code, Message: msg}
	}
	out := map[string]any{}
	if s := os.Getenv("FLAKY_RESPONSE"); s != "" {
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("FLAKY_RESPONSE: %w", err)
		}
	}
	out["event"] = json.RawMessage(raw)
	out["calls"] = calls
	return out, nil
}

// count adds one to the number of calls made with key and returns it.
func count(key string) (int, error) {
	sum := sha256.Sum256([]byte(key))
	path := "calls-" + hex.EncodeToString(sum[:8])
	n := 0
	if b, err := os.ReadFile(path); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	n++
	return n, os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644)
}

func compact(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

func main() { lambda.Start(handle) }
