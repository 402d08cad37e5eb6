package stack_test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/functionconfig"
)

// Every function the stack runs, each lane's instance and the team
// function among them, is started with TOOLGATE_TRACING naming the
// stack's own trace receiver, on loopback; the CLI's environment names it
// too. Read from each RIE's environment as the kernel holds it (Linux
// only), which the RIE hands its bootstrap.
func TestEveryFunctionExportsToTheStacksTraceReceiver(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/<pid>/environ")
	}
	e := sharedEnv(t)
	if e.st.Traces == nil {
		t.Fatal("the stack has no trace receiver")
	}
	u, err := url.Parse(e.st.Traces.URL())
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the trace receiver is at %q (%v): want 127.0.0.1", e.st.Traces.URL(), err)
	}
	want := "otlp:" + e.st.Traces.URL()
	if endpoint, err := functionconfig.ParseTracing(want); err != nil || endpoint != e.st.Traces.URL() {
		t.Fatalf("ParseTracing(%q) = %q, %v", want, endpoint, err)
	}
	if got := e.cli[functionconfig.EnvTracing]; got != want {
		t.Errorf("the CLI's %s is %q, want %q", functionconfig.EnvTracing, got, want)
	}
	rie := 0
	for _, p := range e.st.Processes() {
		if !strings.HasPrefix(p.Name, "rie:") {
			continue
		}
		rie++
		environ, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/environ")
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var got []string
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if k, v, ok := strings.Cut(string(kv), "="); ok && k == functionconfig.EnvTracing {
				got = append(got, v)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s runs with %s=%q, want %q", p.Name, functionconfig.EnvTracing, got, want)
		}
	}
	lanes := len(e.st.Endpoints) + len(e.st.SFNEndpoints) // TeamFunction's among Endpoints
	if e.st.StartEndpoint != "" {
		lanes++
	}
	if rie != lanes || rie == 0 {
		t.Errorf("%d functions' RIE instances read, want %d (every lane's, and %s's)", rie, lanes, stack.TeamFunction)
	}
}

// The publish function creates a Solution's state machine with X-Ray
// tracing enabled, and keeps it so when it publishes the Solution again
// (an update): the OTLP export of TOOLGATE_TRACING is in addition to
// X-Ray, never instead (docs/infra.md, "Tracing").
func TestPublishedStateMachinesAreTracedWithXRay(t *testing.T) {
	e := sharedEnv(t)
	name := fresh("xray-traced")
	arn := fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", local.Region, stack.AccountID, deployment.StateMachineName(stack.Stage, name))
	for _, timeout := range []string{"600", "700"} { // created, then updated
		e.publish(t, name, digestAs(name, timeout))
		out, err := e.sf.DescribeStateMachine(t.Context(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.TracingConfiguration == nil || !out.TracingConfiguration.Enabled {
			t.Errorf("published with timeout %s: tracing configuration %+v, want X-Ray tracing enabled", timeout, out.TracingConfiguration)
		}
	}
}
