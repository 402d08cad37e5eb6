package sendemail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

const sender = "toolgate@example.com"

// A send goes through the SES emulator, and GET /store shows exactly that
// mail: sender from the config, every field, recipients in their canonical
// form (local part lower-cased, IDN domains as A-labels).
func TestSendThroughEmulator(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	ses := &countingSES{API: sesClient(p.Endpoint())}
	cfg := mustConfig(t, sender, "@example.com", "reviewer@bücher.example", "@xn--hxajbheg2az3al.xn--jxalpdlp")
	in := map[string]any{
		"to":       []string{"Reviewer@Example.com"},
		"cc":       []string{"REVIEWER@xn--bcher-kva.example"},
		"bcc":      []string{"audit@example.com", "test@παράδειγμα.δοκιμή"},
		"reply_to": []string{"ops@example.com"},
		"subject":  "Review needed: step 3 — ünïcödé",
		"text":     "Please approve step 3.",
		"html":     "<p>Please approve <b>step 3</b>.</p>",
	}
	out, te := run(t, Tool(cfg, ses), in)
	if te != nil {
		t.Fatal(te)
	}
	var res map[string]string
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 || res["message_id"] == "" {
		t.Fatalf("output %s, want exactly {\"message_id\": ...}", out)
	}
	emails := store(t, p.Endpoint())
	if len(emails) != 1 {
		t.Fatalf("store holds %d emails, want 1: %+v", len(emails), emails)
	}
	e := emails[0]
	if e.MessageID != res["message_id"] || e.From != sender || e.Subject != in["subject"] ||
		e.Body.Text != in["text"] || e.Body.HTML != in["html"] {
		t.Errorf("stored %+v, sent %v with message id %s", e, in, res["message_id"])
	}
	if !slices.Equal(e.Destination.To, []string{"reviewer@example.com"}) ||
		!slices.Equal(e.Destination.Cc, []string{"reviewer@xn--bcher-kva.example"}) ||
		!slices.Equal(e.Destination.Bcc, []string{"audit@example.com", "test@xn--hxajbheg2az3al.xn--jxalpdlp"}) {
		t.Errorf("stored destination %+v", e.Destination)
	}
	if !strings.Contains(fmt.Sprint(e.ReplyTo), "ops@example.com") {
		t.Errorf("stored reply-to %v", e.ReplyTo)
	}
	if ses.calls.Load() != 1 {
		t.Errorf("%d SendEmail calls", ses.calls.Load())
	}
}

// Every refused or invalid recipient of the cases, in any of to, cc, bcc
// and reply_to, stops the send before SES: the right code, a message naming
// the address by its position (never the address) and the rule, no
// SendEmail call and nothing in the store.
// Every allowed one is sent.
func TestCasesThroughEmulator(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	ses := &countingSES{API: sesClient(p.Endpoint())}
	const ok = "ok@toolgate.example" // an allowed recipient for "to" when the case's address is elsewhere
	for _, c := range loadCases(t) {
		allow := allowEntries(c, "@toolgate.example")
		cfg := mustConfig(t, sender, allow...)
		rule := cfg.Allow.Decide(c.Recipient).Rule
		for _, field := range []string{"to", "cc", "bcc", "reply_to"} {
			t.Run(c.Why+"/"+field, func(t *testing.T) {
				clearStore(t, p.Endpoint())
				ses.calls.Store(0)
				in := map[string]any{"to": []string{ok}, "subject": "s", "text": "t"}
				if field == "to" {
					in["to"] = []string{c.Recipient}
				} else {
					in[field] = []string{c.Recipient}
				}
				out, te := run(t, Tool(cfg, ses), in)
				sent := store(t, p.Endpoint())
				switch c.Expect {
				case recipient.Allow:
					if te != nil || len(sent) != 1 || ses.calls.Load() != 1 {
						t.Fatalf("allowed %q: error %v, %d stored, %d calls", c.Recipient, te, len(sent), ses.calls.Load())
					}
					var res struct {
						MessageID string `json:"message_id"`
					}
					if err := json.Unmarshal(out, &res); err != nil || res.MessageID != sent[0].MessageID {
						t.Fatalf("output %s, stored %s", out, sent[0].MessageID)
					}
					return
				case recipient.Refuse:
					wantCode(t, te, tool.PermissionDenied)
				case recipient.Invalid:
					wantCode(t, te, tool.InputInvalid)
				}
				if len(sent) != 0 || ses.calls.Load() != 0 {
					t.Fatalf("%s %q: %d emails stored, %d SendEmail calls; want none", c.Expect, c.Recipient, len(sent), ses.calls.Load())
				}
				if want := field + "[0] " + rule; !strings.Contains(te.Message, want) {
					t.Fatalf("message %q does not contain %q", te.Message, want)
				}
				if strings.Contains(te.Message, c.Recipient) {
					t.Fatalf("message %q names the address %q", te.Message, c.Recipient)
				}
				if te.MaybeApplied {
					t.Fatal("a refusal before SES is marked maybe applied")
				}
			})
		}
	}
}

