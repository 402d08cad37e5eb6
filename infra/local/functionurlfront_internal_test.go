package local

import (
	"net/http"
	"testing"
)

// Lambda sends text/*, application/json, application/xml and
// application/javascript bodies as text, and base64-encodes any other.
func TestTextualTakesTheTypesLambdaSendsAsText(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/plain": true, "TEXT/HTML; charset=utf-8": true, "application/json": true, "application/json;charset=UTF-8": true,
		"application/xml": true, "application/javascript": true,
		"": false, "application/octet-stream": false, "application/x-www-form-urlencoded": false,
		"application/vnd.api+json": false, "multipart/form-data; boundary=x": false, "image/png": false, "not a type": false,
	} {
		if got := textual(ct); got != want {
			t.Errorf("textual(%q) = %v, want %v", ct, got, want)
		}
	}
}

// A function's answer becomes the response Lambda makes of it: its own
// statusCode, or 200 application/json for a result without one; a function
// error, a timed-out invocation's plain text or a status out of range is
// no response.
func TestFunctionURLResponseMapsTheFunctionsAnswer(t *testing.T) {
	for _, tc := range []struct {
		answer string
		status int
		body   string
	}{
		{`{"statusCode":202,"body":"{\"status\":\"accepted\"}"}`, 202, `{"status":"accepted"}`},
		{`"Hello, world!"`, http.StatusOK, `"Hello, world!"`},
		{`{"message":"hi"}`, http.StatusOK, `{"message":"hi"}`},
		{`{"errorType":"EchoError","errorMessage":"no"}`, 0, ""},
		{`Task timed out after 1.00 seconds`, 0, ""},
		{`{"statusCode":0}`, 0, ""},
		{`{"statusCode":"200"}`, 0, ""},
	} {
		resp, err := functionURLResponse([]byte(tc.answer))
		if tc.status == 0 {
			if err == nil {
				t.Errorf("%s: %+v, want an error", tc.answer, resp)
			}
			continue
		}
		if err != nil || resp.StatusCode != tc.status || resp.Body != tc.body {
			t.Errorf("%s: %+v %v", tc.answer, resp, err)
		}
	}
}
