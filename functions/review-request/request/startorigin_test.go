package request_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

const (
	inboundRoleName = "toolgate-dev-inbound-start"
	inboundRoleARN  = "arn:aws:iam::000000000000:role/" + inboundRoleName
	otherRoleName   = "toolgate-dev-other"
	devStateMachine = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:"
)

// inboundLane is review-request's start alias for stage "dev" on a shared
// dynalite table, whose inbound-start role is inboundRoleName, with a
// caller verifier on the STS stand-in that counts that role's session
// names. The stand-in lets the local identity inbound-start assume it
// (and otherRoleName), as the consumer function does.
type inboundLane struct {
	store   *dynamo.Store
	sts     *local.STS
	keys    *local.LocalKeys
	callers *caller.Verifier
	proofs  ledger.ProofTable
	h       *request.Handler
	// now is the store's clock (the start record's deadline).
	now time.Time
}

func newInboundLane(t *testing.T) *inboundLane {
	t.Helper()
	_, db, table := localtest.SharedTable(t, "origin")
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	s, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, role := range []string{inboundRoleName, otherRoleName} {
		if err := s.Trust(role, "inbound-start"); err != nil {
			t.Fatal(err)
		}
	}
	l := &inboundLane{sts: s, keys: keys, now: time.Now().UTC().Truncate(time.Second), proofs: ledger.ProofTable{DB: db, Table: table}}
	l.store = dynamo.NewStore(db, table).WithClock(func() time.Time { return l.now })
	l.callers, err = caller.NewVerifier(caller.Config{Endpoint: s.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID,
		SessionRoles: []string{inboundRoleName, otherRoleName}}, l.proofs)
	if err != nil {
		t.Fatal(err)
	}
	role, err := request.ParseInboundRole(inboundRoleARN, local.LocalAccountID, []string{inboundRoleName})
	if err != nil {
		t.Fatal(err)
	}
	l.h = l.handler(role, l.callers)
	return l
}