// Checks of the input as a whole, all before SES.
func TestInputRefusedBeforeSES(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	ses := &countingSES{API: sesClient(p.Endpoint())}
	cfg := mustConfig(t, sender, "@example.com")
	many := func(n int, prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d@example.com", prefix, i)
		}
		return out
	}
	tests := []struct {
		name  string
		input any
		code  tool.Code
		msg   string
	}{
		{"51 recipients", map[string]any{"to": many(20, "t"), "cc": many(20, "c"), "bcc": many(11, "b"), "subject": "s", "text": "t"}, tool.InputInvalid, "51 recipients"},
		{"51 in to", map[string]any{"to": many(51, "t"), "subject": "s", "text": "t"}, tool.InputInvalid, "quota of 50"},
		{"no to", map[string]any{"to": []string{}, "cc": []string{"a@example.com"}, "subject": "s", "text": "t"}, tool.InputInvalid, "at least one"},
		{"no body", map[string]any{"to": []string{"a@example.com"}, "subject": "s"}, tool.InputInvalid, "text, html"},
		{"empty subject", map[string]any{"to": []string{"a@example.com"}, "subject": "", "text": "t"}, tool.InputInvalid, "subject"},
		{"subject with crlf", map[string]any{"to": []string{"a@example.com"}, "subject": "s\r\nBcc: x@evil.com", "text": "t"}, tool.InputInvalid, "line break, U+000D"},
		{"from in the input", map[string]any{"to": []string{"a@example.com"}, "from": "ceo@example.com", "subject": "s", "text": "t"}, tool.InputInvalid, `unknown field "from"`},
		{"not an object", `["a@example.com"]`, tool.InputInvalid, "not a send-email input"},
		{"wrong type", `{"to":"a@example.com","subject":"s","text":"t"}`, tool.InputInvalid, "to must be []string"},
		{"invalid beats refused", map[string]any{"to": []string{"a@other.com", "b@example.com."}, "subject": "s", "text": "t"}, tool.InputInvalid, "to[1]"},
		{"refused after allowed", map[string]any{"to": []string{"a@example.com"}, "bcc": []string{"spy@other.com"}, "subject": "s", "text": "t"}, tool.PermissionDenied, `bcc[0] is not on the allow-list`},
		{"refused reply-to", map[string]any{"to": []string{"a@example.com"}, "reply_to": []string{"phish@other.com"}, "subject": "s", "text": "t"}, tool.PermissionDenied, "reply_to[0]"},
		{"many refused are summed up", map[string]any{"to": many(9, "x"), "cc": []string{"1@a.com", "2@a.com", "3@a.com", "4@a.com", "5@a.com", "6@a.com", "7@a.com"}, "subject": "s", "text": "t"}, tool.PermissionDenied, "and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, te := run(t, Tool(cfg, ses), tt.input)
			wantCode(t, te, tt.code)
			if !strings.Contains(te.Message, tt.msg) {
				t.Fatalf("message %q does not contain %q", te.Message, tt.msg)
			}
		})
	}
	if n := ses.calls.Load(); n != 0 {
		t.Fatalf("%d SendEmail calls", n)
	}
	if sent := store(t, p.Endpoint()); len(sent) != 0 {
		t.Fatalf("%d emails stored", len(sent))
	}

	// 50 recipients in all is the quota, not over it.
	out, te := run(t, Tool(cfg, ses), map[string]any{"to": many(20, "t"), "cc": many(20, "c"), "bcc": many(10, "b"), "subject": "s", "html": "<p>h</p>"})
	if te != nil {
		t.Fatal(te)
	}
	sent := store(t, p.Endpoint())
	if len(sent) != 1 || len(sent[0].Destination.To)+len(sent[0].Destination.Cc)+len(sent[0].Destination.Bcc) != 50 {
		t.Fatalf("output %s, stored %+v", out, sent)
	}
}

