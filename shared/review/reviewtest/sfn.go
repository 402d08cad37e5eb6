package reviewtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// SFN is a FAKE of the two Step Functions actions the review decision
// calls, SendTaskSuccess and SendTaskFailure, speaking their wire protocol
// (AWS JSON 1.0: POST /, X-Amz-Target AWSStepFunctions.<Action>, errors as
// status 400 with X-Amzn-ErrorType and a {"__type","message"} body). It is
// a fake because no Step Functions stand-in is available to these tests;
// it keeps task tokens the way Step Functions does: a token is spent by the
// first SendTask* it accepts, and every later call with it answers
// TaskTimedOut. Point the SDK at it with AWS_ENDPOINT_URL_SFN or
// BaseEndpoint.
type SFN struct {
	*httptest.Server
	mu    sync.Mutex
	calls []SFNCall
	ended map[string]string // token -> the error every call with it answers
	fail  int               // answer the next fail calls with a 500
}

// SFNCall is one request the fake received.
type SFNCall struct {
	Action    string // SendTaskSuccess or SendTaskFailure
	TaskToken string
	Output    string // SendTaskSuccess
	Error     string // SendTaskFailure
	Cause     string // SendTaskFailure
	Answer    string // "" when accepted, else the error it answered
}

// NewSFN starts the fake for t.
func NewSFN(t testing.TB) *SFN {
	f := &SFN{ended: map[string]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// End makes every call with token answer errName (TaskTimedOut,
// TaskDoesNotExist, InvalidToken), as when the Task has timed out or its
// execution has ended.
func (f *SFN) End(token, errName string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended[token] = errName
}

// FailNext makes the next n calls answer 500 ServiceUnavailable (the SDK
// retries those up to 3 times per request).
func (f *SFN) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Calls returns the calls received with token (all calls for "").
func (f *SFN) Calls(token string) []SFNCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []SFNCall
	for _, c := range f.calls {
		if token == "" || c.TaskToken == token {
			out = append(out, c)
		}
	}
	return out
}

// Accepted returns the calls with token that the fake accepted.
func (f *SFN) Accepted(token string) []SFNCall {
	var out []SFNCall
	for _, c := range f.Calls(token) {
		if c.Answer == "" {
			out = append(out, c)
		}
	}
	return out
}

func (f *SFN) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	action, ok := strings.CutPrefix(target, "AWSStepFunctions.")
	if r.Method != http.MethodPost || !ok || (action != "SendTaskSuccess" && action != "SendTaskFailure") {
		answer(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("the fake serves SendTaskSuccess and SendTaskFailure, not %q", target))
		return
	}
	body, _ := io.ReadAll(r.Body)
	var in struct {
		TaskToken string `json:"taskToken"`
		Output    string `json:"output"`
		Error     string `json:"error"`
		Cause     string `json:"cause"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.TaskToken == "" {
		answer(w, http.StatusBadRequest, "ValidationException", "taskToken is required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := SFNCall{Action: action, TaskToken: in.TaskToken, Output: in.Output, Error: in.Error, Cause: in.Cause}
	switch {
	case f.fail > 0:
		f.fail--
		c.Answer = "ServiceUnavailable"
		f.calls = append(f.calls, c)
		answer(w, http.StatusInternalServerError, "ServiceUnavailable", "the fake is unavailable")
		return
	case f.ended[in.TaskToken] != "":
		c.Answer = f.ended[in.TaskToken]
		f.calls = append(f.calls, c)
		answer(w, http.StatusBadRequest, c.Answer, "Task Timed Out: 'Provided task does not exist anymore'")
		return
	}
	f.calls = append(f.calls, c)
	f.ended[in.TaskToken] = "TaskTimedOut" // spent
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	io.WriteString(w, "{}")
}

func answer(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", errType)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.swf.service.v2.model#" + errType, "message": msg})
}
