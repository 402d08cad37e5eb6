package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

const (
	sfnServer  = "infra/local/sfn/server.mjs"
	sfnLibrary = "node_modules/aws-local-stepfunctions/package.json"
)

// StartSFN starts the local Step Functions endpoint (infra/local/sfn/server.mjs,
// aws-local-stepfunctions 3.0.0 behind the AWS JSON 1.0 protocol) on a free
// port and waits until it answers ListStateMachines:
//
//	node infra/local/sfn/server.mjs --port P --functions FILE
//
// functionsFile maps Lambda function names to RIE invoke URLs, as
// WriteSFNFunctions writes it ({"send-email": "http://127.0.0.1:P/2015-03-31/functions/function/invocations"});
// the server reads it again on every invocation, so functions may be added
// after the start, and it need not exist yet. An empty functionsFile starts
// the endpoint without functions (every Lambda Task then fails with
// Lambda.ResourceNotFoundException).
//
// Definitions name functions by ARN (arn:aws:lambda:us-east-1:000000000000:function:<name>,
// what publishing substitutes locally) or by bare name. Point an SDK sfn
// client at Endpoint() with static fake credentials. Executions live in the
// server's memory only. Stop ends it by PID.
func StartSFN(ctx context.Context, functionsFile string) (*Process, error) {
	return StartSFNWith(ctx, SFNOptions{FunctionsFile: functionsFile})
}

// SFNOptions are the files the local Step Functions endpoint reads. Both are
// read again each time the server consults them, so they may be written after
// the start; a missing file is empty.
type SFNOptions struct {
	// FunctionsFile maps Lambda function names to RIE invoke URLs
	// (WriteSFNFunctions). "" starts the endpoint without functions.
	FunctionsFile string
	// FaultsFile is a test hook: the faults the server injects
	// (WriteSFNFaults). "" injects none.
	FaultsFile string
	// EventsQueue is the URL of a queue on the local SQS stand-in
	// (127.0.0.1 only) that gets every execution status change, RUNNING at
	// the start and then how it closed, as the platform's EventBridge rule
	// puts them on the webhook events queue on AWS: {"source":
	// "aws.states", "execution_arn", "state_machine_arn", "name",
	// "status", "start_date", "stop_date"} (epoch milliseconds; stop_date
	// null while running; docs/webhooks.md). "": none are sent.
	EventsQueue string
}

// StartSFNWith starts the local Step Functions endpoint as StartSFN does,
// with the files in opts:
//
//	node infra/local/sfn/server.mjs --port P [--functions FILE] [--faults FILE]
func StartSFNWith(ctx context.Context, opts SFNOptions) (*Process, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, sfnServer)
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("local: sfn: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, sfnLibrary)); err != nil {
		return nil, fmt.Errorf("local: sfn: %s is missing: run make deps", filepath.Join(root, filepath.Dir(sfnLibrary)))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("local: sfn: node is not on PATH (Node.js 20 is needed): %w", err)
	}
	// Cause carries the function's whole error payload as JSON text, as the
	// Lambda integration on AWS does.
	args := []string{node, script, "--lambda-cause", "payload"}
	for _, f := range []struct{ flag, path string }{{"--functions", opts.FunctionsFile}, {"--faults", opts.FaultsFile}} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return nil, fmt.Errorf("local: sfn: %w", err)
		}
		args = append(args, f.flag, abs)
	}
	if opts.EventsQueue != "" {
		args = append(args, "--events-queue", opts.EventsQueue)
	}
	return start(ctx, spec{
		name:  "sfn",
		ports: 1,
		dir:   root,
		env:   baseEnv(),
		ready: sfnReady,
		argv: func(ports []int) []string {
			return append(append([]string(nil), args...), "--port", strconv.Itoa(ports[0]))
		},
	})
}

// sfnReady is a readiness check: ListStateMachines answers 200.
func sfnReady(ctx context.Context, p *Process) error {
	return JSONReady(ctx, p, "AWSStepFunctions.ListStateMachines")
}

// JSONReady is a readiness check of a stand-in speaking the AWS JSON 1.0
// protocol at p's endpoint: target (X-Amz-Target, "<service>.<action>")
// with an empty request answers 200.
func JSONReady(ctx context.Context, p *Process, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Endpoint()+"/", bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", target, resp.Status)
	}
	return nil
}

// WriteSFNFunctions writes the functions file StartSFN reads: function name
// → RIE invoke URL (Process.InvokeURL). It replaces the file atomically, so a
// running endpoint never reads half of it.
func WriteSFNFunctions(path string, urls map[string]string) error {
	if err := writeJSONFile(path, urls); err != nil {
		return fmt.Errorf("local: functions file: %w", err)
	}
	return nil
}

// SFNFaults is the faults file of the local Step Functions endpoint
// (SFNOptions.FaultsFile), a test hook.
type SFNFaults struct {
	// SyncAfterClose maps a parent execution ARN to N: the first N
	// startExecution.sync / .sync:2 Task attempts of that execution fail
	// once their child has closed, whatever its status, with
	// StepFunctions.AWSStepFunctionsException, as if the wait had lost the
	// child's answer. The child runs, and stays, as it would.
	SyncAfterClose map[string]int `json:"sync_after_close,omitempty"`
}

// WriteSFNFaults writes the faults file StartSFNWith's server reads. It
// replaces the file atomically; the server reads it again each time a fault
// may apply.
func WriteSFNFaults(path string, faults SFNFaults) error {
	if err := writeJSONFile(path, faults); err != nil {
		return fmt.Errorf("local: faults file: %w", err)
	}
	return nil
}

// writeJSONFile replaces path with v as indented JSON, atomically (a
// temporary file in the same directory, then a rename).
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".sfn-*.json")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