// A subject holding a line break (CR, LF, NEL, U+2028, U+2029) or another
// control character, at its start, middle or end, is refused before SES by
// mailheader.CheckSubject, the one rule a compile-time check of literal
// subjects is to share; the message names the character, not the subject.
func TestSubjectRefusedBeforeSES(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	ses := &countingSES{API: sesClient(p.Endpoint())}
	cfg := mustConfig(t, sender, "@example.com")
	const text = "Weekly digest"
	for _, r := range []rune{'\r', '\n', 0x0085, 0x2028, 0x2029, 0x00, 0x1b, 0x7f, 0x9b} {
		for _, place := range []struct{ name, subject string }{
			{"start", string(r) + "Bcc: x@evil.example " + text},
			{"middle", text[:6] + string(r) + "Bcc: x@evil.example " + text[6:]},
			{"end", text + string(r)},
		} {
			t.Run(fmt.Sprintf("U+%04X at the %s", r, place.name), func(t *testing.T) {
				_, te := run(t, Tool(cfg, ses), map[string]any{"to": []string{"a@example.com"}, "subject": place.subject, "text": "t"})
				wantCode(t, te, tool.InputInvalid)
				if want := fmt.Sprintf("U+%04X", r); !strings.Contains(te.Message, want) || strings.Contains(te.Message, "digest") || strings.Contains(te.Message, "evil") {
					t.Fatalf("message %q: want %s and no text of the subject", te.Message, want)
				}
				if te.MaybeApplied {
					t.Fatal("a refusal before SES is marked maybe applied")
				}
			})
		}
	}
	if n := ses.calls.Load(); n != 0 {
		t.Fatalf("%d SendEmail calls", n)
	}
	if sent := store(t, p.Endpoint()); len(sent) != 0 {
		t.Fatalf("%d emails stored", len(sent))
	}
	// The characters next to the refused ones go through.
	subject := "tab\there \u00a0 \u2027 \u202f " + text
	if _, te := run(t, Tool(cfg, ses), map[string]any{"to": []string{"a@example.com"}, "subject": subject, "text": "t"}); te != nil {
		t.Fatal(te)
	}
	if sent := store(t, p.Endpoint()); len(sent) != 1 || sent[0].Subject != subject {
		t.Fatalf("stored %+v", sent)
	}
}

// The identity ARN from the config reaches SES as FromEmailAddressIdentityArn.
func TestIdentityARNSent(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	ses := &recordingSES{API: sesClient(p.Endpoint())}
	const arn = "arn:aws:ses:us-east-1:123456789012:identity/example.com"
	cfg, err := ConfigFromEnv(env(map[string]string{EnvSender: sender, EnvSenderIdentityARN: arn, EnvRecipientAllow: "@example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, te := run(t, Tool(cfg, ses), map[string]any{"to": []string{"a@example.com"}, "subject": "s", "text": "t"}); te != nil {
		t.Fatal(te)
	}
	if len(ses.inputs) != 1 || aws.ToString(ses.inputs[0].FromEmailAddressIdentityArn) != arn || aws.ToString(ses.inputs[0].FromEmailAddress) != sender {
		t.Fatalf("SendEmail inputs %+v", ses.inputs)
	}
	if sent := store(t, p.Endpoint()); len(sent) != 1 {
		t.Fatalf("%d emails stored", len(sent))
	}
}

// Every address reaches SES in its canonical form, whatever case and
// domain form the input used: the form the allow-list's entries take, and
// the only one the ses:Recipients condition of the function's role admits
// (IAM compares case-sensitively).
func TestRecipientsSentCanonical(t *testing.T) {
	t.Parallel()
	ses := &recordingSES{API: acceptingSES{}}
	cfg := mustConfig(t, "Toolgate@Example.com", "Bob@Example.org", "@bücher.example")
	in := map[string]any{
		"to":       []string{"BOB@example.ORG"},
		"cc":       []string{"Anna@Bücher.Example"},
		"bcc":      []string{"Ops@XN--BCHER-KVA.example"},
		"reply_to": []string{"bob@EXAMPLE.org"},
		"subject":  "s", "text": "t",
	}
	if _, te := run(t, Tool(cfg, ses), in); te != nil {
		t.Fatal(te)
	}
	if len(ses.inputs) != 1 {
		t.Fatalf("%d SendEmail calls", len(ses.inputs))
	}
	req := ses.inputs[0]
	dest := req.Destination
	got := [][]string{dest.ToAddresses, dest.CcAddresses, dest.BccAddresses, req.ReplyToAddresses}
	want := [][]string{{"bob@example.org"}, {"anna@xn--bcher-kva.example"}, {"ops@xn--bcher-kva.example"}, {"bob@example.org"}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("field %d sent as %q, want %q", i, got[i], want[i])
		}
	}
	// The sender keeps its local part as written (TOOLGATE_SENDER, which
	// the ses:FromAddress condition equals).
	if from := aws.ToString(req.FromEmailAddress); from != "Toolgate@example.com" {
		t.Errorf("From %q", from)
	}
	// Each recipient is one the role's condition admits, compared as IAM
	// does: case-sensitively. (No entry here holds "*", "?" or "$".)
	patterns := cfg.Allow.IAMPatterns()
	if want := []string{"bob@example.org", "*@xn--bcher-kva.example"}; !slices.Equal(patterns, want) {
		t.Fatalf("IAMPatterns() = %q, want %q", patterns, want)
	}
	for _, a := range slices.Concat(dest.ToAddresses, dest.CcAddresses, dest.BccAddresses) {
		if !slices.ContainsFunc(patterns, func(p string) bool {
			d, isDomain := strings.CutPrefix(p, "*")
			return a == p || isDomain && strings.HasSuffix(a, d)
		}) {
			t.Errorf("%q is sent, but no pattern of %q admits it", a, patterns)
		}
	}
}

// acceptingSES accepts every message, with a made-up message id.
type acceptingSES struct{}

func (acceptingSES) SendEmail(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	return &sesv2.SendEmailOutput{MessageId: aws.String("m-1")}, nil
}

// recordingSES records what the tool asks SES to send.
type recordingSES struct {
	API
	inputs []*sesv2.SendEmailInput
}

func (r *recordingSES) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, o ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	r.inputs = append(r.inputs, in)
	return r.API.SendEmail(ctx, in, o...)
}

