package stack_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
)

// inboundSecret is a fresh Standard Webhooks secret: "whsec_" and the
// base64 of 32 bytes, canary (hex) in the middle.
func inboundSecret(t *testing.T, canary string) (string, []byte) {
	t.Helper()
	key := []byte(canary[:32])
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key), key
}

// postInbound POSTs body to the stack's receiver at /in/<source>, signed
// with key (Standard Webhooks) under id now, and returns the answer's
// status and body.
func postInbound(t *testing.T, st *stack.Stack, source string, key []byte, id string, body []byte) (int, string) {
	t.Helper()
	h := http.Header{}
	if key != nil {
		now := time.Now()
		sig, err := webhook.Sign([][]byte{key}, id, now, body)
		if err != nil {
			t.Fatal(err)
		}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", sig)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, st.InboundURL()+"/in/"+source, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sourceEvents are the stack table's inbound event items of source.
func sourceEvents(t *testing.T, st *stack.Stack, source string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, raw := range tableItems(t, st) {
		var it map[string]any
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			t.Fatal(err)
		}
		pk, _ := it["pk"].(string)
		if origin, name, _, ok := table.InboundEventKeyOf(pk); ok && origin == inboundapi.OriginSource && name == source {
			out = append(out, it)
		}
	}
	return out
}

// consumed reports whether the stack runs a consumer of the inbound
// queue (inbound-start and its poller), which takes the messages a test
// would otherwise read from the queue.
func consumed(st *stack.Stack) bool {
	_, ok := st.Endpoints["inbound-start"]
	return ok
}

// sourceMessages receives every message now visible on the stack's
// inbound queue and returns those of source, deleting them; the others
// come back after 5 s.
func sourceMessages(t *testing.T, st *stack.Stack, source string) []inboundapi.Message {
	t.Helper()
	c := sqs.Client(st.SQS.Endpoint())
	q := st.InboundQueues.Queue.URL
	var out []inboundapi.Message
	for {
		got, err := c.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(q), MaxNumberOfMessages: 10, VisibilityTimeout: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			msg, err := inboundapi.DecodeMessage([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatalf("inbound message %q: %v", aws.ToString(m.Body), err)
			}
			if msg.Source != source {
				continue
			}
			out = append(out, msg)
			if _, err := c.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(q), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A Standard Webhooks delivery signed with its source's secret, POSTed to
// the receiver's Function URL on the local stack, is accepted (202),
// recorded once QUEUED and put on the inbound queue once; sent again it is
// a duplicate (200) and nothing more is queued.
func TestReceiverAcceptsASignedEventThroughItsFunctionURL(t *testing.T) {
	e := sharedEnv(t)
	if e.st.InboundURL() == "" {
		t.Fatal("the stack serves no receiver URL")
	}
	source := fresh("orders")
	secret, key := inboundSecret(t, newCanary(t))
	if err := e.st.AddTestSource(t.Context(), source, "standard-webhooks", "order-intake", secret); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"order.created","order":{"id":42}}`)
	if status, answer := postInbound(t, e.st, source, key, "msg_stack_1", body); status != http.StatusAccepted || answer != `{"status":"accepted"}` {
		t.Fatalf("answer %d %s, want 202 accepted", status, answer)
	}
	ev, err := store.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table).Event(t.Context(),
		store.EventKey{Origin: inboundapi.OriginSource, Name: source, ID: "msg_stack_1"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status == store.StatusReceived || ev.EventType != "order.created" {
		t.Fatalf("event item %+v, want it queued", ev)
	}
	if status, answer := postInbound(t, e.st, source, key, "msg_stack_1", body); status != http.StatusOK || answer != `{"status":"duplicate"}` {
		t.Fatalf("sent again: %d %s, want 200 duplicate", status, answer)
	}
	if n := len(sourceEvents(t, e.st, source)); n != 1 {
		t.Fatalf("%d event items of %s, want 1", n, source)
	}
	if !consumed(e.st) {
		if m := sourceMessages(t, e.st, source); len(m) != 1 || m[0] != inboundapi.SourceMessage(source, "msg_stack_1") {
			t.Fatalf("inbound messages %+v, want the one event", m)
		}
	}
	if err := e.st.RelayInbound(t.Context()); err != nil {
		t.Fatalf("the relay: %v", err)
	}
}

// Through the front, each refusal answers its status and neither stores
// nor queues anything: an unknown source, a bad signature, no signature,
// a body over the source's limit or over the hard cap, a body that is not
// JSON.
func TestReceiverRefusalsThroughTheFrontStoreAndQueueNothing(t *testing.T) {
	e := sharedEnv(t)
	source := fresh("refusals")
	secret, key := inboundSecret(t, newCanary(t))
	if err := e.st.AddTestSource(t.Context(), source, "standard-webhooks", "order-intake", secret); err != nil {
		t.Fatal(err)
	}
	_, otherKey := inboundSecret(t, newCanary(t))
	big := []byte(`{"pad":"` + strings.Repeat("x", 100<<10) + `"}`)
	huge := []byte(`{"pad":"` + strings.Repeat("x", 250<<10) + `"}`)
	for _, c := range []struct {
		name   string
		source string
		key    []byte
		body   []byte
		status int
	}{
		{"unknown source", fresh("nobody"), key, []byte(`{}`), http.StatusUnauthorized},
		{"signed with another secret", source, otherKey, []byte(`{}`), http.StatusUnauthorized},
		{"unsigned", source, nil, []byte(`{}`), http.StatusUnauthorized},
		{"over the source's limit", source, key, big, http.StatusRequestEntityTooLarge},
		{"over the hard cap", source, key, huge, http.StatusRequestEntityTooLarge},
		{"not JSON", source, key, []byte(`order 42`), http.StatusUnsupportedMediaType},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, answer := postInbound(t, e.st, c.source, c.key, "msg_refused", c.body)
			if status != c.status || len(answer) > 40 {
				t.Fatalf("answer %d %s, want %d and a short status", status, answer, c.status)
			}
			if ev := sourceEvents(t, e.st, c.source); len(ev) != 0 {
				t.Fatalf("event items %v, want none", ev)
			}
			if !consumed(e.st) {
				if m := sourceMessages(t, e.st, c.source); len(m) != 0 {
					t.Fatalf("inbound messages %+v, want none", m)
				}
			}
		})
	}
}

// A delivery's body and its source's secret, each holding a canary, are
// in no log of the stack's processes: neither when the delivery is
// accepted nor when it is refused. The secret is in no table item either
// (only sealed); the body is in its event item only, until its run starts.
func TestReceiverCanaryBodyAndSecretAreNeverLogged(t *testing.T) {
	e := sharedEnv(t)
	source := fresh("canary-in")
	secretCanary, bodyCanary, idCanary := newCanary(t), newCanary(t), newCanary(t)
	secret, key := inboundSecret(t, secretCanary)
	if err := e.st.AddTestSource(t.Context(), source, "standard-webhooks", "order-intake", secret); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"note": bodyCanary})
	_, otherKey := inboundSecret(t, newCanary(t))
	for _, c := range []struct {
		key    []byte
		status int
	}{{otherKey, http.StatusUnauthorized}, {key, http.StatusAccepted}, {key, http.StatusOK}} {
		if status, answer := postInbound(t, e.st, source, c.key, "msg_"+idCanary, body); status != c.status || strings.Contains(answer, bodyCanary) {
			t.Fatalf("answer %d %s, want %d without the body", status, answer, c.status)
		}
	}
	if _, own := functionLogs(e.st, "webhook-receiver"); !strings.Contains(own, source) {
		t.Fatalf("webhook-receiver's logs do not name %s: not its logs", source)
	}
	all, _ := functionLogs(e.st, "")
	canaries := map[string]string{"secret": secretCanary, "body": bodyCanary, "event id": idCanary}
	if got := canaryFind(all, canaries); got != "" {
		t.Errorf("the stack's logs hold %s", got)
	}
	var items bytes.Buffer
	for _, raw := range tableItems(t, e.st) {
		var it map[string]any
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			t.Fatal(err)
		}
		if pk, _ := it["pk"].(string); strings.Contains(pk, idCanary) {
			delete(it, "body") // the event's own body, held until its run starts
		}
		b, _ := json.Marshal(it)
		items.Write(append(b, '\n'))
	}
	if got := canaryFind(items.String(), map[string]string{"secret": secretCanary, "body": bodyCanary}); got != "" {
		t.Errorf("the table holds %s", got)
	}
}
