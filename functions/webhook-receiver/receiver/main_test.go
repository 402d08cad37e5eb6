package receiver_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/webhook-receiver/receiver"
	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
)

// The tests run the receiver on real parts: dynalite (one per test
// binary, a table per test), local-kms (one per test) and the SQS
// stand-in (one per test binary, a queue per test).

func TestMain(m *testing.M) {
	code := localtest.RunShared(m)
	sharedSQS.mu.Lock()
	if sharedSQS.s != nil {
		if err := sharedSQS.s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the SQS stand-in:", err)
		}
	}
	sharedSQS.mu.Unlock()
	os.Exit(code)
}

// sharedSQS is the test binary's SQS stand-in, started by the first test
// that asks (sqsServer).
var sharedSQS struct {
	mu     sync.Mutex
	s      *sqs.Server
	queues atomic.Int64
}

func sqsServer(t *testing.T) *sqs.Server {
	t.Helper()
	sharedSQS.mu.Lock()
	defer sharedSQS.mu.Unlock()
	if sharedSQS.s == nil {
		// Not t.Context(): the stand-in outlives the test that started it.
		s, err := sqs.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sharedSQS.s = s
	}
	return sharedSQS.s
}

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// faultyQueue is the SQS client with one fault switch: while failing is
// set, SendMessage fails before it reaches the stand-in, as a throttled or
// unreachable SQS would.
type faultyQueue struct {
	*awssqs.Client
	failing atomic.Bool
}

func (q *faultyQueue) SendMessage(ctx context.Context, in *awssqs.SendMessageInput, opts ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	if q.failing.Load() {
		return nil, errors.New("sqs: injected fault: ServiceUnavailable")
	}
	return q.Client.SendMessage(ctx, in, opts...)
}

// lockedBuffer is a log sink goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rig is one test's receiver and the real parts behind it.
type rig struct {
	h     *receiver.Handler
	st    *store.Store
	db    *dynamodb.Client
	table string
	kms   *localkms.Server
	sqs   *awssqs.Client
	queue sqs.Queue
	fault *faultyQueue
	clock *clock
	log   *lockedBuffer
}

// t0 is the rig's clock at start.
var t0 = time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)

func newRig(t *testing.T) *rig {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "receiver")
	srv := sqsServer(t)
	q, err := srv.CreateQueue(t.Context(), fmt.Sprintf("receiver-%d", sharedSQS.queues.Add(1)), sqs.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := localkms.StartForTest(t, "test")
	r := &rig{st: store.New(db, name), db: db, table: name, kms: k, sqs: srv.Client(), queue: q, clock: &clock{t: t0}, log: &lockedBuffer{}}
	r.fault = &faultyQueue{Client: r.sqs}
	r.h = receiver.New(receiver.Config{Store: r.st, Queue: r.fault, QueueURL: q.URL,
		Open: func(ctx context.Context, source string, s vault.Sealed) ([]byte, error) {
			return store.OpenSecret(ctx, k.Client(), source, s)
		},
		Now: r.clock.Now, Log: slog.New(slog.NewJSONHandler(r.log, nil)),
		Retention: 90 * 24 * time.Hour, RelayAfter: 2 * time.Minute, SecretCache: 5 * time.Minute})
	return r
}

// addSource adds source name with scheme and secrets (the last current,
// the others retiring in an hour), sealed with local-kms as the sources
// function seals them; maxBody 0 leaves the default.
func (r *rig) addSource(t *testing.T, name string, scheme inbound.Scheme, maxBody int, secrets ...string) {
	t.Helper()
	now := r.clock.Now().UTC().Truncate(time.Second)
	src := store.Source{Name: name, Scheme: string(scheme), Solution: "sol", AddedBy: "arn:aws:iam::000000000000:user/ops", MaxBodyBytes: maxBody,
		AddedAt: now, UpdatedAt: now, Version: 1, Secrets: r.seal(t, name, secrets...)}
	if err := r.st.PutSource(t.Context(), src); err != nil {
		t.Fatal(err)
	}
}

