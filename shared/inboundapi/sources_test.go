package inboundapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/caller"
)

// Every binding of the sources function differs from every other: a proof
// made for one operation, name, secret or input is refused for another.
// None holds a byte of a secret or of an input.
func TestSourcesBindingsAreDistinctAndHoldNoSecret(t *testing.T) {
	add := AddSourceRequest{Name: "billing", Scheme: "github", Solution: "refunds", Secret: "canary-secret"}
	otherSecret, drawn, otherBound := add, add, add
	otherSecret.Secret, drawn.Secret, otherBound.MaxBodyBytes = "canary-other", "", 1000
	sched := AddScheduleRequest{Name: "billing", Solution: "refunds", Expression: "rate(1 day)", Input: json.RawMessage(`{"canary":"input"}`)}
	otherInput, otherExpr := sched, sched
	otherInput.Input, otherExpr.Expression = json.RawMessage(`{"canary":"other"}`), "rate(2 days)"
	bindings := map[string]caller.Binding{
		"add": AddSourceBinding(add), "add another secret": AddSourceBinding(otherSecret), "add drawn": AddSourceBinding(drawn),
		"add another bound": AddSourceBinding(otherBound), "list sources": ListSourcesBinding(),
		"rotate drawn": RotateSecretBinding("billing", RotateSecretRequest{}), "rotate given": RotateSecretBinding("billing", RotateSecretRequest{Secret: "canary-secret"}),
		"rotate another": RotateSecretBinding("payments", RotateSecretRequest{}), "retire": RetireSecretsBinding("billing"),
		"remove source": RemoveSourceBinding("billing"), "dlq list": DLQListBinding(), "redrive": RedriveBinding(),
		"add schedule": AddScheduleBinding(sched), "add schedule another input": AddScheduleBinding(otherInput),
		"add schedule another expression": AddScheduleBinding(otherExpr), "list schedules": ListSchedulesBinding(),
		"pause": PauseScheduleBinding("billing"), "resume": ResumeScheduleBinding("billing"), "remove schedule": RemoveScheduleBinding("billing"),
		// A source named "list" or "dlq" is no listing's.
		"remove list": RemoveSourceBinding("list"), "retire dlq": RetireSecretsBinding("dlq"),
	}
	seen := map[string]string{}
	for name, b := range bindings {
		if other, dup := seen[b.Value()]; dup {
			t.Errorf("%s and %s bind the same", name, other)
		}
		seen[b.Value()] = name
		doc, _ := json.Marshal(b)
		if strings.Contains(string(doc), "canary") {
			t.Errorf("%s holds a secret or an input: %s", name, doc)
		}
	}
	if SourcePath("billing", OpRotateSecret) != "/sources/billing/rotate-secret" || SchedulePath("a b", OpPause) != "/schedules/a%20b/pause" {
		t.Error("paths")
	}
}
