package hookreceiver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/toolgate/toolgate/shared/webhook"
)

// MaxBody bounds what the receiver reads of one request body, in bytes:
// 64 KiB, as webhook-delivery bounds what it reads of an answer
// (docs/webhooks.md, "Endpoints"), and far above any event, whose every
// payload string is at most webhook.MaxString (2 KiB). A longer body is
// recorded cut to MaxBody and answered 413 Content Too Large.
const MaxBody = 64 << 10

// HeaderTraceparent is the W3C Trace Context header field every delivery
// attempt carries (docs/webhooks.md, "Ids, headers and the body").
const HeaderTraceparent = "traceparent"

// Request is one request the receiver got.
type Request struct {
	// Path is the request's URL path, without the query.
	Path string
	// Attempt is its number among the requests to Path: 1 for the first.
	Attempt int
	// ID, Timestamp and Signature are the values of webhook-id,
	// webhook-timestamp (decimal unix seconds) and webhook-signature
	// (Standard Webhooks, "Webhook headers"); Traceparent is the W3C
	// traceparent field. Each is "" when absent.
	ID, Timestamp, Signature, Traceparent string
	// Header holds every header field as received.
	Header http.Header
	// Body is the raw body, at most MaxBody bytes; Truncated says it was
	// longer and is cut.
	Body      []byte
	Truncated bool
	// At is when the receiver got the request (its clock): the moment its
	// signature's timestamp is checked against (Verify).
	At time.Time
	// Status is what the receiver answered.
	Status int
}

// Receiver is a running webhook receiver (Start). Its methods may be
// called from any goroutine.
type Receiver struct {
	srv       *http.Server
	host      string
	closeOnce sync.Once

	mu      sync.Mutex
	got     []Request
	answers map[string]func(attempt int) int
	arrived chan struct{} // closed, and replaced, at each arrival
}

// Start listens on a free port of 127.0.0.1 (the system chooses it; the
// listener is held until Close; never another interface) and serves
// every method and path. The error is the listener's.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hookreceiver: listen: %w", err)
	}
	r := &Receiver{host: ln.Addr().String(), answers: map[string]func(int) int{}, arrived: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// Host is the receiver's host and port, "127.0.0.1:<port>": its entry on
// the local stack's webhook allow-list (stack.StackOptions.WebhookAllow),
// which names one port.
func (r *Receiver) Host() string { return r.host }

// Port is the receiver's port, in decimal.
func (r *Receiver) Port() string {
	_, port, _ := net.SplitHostPort(r.host)
	return port
}

// URL is the receiver's endpoint for path (which starts with "/"):
// "http://127.0.0.1:<port>" + path. Plain http, which the local stack
// allows to 127.0.0.1 only (docs/webhooks.md, "On the local stack").
func (r *Receiver) URL(path string) string { return "http://" + r.host + path }

// Close stops the receiver; open connections close. The records stay
// readable.
func (r *Receiver) Close() error {
	var err error
	r.closeOnce.Do(func() { err = r.srv.Close() })
	return err
}

// Answer makes the receiver answer each later request to path with
// status(attempt), attempt being the request's number among those to
// path (1 the first, counted from the first request to path). status is
// called with the receiver's lock held: it must not call the receiver.
// A nil status restores the default, 200 OK.
func (r *Receiver) Answer(path string, status func(attempt int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if status == nil {
		delete(r.answers, path)
		return
	}
	r.answers[path] = status
}

// Requests returns the requests to path so far, in the order they
// arrived.
func (r *Receiver) Requests(path string) []Request {
	got, _ := r.requests(path)
	return got
}

// Wait returns the requests to path, in the order they arrived, once done
// accepts them; done is called at once and again after each arrival at
// the receiver, never on a clock tick. When ctx ends first it returns the
// requests so far and an error wrapping ctx's, saying how many arrived.
func (r *Receiver) Wait(ctx context.Context, path string, done func([]Request) bool) ([]Request, error) {
	for {
		got, arrived := r.requests(path)
		if done(got) {
			return got, nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return got, fmt.Errorf("hookreceiver: %s got %d request(s), not yet the ones awaited: %w", path, len(got), context.Cause(ctx))
		}
	}
}

// requests returns the requests to path so far and a channel closed at
// the next arrival.
func (r *Receiver) requests(path string) ([]Request, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []Request
	for _, q := range r.got {
		if q.Path == path {
			got = append(got, q)
		}
	}
	return got, r.arrived
}

// serve records one request and answers it (the package's "Records" and
// "Answers").
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	truncated := len(body) > MaxBody
	if truncated {
		body = body[:MaxBody]
	}
	q := Request{Path: req.URL.Path, ID: req.Header.Get(webhook.HeaderID), Timestamp: req.Header.Get(webhook.HeaderTimestamp),
		Signature: req.Header.Get(webhook.HeaderSignature), Traceparent: req.Header.Get(HeaderTraceparent),
		Header: req.Header.Clone(), Body: body, Truncated: truncated, At: time.Now()}
	r.mu.Lock()
	q.Attempt = 1
	for _, g := range r.got {
		if g.Path == q.Path {
			q.Attempt++
		}
	}
	switch {
	case truncated:
		q.Status = http.StatusRequestEntityTooLarge
	case err != nil:
		q.Status = http.StatusBadRequest
	case r.answers[q.Path] != nil:
		q.Status = r.answers[q.Path](q.Attempt)
	default:
		q.Status = http.StatusOK
	}
	r.got = append(r.got, q)
	close(r.arrived)
	r.arrived = make(chan struct{})
	r.mu.Unlock()
	w.WriteHeader(q.Status)
}

// Verify checks that q is a delivery signed with key, as a receiver
// checks one (docs/webhooks.md, "Verifying a delivery"): webhook.Verify
// on its webhook-id, webhook-timestamp, webhook-signature and body, the
// timestamp within webhook.Tolerance (5 minutes) of q.At, when the
// receiver got it. A truncated body never verifies. Errors are
// webhook.Verify's (webhook.ErrNoMatchingSig, webhook.ErrTooOld, …) and
// never quote the key.
func Verify(q Request, key []byte) error {
	if q.Truncated {
		return fmt.Errorf("hookreceiver: the body is longer than %d bytes and was cut: %w", MaxBody, webhook.ErrNoMatchingSig)
	}
	return webhook.Verify(key, q.ID, q.Timestamp, q.Signature, q.Body, q.At, webhook.Tolerance)
}
