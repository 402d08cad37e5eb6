package otlpreceiver

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TracesPath is where OTLP/HTTP sends traces (OTLP specification,
// "OTLP/HTTP Request": the default URL path /v1/traces).
const TracesPath = "/v1/traces"

// MaxBody bounds a request body in bytes, 4 MiB, before and after gzip:
// gRPC's default bound on a message received, which OTLP/gRPC receivers
// start from, and far more than a function exports after one invocation.
// A longer body is answered 413 Content Too Large.
const MaxBody = 4 << 20

// Refusal is a request the receiver refused: the status it answered and
// why, in words that quote nothing from the request.
type Refusal struct {
	Status int
	Reason string
}

// Receiver is a running OTLP/HTTP trace receiver (Start).
type Receiver struct {
	srv       *http.Server
	url       string
	closeOnce sync.Once

	mu       sync.Mutex
	spans    []Span
	refusals []Refusal
	arrived  chan struct{} // closed, and replaced, when spans are kept
}

// Start listens on a free port of 127.0.0.1 (the system chooses it; the
// listener is held until Close; never another interface) and serves
// POST TracesPath.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlpreceiver: listen: %w", err)
	}
	r := &Receiver{url: "http://" + ln.Addr().String(), arrived: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// URL is the receiver's base URL, http://127.0.0.1:<port>, without
// TracesPath: "otlp:" + URL() is a TOOLGATE_TRACING value
// (functionconfig.ParseTracing), whose exporters add TracesPath.
func (r *Receiver) URL() string { return r.url }

// Close stops the receiver; open connections close. The spans it kept
// stay readable.
func (r *Receiver) Close() error {
	var err error
	r.closeOnce.Do(func() { err = r.srv.Close() })
	return err
}

// Spans returns every span received so far, in the order they arrived
// (and, within a request, the order its body holds them).
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Span, len(r.spans))
	for i, s := range r.spans {
		out[i] = cloneSpan(s)
	}
	return out
}

// Trace returns the spans received of the trace traceID (hex, either
// case), ordered by start time, then by span id.
func (r *Receiver) Trace(traceID string) []Span {
	traceID = strings.ToLower(traceID)
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	sortByStart(out)
	return out
}

// Tree renders the trace traceID as an indented tree (Tree's format is
// the package's "Trees").
func (r *Receiver) Tree(traceID string) string { return Tree(r.Trace(traceID)) }

// Refusals returns the requests refused so far, in order.
func (r *Receiver) Refusals() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refusals)
}

// Wait blocks until at least n spans have been received and returns them
// all (Spans), or returns ctx's error.
func (r *Receiver) Wait(ctx context.Context, n int) ([]Span, error) {
	for {
		r.mu.Lock()
		got, arrived := len(r.spans), r.arrived
		r.mu.Unlock()
		if got >= n {
			return r.Spans(), nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("otlpreceiver: %d of %d spans received: %w", got, n, ctx.Err())
		}
	}
}

// serve answers one request as OTLP/HTTP asks of a server: 200 with an
// empty ExportTraceServiceResponse in the request's encoding, or a 4xx
// with a google.rpc.Status.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != TracesPath {
		r.refuse(w, ContentTypeJSON, http.StatusNotFound, code.Code_NOT_FOUND, "only "+TracesPath+" is served")
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		r.refuse(w, ContentTypeJSON, http.StatusMethodNotAllowed, code.Code_UNIMPLEMENTED, TracesPath+" takes POST")
		return
	}
	mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || (mediaType != ContentTypeJSON && mediaType != ContentTypeProtobuf) {
		r.refuse(w, ContentTypeJSON, http.StatusUnsupportedMediaType, code.Code_INVALID_ARGUMENT,
			"the Content-Type is not "+ContentTypeJSON+" or "+ContentTypeProtobuf)
		return
	}
	body, status, err := readBody(w, req)
	if err != nil {
		r.refuse(w, mediaType, status, code.Code_INVALID_ARGUMENT, err.Error())
		return
	}
	spans, err := Decode(mediaType, body)
	if err != nil {
		r.refuse(w, mediaType, http.StatusBadRequest, code.Code_INVALID_ARGUMENT, err.Error())
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	if len(spans) > 0 {
		close(r.arrived)
		r.arrived = make(chan struct{})
	}
	r.mu.Unlock()
	// An ExportTraceServiceResponse with no partial_success: {} in JSON,
	// no bytes in binary Protobuf.
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(http.StatusOK)
	if mediaType == ContentTypeJSON {
		io.WriteString(w, "{}")
	}
}

// readBody reads the request's body, gunzipped when its Content-Encoding
// is gzip (OTLP/HTTP's one compression), each at most MaxBody bytes; on
// failure it returns the status to answer: 413 for a body too long, 415
// for another content coding (RFC 9110, 15.5.16), 400 for a body that
// does not read.
func readBody(w http.ResponseWriter, req *http.Request) ([]byte, int, error) {
	var rd io.Reader = http.MaxBytesReader(w, req.Body, MaxBody)
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			status, err := readFailure(err, "the body is not gzip")
			return nil, status, err
		}
		defer zr.Close()
		rd = io.LimitReader(zr, MaxBody+1)
	default:
		return nil, http.StatusUnsupportedMediaType, errors.New("the Content-Encoding is not gzip or identity")
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		status, err := readFailure(err, "the body does not read whole")
		return nil, status, err
	}
	if len(body) > MaxBody {
		return nil, http.StatusRequestEntityTooLarge, errTooLong
	}
	return body, 0, nil
}

// errTooLong is a body longer than MaxBody, before or after gzip.
var errTooLong = fmt.Errorf("the body is longer than %d bytes", MaxBody)

// readFailure is 413 and errTooLong when err is http.MaxBytesReader's,
// else 400 and reason.
func readFailure(err error, reason string) (int, error) {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return http.StatusRequestEntityTooLarge, errTooLong
	}
	return http.StatusBadRequest, errors.New(reason)
}

// refuse records a refusal and answers it with a google.rpc.Status in
// mediaType's encoding (OTLP/HTTP, "Failures").
func (r *Receiver) refuse(w http.ResponseWriter, mediaType string, httpStatus int, c code.Code, reason string) {
	r.mu.Lock()
	r.refusals = append(r.refusals, Refusal{Status: httpStatus, Reason: reason})
	r.mu.Unlock()
	st := &status.Status{Code: int32(c), Message: reason}
	var b []byte
	if mediaType == ContentTypeProtobuf {
		b, _ = proto.Marshal(st)
	} else {
		b, _ = protojson.Marshal(st)
	}
	w.Header().Set("Content-Type", mediaType)
	w.WriteHeader(httpStatus)
	w.Write(b)
}
