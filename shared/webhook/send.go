package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/shared/addrrule"
)

// Bounds of one attempt.
const (
	// DefaultTimeout bounds an attempt: look-up, connection, request and
	// the read of the answer.
	DefaultTimeout = 10 * time.Second
	// MaxResponse is how much of an answer is read (and discarded), in
	// bytes; its headers are bounded the same.
	MaxResponse = 64 << 10
)

// UserAgent is the User-Agent of every delivery.
const UserAgent = "toolgate-webhooks/1"

// Sender POSTs one delivery under Rules (docs/webhooks.md, "Endpoints").
// It is safe for concurrent use.
type Sender struct {
	// Rules decide the endpoint before every attempt.
	Rules EndpointRules
	// Timeout bounds an attempt; zero: DefaultTimeout.
	Timeout time.Duration
	// Client is optional. When its Transport is an *http.Transport, each
	// attempt starts from a clone of it (TLS settings such as RootCAs, for
	// a test's server), and then sets what the rules need: no proxy, the
	// dial to checked addresses only, no connection reuse. Client's other
	// fields (CheckRedirect, Jar, Timeout) are not used: no redirect is
	// followed and Timeout bounds the attempt.
	Client *http.Client
}

// Attempt is what one attempt records: never a body, a header value or the URL.
type Attempt struct {
	// Status is the answer's HTTP status, 0 when there was none.
	Status int
	// Latency is the time from the start of the attempt to the answer's
	// headers, or to the failure.
	Latency time.Duration
	// Outcome is Classify's.
	Outcome Outcome
	// ErrorClass says what failed, "" when an answer came: "refused-url",
	// "refused-address", "lookup", "timeout", "connect", "tls",
	// "redirect" (a 3xx answer, not followed), "status" (another answer
	// that is not 2xx or 410), "request" (anything else before an answer).
	ErrorClass string
}

// errRefusedDial marks a connection refused by the dialer's second check.
var errRefusedDial = errors.New("dial refused")

// Send makes one attempt: Rules.Check and Rules.Resolve on endpoint (one
// look-up), then a POST of body with headers (Content-Type
// application/json and User-Agent added when absent) over a new
// connection to a checked address only (the dialer checks the socket's
// address once more), without proxy, TLS 1.2 or later verified against
// the host, following no redirect, within Timeout. At most MaxResponse
// bytes of the answer are read and discarded.
func (s *Sender) Send(ctx context.Context, endpoint string, headers http.Header, body []byte) Attempt {
	start := time.Now()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(class string) Attempt {
		return Attempt{Latency: time.Since(start), Outcome: Retry, ErrorClass: class}
	}
	u, addrs, err := s.Rules.CheckResolved(ctx, endpoint)
	if err != nil {
		var r *Refusal
		switch {
		case errors.As(err, &r) && r.Class == "lookup" && ctx.Err() != nil:
			return fail("timeout")
		case errors.As(err, &r):
			return fail(r.Class)
		}
		return fail("request")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fail("request")
	}
	for k, v := range headers {
		req.Header[k] = append([]string(nil), v...)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	tr := s.transport(u.Hostname(), u.Port(), u.Scheme, addrs)
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	latency := time.Since(start)
	if err != nil {
		return Attempt{Latency: latency, Outcome: Retry, ErrorClass: errorClass(ctx, err)}
	}
	_, _ = io.CopyN(io.Discard, resp.Body, MaxResponse)
	resp.Body.Close()
	a := Attempt{Status: resp.StatusCode, Latency: latency, Outcome: Classify(resp.StatusCode, nil)}
	switch {
	case a.Outcome != Retry:
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		a.ErrorClass = "redirect"
	default:
		a.ErrorClass = "status"
	}
	return a
}

// transport returns a transport for one attempt: it connects to host:port
// through addrs only, in order, with no proxy, and does not reuse the
// connection.
func (s *Sender) transport(host, port, scheme string, addrs []netip.Addr) *http.Transport {
	var tr *http.Transport
	if s.Client != nil {
		if base, ok := s.Client.Transport.(*http.Transport); ok {
			tr = base.Clone()
		}
	}
	if tr == nil {
		tr = &http.Transport{}
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	p, _ := strconv.Atoi(port)
	want := net.JoinHostPort(host, port)
	dialer := &net.Dialer{Control: s.control}
	tr.Proxy = nil // a proxy would connect to what was not checked
	tr.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		if addr != want {
			return nil, fmt.Errorf("transport asked for %s, checked %s", addr, want)
		}
		var last error
		for _, a := range addrs {
			conn, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(p)).String())
			if err == nil {
				return conn, nil
			}
			last = err
		}
		return nil, last
	}
	tr.DialTLSContext = nil
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	tr.TLSClientConfig.MinVersion = max(tr.TLSClientConfig.MinVersion, tls.VersionTLS12)
	tr.TLSClientConfig.InsecureSkipVerify = false
	tr.DisableKeepAlives = true
	tr.MaxResponseHeaderBytes = MaxResponse
	return tr
}

// control checks the socket's address once more before connecting.
func (s *Sender) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s is not an address", errRefusedDial, address)
	}
	if ok, why := addrrule.Check(ap.Addr(), s.Rules.AllowAddresses); !ok {
		return fmt.Errorf("%w: %s", errRefusedDial, why)
	}
	return nil
}

// errorClass names a failed round trip's cause.
func errorClass(ctx context.Context, err error) string {
	var (
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		opErr   *net.OpError
	)
	switch {
	case errors.Is(err, errRefusedDial):
		return "refused-address"
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid), errors.As(err, &record):
		return "tls"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "connect"
	}
	return "request"
}
