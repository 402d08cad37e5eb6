package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// SSM stands in for the SSM Parameter Store calls toolgate makes:
// GetParameter (the platform tools' proxy resolving a ${Function<Name>}
// placeholder, the publish function reading the platform's parameters),
// GetParameters (a tool function reading its ledger secrets at cold
// start, shared/secrets Load) and PutParameter (shared/secrets Ensure,
// from the local stack and the provisioning function). It is a stand-in
// because no SSM emulator runs on these machines (docs/toolsets.md, "On
// the local stack").
//
// It speaks SSM's JSON 1.1 protocol, POST with X-Amz-Target
// AmazonSSM.<Action>, and answers as SSM does (SSM API Reference):
//   - GetParameter {"Name"}: the parameter, or 400 ParameterNotFound.
//   - GetParameters {"Names", "WithDecryption"}: the parameters found, in
//     the order asked, and the names not found in InvalidParameters; more
//     than 10 names is 400 ValidationException (SSM's limit). A
//     SecureString asked without WithDecryption comes back as a
//     placeholder, not its value (SSM returns the ciphertext).
//   - PutParameter {"Name", "Value", "Type", "Overwrite"}: stores it,
//     version 1 (or the next with Overwrite), answering {"Version"}; an
//     existing name without Overwrite is 400 ParameterAlreadyExists; a
//     Type other than String, StringList or SecureString is 400
//     ValidationException.
//
// Anything else is 400. It records every name GetParameter asked for
// (Requests), and PutParameter's calls (Puts).
type SSM struct {
	mu     sync.Mutex
	params map[string]ssmParam
	asked  []string
	puts   int
	srv    *http.Server
	addr   string
}

// ssmParam is one stored parameter.
type ssmParam struct {
	value, typ string
	version    int
}

// NewSSM returns a stand-in holding params (name -> value); serve it with
// StartSSM or as an http.Handler.
func NewSSM(params map[string]string) *SSM {
	s := &SSM{params: map[string]ssmParam{}}
	for k, v := range params {
		s.params[k] = ssmParam{value: v, typ: "String", version: 1}
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
	s.params[name] = ssmParam{value: value, typ: "String", version: s.params[name].version + 1}
}

// Value returns a parameter's value and type ("" and false when absent),
// for tests that check what was provisioned.
func (s *SSM) Value(name string) (value, typ string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[name]
	return p.value, p.typ, ok
}

// Puts counts the PutParameter requests answered, stored or refused.
func (s *SSM) Puts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
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

// ServeHTTP answers one request (see SSM).
func (s *SSM) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<16))
	action, ok := strings.CutPrefix(req.Header.Get("X-Amz-Target"), "AmazonSSM.")
	if req.Method != http.MethodPost || !ok {
		http.Error(w, "not an SSM request", http.StatusBadRequest)
		return
	}
	var out any
	var fault *ssmFault
	switch action {
	case "GetParameter":
		var in struct{ Name string }
		if json.Unmarshal(body, &in) != nil {
			fault = &ssmFault{"ValidationException", "the request is not JSON"}
			break
		}
		out, fault = s.getParameter(in.Name)
	case "GetParameters":
		var in struct {
			Names          []string
			WithDecryption bool
		}
		if json.Unmarshal(body, &in) != nil {
			fault = &ssmFault{"ValidationException", "the request is not JSON"}
			break
		}
		out, fault = s.getParameters(in.Names, in.WithDecryption)
	case "PutParameter":
		var in struct {
			Name, Value, Type string
			Overwrite         bool
		}
		if json.Unmarshal(body, &in) != nil {
			fault = &ssmFault{"ValidationException", "the request is not JSON"}
			break
		}
		out, fault = s.putParameter(in.Name, in.Value, in.Type, in.Overwrite)
	default:
		fault = &ssmFault{"InvalidAction", "the SSM stand-in does not answer " + action}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if fault != nil {
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]string{"__type": fault.typ, "message": fault.msg})
		w.Write(b)
		return
	}
	b, _ := json.Marshal(out)
	w.Write(b)
}

// ssmFault is an SSM error answer: its __type and message.
type ssmFault struct{ typ, msg string }

// maxGetParameters is how many names one GetParameters may ask for (SSM
// API Reference, GetParameters: Names, at most 10 items).
const maxGetParameters = 10

func (p ssmParam) wire(name string, decrypt bool) map[string]any {
	v := p.value
	if p.typ == "SecureString" && !decrypt {
		v = "(ciphertext of " + name + ")"
	}
	return map[string]any{"Name": name, "Type": p.typ, "Value": v, "Version": p.version}
}

func (s *SSM) getParameter(name string) (any, *ssmFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, name)
	p, ok := s.params[name]
	if !ok {
		return nil, &ssmFault{"ParameterNotFound", name + " not found"}
	}
	return map[string]any{"Parameter": p.wire(name, false)}, nil
}

func (s *SSM) getParameters(names []string, decrypt bool) (any, *ssmFault) {
	if len(names) < 1 || len(names) > maxGetParameters {
		return nil, &ssmFault{"ValidationException", fmt.Sprintf("names must hold 1 to %d items", maxGetParameters)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found, invalid := []map[string]any{}, []string{}
	for _, n := range names {
		if p, ok := s.params[n]; ok {
			found = append(found, p.wire(n, decrypt))
		} else {
			invalid = append(invalid, n)
		}
	}
	return map[string]any{"Parameters": found, "InvalidParameters": invalid}, nil
}

func (s *SSM) putParameter(name, value, typ string, overwrite bool) (any, *ssmFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts++
	switch {
	case name == "" || value == "":
		return nil, &ssmFault{"ValidationException", "Name and Value are required"}
	case typ != "String" && typ != "StringList" && typ != "SecureString":
		return nil, &ssmFault{"ValidationException", "Type must be String, StringList or SecureString"}
	}
	old, exists := s.params[name]
	if exists && !overwrite {
		return nil, &ssmFault{"ParameterAlreadyExists", "the parameter already exists"}
	}
	s.params[name] = ssmParam{value: value, typ: typ, version: old.version + 1}
	return map[string]any{"Version": old.version + 1, "Tier": "Standard"}, nil
}
