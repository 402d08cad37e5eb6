package publish

import (
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The publish function refuses a caller proof of another account's
// principal ([caller-account]) for every action, before it reads or writes
// anything: STS answers for any account's keys.
func TestPublishFunctionRefusesCallerProofsOfAnotherAccount(t *testing.T) {
	const outside = "999999999999"
	e := newToolsetEnv(t)
	lock, err := os.ReadFile(demoLock)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Parse(lock)
	if err != nil {
		t.Fatal(err)
	}
	src := []byte("solution: outside\nversion: 1\nsteps:\n  - id: a\n    pass: {x: 1}\n")
	for _, c := range []struct {
		name string
		req  publishapi.DirectRequest
	}{
		{"register", publishapi.DirectRequest{Action: "register", Toolset: string(lock), Proof: e.callers.ProofIn(t, outside, "alice", publishapi.RegisterBinding(ts.ID, lock))}},
		{"show a toolset", publishapi.DirectRequest{Action: "show", ToolsetID: ts.ID, Proof: e.callers.ProofIn(t, outside, "alice", publishapi.ShowBinding(ts.ID))}},
		{"publish", publishapi.DirectRequest{Action: "publish", File: "outside.yaml", Source: string(src), Proof: e.callers.ProofIn(t, outside, "alice", publishapi.Binding("outside.yaml", src))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, code, msg := e.direct(t, c.req)
			if code != string(publishapi.CodeUnauthenticated) || !strings.Contains(msg, "["+string(caller.WrongAccount)+"]") {
				t.Fatalf("%s %s, want %s naming [%s]", code, msg, publishapi.CodeUnauthenticated, caller.WrongAccount)
			}
		})
	}
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil || len(out.Items) != 0 {
		t.Fatalf("the refused calls wrote %d items (%v)", len(out.Items), err)
	}
}
