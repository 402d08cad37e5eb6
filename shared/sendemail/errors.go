package sendemail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/toolgate/toolgate/shared/tool"
)

// SES v2 error codes (the x-amzn-ErrorType of an error response; the types
// of github.com/aws/aws-sdk-go-v2/service/sesv2/types) and the common AWS
// error codes the tool tells apart.
var (
	// throttled: the account's sending rate or daily quota is used up.
	// SES v2 SendEmail answers TooManyRequestsException (HTTP 429) or
	// LimitExceededException ("Maximum sending rate exceeded", "Daily
	// message quota exceeded"); the others are AWS's common throttling codes.
	throttled = codes("TooManyRequestsException", "LimitExceededException", "Throttling", "ThrottlingException",
		"ThrottledException", "RequestThrottled", "RequestThrottledException", "RequestLimitExceeded", "SlowDown")
	// denied: the caller may not send at all, whatever the message.
	denied = codes("AccessDenied", "AccessDeniedException", "NotAuthorized", "UnrecognizedClientException",
		"InvalidClientTokenId", "InvalidSignatureException", "SignatureDoesNotMatch", "IncompleteSignature",
		"MissingAuthenticationToken", "ExpiredToken", "ExpiredTokenException", "OptInRequired")
	// serverFault: SES failed; the message may or may not have gone out.
	serverFault = codes("InternalServiceErrorException", "InternalFailure", "InternalServerError",
		"ServiceUnavailable", "ServiceUnavailableException")
)

func codes(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// sandboxNote explains an error whose text says that an address is not
// verified.
const sandboxNote = ": an address is not a verified SES identity; while the SES account is in the sandbox every recipient must be verified too, and the sender identity must be verified always"

// unverified reports whether an SES error message is the identity check's:
// "Email address is not verified. The following identities failed the
// check in region <region>: <identities>" (Amazon SES Developer Guide,
// "Amazon SES email sending errors"). SES sends it as MessageRejected when
// the sender identity is not verified, or, while the account is in the SES
// sandbox, when a recipient is not.
func unverified(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "not verified")
}

// classify turns a SendEmail error into a *tool.Error (see the package
// documentation for the table). The message never carries SES's own text.
func classify(err error) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	status, header := 0, http.Header(nil)
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		status, header = re.HTTPStatusCode(), re.Response.Header
	}
	var ae smithy.APIError
	code, msg := "", ""
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	if status == 0 && code == "" {
		return transportError(err)
	}
	name := describe(code, status)
	note := ""
	if unverified(msg) {
		note = sandboxNote
	}
	switch {
	case throttled[code] || status == http.StatusTooManyRequests:
		quota := "sending rate"
		if strings.Contains(strings.ToLower(msg), "daily") {
			quota = "daily sending quota"
		}
		return &tool.Error{Code: tool.RateLimited, Err: err, RetryAfter: retryAfter(header),
			Message: fmt.Sprintf("SES is throttling sends (%s): the account's %s is used up; nothing was sent", name, quota)}
	case code == "AccountSuspendedException":
		return tool.Wrap(tool.PermissionDenied, err, "SES has suspended this account's ability to send email (%s); nothing was sent", name)
	case code == "SendingPausedException":
		return tool.Wrap(tool.PermissionDenied, err, "email sending is paused for this SES account or its configuration set (%s); nothing was sent", name)
	case code == "MessageRejected" && unverified(msg):
		// Not the message's fault: the account may not send to or from
		// these addresses until an operator verifies them or moves the
		// account out of the sandbox. SES's text names the addresses, so it
		// is left out.
		return tool.Wrap(tool.PermissionDenied, err, "SES refused the message (%s) because an address is not a verified SES identity: while the account is in the SES sandbox every recipient must be a verified identity, and the sender identity must be verified always; nothing was sent", name)
	case denied[code] || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return tool.Wrap(tool.PermissionDenied, err, "SES refused the function's credentials, or its role may not send as the configured sender (%s); nothing was sent", name)
	case serverFault[code] || status >= 500:
		return tool.Wrap(tool.UpstreamUnavailable, err, "SES failed (%s); the email may have been sent", name).Applied()
	case status >= 200 && status < 300:
		return tool.Wrap(tool.UpstreamUnavailable, err, "SES accepted the request but its answer could not be read (HTTP %d); the email was probably sent", status).Applied()
	case code == "MessageRejected":
		return tool.Wrap(tool.PermanentFailure, err, "SES rejected the message (%s); nothing was sent", name)
	case code == "MailFromDomainNotVerifiedException":
		return tool.Wrap(tool.PermanentFailure, err, "the custom MAIL FROM domain of the sender identity is not verified in SES (%s); nothing was sent", name)
	case code == "NotFoundException" || status == http.StatusNotFound:
		return tool.Wrap(tool.PermanentFailure, err, "SES does not know a resource the request names, such as the sender identity ARN or a configuration set (%s); nothing was sent", name)
	default:
		return tool.Wrap(tool.PermanentFailure, err, "SES refused the request (%s)%s; nothing was sent", name, note)
	}
}

