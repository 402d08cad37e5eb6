package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// LambdaRouter stands in for the Lambda API's Invoke in front of functions
// under the RIE, for a caller that invokes functions by name or ARN through
// the SDK (AWS_ENDPOINT_URL_LAMBDA; the platform tools' proxy). It is a
// stand-in because no local emulator of the Lambda API runs on these
// machines: the RIE serves one function, as "function", and does not set
// X-Amz-Function-Error.
//
// An Invoke (POST /2015-03-31/functions/<name or ARN>/invocations) is sent
// to the invoke URL added for the function's name (an ARN's qualifier is
// ignored); the answer comes back as the function gave it, with
// X-Amz-Function-Error: Unhandled added when it is the RIE's
// {"errorType", "errorMessage"} error payload, as Lambda marks a function
// error. An unknown function is 404 ResourceNotFoundException. The router
// keeps every payload each function was sent (Sent).
type LambdaRouter struct {
	mu   sync.Mutex
	fns  map[string]string // function name -> invoke URL
	sent map[string][][]byte
	srv  *http.Server
	addr string
}

// NewLambdaRouter returns a router for fns (function name -> invoke URL,
// such as Process.InvokeURL); serve it with StartLambdaRouter or as an
// http.Handler.
func NewLambdaRouter(fns map[string]string) *LambdaRouter {
	r := &LambdaRouter{fns: map[string]string{}, sent: map[string][][]byte{}}
	for name, u := range fns {
		r.fns[name] = u
	}
	return r
}

// StartLambdaRouter serves NewLambdaRouter(fns) on a free 127.0.0.1 port.
func StartLambdaRouter(fns map[string]string) (*LambdaRouter, error) {
	r := NewLambdaRouter(fns)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: lambda router: %w", err)
	}
	r.addr = l.Addr().String()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(l)
	return r, nil
}

// Add routes the function name to invokeURL.
func (r *LambdaRouter) Add(name, invokeURL string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fns[name] = invokeURL
}

// Endpoint is the router's base URL, "http://127.0.0.1:PORT", for
// AWS_ENDPOINT_URL_LAMBDA; empty when it was not started.
func (r *LambdaRouter) Endpoint() string {
	if r.addr == "" {
		return ""
	}
	return "http://" + r.addr
}

// Close stops a started router.
func (r *LambdaRouter) Close() error {
	if r.srv == nil {
		return nil
	}
	return r.srv.Close()
}

// Sent returns the payloads the function name was sent, first first.
func (r *LambdaRouter) Sent(name string) [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.sent[name]...)
}

// ServeHTTP answers one Invoke (see LambdaRouter).
func (r *LambdaRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.EscapedPath(), "/2015-03-31/functions/")
	ref, ok2 := strings.CutSuffix(rest, "/invocations")
	ref, err := url.PathUnescape(ref)
	if req.Method != http.MethodPost || !ok || !ok2 || err != nil {
		http.Error(w, "not an Invoke", http.StatusNotFound)
		return
	}
	name := ref
	if _, after, found := strings.Cut(ref, ":function:"); found {
		name, _, _ = strings.Cut(after, ":")
	}
	r.mu.Lock()
	target, ok := r.fns[name]
	r.mu.Unlock()
	if !ok {
		w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"Type":"User","Message":"Function not found"}`)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.sent[name] = append(r.sent[name], body)
	r.mu.Unlock()
	fwd, err := http.NewRequestWithContext(req.Context(), http.MethodPost, target, strings.NewReader(string(body)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fwd.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	var fe struct {
		ErrorType *string `json:"errorType"`
	}
	if json.Unmarshal(answer, &fe) == nil && fe.ErrorType != nil {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}
