package starter_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/functions/inbound-start/starter"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
)

// A body that names one member twice in an object (which RFC 8259 §4
// leaves to each reader, and which the start's input digest, RFC 8785,
// refuses) fails its event with a problem that says so, neither quoting
// the member's name or value nor blaming a number.
func TestABodyWithAMemberNamedTwiceFailsSayingSo(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "billing", "msg_dup", `{"id":"evt","recipient":"team@example.com","recipient":"secret-7c1e@example.com"}`)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	ev := f.event(t, k)
	problems := strings.Join(ev.Problems, "\n")
	if ev.Status != store.StatusFailed || !strings.Contains(problems, "twice") || strings.Contains(problems, "number") {
		t.Fatalf("event %s, problems %q: want FAILED naming a member given twice", ev.Status, problems)
	}
	if strings.Contains(problems, "recipient") || strings.Contains(problems, "7c1e") {
		t.Errorf("problems quote the body: %q", problems)
	}
	if len(f.rec.all()) != 0 || len(f.executions(t)) != 0 {
		t.Errorf("a refused input was recorded or started")
	}
}

// refusingStart is the local Step Functions stand-in whose StartExecution
// answers InvalidExecutionInput, as Step Functions does for an input its
// own JSON reader refuses (one nested deeper than it takes, for one): a
// fault the stand-in, whose reader takes any JSON the checks before it
// pass, cannot produce. Every other call goes to the stand-in.
type refusingStart struct{ *sfn.Client }

func (refusingStart) StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	return nil, &sfntypes.InvalidExecutionInput{Message: aws.String("Invalid JSON input")}
}

// An input Step Functions refuses (InvalidExecutionInput) fails its event
// for good: delivered again it would be refused again, so it is not
// retried into the dead-letter queue, and its body is dropped.
func TestAnInputStepFunctionsRefusesFailsTheEventWithoutRetries(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	f.h = starter.New(starter.Config{Function: f.cfg, Store: f.st, SFN: refusingStart{f.sf}, Starts: f.rec, NameKey: f.nameKey,
		Now: func() time.Time { return f.now }, Log: slog.New(slog.DiscardHandler)})
	k, m := f.receive(t, "billing", "msg_deep", recipientBody)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v: want none (refused for good, not retried)", failed)
	}
	ev := f.event(t, k)
	if ev.Status != store.StatusFailed || len(ev.Body) != 0 || !strings.Contains(strings.Join(ev.Problems, " "), "InvalidExecutionInput") {
		t.Fatalf("event %s, body %d bytes, problems %q: want FAILED naming InvalidExecutionInput", ev.Status, len(ev.Body), ev.Problems)
	}
}
