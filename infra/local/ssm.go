package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// SSM stands in for SSM Parameter Store's GetParameter, the one SSM call
// toolgate's functions make (the platform tools' proxy resolving a
// ${Function<Name>} placeholder, the publish function reading the
// platform's parameters). It is a stand-in because no SSM emulator runs on
// these machines (docs/toolsets.md, "On the local stack").
//
// It speaks SSM's JSON 1.1 protocol: POST with X-Amz-Target
// AmazonSSM.GetParameter and {"Name": ...}, answered with the parameter as
// a String, version 1, or 400 ParameterNotFound. Anything else is 400. It
// records every name asked for (Requests).
type SSM struct {
	mu     sync.Mutex
	params map[string]string
	asked  []string
	srv    *http.Server
	addr   string
}

// NewSSM returns a stand-in holding params (name -> value); serve it with
// StartSSM or as an http.Handler.
func NewSSM(params map[string]string) *SSM {
	s := &SSM{params: map[string]string{}}
	for k, v := range params {
		s.params[k] = v
	}
	return s
}

// StartSSM serves NewSSM(params) on a free 127.0.0.1 port.
func StartSSM(params map[string]string) (*SSM, error) {
	s := NewSSM(params)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: ssm: %w", err)
	}
	s.addr = l.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(l)
	return s, nil
}

// Set puts one parameter.
func (s *SSM) Set(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.params[name] = value
}

// Endpoint is the stand-in's base URL, "http://127.0.0.1:PORT", for
// AWS_ENDPOINT_URL_SSM; empty when it was not started.
func (s *SSM) Endpoint() string {
	if s.addr == "" {
		return ""
	}
	return "http://" + s.addr
}

// Close stops a started stand-in.
func (s *SSM) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// Requests returns the parameter names asked for, first first.
func (s *SSM) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// ServeHTTP answers one GetParameter (see SSM).
func (s *SSM) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var in struct{ Name string }
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<16))
	if req.Method != http.MethodPost || req.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" || json.Unmarshal(body, &in) != nil {
		http.Error(w, "not a GetParameter", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.asked = append(s.asked, in.Name)
	v, ok := s.params[in.Name]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(in.Name + " not found")
		fmt.Fprintf(w, `{"__type":"ParameterNotFound","message":%s}`, msg)
		return
	}
	out, _ := json.Marshal(map[string]any{"Parameter": map[string]any{"Name": in.Name, "Type": "String", "Value": v, "Version": 1}})
	w.Write(out)
}
