package local

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// LambdaRouter stands in for the Lambda API's Invoke and ListTags in front
// of functions under the RIE, for a caller that invokes functions by name
// or ARN through the SDK (AWS_ENDPOINT_URL_LAMBDA; the platform tools'
// proxy, and the publish function reading a function's tags). It is a
// stand-in because no local emulator of the Lambda API runs on these
// machines: the RIE serves one function, as "function", and does not set
// X-Amz-Function-Error.
//
// An Invoke (POST /2015-03-31/functions/<name or ARN>/invocations) is sent
// to the invoke URL added for the function's name (an ARN's qualifier is
// ignored); the answer comes back as the function gave it, with
// X-Amz-Function-Error: Unhandled added when it is the RIE's
// {"errorType", "errorMessage"} error payload, as Lambda marks a function
// error. The router keeps every payload each function was sent (Sent).
//
// A ListTags (GET /2017-03-31/tags/<function ARN>, the SDK's path)
// answers {"Tags": {...}}, the tags set for the function (SetTags; none
// by default). As Lambda, it takes only an unqualified function ARN
// (400 InvalidParameterValueException otherwise: Lambda tags a function,
// not its versions or aliases). With RequireTag, a function without that
// tag is 403 AccessDeniedException, as for a role whose lambda:ListTags
// is conditioned on aws:ResourceTag. FailListTags makes the next requests
// fail (a throttle, a 5xx). The router counts each function's ListTags
// (TagsListed).
//
// With RequireTag, an Invoke of a function without the tag is 403
// AccessDeniedException too, as for the proxy's role, whose
// lambda:InvokeFunction is conditioned on the same tag.
//
// The router stands in for one account and region (LocalAccountID,
// Region). A function is known once it is added (NewLambdaRouter, Add);
// an unknown one, or an ARN in another account or region, is 404
// ResourceNotFoundException to both, and nothing is sent.
type LambdaRouter struct {
	mu       sync.Mutex
	fns      map[string]string // function name -> invoke URL
	sent     map[string][][]byte
	tags     map[string]map[string]string // function name -> its tags
	listed   map[string]int               // function name -> ListTags requests
	required [2]string                    // RequireTag's key and value; key "" for none
	faults   []tagsFault
	srv      *http.Server
	addr     string
}

// tagsFault is one ListTags answered with an error (FailListTags).
type tagsFault struct {
	status    int
	errorType string
}

