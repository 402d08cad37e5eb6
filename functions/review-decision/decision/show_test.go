package decision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// showCanary is a value of another run's inputs and of every recorded
// result: it must never reach a show answer or a log line.
const showCanary = "canary-7b1e0c5d-show"

// withShow is s with the show answer's readers wired as review-decision's
// main wires them: the run rows (ledger.Store.RunRows), the logs into
// logs, and send-email's sender and allow-list from env (EmailFromEnv).
func (s *stack) withShow(t *testing.T, env map[string]string, logs *bytes.Buffer) {
	t.Helper()
	email, err := decision.EmailFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s.deps.Runs, s.deps.Email = ledger.New(s.db, s.table), email
	if logs != nil {
		s.deps.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s.svc = decision.NewService(s.deps)
}

func (s *stack) show(t *testing.T, id string) review.View {
	t.Helper()
	res, err := s.do(t, "alice", decision.Request{Action: review.ActionShow, ReviewID: id})
	if err != nil {
		t.Fatal(err)
	}
	return res.(review.View)
}

var emailEnv = map[string]string{
	functionconfig.EnvSender:         "news@example.com",
	functionconfig.EnvRecipientAllow: "team@example.com, @partner.example",
}

// A show of a send-email review carries the sender review-decision is
// configured with and each recipient's allow-list verdict, as send-email
// would decide it, in input order, with the rule and never an entry.
func TestShowOfASendEmailReviewCarriesTheVerdicts(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.withShow(t, emailEnv, nil)
	r := s.pending(t, func(p *review.Params) {
		p.Input = json.RawMessage(`{"to":["Team@example.com","eve@other.example"],"cc":["not an address"],"bcc":["ops@partner.example"],"subject":"s","text":"t"}`)
	})
	v := s.show(t, r.ID)
	if v.Email == nil {
		t.Fatal("no email in the show answer")
	}
	want := review.EmailView{
		From: review.AddressVerdict{Address: "news@example.com", Verdict: "allow", Rule: "is the sender send-email is configured with"},
		To: []review.AddressVerdict{{Address: "Team@example.com", Verdict: "allow", Rule: "is allowed by an address entry"},
			{Address: "eve@other.example", Verdict: "refuse", Rule: `is not on the allow-list (default deny; "@domain" entries match that exact domain only)`}},
		Cc:  []review.AddressVerdict{{Address: "not an address", Verdict: "invalid", Rule: recipient.List{}.Decide("not an address").Rule}},
		Bcc: []review.AddressVerdict{{Address: "ops@partner.example", Verdict: "allow", Rule: "is allowed by a domain entry"}},
	}
	if !reflect.DeepEqual(*v.Email, want) {
		t.Fatalf("email\n got %+v\nwant %+v", *v.Email, want)
	}
	// The listing stays as it was: no console members.
	list, err := s.do(t, "alice", decision.Request{Action: review.ActionList})
	if err != nil {
		t.Fatal(err)
	}
	if l := list.(*review.ListResult).Reviews; len(l) != 1 || l[0].Email != nil || l[0].RunCalls != nil || l[0].InputSchema != nil {
		t.Fatalf("listing %+v", l)
	}
}

// Without send-email's configuration a show still lists the recipients:
// a valid one's verdict is unknown, an invalid one is invalid, and From
// is unknown.
func TestShowWithoutTheEmailConfigurationSaysUnknown(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.withShow(t, nil, nil)
	r := s.pending(t, func(p *review.Params) {
		p.Input = json.RawMessage(`{"to":["team@example.com","a@@b"],"subject":"s","text":"t"}`)
	})
	e := s.show(t, r.ID).Email
	if e == nil || e.From.Address != "" || e.From.Verdict != review.VerdictUnknown || len(e.To) != 2 ||
		e.To[0].Verdict != review.VerdictUnknown || e.To[1].Verdict != "invalid" || e.Cc != nil || e.Bcc != nil {
		t.Fatalf("%+v", e)
	}
}

// A show of a review of any other tool carries no Email.
func TestShowOfAnotherToolCarriesNoEmail(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.withShow(t, emailEnv, nil)
	r := s.pending(t, func(p *review.Params) {
		p.Tool, p.Input = "http", json.RawMessage(`{"method":"POST","url":"https://api.example.com/x","body":{"to":["team@example.com"]}}`)
	})
	if v := s.show(t, r.ID); v.Email != nil {
		t.Fatalf("%+v", v.Email)
	}
}

// The send-email envs are optional on review-decision; a value that does
// not parse is a configuration error naming the variable.
func TestEmailConfigurationIsCheckedAtColdStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    map[string]string
		refuse string
	}{
		{"unset", nil, ""},
		{"both", emailEnv, ""},
		{"a bad sender", map[string]string{functionconfig.EnvSender: "News <news@example.com>"}, functionconfig.EnvSender},
		{"a bad allow-list", map[string]string{functionconfig.EnvRecipientAllow: "team@example.com,@"}, functionconfig.EnvRecipientAllow},
	} {
		cfg, err := decision.EmailFromEnv(func(k string) string { return c.env[k] })
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.refuse)
		case c.name == "both" && (cfg.From != "news@example.com" || cfg.Allow == nil || cfg.Allow.Len() != 2):
			t.Errorf("%s: %+v", c.name, cfg)
		}
	}
}