func (l *inboundLane) handler(role request.InboundRole, v review.Callers) *request.Handler {
	return request.NewHandler(request.Config{Lane: lane.Start, Callers: caller.Config{Account: local.LocalAccountID}, Region: local.Region, Stage: "dev"},
		request.Deps{Store: l.store, Callers: v, InboundRole: role, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// session assumes role as the local identity inbound-start, with session
// name name, through the SDK's STS client on the stand-in.
func (l *inboundLane) session(t *testing.T, role, name string) aws.Credentials {
	t.Helper()
	c, err := l.keys.Credentials("inbound-start")
	if err != nil {
		t.Fatal(err)
	}
	client := sts.New(sts.Options{Region: local.Region, BaseEndpoint: aws.String(l.sts.Endpoint()),
		Credentials: credentials.StaticCredentialsProvider{Value: c}, RetryMaxAttempts: 1})
	out, err := client.AssumeRole(t.Context(), &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::000000000000:role/" + role),
		RoleSessionName: aws.String(name), DurationSeconds: aws.Int32(900)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.Credentials{AccessKeyID: *out.Credentials.AccessKeyId, SecretAccessKey: *out.Credentials.SecretAccessKey, SessionToken: *out.Credentials.SessionToken}
}

func (l *inboundLane) user(t *testing.T, name string) aws.Credentials {
	t.Helper()
	c, err := l.keys.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// start sends req to h with a proof signed by creds for binding b (nil:
// req's own, review.StartBindingOf).
func (l *inboundLane) start(t *testing.T, h *request.Handler, creds aws.Credentials, req review.StartRequest, b *caller.Binding) (review.StartAnswer, error) {
	t.Helper()
	bind := review.StartBindingOf(&req)
	if b != nil {
		bind = *b
	}
	proof, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, l.sts.Endpoint(), local.Region, bind, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req.Action, req.Proof = review.StartAction, proof
	payload, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Handle(context.Background(), payload)
	var answer review.StartAnswer
	if err == nil {
		if err := json.Unmarshal(out, &answer); err != nil {
			t.Fatal(err)
		}
	}
	return answer, err
}

func billing(event string) *review.StartOrigin {
	return &review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: local.LocalPrincipal("alice"), Event: event, Holders: []string{local.LocalPrincipal("alice")}}
}

func nightly() *review.StartOrigin {
	return &review.StartOrigin{Kind: review.OriginSchedule, Name: "nightly", AddedBy: local.LocalPrincipal("alice"), Event: "2026-12-03T18:00:00Z", Holders: []string{local.LocalPrincipal("alice")}}
}

func sessionARN(role, name string) string {
	return "arn:aws:sts::000000000000:assumed-role/" + role + "/" + name
}

// wantRefused fails t unless err is the code with the reason word.
func wantRefused(t *testing.T, err error, code review.Code, reason string) {
	t.Helper()
	var edge messages.InvokeResponse_Error
	if !errors.As(err, &edge) || edge.Type != string(code) || !strings.Contains(edge.Message, "["+reason+"]") {
		t.Fatalf("%v, want %s [%s]", err, code, reason)
	}
}

// A session of the inbound-start role records an inbound run's start,
// and a scheduled run's, with the origin its session name names: the
// starter is the session (a starter of its own per source and schedule),
// and the start record holds the origin. On dynalite and the STS
// stand-in, with sessions the SDK's AssumeRole got from it.
func TestStartLaneRecordsAnInboundStartWithItsOrigin(t *testing.T) {
	l := newInboundLane(t)
	for _, c := range []struct {
		name    string
		session string
		origin  *review.StartOrigin
	}{
		{"a source's event", "src-billing", billing("evt_1")},
		{"a schedule's firing", "sched-nightly", nightly()},
	} {
		t.Run(c.name, func(t *testing.T) {
			arn := devStateMachine + "in-" + c.session
			answer, err := l.start(t, l.h, l.session(t, inboundRoleName, c.session), review.StartRequest{ExecutionARN: arn, InputDigest: startDigest, Origin: c.origin}, nil)
			want := sessionARN(inboundRoleName, c.session)
			if err != nil || answer.Starter != want {
				t.Fatalf("answer %+v, %v; want starter %s", answer, err, want)
			}
			rec, err := l.store.RunStart(t.Context(), arn)
			if err != nil || rec.Starter != want || rec.Origin == nil || !reflect.DeepEqual(*rec.Origin, *c.origin) {
				t.Fatalf("record %+v (origin %+v), %v; want starter %s and origin %+v", rec, rec.Origin, err, want, c.origin)
			}
		})
	}
}

// An origin is admitted only from the inbound-start role's session of its
// name; that role's sessions must give one; and it comes with no fork.
// Each refusal is REVIEW_FORBIDDEN [start-origin] (a proof made for
// another origin: its proof is refused), and nothing is recorded.
func TestStartLaneAdmitsAnOriginOnlyFromItsSession(t *testing.T) {
	l := newInboundLane(t)
	src := l.session(t, inboundRoleName, "src-billing")
	noSessionRoles, err := caller.NewVerifier(caller.Config{Endpoint: l.sts.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, l.proofs)
	if err != nil {
		t.Fatal(err)
	}
	role, _ := request.ParseInboundRole(inboundRoleARN, local.LocalAccountID, []string{inboundRoleName})
	evt2 := review.StartRequest{Origin: billing("evt_2")}
	signedForEvt1 := review.StartBindingOf(&review.StartRequest{ExecutionARN: devStateMachine + "origin-proof", InputDigest: startDigest, Origin: billing("evt_1")})
	for _, c := range []struct {
		name   string
		h      *request.Handler // l.h when nil
		creds  aws.Credentials
		req    review.StartRequest
		bind   *caller.Binding
		code   review.Code
		reason string
	}{
		{name: "a person giving an origin", creds: l.user(t, "alice"), req: review.StartRequest{Origin: billing("evt_1")}},
		{name: "the role's session without an origin", creds: src},
		{name: "the session of another source", creds: src, req: review.StartRequest{Origin: &review.StartOrigin{Kind: "source", Name: "payroll", AddedBy: local.LocalPrincipal("alice"), Event: "evt_1", Holders: []string{local.LocalPrincipal("alice")}}}},
		{name: "a source's session giving a schedule of the same name", creds: src, req: review.StartRequest{Origin: &review.StartOrigin{Kind: "schedule", Name: "billing", AddedBy: local.LocalPrincipal("alice"), Event: "2026-12-03T18:00:00Z", Holders: []string{local.LocalPrincipal("alice")}}}},
		{name: "a schedule's session giving a source of the same name", creds: l.session(t, inboundRoleName, "sched-nightly"), req: review.StartRequest{Origin: &review.StartOrigin{Kind: "source", Name: "nightly", AddedBy: local.LocalPrincipal("alice"), Event: "evt_1", Holders: []string{local.LocalPrincipal("alice")}}}},
		{name: "another role's session of the right name", creds: l.session(t, otherRoleName, "src-billing"), req: review.StartRequest{Origin: billing("evt_1")}},
		{name: "an origin with forked_from", creds: src, req: review.StartRequest{Origin: billing("evt_1"), ForkedFrom: devStateMachine + "parent"}},
		{name: "a function without an inbound role", h: l.handler(request.InboundRole{}, l.callers), creds: src, req: review.StartRequest{Origin: billing("evt_1")}},
		{name: "a verifier that does not count the role's session names", h: l.handler(role, noSessionRoles), creds: src, req: review.StartRequest{Origin: billing("evt_1")}},
		{name: "a proof made for another event", creds: src, req: evt2, bind: &signedForEvt1, code: review.CodeUnauthenticated, reason: string(caller.Refused)},
		{name: "a holder of another account", creds: src, req: review.StartRequest{Origin: &review.StartOrigin{Kind: "source", Name: "billing", AddedBy: local.LocalPrincipal("alice"),
			Event: "evt_1", Holders: []string{local.LocalPrincipal("alice"), "arn:aws:iam::999999999999:user/mallory"}}}},
		{name: "a proof made for other holders", creds: src, req: review.StartRequest{Origin: &review.StartOrigin{Kind: "source", Name: "billing", AddedBy: local.LocalPrincipal("alice"),
			Event: "evt_1", Holders: []string{local.LocalPrincipal("bob")}}}, bind: &signedForEvt1, code: review.CodeUnauthenticated, reason: string(caller.Refused)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, code, reason := c.h, c.code, c.reason
			if h == nil {
				h = l.h
			}
			if code == "" {
				code, reason = review.CodeForbidden, request.ReasonStartOrigin
			}
			req := c.req
			req.ExecutionARN, req.InputDigest = devStateMachine+"origin-proof", startDigest
			if c.bind == nil {
				req.ExecutionARN = devStateMachine + "origin-" + strings.ReplaceAll(c.name, " ", "-")
			}
			_, err := l.start(t, h, c.creds, req, c.bind)
			wantRefused(t, err, code, reason)
			if rec, err := l.store.RunStart(t.Context(), req.ExecutionARN); !errors.Is(err, review.ErrNotFound) {
				t.Fatalf("a refused start was recorded: %+v %v", rec, err)
			}
		})
	}
}

// The same start again (a retried toolgate run, or inbound-start's
// retried message) renews the start record's deadline and is answered as
// the first; so the execution may start after the first deadline passed,
// by the renewed one. Another starter or another input under the name
// stays REVIEW_FORBIDDEN [start-recorded], and changes nothing. On
// dynalite and the STS stand-in, the store's clock moved.
func TestStartLaneRenewsTheSameStart(t *testing.T) {
	l := newInboundLane(t)
	t0 := l.now
	arn := devStateMachine + "renewed"
	input := json.RawMessage(`{"input":{"n":1},"meta":{}}`)
	_, digest, err := tool.InputDigest(input)
	if err != nil {
		t.Fatal(err)
	}
	alice := l.user(t, "alice")
	req := review.StartRequest{ExecutionARN: arn, InputDigest: digest}
	first, err := l.start(t, l.h, alice, req, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The Starter's check of an execution started two and a half minutes
	// on: late by the first record's deadline.
	check := func(startedAfter time.Duration) error {
		payload, _ := json.Marshal(tool.RunStartCheck{Check: tool.RunStartCheckName, ExecutionARN: arn, ExecutionInput: input,
			StartTime: t0.Add(startedAfter).Format(time.RFC3339Nano)})
		_, err := request.NewHandler(request.Config{Lane: lane.SFN, Callers: caller.Config{Account: local.LocalAccountID}},
			request.Deps{Store: l.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handle(t.Context(), payload)
		return err
	}
	wantRefused(t, check(150*time.Second), review.CodeUnauthenticated, request.ReasonStartLate)

	l.now = t0.Add(2 * time.Minute)
	again, err := l.start(t, l.h, alice, req, nil)
	if err != nil || again != first {
		t.Fatalf("the same start again: %+v, %v; want the first answer %+v", again, err, first)
	}
	if err := check(150 * time.Second); err != nil {
		t.Fatalf("the Starter's check after the renewal: %v", err)
	}
	if rec, err := l.store.RunStart(t.Context(), arn); err != nil || !rec.Deadline.Equal(t0.Add(2*time.Minute+review.StartDeadline)) {
		t.Fatalf("renewed deadline %s (%v), want %s", rec.Deadline, err, t0.Add(2*time.Minute+review.StartDeadline))
	}

	l.now = t0.Add(4 * time.Minute)
	_, otherDigest, _ := tool.InputDigest(json.RawMessage(`{"input":{"n":2},"meta":{}}`))
	for name, try := range map[string]func() error{
		"another starter": func() error { _, err := l.start(t, l.h, l.user(t, "mallory"), req, nil); return err },
		"another input": func() error {
			_, err := l.start(t, l.h, alice, review.StartRequest{ExecutionARN: arn, InputDigest: otherDigest}, nil)
			return err
		},
		"the same input with an end user": func() error {
			_, err := l.start(t, l.h, alice, review.StartRequest{ExecutionARN: arn, InputDigest: digest, EndUser: "customer-1"}, nil)
			return err
		},
	} {
		wantRefused(t, try(), review.CodeForbidden, request.ReasonStartRecorded)
		if rec, err := l.store.RunStart(t.Context(), arn); err != nil || rec.Starter != local.LocalPrincipal("alice") || rec.InputDigest != digest ||
			!rec.Deadline.Equal(t0.Add(2*time.Minute+review.StartDeadline)) {
			t.Fatalf("%s changed the record: %+v %v", name, rec, err)
		}
	}
	wantRefused(t, check(5*time.Minute), review.CodeUnauthenticated, request.ReasonStartLate)

	// An inbound start again (inbound-start's retried message) is renewed
	// the same way.
	src := l.session(t, inboundRoleName, "src-billing")
	in := review.StartRequest{ExecutionARN: devStateMachine + "in-renewed", InputDigest: digest, Origin: billing("evt_9")}
	for range 2 {
		if _, err := l.start(t, l.h, src, in, nil); err != nil {
			t.Fatalf("inbound start: %v", err)
		}
	}
}

// ParseInboundRole reads TOOLGATE_INBOUND_ROLE at cold start: unset is no
// role; else a role ARN of the deployment's account whose name is a
// session role.
func TestParseInboundRole(t *testing.T) {
	roles := []string{inboundRoleName}
	if r, err := request.ParseInboundRole("", local.LocalAccountID, roles); err != nil || r != (request.InboundRole{}) {
		t.Fatalf("unset: %+v, %v", r, err)
	}
	if r, err := request.ParseInboundRole("arn:aws:iam::000000000000:role/service/"+inboundRoleName, local.LocalAccountID, roles); err != nil ||
		r != (request.InboundRole{Account: local.LocalAccountID, Name: inboundRoleName}) {
		t.Fatalf("a role with a path: %+v, %v", r, err)
	}
	for name, v := range map[string]string{
		"not an ARN":                   "toolgate-dev-inbound-start",
		"a user":                       "arn:aws:iam::000000000000:user/" + inboundRoleName,
		"another account's role":       "arn:aws:iam::111111111111:role/" + inboundRoleName,
		"a role that is not a session": "arn:aws:iam::000000000000:role/toolgate-dev-other",
		"an assumed-role session":      sessionARN(inboundRoleName, "src-billing"),
	} {
		if _, err := request.ParseInboundRole(v, local.LocalAccountID, roles); err == nil || !strings.Contains(err.Error(), request.EnvInboundRole) {
			t.Errorf("%s: %v, want an error naming %s", name, err, request.EnvInboundRole)
		}
	}
}

// The names of inbound and scheduled runs (inbound.PrefixInbound,
// inbound.PrefixSchedule) are the inbound-start role's sessions' only: a
// person's start under one is REVIEW_FORBIDDEN [start-origin] and
// records nothing, so that no run a person started reads as one a
// source's event or a schedule's firing started. Another letter case is
// another name to Step Functions, and admitted.
func TestStartLaneRefusesAPersonsRunNamedAsAnInboundRun(t *testing.T) {
	l := newInboundLane(t)
	alice := l.user(t, "alice")
	for _, name := range []string{"in-0123456789abcdef0123456789abcdef", "sc-0123456789abcdef0123456789abcdef", "in-", "sc-mine"} {
		arn := devStateMachine + name
		_, err := l.start(t, l.h, alice, review.StartRequest{ExecutionARN: arn, InputDigest: startDigest}, nil)
		wantRefused(t, err, review.CodeForbidden, request.ReasonStartOrigin)
		if rec, err := l.store.RunStart(t.Context(), arn); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("%s: a refused start was recorded: %+v %v", name, rec, err)
		}
	}
	for _, name := range []string{"IN-mine", "inbound-report", "sched-mine"} {
		if answer, err := l.start(t, l.h, alice, review.StartRequest{ExecutionARN: devStateMachine + name, InputDigest: startDigest}, nil); err != nil || answer.Starter != local.LocalPrincipal("alice") {
			t.Fatalf("%s: %+v, %v; want recorded as alice", name, answer, err)
		}
	}
}

// foreignSessions stands in for a caller verifier that let a session of
// another account through: the STS stand-in issues no session of another
// account (it refuses every AssumeRole but the local account's), so this
// fake answers the identity AWS STS would give for
// arn:aws:sts::999999999999:assumed-role/<the inbound role's name>/src-billing,
// a role of the same name that the other account made.
type foreignSessions struct{}

func (foreignSessions) Verify(context.Context, string, caller.Binding) (caller.Identity, error) {
	arn := "arn:aws:sts::999999999999:assumed-role/" + inboundRoleName + "/src-billing"
	return caller.Identity{ARN: arn, Principal: arn, Account: "999999999999"}, nil
}

func (f foreignSessions) VerifyAt(ctx context.Context, proof string, b caller.Binding, _ time.Time) (caller.Identity, error) {
	return f.Verify(ctx, proof, b)
}

// Another account's keys start nothing with an origin: its user's proof is
// refused by the verifier ([caller-account]), and a session of a role of
// the inbound role's name in that account, were a verifier to admit it,
// is no session of the inbound-start role ([start-origin]).
func TestStartLaneRefusesAnOriginFromAnotherAccount(t *testing.T) {
	l := newInboundLane(t)
	outside, err := l.keys.CredentialsIn("999999999999", "inbound-start")
	if err != nil {
		t.Fatal(err)
	}
	arn := devStateMachine + "in-other-account"
	_, err = l.start(t, l.h, outside, review.StartRequest{ExecutionARN: arn, InputDigest: startDigest, Origin: billing("evt_1")}, nil)
	wantRefused(t, err, review.CodeUnauthenticated, string(caller.WrongAccount))
	role, err := request.ParseInboundRole(inboundRoleARN, local.LocalAccountID, []string{inboundRoleName})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.start(t, l.handler(role, foreignSessions{}), outside, review.StartRequest{ExecutionARN: arn, InputDigest: startDigest, Origin: billing("evt_1")}, nil)
	wantRefused(t, err, review.CodeForbidden, request.ReasonStartOrigin)
	if rec, err := l.store.RunStart(t.Context(), arn); !errors.Is(err, review.ErrNotFound) {
		t.Fatalf("a refused start was recorded: %+v %v", rec, err)
	}
}