// The tool behind a real dispatcher (dynalite ledger, the catalog's
// send-email contract): a send succeeds and a refusal reaches the caller as
// TOOL_PERMISSION_DENIED with nothing sent.
func TestThroughDispatcher(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dyn := localtest.Dynalite(t)
	db := local.DynamoDB(dyn.Endpoint())
	if err := ledger.CreateTable(ctx, db, "toolgate-test"); err != nil {
		t.Fatal(err)
	}
	st := ledger.New(db, "toolgate-test")
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RegisterToolset(ctx, ts); err != nil {
		t.Fatal(err)
	}
	p := localtest.SES(t)
	cfg := mustConfig(t, sender, "@example.com")
	// The function seals its records and bindings with its own key;
	// reviews itself, without a key, only creates the approvals.
	key, err := seal.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	reviews := dynamo.NewStore(db, st.Table())
	d, err := dispatch.New(dispatch.Config{Mode: dispatch.OneTool("send-email"), MemoryMB: 128, Lane: lane.SFN, ExternalKeySecret: []byte("the send-email tests' external key secret")},
		dispatch.Deps{Ledger: st.WithMAC(key), Reviews: reviews.WithMAC(key), Run: Tool(cfg, sesClient(p.Endpoint())), Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// send-email is gated: each call carries the approval of a review of
	// exactly it, so that what is refused below is refused by the tool.
	envelope := func(seq int, input string) json.RawMessage {
		run := fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:toolgate-test:run-%d", time.Now().UnixNano())
		payload := json.RawMessage(fmt.Sprintf(`{"tool":"send-email","toolset_id":%q,"run_id":%q,"seq":%d,"step":"notify","idempotency_key":"%s/%d","attempt":1,"tolerate_duplicates":false,"input":%s}`,
			ts.ID, run, seq, run, seq, input))
		return reviewtest.Approve(t, reviews, payload)
	}

	out, err := d.Handle(ctx, envelope(1, `{"to":["reviewer@example.com"],"subject":"Review needed","text":"Please approve."}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		MessageID string `json:"message_id"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.MessageID == "" {
		t.Fatalf("result %s", out)
	}

	for _, in := range []struct {
		input string
		code  tool.Code
	}{
		{`{"to":["attacker@evil.com"],"subject":"s","text":"t"}`, tool.PermissionDenied},
		{`{"to":["reviewer@example.com\r\nBcc: attacker@evil.com"],"subject":"s","text":"t"}`, tool.InputInvalid},
		{`{"to":["reviewer@example.com"],"subject":"s"}`, tool.InputInvalid},
	} {
		_, err := d.Handle(ctx, envelope(2, in.input))
		ive, ok := err.(messages.InvokeResponse_Error)
		if !ok || ive.Type != string(in.code) {
			t.Fatalf("Handle(%s) = %#v, want %s", in.input, err, in.code)
		}
	}
	sent := store(t, p.Endpoint())
	if len(sent) != 1 || sent[0].MessageID != res.MessageID {
		t.Fatalf("store %+v, want only %s", sent, res.MessageID)
	}
}
