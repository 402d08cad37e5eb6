package stack_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/ledger"
)

// mailEach reviews and sends one e-mail per recipient: a for_each whose
// body is a review and the send it approves (docs/solutions.md,
// "for_each"), collecting each message id.
const mailEach = `solution: e2e-each
version: 1
input:
  type: object
  required: [people]
  properties:
    people: {type: array, maxItems: 3}
output:
  sent: "${steps.each.output}"
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: person
      max_items: 3
      collect:
        to: "${person.email}"
        message_id: "${steps.send.output.message_id}"
      steps:
        - id: approve
          review: {of: send}
          on_approve: send
          on_reject: rejected
        - id: send
          tool: send-email
          with:
            to: ["${person.email}"]
            subject: "Hello ${person.name}, item ${for_each.index}"
            text: "one e-mail per item"
        - id: rejected
          fail: {error: NotApproved}
`

// A for_each of three items with a review and a send inside, on the local
// stack: three approvals, three keys (<seq of the loop>.<index>.1, in
// call order in the ledger), three e-mails, and the collected list as the
// run's output.
func TestForEachOnTheLocalStack(t *testing.T) {
	e := startEnv(t, stack.StackOptions{})
	e.publish(t, "e2e-each", mailEach)
	e.clearMails(t)
	people := []map[string]string{
		{"email": "a@example.com", "name": "Ada"},
		{"email": "b@example.com", "name": "Bo"},
		{"email": "c@example.com", "name": "Cy"},
	}
	run := e.start(t, "e2e-each", map[string]any{"people": people})
	decided := map[string]bool{}
	for range people {
		id := e.pending(t, run, decided)
		e.decide(t, "approve", id)
		decided[id] = true
	}
	out := e.finish(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	var output struct {
		Sent []struct {
			To        string `json:"to"`
			MessageID string `json:"message_id"`
		}
	}
	if err := json.Unmarshal([]byte(out.Output), &output); err != nil || len(output.Sent) != 3 {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	var sends []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			sends = append(sends, r)
		}
	}
	var keys []string
	for k, r := range sends {
		want := fmt.Sprintf("1.%d.1", k)
		if r.Status != ledger.Succeeded || string(r.Seq) != want || r.IdempotencyKey != run+"/"+want || r.Approver == "" {
			t.Errorf("send row %d: %+v, want seq %s approved", k, r, want)
		}
		keys = append(keys, r.IdempotencyKey)
	}
	if len(sends) != 3 || len(slices.Compact(slices.Clone(keys))) != 3 {
		t.Fatalf("send rows %+v", sends)
	}
	mails := e.mails(t)
	var to []string
	for _, m := range mails {
		to = append(to, m.Destination.To...)
	}
	slices.Sort(to)
	if fmt.Sprint(to) != "[a@example.com b@example.com c@example.com]" {
		t.Fatalf("mails %+v", mails)
	}
	for k, s := range output.Sent {
		if s.To != people[k]["email"] || s.MessageID == "" {
			t.Errorf("collected %d: %+v", k, s)
		}
	}
}

// twoLoops sends one reviewed e-mail in each of two loops in a row: each
// loop takes its own value of the call counter.
const twoLoops = `solution: e2e-two-loops
version: 1
input: {type: object, required: [people], properties: {people: {type: array, maxItems: 1}}}
steps:
  - id: first
    for_each:
      items: "${input.people}"
      as: person
      max_items: 1
      steps:
        - {id: approve_first, review: {of: send_first}, on_approve: send_first}
        - {id: send_first, tool: send-email, with: {to: ["${person}"], subject: first, text: t}}
    next: second
  - id: second
    for_each:
      items: "${input.people}"
      as: person
      max_items: 1
      steps:
        - {id: approve_second, review: {of: send_second}, on_approve: send_second}
        - {id: send_second, tool: send-email, with: {to: ["${person}"], subject: second, text: t}}
`

// Two loops in a row give distinct keys: 1.0.1 and 2.0.1.
func TestTwoLoopsOnTheLocalStack(t *testing.T) {
	e := startEnv(t, stack.StackOptions{})
	e.publish(t, "e2e-two-loops", twoLoops)
	run := e.start(t, "e2e-two-loops", map[string]any{"people": []string{"a@example.com"}})
	decided := map[string]bool{}
	for range 2 {
		id := e.pending(t, run, decided)
		e.decide(t, "approve", id)
		decided[id] = true
	}
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	var got []string
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" && r.Status == ledger.Succeeded {
			got = append(got, r.Step+" "+string(r.Seq))
		}
	}
	if fmt.Sprint(got) != "[send_first 1.0.1 send_second 2.0.1]" {
		t.Fatalf("send rows %v", got)
	}
}