// putCall records a COMPLETED call of run at seq whose recorded result
// holds showCanary, its input digest sha256 of 32 octets b.
func putCall(t *testing.T, l *ledger.Store, run, seq, step, toolName, b string, at time.Time) {
	t.Helper()
	key := run + "/" + seq
	r := &ledger.Record{Key: key, RunID: run, Seq: tool.Seq(seq), Step: step, Tool: toolName, ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
		InputDigest: "sha256:" + strings.Repeat(b, 32), LeaseUntil: at.Add(time.Minute), ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/" + seq}
	if claimed, _, err := l.Claim(t.Context(), r); err != nil || !claimed {
		t.Fatalf("claim %s: %v, %v", key, claimed, err)
	}
	if _, err := l.Finish(t.Context(), key, r.Token, ledger.StateCompleted, json.RawMessage(`{"id":"`+showCanary+`"}`), &ledger.Row{RunID: run, Seq: r.Seq,
		Attempt: 1, Step: step, Tool: toolName, IdempotencyKey: key, Status: ledger.StatusSucceeded, StartedAt: at, EndedAt: at}); err != nil {
		t.Fatal(err)
	}
}

// A show lists the rows of the review's own run only, as metadata: of
// two runs in the table, the other's rows never appear, and no recorded
// result or other run's input reaches the answer or the logs.
func TestShowListsOnlyTheReviewsOwnRunCalls(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var logs bytes.Buffer
	s.withShow(t, emailEnv, &logs)
	own := "arn:aws:states:us-east-1:123456789012:execution:toolgate-test_newsletter:" + review.NewID()
	other := "arn:aws:states:us-east-1:123456789012:execution:toolgate-test_newsletter:" + review.NewID()
	l := ledger.New(s.db, s.table)
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	putCall(t, l, own, "1", "fetch", "structured-data-fetch", "ab", at)
	putCall(t, l, own, "2", "draft", "structured-data-fetch", "ab", at.Add(time.Second))
	putCall(t, l, other, "1", "leak", "send-email", "cd", at)
	putCall(t, l, other, "3", "leak", "send-email", "cd", at)
	// A refusal's row item of the other run, and a review of it whose
	// input holds the canary.
	if err := l.PutRow(t.Context(), &ledger.Row{RunID: other, Seq: "4", Step: "leak", Tool: "send-email", Status: ledger.StatusRefused, StartedAt: at, EndedAt: at}); err != nil {
		t.Fatal(err)
	}
	s.pending(t, func(p *review.Params) {
		p.RunID, p.Input = other, json.RawMessage(`{"to":["team@example.com"],"subject":"`+showCanary+`","text":"t"}`)
	})
	r := s.pending(t, func(p *review.Params) { p.RunID = own })

	v := s.show(t, r.ID)
	want := []review.RunCall{
		{Seq: "1", Step: "fetch", Tool: "structured-data-fetch", Status: "SUCCEEDED"},
		{Seq: "2", Step: "draft", Tool: "structured-data-fetch", Status: "SUCCEEDED"},
	}
	got := slices.Clone(v.RunCalls)
	for i := range got {
		// The start is the claim's, the ledger's clock: RFC 3339 in UTC.
		if at, err := time.Parse(time.RFC3339, got[i].At); err != nil || !strings.HasSuffix(got[i].At, "Z") || time.Since(at) > time.Hour {
			t.Errorf("run call %d at %q: %v", i, got[i].At, err)
		}
		got[i].At = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run calls\n got %+v\nwant %+v", v.RunCalls, want)
	}
	if v.Solution != "newsletter" || v.SolutionVersion != "" {
		t.Fatalf("solution %q version %q", v.Solution, v.SolutionVersion)
	}
	answer, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(answer), showCanary) || strings.Contains(string(answer), "leak") || strings.Contains(string(answer), strings.Repeat("cd", 32)) {
		t.Fatalf("the show answer holds another run's or a result's value: %s", answer)
	}
	if strings.Contains(logs.String(), showCanary) {
		t.Fatalf("the logs hold a canary: %s", logs.String())
	}
	// The run calls are in the wire answer under run_calls, metadata only.
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(answer, &wire); err != nil {
		t.Fatal(err)
	}
	var calls []map[string]any
	if err := json.Unmarshal(wire["run_calls"], &calls); err != nil || len(calls) != 2 {
		t.Fatalf("run_calls %s: %v", wire["run_calls"], err)
	}
	for _, c := range calls {
		for k := range c {
			if k != "seq" && k != "step" && k != "tool" && k != "status" && k != "at" {
				t.Errorf("run_calls member %q", k)
			}
		}
	}
}

