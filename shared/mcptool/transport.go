package mcptool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/tool"
)

// exchange is what the recorder saw of one HTTP request: the MCP Go SDK
// hides the status, the Retry-After header and whether the request left,
// which mapping a failure needs.
type exchange struct {
	// wrote: the transport wrote the whole request (httptrace's
	// WroteRequest without error), so the server may have it and have acted
	// on it.
	wrote bool
	// status is the response's HTTP status, 0 without a response.
	status int
	// retryAfter is the response's Retry-After header.
	retryAfter string
	// challenges holds a 401 or 403 response's WWW-Authenticate fields
	// (RFC 9110 §11.6.1), which say whether a credential was refused as
	// an invalid token (credential.InvalidToken).
	challenges http.Header
	// refused is the guard's refusal: nothing was sent.
	refused *fetch.Refusal
	// tooLarge: the body passed the read limit.
	tooLarge bool
}

// probe collects the exchanges of the requests made under one context
// (withProbe). Its first exchange is the request an operation started
// (the tools/call POST); its last, the latest (the failing page or
// handshake step).
type probe struct {
	mu          sync.Mutex
	first, last *exchange
	// later is closed when a request after the first has its answer (or
	// failed): the SDK's notifications/cancelled after a call's context
	// ended.
	later     chan struct{}
	laterOnce sync.Once
}

type probeKey struct{}

// withProbe makes every HTTP request the SDK sends under ctx record into p.
// The SDK makes its requests with the caller's context, or one detached
// from it that keeps its values.
func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

func (p *probe) start() *exchange {
	x := &exchange{}
	if p == nil {
		return x
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first == nil {
		p.first = x
	}
	p.last = x
	return x
}

// laterDone is closed when a request after the first is done.
func (p *probe) laterDone() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.later == nil {
		p.later = make(chan struct{})
	}
	return p.later
}

func (p *probe) done(x *exchange) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if x == p.first {
		return
	}
	if p.later == nil {
		p.later = make(chan struct{})
	}
	p.laterOnce.Do(func() { close(p.later) })
}

// update records into an exchange; a request without a probe records
// nothing.
func (p *probe) update(f func()) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}

// firstExchange and lastExchange are copies; the zero exchange when no
// request was made.
func (p *probe) firstExchange() exchange { return p.copyOf(func() *exchange { return p.first }) }
func (p *probe) lastExchange() exchange  { return p.copyOf(func() *exchange { return p.last }) }

func (p *probe) copyOf(which func() *exchange) exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x := which(); x != nil {
		return *x
	}
	return exchange{}
}

// recorder records each request into the probe of its context and bounds
// each response body to limit bytes; under a page tap (withPageTap) it
// also keeps the request's JSON-RPC id and the body it reads.
type recorder struct {
	next  http.RoundTripper
	limit int64
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	p, _ := req.Context().Value(probeKey{}).(*probe)
	tap, _ := req.Context().Value(tapKey{}).(*pageTap)
	if tap != nil {
		tap.request(req)
	}
	x := p.start()
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			p.update(func() { x.wrote = true })
		}
	}}
	resp, err := r.next.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	defer p.done(x)
	if err != nil {
		var ref *fetch.Refusal
		if errors.As(err, &ref) {
			p.update(func() { x.refused = ref })
		}
		return nil, err
	}
	p.update(func() {
		x.status = resp.StatusCode
		x.retryAfter = resp.Header.Get("Retry-After")
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			x.challenges = http.Header{"Www-Authenticate": resp.Header.Values("WWW-Authenticate")}
		}
	})
	resp.Body = &limitedBody{rc: resp.Body, left: r.limit, over: func() { p.update(func() { x.tooLarge = true }) }}
	if tap != nil {
		tap.answer(resp)
	}
	return resp, nil
}

// errTooLarge ends a body read past the limit.
var errTooLarge = errors.New("response body over the read limit")

// limitedBody passes at most left bytes of rc; one more byte makes every
// later Read fail with errTooLarge, never a silent truncation.
type limitedBody struct {
	rc   io.ReadCloser
	left int64 // -1 once over
	over func()
}

func (b *limitedBody) Read(p []byte) (int, error) {
	switch {
	case b.left < 0:
		return 0, errTooLarge
	case b.left == 0:
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.left = -1
			b.over()
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// traceHeaders sets the W3C trace context headers (Trace Context Level 1
// §3: traceparent, and tracestate when not empty) on every request of one
// call's session, in place of any the SDK set, on a copy of the request
// as http.RoundTripper requires. The MCP Go SDK (v1.8.0) has no hook for
// them; StreamableClientTransport sends every request through its
// HTTPClient, so this is where they are added. Never baggage.
type traceHeaders struct {
	next http.RoundTripper
	tc   tool.TraceContext
}

func (t *traceHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("traceparent", t.tc.Traceparent)
	req.Header.Del("tracestate")
	if t.tc.Tracestate != "" {
		req.Header.Set("tracestate", t.tc.Tracestate)
	}
	return t.next.RoundTrip(req)
}
