package stack_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	inboundstart "github.com/toolgate/toolgate/functions/inbound-start/starter"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// inboundEnv is the shared stack with one published inbound Solution
// (testdata/inbound-notify.yaml under a fresh name) that the subtests'
// sources and schedules start.
type inboundEnv struct {
	*env
	store    *store.Store
	solution string
}

// inboundWait bounds every wait of these tests on the stack: a message
// goes through the poller, the function's RIE and the start lane.
const inboundWait = 60 * time.Second

func newInboundEnv(t *testing.T) *inboundEnv {
	t.Helper()
	e := sharedEnv(t)
	src, err := os.ReadFile(filepath.Join("testdata", "inbound-notify.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name := fresh("inbound-notify")
	e.publish(t, name, strings.Replace(string(src), "solution: inbound-notify", "solution: "+name, 1))
	return &inboundEnv{env: e, store: store.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table), solution: name}
}

// addSource adds source name of scheme for the env's Solution
// (Stack.AddTestSource, added by stack.TestSourceAddedBy) and returns it
// with its Standard Webhooks signing key.
func (e *inboundEnv) addSource(t *testing.T, name string, scheme inbound.Scheme) (store.Source, []byte) {
	t.Helper()
	secret, key := inboundSecret(t, "0123456789abcdef0123456789abcdef")
	if err := e.st.AddTestSource(t.Context(), name, string(scheme), e.solution, secret); err != nil {
		t.Fatal(err)
	}
	return store.Source{Name: name, Scheme: string(scheme), Solution: e.solution, AddedBy: stack.TestSourceAddedBy}, key
}

// receive records an event of source as the webhook receiver does once it
// verified it (RECEIVED, its body held), without queueing it.
func (e *inboundEnv) receive(t *testing.T, source, id string, body []byte) store.EventKey {
	t.Helper()
	k := store.EventKey{Origin: inboundapi.OriginSource, Name: source, ID: id}
	sum := sha256.Sum256(body)
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := e.store.Receive(t.Context(), store.Event{Key: k, EventType: "invoice.paid", BodySHA256: "sha256:" + hex.EncodeToString(sum[:]),
		Body: body, ReceivedAt: now}, now.Add(90*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	return k
}

// queue sends the event's message to the inbound queue and marks it
// QUEUED, as the receiver does after Receive.
func (e *inboundEnv) queue(t *testing.T, k store.EventKey) {
	t.Helper()
	e.send(t, k)
	if err := e.store.MarkQueued(t.Context(), k, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// send puts k's message on the inbound queue (a duplicate, when sent
// again).
func (e *inboundEnv) send(t *testing.T, k store.EventKey) {
	t.Helper()
	body := inboundapi.SourceMessage(k.Name, k.ID).Encode()
	if _, err := e.st.SQS.Client().SendMessage(context.WithoutCancel(t.Context()), &awssqs.SendMessageInput{
		QueueUrl: aws.String(e.st.InboundQueues.Queue.URL), MessageBody: aws.String(string(body))}); err != nil {
		t.Error(err)
	}
}

// waitEvent polls k's item until its status is one of want, or fails t
// after inboundWait.
func (e *inboundEnv) waitEvent(t *testing.T, k store.EventKey, want ...string) store.Event {
	t.Helper()
	deadline := time.Now().Add(inboundWait)
	var last store.Event
	for time.Now().Before(deadline) {
		ev, err := e.store.Event(t.Context(), k)
		if err == nil && slices.Contains(want, ev.Status) {
			return ev
		}
		last = ev
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the consumer runs in its own process
	}
	t.Fatalf("event %+v is %q after %v, want %v", k, last.Status, inboundWait, want)
	return store.Event{}
}

// executions are the names of the env's Solution's executions on the
// local Step Functions endpoint that start with prefix.
func (e *inboundEnv) executions(t *testing.T, prefix string) []string {
	t.Helper()
	var names []string
	var token *string
	for {
		out, err := e.sf.ListExecutions(t.Context(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(e.machine()), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range out.Executions {
			if strings.HasPrefix(aws.ToString(x.Name), prefix) {
				names = append(names, aws.ToString(x.Name))
			}
		}
		if token = out.NextToken; token == nil {
			return names
		}
	}
}

func (e *inboundEnv) machine() string {
	return "arn:aws:states:" + local.Region + ":" + stack.AccountID + ":stateMachine:toolgate-" + stack.Stage + "_" + e.solution
}

// handled waits until the inbound-start function has logged n messages
// of event k as handled, a run started or found started before ("inbound
// run started", "inbound event already handled"), or fails t after
// inboundWait: each message of k that arrived has then been consumed.
func (e *inboundEnv) handled(t *testing.T, k store.EventKey, n int) {
	t.Helper()
	deadline := time.Now().Add(inboundWait)
	got := 0
	for time.Now().Before(deadline) {
		_, own := functionLogs(e.st, stack.InboundStartFunction)
		got = 0
		for _, line := range strings.Split(own, "\n") {
			var l struct{ Msg, Origin, Name, Event string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Origin == k.Origin && l.Name == k.Name && l.Event == k.ID &&
				(l.Msg == "inbound run started" || l.Msg == "inbound event already handled") {
				got++
			}
		}
		if got >= n {
			return
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the consumer runs in its own process
	}
	t.Fatalf("inbound-start handled %d messages of %+v after %v, want %d", got, k, inboundWait, n)
}

// startItem is the start record of execution arn, as review-request wrote
// it (nil when there is none).
func (e *inboundEnv) startItem(t *testing.T, arn string) map[string]dynamodbtypes.AttributeValue {
	t.Helper()
	out, err := local.DynamoDB(e.st.Dynamo.Endpoint()).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]dynamodbtypes.AttributeValue{table.PK: &dynamodbtypes.AttributeValueMemberS{Value: table.Start.Key(arn)},
			table.SK: &dynamodbtypes.AttributeValueMemberS{Value: table.Start.SKValue}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// session is the credentials of session of the inbound-start role, as the
// inbound-start function assumes it with its own local keys.
func (e *inboundEnv) session(t *testing.T, session string) aws.Credentials {
	t.Helper()
	keys, err := e.keys(t).Credentials(stack.InboundStartIdentity)
	if err != nil {
		t.Fatal(err)
	}
	c := sts.New(sts.Options{Region: local.Region, BaseEndpoint: aws.String(e.st.STS.Endpoint()), Credentials: credentials.StaticCredentialsProvider{Value: keys}})
	out, err := c.AssumeRole(t.Context(), &sts.AssumeRoleInput{RoleArn: aws.String(stack.InboundRoleARN()), RoleSessionName: aws.String(session), DurationSeconds: aws.Int32(900)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId), SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey),
		SessionToken: aws.ToString(out.Credentials.SessionToken), CanExpire: true, Expires: aws.ToTime(out.Credentials.Expiration)}
}

// invoke posts payload to a function instance's endpoint under the RIE
// and returns its answer, or its errorType and errorMessage.
func invoke(t *testing.T, endpoint string, payload any) (out []byte, errType, errMsg string) {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(endpoint+local.InvokePath, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	if json.Unmarshal(buf.Bytes(), &fe) == nil && fe.ErrorType != nil {
		return nil, *fe.ErrorType, aws.ToString(fe.ErrorMessage)
	}
	return buf.Bytes(), "", ""
}

// Inbound events and schedule firings start runs through the
// inbound-start function on the local stack (docs/webhooks.md, "How an
// event starts a run"; docs/schedules.md, "How a firing starts a run").
// One stack and one published Solution; each subtest has sources or a
// schedule of its own.
func TestInboundEventsAndFiringsStartOneRunEach(t *testing.T) {
	e := newInboundEnv(t)
	body := func(recipient string) []byte { return []byte(`{"id":"evt","recipient":"` + recipient + `"}`) }
	payload := func(recipient string) []byte { return []byte(`{"payload":{"recipient":"` + recipient + `"}}`) }
	_ = payload

	var first string // the first subtest's run, whose review the inbound session may not decide
	var firstSource string

	t.Run("an event starts one run, started by its source's session", func(t *testing.T) {
		src, key := e.addSource(t, fresh("billing"), inbound.StandardWebhooks)
		// Through the receiver's Function URL front, signed.
		if code, ans := postInbound(t, e.st, src.Name, key, "msg_1", body("team@example.com")); code != http.StatusAccepted {
			t.Fatalf("the receiver answered %d %s", code, ans)
		}
		k := store.EventKey{Origin: inboundapi.OriginSource, Name: src.Name, ID: "msg_1"}
		ev := e.waitEvent(t, k, store.StatusStarted, store.StatusFailed)
		if ev.Status != store.StatusStarted || ev.ExecutionARN == "" || len(ev.Body) != 0 {
			t.Fatalf("event: %s %q problems %v, body held %d bytes", ev.Status, ev.ExecutionARN, ev.Problems, len(ev.Body))
		}
		if !strings.Contains(ev.ExecutionARN, ":"+inbound.PrefixInbound) {
			t.Errorf("execution %s is not named with %q", ev.ExecutionARN, inbound.PrefixInbound)
		}
		d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(ev.ExecutionARN)})
		if err != nil {
			t.Fatalf("the run is not on the Step Functions endpoint: %v", err)
		}
		var in struct {
			Input struct {
				Source, EventID, EventType string
				Payload                    map[string]any
			}
		}
		if err := json.Unmarshal([]byte(aws.ToString(d.Input)), &in); err != nil || in.Input.Source != src.Name || in.Input.Payload["recipient"] != "team@example.com" {
			t.Errorf("execution input %s", aws.ToString(d.Input))
		}
		item := e.startItem(t, ev.ExecutionARN)
		var rec struct {
			Starter string `dynamodbav:"starter"`
			Origin  struct {
				Kind    string `dynamodbav:"kind"`
				Name    string `dynamodbav:"name"`
				AddedBy string `dynamodbav:"added_by"`
				Event   string `dynamodbav:"event"`
			} `dynamodbav:"origin"`
		}
		if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
			t.Fatal(err)
		}
		if want := stack.InboundSessionARN(inbound.SessionPrefixSource + src.Name); rec.Starter != want {
			t.Errorf("start record's starter %q, want %q", rec.Starter, want)
		}
		if rec.Origin.Kind != inboundapi.OriginSource || rec.Origin.Name != src.Name || rec.Origin.AddedBy != src.AddedBy || rec.Origin.Event != "msg_1" {
			t.Errorf("start record's origin %+v", rec.Origin)
		}
		// inbound-start logs no payload, proof or credential: the
		// recipient is the body's, the rest are in every proof.
		_, own := functionLogs(e.st, stack.InboundStartFunction)
		if !strings.Contains(own, ev.ExecutionARN) {
			t.Fatal("inbound-start's log does not name the run: the logs searched are not its")
		}
		for _, c := range []string{"team@example.com", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "SecretAccessKey"} {
			if strings.Contains(own, c) {
				t.Errorf("inbound-start's log holds %q", c)
			}
		}
		first, firstSource = ev.ExecutionARN, src.Name
	})

	t.Run("the inbound session cannot decide the reviews of its runs", func(t *testing.T) {
		if first == "" {
			t.Skip("no run started")
		}
		id := e.pending(t, first, nil)
		creds := e.session(t, inbound.SessionPrefixSource+firstSource)
		sign := func(b caller.Binding) string {
			p, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region, b, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		out, code, msg := invoke(t, e.decisionEndpoint(), review.DirectRequest{Action: review.ActionShow, ReviewID: id, Proof: sign(caller.Binding{Action: caller.ActionShow, Target: id})})
		var v review.View
		if code != "" || json.Unmarshal(out, &v) != nil {
			t.Fatalf("show %s as the inbound session: %s %s", id, code, msg)
		}
		bind, err := review.DecideBinding(id, review.Approve, v.InputDigest, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, code, msg = invoke(t, e.decisionEndpoint(), review.DirectRequest{Action: review.ActionDecide, ReviewID: id, Decision: review.Approve, Reason: "self", Proof: sign(bind)})
		if code != string(review.CodeSelfApproval) {
			t.Fatalf("the inbound session approved its own run's review: %s %s", code, msg)
		}
		e.decide(t, "reject", id) // another person ends the run
	})

	t.Run("the same event five times, also at once, starts one run", func(t *testing.T) {
		src, key := e.addSource(t, fresh("dup"), inbound.StandardWebhooks)
		k := store.EventKey{Origin: inboundapi.OriginSource, Name: src.Name, ID: "msg_dup"}
		// Five deliveries through the receiver, two in turn and three at
		// once, and four messages of the event on the queue at once, as
		// SQS's at-least-once delivery may hand the consumer.
		codes := make(chan int, 5)
		for range 2 {
			code, _ := postInbound(t, e.st, src.Name, key, k.ID, body("dup@example.com"))
			codes <- code
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, _ := postInbound(t, e.st, src.Name, key, k.ID, body("dup@example.com"))
				codes <- code
			}()
		}
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.send(t, k)
			}()
		}
		wg.Wait()
		close(codes)
		for code := range codes {
			if code != http.StatusAccepted && code != http.StatusOK {
				t.Errorf("the receiver answered %d to a repeat", code)
			}
		}
		ev := e.waitEvent(t, k, store.StatusStarted)
		e.handled(t, k, 5)
		name := ev.ExecutionARN[strings.LastIndex(ev.ExecutionARN, ":")+1:]
		if got := e.executions(t, name); len(got) != 1 {
			t.Fatalf("executions named %s: %v", name, got)
		}
		if got := e.executions(t, inbound.PrefixInbound); slices.Index(got, name) < 0 {
			t.Fatalf("no run of the event among %v", got)
		}
	})

	t.Run("an event left RECEIVED is queued by the relay and starts one run", func(t *testing.T) {
		src, _ := e.addSource(t, fresh("crash"), inbound.GitHub)
		k := e.receive(t, src.Name, "0b7c4a4e-1c5f-4b8e-9d3c-1f2e3d4c5b6a", body("relay@example.com"))
		// The receiver crashed after Receive: nothing was sent. The relay
		// queues items RECEIVED for longer than its bound (5 s locally).
		deadline := time.Now().Add(inboundWait)
		for {
			if err := e.st.RelayInbound(t.Context()); err != nil {
				t.Fatal(err)
			}
			ev, err := e.store.Event(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Status != store.StatusReceived {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the relay left %+v RECEIVED", k)
			}
			time.Sleep(time.Second) // a poll with a deadline: the relay's bound is 5 s
		}
		ev := e.waitEvent(t, k, store.StatusStarted)
		// GitHub's delivery id is not signed: the run is named after the
		// body's digest.
		sum := sha256.Sum256(body("relay@example.com"))
		want := inbound.ExecutionName(e.nameKey(t), inbound.PrefixInbound, src.Name, "sha256:"+hex.EncodeToString(sum[:]))
		if !strings.HasSuffix(ev.ExecutionARN, ":"+want) {
			t.Errorf("execution %s, want the name %s", ev.ExecutionARN, want)
		}
	})

	t.Run("an input the Solution's schema refuses is FAILED and starts nothing", func(t *testing.T) {
		src, _ := e.addSource(t, fresh("refused"), inbound.StandardWebhooks)
		k := e.receive(t, src.Name, "msg_refused", []byte(`{"id":"evt","canary":"do-not-record-4f2a"}`))
		e.queue(t, k)
		ev := e.waitEvent(t, k, store.StatusFailed, store.StatusStarted)
		if ev.Status != store.StatusFailed || len(ev.Problems) == 0 || len(ev.Body) != 0 {
			t.Fatalf("event: %s problems %v, body held %d bytes", ev.Status, ev.Problems, len(ev.Body))
		}
		if p := strings.Join(ev.Problems, "\n"); !strings.Contains(p, "recipient") || strings.Contains(p, "do-not-record") {
			t.Errorf("problems %q: want the missing member named, no value", p)
		}
		name := inbound.ExecutionName(e.nameKey(t), inbound.PrefixInbound, src.Name, "msg_refused")
		if got := e.executions(t, name); len(got) != 0 {
			t.Fatalf("a refused input started %v", got)
		}
		// The body's values reach no log: the problems name the member.
		if all, _ := functionLogs(e.st, stack.InboundStartFunction); strings.Contains(all, "do-not-record-4f2a") {
			t.Error("a value of the refused body is in a log")
		}
	})

	t.Run("a start recorded before a crash still starts exactly one run", func(t *testing.T) {
		src, _ := e.addSource(t, fresh("halfway"), inbound.StandardWebhooks)
		b := body("halfway@example.com")
		// The consumer's first receive recorded the start, then crashed
		// before StartExecution: this test makes the same start request
		// the function makes (its session, origin, input and name) through
		// the start lane, and starts nothing. Then the message arrives.
		name := inbound.ExecutionName(e.nameKey(t), inbound.PrefixInbound, src.Name, "msg_halfway")
		arn := executionARN(e.solution, name)
		input, err := json.Marshal(map[string]any{"input": map[string]any{"source": src.Name, "event_id": "msg_halfway", "event_type": "invoice.paid",
			"payload": json.RawMessage(b)}, "meta": map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		_, digest, err := tool.InputDigest(input)
		if err != nil {
			t.Fatal(err)
		}
		creds := e.session(t, inbound.SessionPrefixSource+src.Name)
		req := review.StartRequest{Action: review.StartAction, ExecutionARN: arn, InputDigest: digest,
			Origin: &review.StartOrigin{Kind: inboundapi.OriginSource, Name: src.Name, AddedBy: src.AddedBy, Event: "msg_halfway", Holders: []string{src.AddedBy}}}
		if req.Proof, err = caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: creds}, e.st.STS.Endpoint(), local.Region, review.StartBindingOf(&req), time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, code, msg := invoke(t, e.st.StartEndpoint, req); code != "" {
			t.Fatalf("the start lane refused the first start: %s %s", code, msg)
		}
		if e.startItem(t, arn) == nil {
			t.Fatal("no start record")
		}
		k := e.receive(t, src.Name, "msg_halfway", b)
		e.queue(t, k)
		ev := e.waitEvent(t, k, store.StatusStarted, store.StatusFailed)
		if ev.Status != store.StatusStarted || ev.ExecutionARN != arn {
			t.Fatalf("event: %s %s problems %v, want STARTED %s", ev.Status, ev.ExecutionARN, ev.Problems, arn)
		}
		if got := e.executions(t, name); len(got) != 1 {
			t.Fatalf("executions named %s: %v", name, got)
		}
	})

	t.Run("a schedule of rate(2 seconds) fires twice, and a redelivered firing starts nothing", func(t *testing.T) {
		name := fresh("nightly")
		now := time.Now().UTC().Truncate(time.Second)
		sch := store.Schedule{Name: name, Solution: e.solution, Expression: "rate(2 seconds)", Input: payload("ops@example.com"),
			AddedBy: local.LocalPrincipal("ops"), State: inboundapi.StateEnabled, AddedAt: now, UpdatedAt: now, Version: 1}
		if err := e.store.PutSchedule(t.Context(), sch); err != nil {
			t.Fatal(err)
		}
		var firings []string
		deadline := time.Now().Add(inboundWait)
		for len(firings) < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("after %v the schedule started %v", inboundWait, firings)
			}
			firings = e.firings(t, name, store.StatusStarted)
			time.Sleep(200 * time.Millisecond) // a poll with a deadline: the ticker fires every 2 s
		}
		if err := e.store.SetScheduleState(t.Context(), name, inboundapi.StatePaused, 1, time.Now()); err != nil {
			t.Fatal(err)
		}
		runs := e.executions(t, inbound.PrefixSchedule)
		for _, f := range firings[:2] {
			when, err := time.Parse(time.RFC3339, f)
			if err != nil {
				t.Fatal(err)
			}
			n := inbound.ExecutionName(e.nameKey(t), inbound.PrefixSchedule, name, f)
			if !slices.Contains(runs, n) {
				t.Errorf("the firing at %s started no run named %s", f, n)
			}
			// EventBridge Scheduler delivers at least once: the same
			// firing again starts nothing.
			if err := e.st.FireSchedule(t.Context(), name, when); err != nil {
				t.Fatal(err)
			}
			// The first delivery started it, the second finds it started.
			e.handled(t, store.EventKey{Origin: inboundapi.OriginSchedule, Name: name, ID: f}, 2)
			if got := e.executions(t, n); len(got) != 1 {
				t.Errorf("runs of the firing at %s after its redelivery: %v", f, got)
			}
		}
	})
}

// firings are the scheduled times (RFC 3339) of schedule's firing items
// with status, oldest first (a Scan: tests only).
func (e *inboundEnv) firings(t *testing.T, schedule, status string) []string {
	t.Helper()
	var out []string
	for _, it := range tableItems(t, e.st) {
		pk, ok := it[table.PK].(*dynamodbtypes.AttributeValueMemberS)
		if !ok {
			continue
		}
		st, _ := it["status"].(*dynamodbtypes.AttributeValueMemberS)
		origin, name, id, ok := table.InboundEventKeyOf(pk.Value)
		if ok && origin == inboundapi.OriginSchedule && name == schedule && st != nil && st.Value == status {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// nameKey is the inbound-start function's execution-name key, from the
// stage's external key in the SSM stand-in.
func (e *inboundEnv) nameKey(t *testing.T) []byte {
	t.Helper()
	v, _, ok := e.st.SSM.Value(functionconfig.ExternalKeyParam(stack.Stage))
	if !ok {
		t.Fatal("the stack holds no external key")
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		t.Fatal(errors.Join(errors.New("the external key is not base64"), err))
	}
	return inboundstart.NameKey(key)
}
