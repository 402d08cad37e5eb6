package httprecorder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Options configure Start; the zero value is ready to use.
type Options struct {
	// KeyHeader names the idempotency key's header field; default
	// DefaultKeyHeader.
	KeyHeader string
	// MaxBody bounds a request body in bytes; a longer one is answered
	// 413 Content Too Large and not applied. Default DefaultMaxBody.
	MaxBody int64
}

// DefaultKeyHeader is the field the IETF HTTPAPI draft "The
// Idempotency-Key HTTP Header Field" defines.
const DefaultKeyHeader = "Idempotency-Key"

// DefaultMaxBody is 1 MiB: more than the http tool's largest request body
// (192 KiB), so that a test sees what the tool sent.
const DefaultMaxBody = 1 << 20

// Answer is one scripted answer (Script). Status 0 is 200. Header is sent
// as given. Body, when not nil, is sent JSON-encoded as
// application/json; nil sends the default body: the application's JSON for
// an applied write, {"path": ...} for a read, {"error": <status text>}
// otherwise. Applied marks a non-2xx answer to a write as sent after the
// write was applied (a 502 from a gateway whose origin acted); a 2xx
// answer to a write, and a Hang, always apply it. Hang reads the whole
// body, applies a write, records the request with Status 0, and answers
// nothing until the client gives up or the service closes.
//
// EchoHeaders makes the body every request header as received,
// Authorization included, as {"headers": {name: [values]}}: the answer
// of a careless server that quotes a credential back, which toolgate must
// keep out of everything it records.
type Answer struct {
	Status      int
	Header      http.Header
	Body        any
	Applied     bool
	Hang        bool
	EchoHeaders bool
}

// OK is 200 with body (nil: the default body).
func OK(body any) Answer { return Answer{Status: http.StatusOK, Body: body} }

// Status is code with the header fields kv (name, value, name, value, …).
func Status(code int, kv ...string) Answer {
	a := Answer{Status: code, Header: http.Header{}}
	for i := 0; i+1 < len(kv); i += 2 {
		a.Header.Add(kv[i], kv[i+1])
	}
	return a
}

// Redirect is code (301, 302, 303, 307 or 308) with Location: location.
func Redirect(code int, location string) Answer { return Status(code, "Location", location) }

// TooManyRequests is 429 with Retry-After: seconds (RFC 9110 §10.2.3,
// delay-seconds).
func TooManyRequests(seconds int) Answer {
	return Status(http.StatusTooManyRequests, "Retry-After", strconv.Itoa(seconds))
}

// Hang is the slow answer: the request is read and a write applied, then
// nothing is answered (Answer.Hang).
func Hang() Answer { return Answer{Hang: true} }

// Request is one request the service received, in Seq order.
type Request struct {
	Seq    int // 1, 2, … in the order requests were recorded
	Method string
	Path   string
	Query  string // the raw query, without "?"
	// Header holds the request's header fields in canonical form, with
	// the values of redacted fields replaced by "<redacted>".
	Header http.Header
	// Key is the idempotency key's field value; "" when absent.
	Key string
	// AuthorizationSHA256 is the lower-case hex SHA-256 of the
	// Authorization field's value, "" when absent: which credential was
	// sent, without keeping it.
	AuthorizationSHA256 string
	// BodyBytes and BodySHA256 (lower-case hex) describe the body read;
	// the body itself is never kept.
	BodyBytes  int
	BodySHA256 string
	// Status is what was answered; 0 for a Hang.
	Status int
	// Applied: this request applied a write (its effect happened now).
	// Replayed: it was answered with its key's kept answer and applied
	// nothing. Application names the application either way ("A-1").
	Applied     bool
	Replayed    bool
	Application string
}

// redacted are the fields whose values a record never holds.
var redacted = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// keyState is what the service knows of one idempotency key.
type keyState struct {
	digest      string // the body's, to refuse the key's reuse with another
	application string
	kept        []byte // the application's answer, 200 application/json
}

// Server is a running recording service (Start).
type Server struct {
	srv       *http.Server
	url       string
	keyHeader string
	maxBody   int64
	stop      chan struct{}
	closeOnce sync.Once

	mu           sync.Mutex
	requests     []Request
	arrived      chan struct{} // closed, and replaced, when a request is recorded
	scripts      map[string][]Answer
	keys         map[string]*keyState
	applications int
}

// Start listens on a free port of 127.0.0.1 (the system chooses it; the
// listener is held until Close) and serves.
func Start(o Options) (*Server, error) {
	if o.KeyHeader == "" {
		o.KeyHeader = DefaultKeyHeader
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("httprecorder: listen: %w", err)
	}
	s := &Server{url: "http://" + ln.Addr().String(), keyHeader: http.CanonicalHeaderKey(o.KeyHeader), maxBody: o.MaxBody,
		stop: make(chan struct{}), arrived: make(chan struct{}), scripts: map[string][]Answer{}, keys: map[string]*keyState{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the service's base URL, http://127.0.0.1:<port>.
func (s *Server) URL() string { return s.url }

// Host is the service's host and port, 127.0.0.1:<port>: the entry an
// allow-list or a toolset's http_hosts names it by.
func (s *Server) Host() string { return s.url[len("http://"):] }

// Close stops the service: hanging answers end, open connections close.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		err = s.srv.Close()
	})
	return err
}

