package sendemail

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/testkit"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// sesClient is an SES v2 client for a stand-in at endpoint: static fake
// credentials, us-east-1, and no retries, so that what a test sees is the
// single attempt the tool makes.
func sesClient(endpoint string, mod ...func(*sesv2.Options)) *sesv2.Client {
	o := sesv2.Options{
		BaseEndpoint:     aws.String(endpoint),
		Region:           local.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, ""),
		RetryMaxAttempts: 1,
	}
	for _, m := range mod {
		m(&o)
	}
	return sesv2.New(o)
}

// countingSES counts the SendEmail calls that reach the client.
type countingSES struct {
	API
	calls atomic.Int64
}

func (c *countingSES) SendEmail(ctx context.Context, in *sesv2.SendEmailInput, o ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	c.calls.Add(1)
	return c.API.SendEmail(ctx, in, o...)
}

// storedEmail is one entry of the emulator's GET /store.
type storedEmail struct {
	MessageID   string `json:"messageId"`
	From        string `json:"from"`
	ReplyTo     any    `json:"replyTo"`
	Destination struct {
		To  []string `json:"to"`
		Cc  []string `json:"cc"`
		Bcc []string `json:"bcc"`
	} `json:"destination"`
	Subject string `json:"subject"`
	Body    struct {
		HTML string `json:"html"`
		Text string `json:"text"`
	} `json:"body"`
}

func store(t testing.TB, endpoint string) []storedEmail {
	t.Helper()
	resp, err := http.Get(endpoint + "/store")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /store: %s %s", resp.Status, body)
	}
	var v struct {
		Emails []storedEmail `json:"emails"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET /store: %v: %s", err, body)
	}
	return v.Emails
}

func clearStore(t testing.TB, endpoint string) {
	t.Helper()
	resp, err := http.Post(endpoint+"/clear-store", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /clear-store: %s", resp.Status)
	}
}

func mustConfig(t testing.TB, from string, allow ...string) Config {
	t.Helper()
	cfg, err := ConfigFromEnv(env(map[string]string{EnvSender: from, EnvRecipientAllow: strings.Join(allow, ",")}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	return cfg
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// run calls the tool's Func directly with input.
func run(t testing.TB, f toolcall.Func, input any) (json.RawMessage, *tool.Error) {
	t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	out, err := f(t.Context(), &toolcall.Call{Input: json.RawMessage(raw), Attempt: 1})
	if err == nil {
		return out, nil
	}
	var te *tool.Error
	if !errors.As(err, &te) {
		t.Fatalf("the tool returned %T %v, not a *tool.Error", err, err)
	}
	if out != nil {
		t.Fatalf("the tool returned output %s with its error", out)
	}
	return nil, te
}

// emailCase is one line of testdata/email/recipients.jsonl (the project's
// copy of shared/cases/email.jsonl, sources kept).
type emailCase struct {
	Recipient string            `json:"recipient"`
	Allow     []string          `json:"allow"`
	Expect    recipient.Verdict `json:"expect"`
	Why       string            `json:"why"`
	Source    string            `json:"source"`
}

func loadCases(t testing.TB) []emailCase {
	t.Helper()
	return testkit.LoadJSONL[emailCase](t, filepath.Join("..", "..", "testdata", "email", "recipients.jsonl"))
}

// allowEntries returns the case's entries that load (entries no valid
// recipient could match, such as @[127.0.0.1], are refused by ParseList;
// see recipient's TestCases), plus extra.
func allowEntries(c emailCase, extra ...string) []string {
	var out []string
	for _, e := range c.Allow {
		if _, err := recipient.ParseList([]string{e}); err == nil {
			out = append(out, e)
		}
	}
	return append(out, extra...)
}

func wantCode(t testing.TB, te *tool.Error, code tool.Code) {
	t.Helper()
	if te == nil {
		t.Fatalf("no error, want %s", code)
	}
	if te.Code != code {
		t.Fatalf("error %v, want %s", te, code)
	}
}

// callFor is a toolcall.Call with input marshalled to JSON.
func callFor(t testing.TB, input any) *toolcall.Call {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return &toolcall.Call{Input: b, Attempt: 1}
}