// describe names an error by its code and HTTP status.
func describe(code string, status int) string {
	switch {
	case code != "" && code != "UnknownError" && status != 0:
		return fmt.Sprintf("%s, HTTP %d", code, status)
	case code != "" && code != "UnknownError":
		return code
	default:
		return fmt.Sprintf("HTTP %d", status)
	}
}

// retryAfter reads an HTTP Retry-After header in seconds (RFC 9110
// §10.2.3); SES rarely sends one.
func retryAfter(h http.Header) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && n > 0 && n <= 3600 {
		return time.Duration(n) * time.Second
	}
	return 0
}

// transportError classifies an error without an HTTP response. Only a
// failure to connect (refused, unreachable, DNS, TLS handshake) proves the
// request never left; a timeout, a cancellation or a connection lost once
// connected may come after SES received the request.
func transportError(err error) *tool.Error {
	var (
		op       *net.OpError
		dns      *net.DNSError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		send     *smithyhttp.RequestSendError
		canceled *smithy.CanceledError
	)
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns):
		return tool.Wrap(tool.UpstreamUnavailable, err, "could not connect to SES; nothing was sent")
	case errors.As(err, &verify), errors.As(err, &record), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return tool.Wrap(tool.UpstreamUnavailable, err, "the TLS handshake with SES failed; nothing was sent")
	case !errors.As(err, &send) && !errors.As(err, &canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
		// Failed before the request was sent: building, signing, credentials.
		return tool.Wrap(tool.Internal, err, "the SES request could not be made; nothing was sent")
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return tool.Wrap(tool.UpstreamUnavailable, err, "SES did not answer in time; the email may have been sent").Applied()
	case errors.Is(err, context.Canceled):
		return tool.Wrap(tool.UpstreamUnavailable, err, "the call to SES was cancelled mid-request; the email may have been sent").Applied()
	default:
		return tool.Wrap(tool.UpstreamUnavailable, err, "the connection to SES was lost mid-request; the email may have been sent").Applied()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// logFailure writes one line for a failed SES call: the code, the SES error
// code, HTTP status and request id; the cause's text only for transport
// errors (SES's messages can name addresses).
func (cfg Config) logFailure(ctx context.Context, err error, te *tool.Error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	attrs := []any{"error_code", string(te.Code), "maybe_applied", te.MaybeApplied}
	var ae smithy.APIError
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		attrs = append(attrs, "http_status", re.HTTPStatusCode(), "request_id", re.ServiceRequestID())
	}
	if errors.As(err, &ae) {
		attrs = append(attrs, "ses_error", ae.ErrorCode())
	} else {
		attrs = append(attrs, "cause", err.Error())
	}
	log.WarnContext(ctx, "ses SendEmail failed", attrs...)
}