// Script queues answers for path (the request's path, without the
// query), after any still queued; each request to path takes the next.
func (s *Server) Script(path string, answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[path] = append(s.scripts[path], answers...)
}

// Requests returns the requests recorded so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneRequests(s.requests)
}

// Applications is how many writes the service applied.
func (s *Server) Applications() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applications
}

// Wait blocks until at least n requests have been recorded and returns
// them all, or returns ctx's error.
func (s *Server) Wait(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			out := cloneRequests(s.requests)
			s.mu.Unlock()
			return out, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("httprecorder: waiting for %d requests: %w", n, ctx.Err())
		case <-arrived:
		}
	}
}

func cloneRequests(in []Request) []Request {
	out := slices.Clone(in)
	for i := range out {
		out[i].Header = out[i].Header.Clone()
	}
	return out
}

// isWrite reports whether method changes the resource: POST, PUT, PATCH,
// DELETE (RFC 9110 §9.2.1: not safe).
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// reply is what serve sends once the lock is released.
type reply struct {
	status int
	header http.Header
	body   []byte
	hang   bool
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Key: r.Header.Get(s.keyHeader), BodyBytes: len(body)}
	if v := r.Header.Get("Authorization"); v != "" {
		d := sha256.Sum256([]byte(v))
		rec.AuthorizationSHA256 = hex.EncodeToString(d[:])
	}
	received := r.Header.Clone()
	for _, k := range redacted {
		if vs := rec.Header.Values(k); len(vs) > 0 {
			rec.Header[http.CanonicalHeaderKey(k)] = slices.Repeat([]string{"<redacted>"}, len(vs))
		}
	}
	sum := sha256.Sum256(body)
	rec.BodySHA256 = hex.EncodeToString(sum[:])
	var out reply
	switch {
	case err != nil:
		out = errorReply(http.StatusBadRequest)
	case int64(len(body)) > s.maxBody:
		out = errorReply(http.StatusRequestEntityTooLarge)
	default:
		out = s.answer(&rec, received)
	}
	if !out.hang {
		rec.Status = out.status
	}
	s.record(rec)
	if out.hang {
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		// Close the connection with no answer at all (net/http recovers
		// this panic without logging it); returning would send an empty 200.
		panic(http.ErrAbortHandler)
	}
	for k, vs := range out.header {
		w.Header()[k] = vs
	}
	if out.body != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out.body)))
	}
	w.WriteHeader(out.status)
	w.Write(out.body)
}

// answer decides rec's answer under the lock: the key's kept answer or
// refusal, else the path's next scripted answer or its default; and
// whether the request applies a write.
func (s *Server) answer(rec *Request, received http.Header) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	write := isWrite(rec.Method)
	var ks *keyState
	if write && rec.Key != "" {
		if ks = s.keys[rec.Key]; ks != nil {
			if ks.digest != rec.BodySHA256 {
				// The draft's answer to a key reused with another payload.
				return errorReply(http.StatusUnprocessableEntity)
			}
			rec.Replayed, rec.Application = true, ks.application
			return reply{status: http.StatusOK, body: ks.kept}
		}
		ks = &keyState{digest: rec.BodySHA256}
		s.keys[rec.Key] = ks
	}
	a, scripted := Answer{}, false
	if q := s.scripts[rec.Path]; len(q) > 0 {
		a, scripted, s.scripts[rec.Path] = q[0], true, q[1:]
	}
	switch {
	case scripted:
	case write || rec.Method == http.MethodGet || rec.Method == http.MethodHead:
		a = OK(nil)
	default:
		a = Status(http.StatusMethodNotAllowed, "Allow", "GET, HEAD, POST, PUT, PATCH, DELETE")
	}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	applied := write && (a.Hang || a.Applied || a.Status/100 == 2)
	var kept []byte
	if applied {
		s.applications++
		rec.Applied, rec.Application = true, fmt.Sprintf("A-%d", s.applications)
		kept = mustJSON(map[string]any{"id": rec.Application, "method": rec.Method, "path": rec.Path, "bytes": rec.BodyBytes, "sha256": rec.BodySHA256})
	}
	if ks != nil {
		if applied {
			ks.application, ks.kept = rec.Application, kept
		} else {
			// Not applied: the key stays free for a retry.
			delete(s.keys, rec.Key)
		}
	}
	out := reply{status: a.Status, header: a.Header.Clone(), hang: a.Hang}
	switch {
	case a.EchoHeaders:
		out.body = mustJSON(map[string]http.Header{"headers": received})
	case a.Body != nil:
		out.body = mustJSON(a.Body)
	case applied && a.Status/100 == 2:
		out.body = kept
	case !write && a.Status/100 == 2:
		out.body = mustJSON(map[string]string{"path": rec.Path})
	default:
		out.body = mustJSON(map[string]string{"error": http.StatusText(a.Status)})
	}
	return out
}

// record appends rec, numbered, and wakes every Wait.
func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.Seq = len(s.requests) + 1
	s.requests = append(s.requests, rec)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

func errorReply(status int) reply {
	return reply{status: status, body: mustJSON(map[string]string{"error": http.StatusText(status)})}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("httprecorder: a scripted body does not encode: %v", err))
	}
	return b
}