// NewLambdaRouter returns a router for fns (function name -> invoke URL,
// such as Process.InvokeURL); serve it with StartLambdaRouter or as an
// http.Handler.
func NewLambdaRouter(fns map[string]string) *LambdaRouter {
	r := &LambdaRouter{fns: map[string]string{}, sent: map[string][][]byte{}, tags: map[string]map[string]string{}, listed: map[string]int{}}
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

// SetTags sets the tags ListTags answers for the function name (a copy
// of tags), replacing any set before; a later ListTags sees them at once.
func (r *LambdaRouter) SetTags(name string, tags map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tags[name] = maps.Clone(tags)
}

// RequireTag makes ListTags and Invoke of a function without the tag
// key=value 403 AccessDeniedException, as Lambda answers a role whose
// lambda:ListTags and lambda:InvokeFunction are conditioned on
// aws:ResourceTag/key (the local stack: toolgate:tool and its stage).
func (r *LambdaRouter) RequireTag(key, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.required = [2]string{key, value}
}

// FailListTags makes the next n ListTags answer HTTP status with
// X-Amzn-ErrorType errorType (a throttle: 429 TooManyRequestsException; a
// Lambda fault: 500 ServiceException), whichever function they name.
func (r *LambdaRouter) FailListTags(n, status int, errorType string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range n {
		r.faults = append(r.faults, tagsFault{status: status, errorType: errorType})
	}
}

// TagsListed is how many ListTags named the function name, the failed
// ones included.
func (r *LambdaRouter) TagsListed(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.listed[name]
}

// ServeHTTP answers one Invoke or ListTags (see LambdaRouter).
func (r *LambdaRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if rest, ok := strings.CutPrefix(req.URL.EscapedPath(), "/2017-03-31/tags/"); ok {
		r.listTags(w, req, rest)
		return
	}
	rest, ok := strings.CutPrefix(req.URL.EscapedPath(), "/2015-03-31/functions/")
	ref, ok2 := strings.CutSuffix(rest, "/invocations")
	ref, err := url.PathUnescape(ref)
	if req.Method != http.MethodPost || !ok || !ok2 || err != nil {
		http.Error(w, "not an Invoke", http.StatusNotFound)
		return
	}
	name := ref
	if before, after, found := strings.Cut(ref, ":function:"); found {
		name, _, _ = strings.Cut(after, ":")
		if !ours(before) {
			name = "" // another account's or region's: none of the router's
		}
	}
	r.mu.Lock()
	target, ok := r.fns[name]
	tags := r.tags[name]
	key, value := r.required[0], r.required[1]
	r.mu.Unlock()
	switch {
	case !ok:
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found")
		return
	case key != "" && tags[key] != value:
		apiError(w, http.StatusForbidden, "AccessDeniedException", "not authorized to perform: lambda:InvokeFunction on resource: "+ref)
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

// listTags answers one ListTags of the escaped resource (see
// LambdaRouter).
func (r *LambdaRouter) listTags(w http.ResponseWriter, req *http.Request, escaped string) {
	resource, err := url.PathUnescape(escaped)
	if req.Method != http.MethodGet || err != nil {
		http.Error(w, "not a ListTags", http.StatusNotFound)
		return
	}
	// arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME, no qualifier.
	parts := strings.Split(resource, ":")
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "lambda" || parts[5] != "function" || parts[6] == "" {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "Resource must be the ARN of a function, without a version or alias")
		return
	}
	name := parts[6]
	if !ours(strings.Join(parts[:5], ":")) {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+resource)
		return
	}
	r.mu.Lock()
	r.listed[name]++
	var fault *tagsFault
	if len(r.faults) > 0 {
		fault = &r.faults[0]
		r.faults = r.faults[1:]
	}
	_, known := r.fns[name]
	tags := maps.Clone(r.tags[name])
	key, value := r.required[0], r.required[1]
	r.mu.Unlock()
	switch {
	case fault != nil:
		apiError(w, fault.status, fault.errorType, "the router was told to fail this request")
	case !known:
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+resource)
	case key != "" && tags[key] != value:
		apiError(w, http.StatusForbidden, "AccessDeniedException", "not authorized to perform: lambda:ListTags on resource: "+resource)
	default:
		if tags == nil {
			tags = map[string]string{}
		}
		b, _ := json.Marshal(map[string]any{"Tags": tags})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

// ours reports whether what precedes ":function:" in a function ARN
// ("arn:PARTITION:lambda:REGION:ACCOUNT") or a partial ARN ("ACCOUNT")
// names the router's account and region (LocalAccountID, Region): any
// other names none of its functions, as Lambda finds none of the caller's.
func ours(prefix string) bool {
	if prefix == LocalAccountID {
		return true
	}
	parts := strings.Split(prefix, ":")
	return len(parts) == 5 && parts[0] == "arn" && parts[2] == "lambda" && parts[3] == Region && parts[4] == LocalAccountID
}

// apiError answers a Lambda API error as Lambda's REST-JSON protocol does:
// the type in X-Amzn-ErrorType, {"Type", "Message"} in the body.
func apiError(w http.ResponseWriter, status int, errorType, message string) {
	who := "User"
	if status >= 500 {
		who = "Service"
	}
	b, _ := json.Marshal(map[string]string{"Type": who, "Message": message})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", errorType)
	w.WriteHeader(status)
	w.Write(b)
}