// seal seals secrets for source name: the last current, the others
// retiring an hour from the clock.
func (r *rig) seal(t *testing.T, name string, secrets ...string) []store.Secret {
	t.Helper()
	now := r.clock.Now().UTC().Truncate(time.Second)
	var out []store.Secret
	for i, s := range secrets {
		sealed, err := store.SealSecret(t.Context(), r.kms.Client(), r.kms.KeyARN, name, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		sec := store.Secret{Sealed: sealed, CreatedAt: now}
		if i < len(secrets)-1 {
			sec.RetiresAt = now.Add(time.Hour)
		}
		out = append(out, sec)
	}
	return out
}

// request is one request to the Function URL.
type request struct {
	method, path string
	headers      http.Header
	body         []byte
	b64          bool
}

// event is r as Lambda sends it (payload format 2.0, auth NONE): header
// names in lower case, a repeated header's values joined with ",".
func (q request) event() events.LambdaFunctionURLRequest {
	method := q.method
	if method == "" {
		method = http.MethodPost
	}
	h := map[string]string{}
	for k, vs := range q.headers {
		h[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	body := string(q.body)
	if q.b64 {
		body = base64.StdEncoding.EncodeToString(q.body)
	}
	return events.LambdaFunctionURLRequest{Version: "2.0", RawPath: q.path, Headers: h, Body: body, IsBase64Encoded: q.b64,
		RequestContext: events.LambdaFunctionURLRequestContext{AccountID: "anonymous", DomainName: "abc.lambda-url.us-east-1.on.aws",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: method, Path: q.path, SourceIP: "192.0.2.1"}}}
}

// answer is the receiver's answer.
type answer struct {
	status int
	body   string
}

func (r *rig) send(t *testing.T, q request) answer {
	t.Helper()
	payload, err := json.Marshal(q.event())
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.h.Handle(t.Context(), payload)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	return answer{resp.StatusCode, resp.Body}
}

// events are the table's inbound event items of source (every source's
// when source is "").
func (r *rig) events(t *testing.T, source string) []map[string]any {
	t.Helper()
	var out []map[string]any
	p := dynamodb.NewScanPaginator(r.db, &dynamodb.ScanInput{TableName: aws.String(r.table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(it, &m); err != nil {
				t.Fatal(err)
			}
			pk, _ := m["pk"].(string)
			if _, name, _, ok := table.InboundEventKeyOf(pk); ok && (source == "" || name == source) {
				out = append(out, m)
			}
		}
	}
	return out
}

// messages receives every message now visible on the rig's queue, and
// deletes them.
func (r *rig) messages(t *testing.T) []inboundapi.Message {
	t.Helper()
	var out []inboundapi.Message
	for {
		got, err := r.sqs.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(r.queue.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			msg, err := inboundapi.DecodeMessage([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatalf("message %q: %v", aws.ToString(m.Body), err)
			}
			out = append(out, msg)
			if _, err := r.sqs.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(r.queue.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// nothingKept fails t when the table holds an event item of source or
// the queue any message (each test's messages are read as it goes).
func (r *rig) nothingKept(t *testing.T, source string) {
	t.Helper()
	if ev := r.events(t, source); len(ev) != 0 {
		t.Errorf("the table holds %d event items of %s, want none", len(ev), source)
	}
	if m := r.messages(t); len(m) != 0 {
		t.Errorf("the queue holds %d messages, want none: %+v", len(m), m)
	}
}

// whsec is a Standard Webhooks secret of 32 bytes of b.
func whsec(b byte) string {
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// standard is a request to source signed with whsec secret at ts
// (Standard Webhooks), its id id.
func standard(t *testing.T, source, secret, id string, ts time.Time, body []byte) request {
	t.Helper()
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := webhook.Sign([][]byte{key}, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	h.Set("Content-Type", "application/json")
	return request{path: "/in/" + source, headers: h, body: body}
}

// hmacHex is the hex HMAC-SHA256 of msg under key.
func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// github is a request to source signed with secret as GitHub signs,
// delivery id delivery.
func github(source, secret, delivery, event string, body []byte) request {
	h := http.Header{}
	h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, string(body)))
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-GitHub-Event", event)
	h.Set("Content-Type", "application/json")
	return request{path: "/in/" + source, headers: h, body: body}
}

// stripe is a request to source signed with secret at ts as Stripe signs.
func stripe(source, secret string, ts time.Time, body []byte) request {
	t := strconv.FormatInt(ts.Unix(), 10)
	h := http.Header{}
	h.Set("Stripe-Signature", "t="+t+",v1="+hmacHex(secret, t+"."+string(body)))
	h.Set("Content-Type", "application/json")
	return request{path: "/in/" + source, headers: h, body: body}
}

// sourceNames counts the names fresh gives.
var sourceNames atomic.Int64

// fresh is a source name no other call in this test binary gives.
func fresh(prefix string) string { return fmt.Sprintf("%s-%d", prefix, sourceNames.Add(1)) }