// The show answer's input schema is the one the review's registered
// toolset pins for its tool; a review whose toolset is not registered
// gets none, and no error.
func TestShowCarriesThePinnedInputSchema(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id := s.withToolsets(t)
	s.withShow(t, nil, nil)
	ts, err := ledger.New(s.db, s.table).Toolset(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	r := s.pending(t, func(p *review.Params) { p.ToolsetID = id })
	v := s.show(t, r.ID)
	if len(v.InputSchema) == 0 || !bytes.Equal(v.InputSchema, ts.Tools["send-email"].InputSchema) {
		t.Fatalf("input schema\n got %s\nwant %s", v.InputSchema, ts.Tools["send-email"].InputSchema)
	}
	unregistered := s.pending(t, func(p *review.Params) { p.ToolsetID = "ts_00000000000000000000000000000000" })
	if v := s.show(t, unregistered.ID); v.InputSchema != nil {
		t.Fatalf("an unregistered toolset's schema: %s", v.InputSchema)
	}
}

// GET /reviews/{id} on the Function URL goes through the same show: its
// body carries the console members.
func TestURLShowCarriesTheConsoleMembers(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.withShow(t, emailEnv, nil)
	run := "arn:aws:states:us-east-1:123456789012:execution:toolgate-test_newsletter:" + review.NewID()
	putCall(t, ledger.New(s.db, s.table), run, "1", "fetch", "structured-data-fetch", "ab", time.Now())
	r := s.pending(t, func(p *review.Params) { p.RunID = run })
	proof := s.callers.Proof(t, "alice", caller.Binding{Action: caller.ActionShow, Target: r.ID})
	ev, err := json.Marshal(urlRequest("GET", "/reviews/"+r.ID, "", map[string]string{"x-toolgate-caller-proof": proof}, "", false))
	if err != nil {
		t.Fatal(err)
	}
	out, err := decision.NewHandler(s.svc).Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	var v review.View
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s: %v", resp.StatusCode, resp.Body, err)
	}
	if v.Email == nil || v.Email.From.Address != "news@example.com" || len(v.RunCalls) != 1 || v.RunCalls[0].Step != "fetch" || v.Solution != "newsletter" {
		t.Fatalf("%s", resp.Body)
	}
}
