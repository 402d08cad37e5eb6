package stack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/ledger"
)

// Two reviewers approve the same pending review at the same moment on the
// local stack (both with `toolgate review approve --endpoint ... --as`).
// Expected: exactly one decision, one SendTaskSuccess, the run sends its
// e-mail once and succeeds. The review-decision function runs under the
// RIE, which crashes on a concurrent invocation; nothing serialises the
// reviewers' calls, so the function dies, both reviewers fail, and the run
// waits until its review times out (here 20 s) and ends without the
// approved e-mail. The same happens to `toolgate run --wait`, which lists
// reviews through the same function while a reviewer decides.
func TestTwoReviewersAtOnceOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-two-reviewers", digestAs("e2e-two-reviewers", "20"))
	e.clearMails(t)
	run := e.start(t, "e2e-two-reviewers", map[string]string{"recipient": "team@example.com"})
	id := e.pending(t, run, nil)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, codes[i] = e.toolgate(t, "review", "approve", id, "--reason", "ok", "--endpoint", e.decisionEndpoint(), "--as", fmt.Sprintf("reviewer%d", i))
		}()
	}
	wg.Wait()
	out := e.finish(t, run)
	if codes[0] != cli.ExitOK || codes[1] != cli.ExitOK || out.Status != "SUCCEEDED" || len(e.mails(t)) != 1 {
		t.Fatalf("two concurrent approvals: exits %v; run %s; %d e-mails, want 1", codes, out.Status, len(e.mails(t)))
	}
}

// Publish updates the state machine, then publishes "a version" of it in
// a second call that does not name the revision it just wrote
// (PublishStateMachineVersion without revisionId; UpdateStateMachine has
// publish/versionDescription for this). Two publishers of the same
// Solution interleave: A's version is B's definition, and A is told
// "published version …:N (toolset A)" while that version runs toolset B.
func TestConcurrentPublishNeverLabelsAnotherDefinition(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-concurrent", digestAs("e2e-concurrent", "600"))
	compile := func(extraHost string) *resolver.Result {
		src := strings.Replace(digestAs("e2e-concurrent", "600"), `fetch_hosts: ["DATA"]`, `fetch_hosts: ["DATA", "`+extraHost+`"]`, 1)
		src = strings.ReplaceAll(src, "DATA", strings.TrimPrefix(e.st.DataURL, "http://"))
		res := resolver.Compile("x.yaml", []byte(src), resolver.Options{})
		if !res.OK() {
			t.Fatalf("compile: %v", res.Diagnostics)
		}
		return res
	}
	a, b := compile("a.example.com"), compile("b.example.com")
	params, err := deployment.ReadFileParams(e.st.ParamsFile)
	if err != nil {
		t.Fatal(err)
	}
	db := local.DynamoDB(e.st.Dynamo.Endpoint())
	store := ledger.New(db, stack.Table)
	for _, res := range []*resolver.Result{a, b} {
		if _, err := store.RegisterToolset(context.Background(), res.Toolset); err != nil {
			t.Fatal(err)
		}
	}
	// Publisher A's client stops after its UpdateStateMachine.
	gate := localtest.PauseAfter("UpdateStateMachine")
	paused := sfn.New(e.sf.Options(), func(o *sfn.Options) { o.APIOptions = append(o.APIOptions, gate.Option()) })
	var pubA *publish.Published
	var errA error
	done := make(chan struct{})
	go func() {
		defer close(done)
		pubA, errA = publish.Publish(context.Background(), a, params, stack.Stage, local.Region, paused, "arn:aws:iam::000000000000:user/a", nil)
	}()
	select {
	case <-gate.Reached():
	case <-done:
		t.Fatalf("publisher A ended without being paused: %v", errA)
	}
	if _, err := publish.Publish(context.Background(), b, params, stack.Stage, local.Region, e.sf, "arn:aws:iam::000000000000:user/b", nil); err != nil {
		t.Fatal(err)
	}
	gate.Resume()
	<-done
	if errA != nil {
		// Refusing the interleaved publish is correct: nothing was labelled.
		if !strings.Contains(errA.Error(), "ConflictException") {
			t.Fatal(errA)
		}
		return
	}
	v, err := e.sf.DescribeStateMachine(context.Background(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(pubA.VersionARN)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(aws.ToString(v.Definition), a.Toolset.ID) {
		t.Fatalf("publisher A was told it published %s (toolset %s), but that version runs another definition (toolset %s in it: %v); its description: %q",
			pubA.VersionARN, a.Toolset.ID, b.Toolset.ID, strings.Contains(aws.ToString(v.Definition), b.Toolset.ID), aws.ToString(v.Description))
	}
}

// The first publish of a Solution creates its state machine, then
// publishes "a version" in a second call that can name no revision. A
// second publisher of the same Solution in between updates the new state
// machine and publishes its own version: the first one's version is then
// the other's definition, labelled with the first one's source and
// publisher, and recorded (SOLUTION#) with the first one's bounds for
// parents to start.
func TestConcurrentFirstPublishNeverLabelsAnotherDefinition(t *testing.T) {
	e := sharedEnv(t)
	first := fresh("e2e-first") // a Solution never published on the shared stack
	compile := func(extraHost string) *resolver.Result {
		src := strings.Replace(strings.Replace(reviewedDigest, "TIMEOUT", "600", 1), `fetch_hosts: ["DATA"]`, `fetch_hosts: ["DATA", "`+extraHost+`"]`, 1)
		src = strings.Replace(src, "solution: e2e-digest", "solution: "+first, 1)
		src = strings.ReplaceAll(src, "DATA", strings.TrimPrefix(e.st.DataURL, "http://"))
		res := resolver.Compile("x.yaml", []byte(src), resolver.Options{})
		if !res.OK() {
			t.Fatalf("compile: %v", res.Diagnostics)
		}
		return res
	}
	a, b := compile("a.example.com"), compile("b.example.com")
	params, err := deployment.ReadFileParams(e.st.ParamsFile)
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table)
	for _, res := range []*resolver.Result{a, b} {
		if _, err := store.RegisterToolset(context.Background(), res.Toolset); err != nil {
			t.Fatal(err)
		}
	}
	// Publisher A's client stops after its CreateStateMachine.
	gate := localtest.PauseAfter("CreateStateMachine")
	paused := sfn.New(e.sf.Options(), func(o *sfn.Options) { o.APIOptions = append(o.APIOptions, gate.Option()) })
	var pubA *publish.Published
	var errA error
	done := make(chan struct{})
	go func() {
		defer close(done)
		pubA, errA = publish.Publish(context.Background(), a, params, stack.Stage, local.Region, paused, "arn:aws:iam::000000000000:user/a", nil)
	}()
	select {
	case <-gate.Reached():
	case <-done:
		t.Fatalf("publisher A ended without being paused: %v", errA)
	}
	if _, err := publish.Publish(context.Background(), b, params, stack.Stage, local.Region, e.sf, "arn:aws:iam::000000000000:user/b", nil); err != nil {
		t.Fatal(err)
	}
	gate.Resume()
	<-done
	if errA != nil {
		t.Fatal(errA)
	}
	v, err := e.sf.DescribeStateMachine(context.Background(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(pubA.VersionARN)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(aws.ToString(v.Definition), a.Toolset.ID) {
		t.Fatalf("publisher A created the state machine and was told it published %s (toolset %s), but that version runs B's definition (toolset %s in it: %v); its description: %q",
			pubA.VersionARN, a.Toolset.ID, b.Toolset.ID, strings.Contains(aws.ToString(v.Definition), b.Toolset.ID), aws.ToString(v.Description))
	}
}
