package statemachines_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/deployment/statemachines"
)

// Find finds a state machine by its name on the local Step Functions
// endpoint, across pages, and answers "" for a name no state machine has.
func TestFindByNameAcrossPages(t *testing.T) {
	p, err := local.StartSFN(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	client := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(p.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`
	arns := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("toolgate-test_find-%d", i)
		out, err := client.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(name), Definition: aws.String(def),
			RoleArn: aws.String("arn:aws:iam::000000000000:role/toolgate-test-solution-execution")})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		arns[name] = aws.ToString(out.StateMachineArn)
	}
	// One state machine per page, so that the last is on the third.
	paged := &pageOf1{c: client}
	for name, want := range arns {
		got, err := statemachines.Find(t.Context(), paged, name)
		if err != nil || got != want {
			t.Errorf("Find(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	paged.calls = 0
	if got, err := statemachines.Find(t.Context(), paged, "toolgate-test_missing"); err != nil || got != "" {
		t.Errorf("Find(missing) = %q, %v; want none", got, err)
	}
	if paged.calls < 3 {
		t.Errorf("Find(missing) read %d pages of one, want every page", paged.calls)
	}
	p.Stop()
	if _, err := statemachines.Find(t.Context(), client, "toolgate-test_find-0"); err == nil || !strings.HasPrefix(err.Error(), "list state machines: ") {
		t.Errorf("Find on a stopped endpoint: %v, want the listing's error", err)
	}
}

// pageOf1 asks the endpoint for one state machine per page.
type pageOf1 struct {
	c     *sfn.Client
	calls int
}

func (p *pageOf1) ListStateMachines(ctx context.Context, in *sfn.ListStateMachinesInput, opts ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	p.calls++
	in.MaxResults = 1
	return p.c.ListStateMachines(ctx, in, opts...)
}
