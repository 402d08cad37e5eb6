package sendemail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/toolgate/toolgate/shared/tool"
)

var sendInput = map[string]any{"to": []string{"a@example.com"}, "subject": "s", "text": "t"}

// sesError answers like SES v2 does for a failed SendEmail: the status,
// x-amzn-ErrorType (code, then ":" and the fault URI, as AWS sends it),
// x-amzn-RequestId and a JSON body {"message": ...}.
func sesError(status int, code, message string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-RequestId", "5f3c6f0e-0000-4000-8000-000000000000")
		if code != "" {
			w.Header().Set("x-amzn-ErrorType", code+":http://internal.amazon.com/coral/com.amazonaws.sesv2/")
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"message":` + jsonString(message) + `}`))
	}
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// The SES v2 error responses SendEmail can give, and the code each becomes.
// The SES emulator cannot produce errors, so an httptest server plays SES.
func TestSESErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		code    tool.Code
		applied bool
		msg     string // a part of the message
		retry   time.Duration
	}{
		{"too many requests", sesError(429, "TooManyRequestsException", "Too many requests."), tool.RateLimited, false, "TooManyRequestsException, HTTP 429", 0},
		{"sending rate", sesError(400, "LimitExceededException", "Maximum sending rate exceeded."), tool.RateLimited, false, "sending rate", 0},
		{"daily quota", sesError(400, "LimitExceededException", "Daily message quota exceeded."), tool.RateLimited, false, "daily sending quota", 0},
		{"throttling exception", sesError(400, "ThrottlingException", "Rate exceeded"), tool.RateLimited, false, "ThrottlingException", 0},
		{"429 with retry-after", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			sesError(429, "TooManyRequestsException", "slow down")(w, r)
		}, tool.RateLimited, false, "throttling", 7 * time.Second},
		{"429 without a body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, tool.RateLimited, false, "HTTP 429", 0},
		{"sandbox recipient", sesError(400, "MessageRejected", "Email address is not verified. The following identities failed the check in region US-EAST-1: a@example.com"),
			tool.PermissionDenied, false, "SES sandbox", 0},
		{"unverified sender", sesError(400, "MessageRejected", "Email address is not verified. The following identities failed the check in region US-EAST-1: toolgate@example.com"),
			tool.PermissionDenied, false, "not a verified SES identity", 0},
		{"message rejected", sesError(400, "MessageRejected", "Message rejected: contains a virus"), tool.PermanentFailure, false, "SES rejected the message (MessageRejected, HTTP 400)", 0},
		{"mail from not verified", sesError(400, "MailFromDomainNotVerifiedException", "MAIL FROM domain bounce.example.com is not verified."),
			tool.PermanentFailure, false, "MAIL FROM domain", 0},
		{"identity not found", sesError(404, "NotFoundException", "Identity arn:aws:ses:us-east-1:123456789012:identity/example.com does not exist."),
			tool.PermanentFailure, false, "sender identity ARN", 0},
		{"bad request", sesError(400, "BadRequestException", "Invalid email address <x>."), tool.PermanentFailure, false, "BadRequestException", 0},
		{"unknown 4xx", sesError(400, "SomethingNewException", "?"), tool.PermanentFailure, false, "SomethingNewException", 0},
		{"account suspended", sesError(400, "AccountSuspendedException", "Your account is suspended."), tool.PermissionDenied, false, "suspended", 0},
		{"sending paused", sesError(400, "SendingPausedException", "Sending is paused for this account."), tool.PermissionDenied, false, "paused", 0},
		{"access denied", sesError(403, "AccessDeniedException", "User: arn:aws:sts::123456789012:assumed-role/x is not authorized to perform: ses:SendEmail"),
			tool.PermissionDenied, false, "AccessDeniedException", 0},
		{"bad credentials", sesError(403, "UnrecognizedClientException", "The security token included in the request is invalid."), tool.PermissionDenied, false, "credentials", 0},
		{"internal error", sesError(500, "InternalServiceErrorException", "Internal error"), tool.UpstreamUnavailable, true, "may have been sent", 0},
		{"service unavailable", sesError(503, "ServiceUnavailable", "Service unavailable"), tool.UpstreamUnavailable, true, "HTTP 503", 0},
		{"502 from a load balancer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			w.Write([]byte("<html><body>Bad Gateway</body></html>"))
		}, tool.UpstreamUnavailable, true, "HTTP 502", 0},
		{"unreadable success", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"MessageId":`))
		}, tool.UpstreamUnavailable, true, "probably sent", 0},
		{"success without message id", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{}`))
		}, tool.OutputInvalid, true, "no message id", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				tt.handler(w, r)
			}))
			defer srv.Close()
			_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), sesClient(srv.URL)), sendInput)
			wantCode(t, te, tt.code)
			if te.MaybeApplied != tt.applied || !strings.Contains(te.Message, tt.msg) || te.RetryAfter != tt.retry {
				t.Fatalf("error %+v (message %q), want maybe applied %v, message with %q, retry after %v", te, te.Message, tt.applied, tt.msg, tt.retry)
			}
			if strings.Contains(te.Message, "identities failed") || strings.Contains(te.Message, "arn:aws:sts") {
				t.Fatalf("SES's own text reached the message: %q", te.Message)
			}
			if te.Err == nil && tt.code != tool.OutputInvalid {
				t.Fatal("the cause is lost")
			}
			if hits.Load() != 1 {
				t.Fatalf("%d requests reached SES, want 1", hits.Load())
			}
		})
	}
}

// SES's identity check: SendEmail from an unverified sender, or, while the
// account is in the SES sandbox, to an unverified recipient, answers
// MessageRejected with "Email address is not verified. The following
// identities failed the check in region <REGION>: <identities>" (Amazon SES
// Developer Guide, "Amazon SES email sending errors"; the identities may
// carry display names and end in an ellipsis). That is the account's
// permission, not the message's fault: TOOL_PERMISSION_DENIED, not
// retryable, nothing sent, and a message naming the sandbox and the
// unverified identity without any address, in the error or the log line.
//
// SES here is a fake (sesError, an httptest server answering in SES v2's
// REST-JSON error shape: HTTP 400, x-amzn-ErrorType, {"message": ...}):
// the SES emulator the other tests use (aws-ses-v2-local 2.10.2) has no
// identities and no sandbox, and its SendEmail never answers
// MessageRejected.
func TestSESSandboxRejection(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"Email address is not verified. The following identities failed the check in region US-EAST-1: toolgate@example.com",
		"Email address is not verified. The following identities failed the check in region US-EAST-1: toolgate@example.com, a@example.com",
		"Email address is not verified. The following identities failed the check in region EU-WEST-1: Team <team@example.com>, team@example.com",
		"Email address is not verified. The following identities failed the check in region AP-SOUTHEAST-2: a@example.com, b@example.com, c@example.com...",
	} {
		t.Run(text[strings.LastIndex(text, "region"):], func(t *testing.T) {
			t.Parallel()
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				sesError(400, "MessageRejected", text)(w, r)
			}))
			defer srv.Close()
			var logged bytes.Buffer
			cfg := mustConfig(t, sender, "@example.com")
			cfg.Log = slog.New(slog.NewJSONHandler(&logged, nil))
			_, te := run(t, Tool(cfg, sesClient(srv.URL)), sendInput)
			wantCode(t, te, tool.PermissionDenied)
			if te.Retryable() || te.MaybeApplied || te.Err == nil {
				t.Fatalf("%+v: want not retryable, not maybe applied, with its cause", te)
			}
			for _, want := range []string{"MessageRejected, HTTP 400", "not a verified SES identity", "SES sandbox", "nothing was sent"} {
				if !strings.Contains(te.Message, want) {
					t.Errorf("message %q does not say %q", te.Message, want)
				}
			}
			var line map[string]any
			if err := json.Unmarshal(logged.Bytes(), &line); err != nil {
				t.Fatalf("log %q: %v", logged.String(), err)
			}
			if line["ses_error"] != "MessageRejected" || line["error_code"] != string(tool.PermissionDenied) {
				t.Errorf("log line %s", logged.Bytes())
			}
			for _, out := range []string{te.Message, logged.String()} {
				if strings.Contains(out, "@") || strings.Contains(out, "identities failed") || strings.Contains(out, "Team") {
					t.Errorf("SES's text reached the caller or the log: %s", out)
				}
			}
			if hits.Load() != 1 {
				t.Fatalf("%d requests reached SES, want 1", hits.Load())
			}
		})
	}
}

// The tool makes one attempt even on a client configured to retry:
// SendEmail is not idempotent.
func TestOneAttemptEvenWithRetryingClient(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		sesError(500, "InternalServiceErrorException", "Internal error")(w, r)
	}))
	defer srv.Close()
	client := sesClient(srv.URL, func(o *sesv2.Options) { o.RetryMaxAttempts = 5 })
	_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), client), sendInput)
	wantCode(t, te, tool.UpstreamUnavailable)
	if hits.Load() != 1 {
		t.Fatalf("%d attempts, want 1", hits.Load())
	}
}

// Network faults: only a failure to connect proves nothing was sent.
func TestNetworkFaults(t *testing.T) {
	t.Parallel()
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), sesClient("http://"+addr)), sendInput)
		wantCode(t, te, tool.UpstreamUnavailable)
		if te.MaybeApplied || !strings.Contains(te.Message, "nothing was sent") {
			t.Fatalf("%+v", te)
		}
	})
	t.Run("unknown host", func(t *testing.T) {
		t.Parallel()
		_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), sesClient("http://ses.invalid")), sendInput)
		wantCode(t, te, tool.UpstreamUnavailable)
		if te.MaybeApplied {
			t.Fatalf("%+v", te)
		}
	})
	t.Run("tls handshake fails", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewUnstartedServer(sesError(200, "", ""))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		defer srv.Close()
		_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), sesClient(srv.URL)), sendInput)
		wantCode(t, te, tool.UpstreamUnavailable)
		if te.MaybeApplied || !strings.Contains(te.Message, "TLS") {
			t.Fatalf("%+v", te)
		}
	})
	t.Run("connection lost after the request was sent", func(t *testing.T) {
		t.Parallel()
		var got atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.ContentLength > 0)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), sesClient(srv.URL)), sendInput)
		wantCode(t, te, tool.UpstreamUnavailable)
		if !te.MaybeApplied || !got.Load() {
			t.Fatalf("%+v (request received: %v)", te, got.Load())
		}
	})
	t.Run("no answer before the http client times out", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}))
		defer srv.Close()
		client := sesClient(srv.URL, func(o *sesv2.Options) { o.HTTPClient = &http.Client{Timeout: 200 * time.Millisecond} })
		_, te := run(t, Tool(mustConfig(t, sender, "@example.com"), client), sendInput)
		wantCode(t, te, tool.UpstreamUnavailable)
		if !te.MaybeApplied || !strings.Contains(te.Message, "in time") {
			t.Fatalf("%+v", te)
		}
	})
	t.Run("no answer before the deadline", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		f := Tool(mustConfig(t, sender, "@example.com"), sesClient(srv.URL))
		_, err := f(ctx, callFor(t, sendInput))
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.UpstreamUnavailable || !te.MaybeApplied {
			t.Fatalf("%v", err)
		}
	})
	t.Run("deadline already passed", func(t *testing.T) {
		t.Parallel()
		ses := &countingSES{API: sesClient("http://127.0.0.1:1")}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Tool(mustConfig(t, sender, "@example.com"), ses)(ctx, callFor(t, sendInput))
		var te *tool.Error
		if !errors.As(err, &te) || te.MaybeApplied || ses.calls.Load() != 0 {
			t.Fatalf("%v, %d calls", err, ses.calls.Load())
		}
	})
}

// Typed SES errors without an HTTP response (as a hand-written API would
// return them) map by their code alone.
func TestClassifyTypedErrors(t *testing.T) {
	tests := []struct {
		err  error
		code tool.Code
	}{
		{&types.TooManyRequestsException{}, tool.RateLimited},
		{&types.LimitExceededException{}, tool.RateLimited},
		{&types.AccountSuspendedException{}, tool.PermissionDenied},
		{&types.SendingPausedException{}, tool.PermissionDenied},
		{&types.MessageRejected{}, tool.PermanentFailure},
		{&types.MessageRejected{Message: aws.String("Email address is not verified. The following identities failed the check in region EU-WEST-1: a@example.com")}, tool.PermissionDenied},
		{&types.MailFromDomainNotVerifiedException{}, tool.PermanentFailure},
		{&types.NotFoundException{}, tool.PermanentFailure},
		{&types.BadRequestException{}, tool.PermanentFailure},
		{&types.InternalServiceErrorException{}, tool.UpstreamUnavailable},
		{errors.New("failed to sign request"), tool.Internal},
	}
	for _, tt := range tests {
		if te := classify(tt.err); te.Code != tt.code {
			t.Errorf("classify(%T) = %v, want %s", tt.err, te, tt.code)
		}
	}
}
