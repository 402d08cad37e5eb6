package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// secret marks request and response content that must never reach an
// error's message.
const secret = "s3cr3t-payload"

// Each method is sent as written, with its body encoded by its
// Content-Type, and answered with the parsed body.
func TestMethodsAndBodies(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		h        http.HandlerFunc
		wantBody string // what the server received
		wantCT   string // the Content-Type it received
		data     string // the output's data
	}{
		{name: "GET", in: Input{Method: "GET"}, h: jsonHandler(`{"a": 1}`), data: `{"a":1}`},
		{name: "GET null body", in: Input{Method: "GET", Body: json.RawMessage(`null`)}, h: jsonHandler(`1`), data: `1`},
		{name: "HEAD", in: Input{Method: "HEAD"}, h: jsonHandler(`{"a": 1}`), data: `null`},
		{name: "POST JSON by default", in: Input{Method: "POST", Body: json.RawMessage(`{"text":"hi"}`)}, h: jsonHandler(`{"ok":true}`),
			wantBody: `{"text":"hi"}`, wantCT: "application/json", data: `{"ok":true}`},
		{name: "POST +json media type", in: Input{Method: "POST", Headers: map[string]string{"content-type": "application/vnd.api+json"}, Body: json.RawMessage(`[1]`)}, h: jsonHandler(`1`),
			wantBody: `[1]`, wantCT: "application/vnd.api+json", data: `1`},
		{name: "PUT text", in: Input{Method: "PUT", Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, Body: json.RawMessage(`"héllo\n"`)}, h: jsonHandler(`1`),
			wantBody: "héllo\n", wantCT: "text/plain; charset=utf-8", data: `1`},
		{name: "PATCH merge patch", in: Input{Method: "PATCH", Headers: map[string]string{"Content-Type": "application/merge-patch+json"}, Body: json.RawMessage(`{"a":null}`)}, h: jsonHandler(`1`),
			wantBody: `{"a":null}`, wantCT: "application/merge-patch+json", data: `1`},
		{name: "POST a JSON string as JSON", in: Input{Method: "POST", Body: json.RawMessage(`"x"`)}, h: jsonHandler(`1`), wantBody: `"x"`, wantCT: "application/json", data: `1`},
		{name: "POST without body", in: Input{Method: "POST"}, h: jsonHandler(`1`), data: `1`},
		{name: "DELETE", in: Input{Method: "DELETE"}, h: statusHandler(204, ""), data: `null`},
		{name: "POST answered with JSON", in: Input{Method: "POST", Body: json.RawMessage(`{}`)}, h: statusHandler(200, ""), wantBody: `{}`, wantCT: "application/json", data: `{"error":"x"}`},
		{name: "POST answer with no bytes", in: Input{Method: "POST", Body: json.RawMessage(`{}`)}, h: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) },
			wantBody: `{}`, wantCT: "application/json", data: `null`},
		{name: "POST text answer", in: Input{Method: "POST", Accept: "text"}, h: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }, data: `"ok"`},
		{name: "GET select", in: Input{Method: "GET", Select: "/a/1"}, h: jsonHandler(`{"a": [0, {"b": 2}]}`), data: `{"b":2}`},
		{name: "GET csv", in: Input{Method: "GET", Accept: "csv"}, h: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("id\n1\n")) }, data: `[{"id":"1"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.h)
			tt.in.URL = s.url("/x?q=1")
			out, err := localConfig(t, s).Do(context.Background(), tt.in, []toolset.HTTPHost{entry(s, "DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")}, "k", tool.TraceContext{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := s.seen()
			if len(got) != 1 || got[0].Method != tt.in.Method || got[0].Path != "/x?q=1" {
				t.Fatalf("served %+v", got)
			}
			if got[0].Body != tt.wantBody || got[0].Header.Get("Content-Type") != tt.wantCT {
				t.Fatalf("received body %q, Content-Type %q", got[0].Body, got[0].Header.Get("Content-Type"))
			}
			if ua := got[0].Header.Get("User-Agent"); ua != "toolgate-http" {
				t.Fatalf("User-Agent %q", ua)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, out.Data); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.data {
				t.Fatalf("data %s, want %s", buf.String(), tt.data)
			}
		})
	}
}

// Input the tool refuses is refused before anything is sent, with a
// message that names the rule and never the body or a header's value.
func TestRefusedBeforeSending(t *testing.T) {
	named := func(h toolset.HTTPHost) toolset.HTTPHost { h.Headers = []string{"X-Github-Api-Version"}; return h }
	tests := []struct {
		name  string
		in    Input
		hosts func(s *server) []toolset.HTTPHost
		tune  func(*Config)
		code  tool.Code
		says  string // in the message
	}{
		{name: "body with GET", in: Input{Method: "GET", Body: json.RawMessage(`"` + secret + `"`)}, code: tool.InputInvalid, says: "only POST, PUT and PATCH"},
		{name: "body with HEAD", in: Input{Method: "HEAD", Body: json.RawMessage(`{}`)}, code: tool.InputInvalid, says: "no body"},
		{name: "body with DELETE", in: Input{Method: "DELETE", Body: json.RawMessage(`[]`)}, code: tool.InputInvalid, says: "no body"},
		{name: "object body with a text type", in: Input{Method: "POST", Headers: map[string]string{"Content-Type": "text/plain"}, Body: json.RawMessage(`{"s":"` + secret + `"}`)}, code: tool.InputInvalid, says: "must be a JSON string"},
		{name: "Content-Type no media type", in: Input{Method: "POST", Headers: map[string]string{"Content-Type": "json"}, Body: json.RawMessage(`{}`)}, code: tool.InputInvalid, says: "not a media type"},
		{name: "body over the bound", in: Input{Method: "POST", Body: json.RawMessage(`"` + secret + `"`)}, tune: func(c *Config) { c.MaxRequestBytes = 10 }, code: tool.InputInvalid, says: "over the 10-byte bound"},
		{name: "body over the default bound", in: Input{Method: "POST", Body: json.RawMessage(`"` + strings.Repeat("a", 64<<10) + `"`)}, code: tool.InputInvalid, says: "65536-byte bound"},
		{name: "unknown method", in: Input{Method: "get"}, code: tool.InputInvalid, says: "DELETE, GET"},
		{name: "bad accept", in: Input{Method: "GET", Accept: "xml"}, code: tool.InputInvalid, says: "accept"},
		{name: "select with text", in: Input{Method: "GET", Accept: "text", Select: "/a"}, code: tool.InputInvalid, says: "select"},
		{name: "method not pinned", in: Input{Method: "POST"}, hosts: func(s *server) []toolset.HTTPHost { return []toolset.HTTPHost{entry(s, "GET")} }, code: tool.PermissionDenied, says: "rule http-method: POST is not pinned for 127.0.0.1"},
		{name: "host not pinned", in: Input{Method: "GET"}, hosts: func(s *server) []toolset.HTTPHost {
			return []toolset.HTTPHost{{Host: "api.example.com", Methods: []string{"GET"}}}
		}, code: tool.PermissionDenied, says: "rule http-host"},
		{name: "no http_hosts", in: Input{Method: "GET"}, hosts: func(*server) []toolset.HTTPHost { return nil }, code: tool.PermissionDenied, says: "no http request is possible"},
		{name: "invalid http_hosts entry", in: Input{Method: "GET"}, hosts: func(*server) []toolset.HTTPHost {
			return []toolset.HTTPHost{{Host: "*.co.uk", Methods: []string{"GET"}}}
		}, code: tool.PermissionDenied, says: "invalid http_hosts entry"},
		{name: "not on the platform allow-list", in: Input{Method: "GET"}, tune: func(c *Config) { c.Allow = mustList(t, "api.example.com") }, code: tool.PermissionDenied, says: "the platform allow-list"},
		{name: "no platform allow-list", in: Input{Method: "GET"}, tune: func(c *Config) { c.Allow = nil }, code: tool.PermissionDenied, says: "the platform allow-list is empty"},
		{name: "header not named by the entry", in: Input{Method: "GET", Headers: map[string]string{"X-Api-Token": secret}}, code: tool.PermissionDenied, says: "rule http-header: the header X-Api-Token is neither a standard header nor named"},
		{name: "Authorization", in: Input{Method: "GET", Headers: map[string]string{"authorization": "Bearer " + secret}}, code: tool.PermissionDenied, says: "Authorization may not be set: credentials"},
		{name: "Cookie", in: Input{Method: "GET", Headers: map[string]string{"Cookie": secret}}, code: tool.PermissionDenied, says: "Cookie may not be set"},
		{name: "Host", in: Input{Method: "GET", Headers: map[string]string{"Host": "evil.test"}}, code: tool.PermissionDenied, says: "Host may not be set"},
		{name: "Content-Length", in: Input{Method: "POST", Headers: map[string]string{"Content-Length": "1"}}, code: tool.PermissionDenied, says: "Content-Length may not be set"},
		{name: "method override", in: Input{Method: "POST", Headers: map[string]string{"X-HTTP-Method-Override": "DELETE"}}, code: tool.PermissionDenied, says: "method-override"},
		{name: "X-Method-Override", in: Input{Method: "POST", Headers: map[string]string{"X-Method-Override": "DELETE"}}, code: tool.PermissionDenied, says: "method-override"},
		{name: "forwarding", in: Input{Method: "GET", Headers: map[string]string{"X-Forwarded-For": "10.0.0.1"}}, code: tool.PermissionDenied, says: "forwarding"},
		{name: "X-Real-IP", in: Input{Method: "GET", Headers: map[string]string{"X-Real-IP": "10.0.0.1"}}, code: tool.PermissionDenied, says: "forwarding"},
		{name: "X-Amz", in: Input{Method: "GET", Headers: map[string]string{"X-Amz-Security-Token": secret}}, code: tool.PermissionDenied, says: "AWS"},
		{name: "Proxy", in: Input{Method: "GET", Headers: map[string]string{"Proxy-Authorization": secret}}, code: tool.PermissionDenied, says: "proxy"},
		{name: "hop-by-hop", in: Input{Method: "GET", Headers: map[string]string{"Transfer-Encoding": "chunked"}}, code: tool.PermissionDenied, says: "hop-by-hop"},
		{name: "the idempotency header", in: Input{Method: "POST", Headers: map[string]string{"idempotency-key": secret}},
			hosts: func(s *server) []toolset.HTTPHost { return []toolset.HTTPHost{keyed(entry(s, "POST"), "raw")} }, code: tool.PermissionDenied, says: "the tool sets from the call's key"},
		{name: "value with CRLF", in: Input{Method: "GET", Headers: map[string]string{"Accept": secret + "\r\nX-Evil: 1"}}, code: tool.InputInvalid, says: "the Accept header value is not an HTTP field value"},
		{name: "value with NUL", in: Input{Method: "GET", Headers: map[string]string{"X-Github-Api-Version": secret + "\x00"}}, code: tool.InputInvalid, says: "X-Github-Api-Version header value"},
		{name: "value too long", in: Input{Method: "GET", Headers: map[string]string{"If-Match": strings.Repeat("a", 1025)}}, code: tool.InputInvalid, says: "at most 1024 bytes"},
		{name: "name twice", in: Input{Method: "GET", Headers: map[string]string{"Accept": "a", "accept": "b"}}, code: tool.InputInvalid, says: "given twice"},
		{name: "url refused", in: Input{Method: "GET", URL: "http://user@127.0.0.1/"}, code: tool.PermissionDenied, says: "userinfo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, jsonHandler(`1`))
			hosts := []toolset.HTTPHost{named(entry(s, "DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"))}
			if tt.hosts != nil {
				hosts = tt.hosts(s)
			}
			cfg := localConfig(t, s)
			if tt.tune != nil {
				tt.tune(cfg)
			}
			if tt.in.URL == "" {
				tt.in.URL = s.url("/x")
			}
			out, err := cfg.Do(context.Background(), tt.in, hosts, "k", tool.TraceContext{}, nil)
			code, applied := codeOf(t, err)
			if code != tt.code || applied {
				t.Fatalf("Do = %+v, %v (applied %v); want %s, not applied", out, err, applied, tt.code)
			}
			msg := err.(*tool.Error).Message
			if !strings.Contains(msg, tt.says) {
				t.Fatalf("message %q does not say %q", msg, tt.says)
			}
			if strings.Contains(msg, secret) {
				t.Fatalf("message %q holds the call's content", msg)
			}
			if got := s.seen(); len(got) != 0 {
				t.Fatalf("a refused call reached the server: %+v", got)
			}
		})
	}
}

// The standard headers and the entry's named ones are sent as given; a
// named header matches in any letter case.
func TestHeadersSent(t *testing.T) {
	s := newServer(t, jsonHandler(`1`))
	h := entry(s, "POST")
	h.Headers = []string{"X-Github-Api-Version"}
	in := Input{Method: "POST", URL: s.url("/"), Body: json.RawMessage(`{}`), Headers: map[string]string{
		"x-github-api-version": "2022-11-28", "If-Match": `"v1"`, "Accept": "application/vnd.github+json", "Cache-Control": "no-cache",
	}}
	if _, err := localConfig(t, s).Do(context.Background(), in, []toolset.HTTPHost{h}, "k", tool.TraceContext{}, nil); err != nil {
		t.Fatal(err)
	}
	got := s.seen()[0].Header
	for k, v := range map[string]string{"X-Github-Api-Version": "2022-11-28", "If-Match": `"v1"`, "Accept": "application/vnd.github+json", "Cache-Control": "no-cache"} {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v)
		}
	}
	if got.Get("Authorization") != "" || got.Get("Cookie") != "" || got.Get("Idempotency-Key") != "" {
		t.Fatalf("headers %v", got)
	}
}

// A host whose entry declares an idempotency key gets the call's key in
// the entry's format with every method that is not a read, and never
// with a read.
func TestIdempotencyHeader(t *testing.T) {
	const key = `AbCdEfGhIjKlMnOpQrStUv/1`
	for _, tc := range []struct {
		method, format, want string
	}{
		{"POST", "raw", key},
		{"PUT", "sf-string", `"` + key + `"`},
		{"DELETE", "uuid", mustKey(t, "uuid", key)},
		{"PATCH", "", key},
		{"GET", "raw", ""},
		{"HEAD", "uuid", ""},
	} {
		t.Run(tc.method+" "+tc.format, func(t *testing.T) {
			s := newServer(t, jsonHandler(`1`))
			h := entry(s, tc.method)
			h.Idempotency = &toolset.HTTPIdempotency{Header: "Idempotency-Key", Format: tc.format}
			if _, err := localConfig(t, s).Do(context.Background(), Input{Method: tc.method, URL: s.url("/")}, []toolset.HTTPHost{h}, key, tool.TraceContext{}, nil); err != nil {
				t.Fatal(err)
			}
			got := s.seen()[0].Header.Values("Idempotency-Key")
			if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
				t.Fatalf("Idempotency-Key %q, want %q", got, tc.want)
			}
		})
	}
}

func mustKey(t *testing.T, format, key string) string {
	t.Helper()
	v, err := KeyHeaderValue(format, key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestKeyHeaderValue(t *testing.T) {
	for _, tc := range []struct {
		format, key, want string
		bad               bool
	}{
		{format: "raw", key: "abc/1", want: "abc/1"},
		{format: "", key: "abc/1", want: "abc/1"},
		{format: "raw", key: "a b", bad: true},
		{format: "raw", key: "é", bad: true},
		{format: "raw", key: "", bad: true},
		{format: "raw", key: strings.Repeat("a", 65), bad: true},
		{format: "sf-string", key: `a"b\c`, want: `"a\"b\\c"`},
		{format: "sf-string", key: "a b", want: `"a b"`},
		{format: "sf-string", key: "a\tb", bad: true},
		// SHA-256("abc") = ba7816bf 8f01cfea 414140de 5dae2223 ...: the
		// version nibble becomes 8 and the variant bits 10.
		{format: "uuid", key: "abc", want: "ba7816bf-8f01-8fea-8141-40de5dae2223"},
		{format: "uuid", key: "", bad: true},
		{format: "base64", key: "abc", bad: true},
	} {
		got, err := KeyHeaderValue(tc.format, tc.key)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("KeyHeaderValue(%q, %q) = %q, %v; want %q (error %v)", tc.format, tc.key, got, err, tc.want, tc.bad)
		}
		if err != nil && tc.key != "" && strings.Contains(err.Error(), tc.key) {
			t.Errorf("error %q names the key", err)
		}
	}
}

// Reads follow redirects as structured-data-fetch does; other methods
// follow none: 303 is a success, 301, 302, 307 and 308 a permanent
// failure that names the Location's host only.
func TestRedirects(t *testing.T) {
	t.Run("a read follows five", func(t *testing.T) {
		var s *server
		s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if n := len(s.seen()); n <= 5 {
				w.Header().Set("Location", "/r"+string(rune('0'+n)))
				w.WriteHeader([]int{301, 302, 303, 307, 308}[n%5])
				return
			}
			jsonHandler(`"end"`)(w, r)
		})
		out, err := localConfig(t, s).Do(context.Background(), Input{Method: "GET", URL: s.url("/r0")}, []toolset.HTTPHost{entry(s, "GET")}, "k", tool.TraceContext{}, nil)
		if err != nil || string(out.Data) != `"end"` || len(s.seen()) != 6 {
			t.Fatalf("Do = %+v, %v; served %d", out, err, len(s.seen()))
		}
	})
	t.Run("a read's sixth is refused", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/again")
			w.WriteHeader(302)
		})
		_, err := localConfig(t, s).Do(context.Background(), Input{Method: "HEAD", URL: s.url("/")}, []toolset.HTTPHost{entry(s, "HEAD")}, "k", tool.TraceContext{}, nil)
		if code, _ := codeOf(t, err); code != tool.PermissionDenied || len(s.seen()) != 6 {
			t.Fatalf("Do = %v; served %d", err, len(s.seen()))
		}
	})
	t.Run("a read's redirect to a host not pinned for its method", func(t *testing.T) {
		other := newServer(t, jsonHandler(`1`))
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", other.url("/"))
			w.WriteHeader(307)
		})
		_, err := localConfig(t, s, other).Do(context.Background(), Input{Method: "GET", URL: s.url("/")}, []toolset.HTTPHost{entry(s, "GET"), entry(other, "POST")}, "k", tool.TraceContext{}, nil)
		if code, _ := codeOf(t, err); code != tool.PermissionDenied || len(other.seen()) != 0 {
			t.Fatalf("Do = %v; other served %d", err, len(other.seen()))
		}
		if msg := err.(*tool.Error).Message; !strings.Contains(msg, "redirect 1 refused") || !strings.Contains(msg, "rule http-method") {
			t.Fatalf("message %q", msg)
		}
	})
	t.Run("a read carries custom headers only where named", func(t *testing.T) {
		other := newServer(t, jsonHandler(`1`))
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", other.url("/"))
			w.WriteHeader(302)
		})
		first := entry(s, "GET")
		first.Headers = []string{"X-Version"}
		in := Input{Method: "GET", URL: s.url("/"), Headers: map[string]string{"X-Version": "2", "Accept-Language": "de"}}
		if _, err := localConfig(t, s, other).Do(context.Background(), in, []toolset.HTTPHost{first, entry(other, "GET")}, "k", tool.TraceContext{}, nil); err != nil {
			t.Fatal(err)
		}
		if h := s.seen()[0].Header; h.Get("X-Version") != "2" {
			t.Fatalf("first hop headers %v", h)
		}
		if h := other.seen()[0].Header; h.Get("X-Version") != "" || h.Get("Accept-Language") != "de" {
			t.Fatalf("second hop headers %v", h)
		}
	})
	t.Run("a read's custom header stays with its origin even where another entry names it", func(t *testing.T) {
		other := newServer(t, jsonHandler(`1`))
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/same" {
				w.Header().Set("Location", other.url("/"))
				w.WriteHeader(302)
				return
			}
			w.Header().Set("Location", "/same")
			w.WriteHeader(302)
		})
		first, second := entry(s, "GET"), entry(other, "GET")
		first.Headers, second.Headers = []string{"X-Api-Key"}, []string{"X-Api-Key"}
		in := Input{Method: "GET", URL: s.url("/"), Headers: map[string]string{"X-Api-Key": "key-of-the-first-host"}}
		if _, err := localConfig(t, s, other).Do(context.Background(), in, []toolset.HTTPHost{first, second}, "k", tool.TraceContext{}, nil); err != nil {
			t.Fatal(err)
		}
		if seen := s.seen(); len(seen) != 2 || seen[1].Header.Get("X-Api-Key") == "" {
			t.Fatalf("the redirect to the same origin lost the header: %v", seen)
		}
		if h := other.seen()[0].Header; h.Get("X-Api-Key") != "" {
			t.Fatalf("another origin received the first host's custom header: %v", h)
		}
	})
	for _, code := range []int{301, 302, 307, 308} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			t.Run(method+" "+http.StatusText(code), func(t *testing.T) {
				other := newServer(t, jsonHandler(`1`))
				s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Location", other.url("/private/path?token="+secret))
					w.WriteHeader(code)
				})
				_, err := localConfig(t, s, other).Do(context.Background(), Input{Method: method, URL: s.url("/")}, []toolset.HTTPHost{entry(s, method), entry(other, method)}, "k", tool.TraceContext{}, nil)
				if c, applied := codeOf(t, err); c != tool.PermanentFailure || applied {
					t.Fatalf("Do = %v (applied %v)", err, applied)
				}
				msg := err.(*tool.Error).Message
				if !strings.Contains(msg, "redirecting to 127.0.0.1") || strings.Contains(msg, "private") || strings.Contains(msg, secret) {
					t.Fatalf("message %q", msg)
				}
				if len(s.seen()) != 1 || len(other.seen()) != 0 {
					t.Fatalf("served %d and %d", len(s.seen()), len(other.seen()))
				}
			})
		}
	}
	t.Run("POST 303 is a success", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "https://status.example.com/jobs/42?token="+secret)
			w.Header().Set("ETag", `"j42"`)
			w.WriteHeader(303)
		})
		out, err := localConfig(t, s).Do(context.Background(), Input{Method: "POST", URL: s.url("/jobs"), Body: json.RawMessage(`{}`)}, []toolset.HTTPHost{entry(s, "POST")}, "k", tool.TraceContext{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != 303 || string(out.Data) != "null" || len(out.Headers) != 2 || out.Headers["Location-Host"] != "status.example.com" || out.Headers["ETag"] != `"j42"` {
			t.Fatalf("output %+v", out)
		}
	})
}

// Each status class gives its code, and whether the request may have
// been applied, by method (docs/tools.md, "http", status classes).
func TestStatusClasses(t *testing.T) {
	tests := []struct {
		status      int
		code        tool.Code
		readApplied bool // for GET
		applied     bool // for POST
	}{
		{500, tool.UpstreamUnavailable, true, true},
		{502, tool.UpstreamUnavailable, true, true},
		{504, tool.UpstreamUnavailable, true, true},
		{507, tool.UpstreamUnavailable, true, true},
		{503, tool.UpstreamUnavailable, false, true},
		{501, tool.PermanentFailure, false, false},
		{505, tool.PermanentFailure, false, false},
		{408, tool.Timeout, false, false},
		{429, tool.RateLimited, false, false},
		{401, tool.PermissionDenied, false, false},
		{403, tool.PermissionDenied, false, false},
		{404, tool.PermanentFailure, false, false},
		{409, tool.PermanentFailure, false, false},
		{422, tool.PermanentFailure, false, false},
		{300, tool.PermanentFailure, false, false},
	}
	for _, tt := range tests {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+http.StatusText(tt.status), func(t *testing.T) {
				s := newServer(t, statusHandler(tt.status, "120"))
				_, err := localConfig(t, s).Do(context.Background(), Input{Method: method, URL: s.url("/")}, []toolset.HTTPHost{entry(s, method)}, "k", tool.TraceContext{}, nil)
				code, applied := codeOf(t, err)
				want := tt.applied
				if method == "GET" {
					want = tt.readApplied
				}
				if code != tt.code || applied != want {
					t.Fatalf("Do = %v: %s applied %v; want %s applied %v", err, code, applied, tt.code, want)
				}
				if msg := err.(*tool.Error).Message; strings.Contains(msg, `"error"`) {
					t.Fatalf("message %q holds the body", msg)
				}
				if tt.status == 429 || tt.status >= 500 && tt.code == tool.UpstreamUnavailable {
					if ra := err.(*tool.Error).RetryAfter; ra != 120*time.Second {
						t.Fatalf("RetryAfter %s", ra)
					}
				}
				if len(s.seen()) != 1 {
					t.Fatalf("served %d", len(s.seen()))
				}
			})
		}
	}
}

// A request that got no answer is maybe applied exactly when it was
// written.
func TestNoAnswer(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		s := newServer(t, jsonHandler(`1`))
		cfg := localConfig(t, s)
		s.srv.Close()
		_, err := cfg.Do(context.Background(), Input{Method: "POST", URL: s.url("/")}, []toolset.HTTPHost{entry(s, "POST")}, "k", tool.TraceContext{}, nil)
		if code, applied := codeOf(t, err); code != tool.UpstreamUnavailable || applied {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
	t.Run("no such host", func(t *testing.T) {
		cfg := &Config{}
		cfg.Allow = mustList(t, "api.example.com")
		cfg.Resolver = &fetchtest.Resolver{}
		_, err := cfg.Do(context.Background(), Input{Method: "POST", URL: "https://api.example.com/"}, []toolset.HTTPHost{{Host: "api.example.com", Methods: []string{"POST"}}}, "k", tool.TraceContext{}, nil)
		if code, applied := codeOf(t, err); code != tool.UpstreamUnavailable || applied {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
	hold := func(release chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}
	t.Run("timeout after the request was written", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		s := newServer(t, hold(release))
		cfg := localConfig(t, s)
		cfg.Timeout = 200 * time.Millisecond
		_, err := cfg.Do(context.Background(), Input{Method: "POST", URL: s.url("/"), Body: json.RawMessage(`{}`)}, []toolset.HTTPHost{entry(s, "POST")}, "k", tool.TraceContext{}, nil)
		if code, applied := codeOf(t, err); code != tool.Timeout || !applied {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
	t.Run("timeout before the request was written", func(t *testing.T) {
		cfg := &Config{}
		cfg.Allow = mustList(t, "api.example.com")
		cfg.Resolver = slowResolver{}
		cfg.Timeout = 100 * time.Millisecond
		_, err := cfg.Do(context.Background(), Input{Method: "POST", URL: "https://api.example.com/"}, []toolset.HTTPHost{{Host: "api.example.com", Methods: []string{"POST"}}}, "k", tool.TraceContext{}, nil)
		if code, applied := codeOf(t, err); code != tool.Timeout || applied {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
	t.Run("connection dropped after the request", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		})
		_, err := localConfig(t, s).Do(context.Background(), Input{Method: "PUT", URL: s.url("/"), Body: json.RawMessage(`{}`)}, []toolset.HTTPHost{entry(s, "PUT")}, "k", tool.TraceContext{}, nil)
		if code, applied := codeOf(t, err); code != tool.UpstreamUnavailable || !applied {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
	t.Run("a POST's success whose body does not parse", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok " + secret)) })
		_, err := localConfig(t, s).Do(context.Background(), Input{Method: "POST", URL: s.url("/")}, []toolset.HTTPHost{entry(s, "POST")}, "k", tool.TraceContext{}, nil)
		code, applied := codeOf(t, err)
		if code != tool.PermanentFailure || !applied || strings.Contains(err.Error(), secret) {
			t.Fatalf("Do = %v (applied %v)", err, applied)
		}
	})
}

type slowResolver struct{}

func (slowResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A 429 is waited out once, for reads and keyed hosts, when its
// Retry-After is short and fits before the deadline; the second request
// carries the same key.
func TestRetryAfter(t *testing.T) {
	later := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name       string
		method     string
		keyed      bool
		retryAfter []string      // per answer; "" ends with success
		timeout    time.Duration // Config.Timeout, when set
		deadline   time.Duration // the caller's; a minute when not set
		now        time.Time
		waits      []time.Duration
		code       tool.Code
		served     int
	}{
		{name: "read waits", method: "GET", retryAfter: []string{"2"}, waits: []time.Duration{2 * time.Second}, served: 2},
		{name: "keyed POST waits", method: "POST", keyed: true, retryAfter: []string{"0"}, waits: []time.Duration{0}, served: 2},
		{name: "HTTP-date", method: "GET", now: later, retryAfter: []string{later.Add(7 * time.Second).Format(http.TimeFormat)}, waits: []time.Duration{7 * time.Second}, served: 2},
		{name: "thirty seconds waits", method: "HEAD", retryAfter: []string{"30"}, waits: []time.Duration{30 * time.Second}, served: 2},
		{name: "POST without a key does not", method: "POST", retryAfter: []string{"1"}, code: tool.RateLimited, served: 1},
		{name: "over thirty seconds", method: "GET", retryAfter: []string{"31"}, code: tool.RateLimited, served: 1},
		{name: "past the caller's deadline", method: "GET", retryAfter: []string{"10"}, deadline: 5 * time.Second, code: tool.RateLimited, served: 1},
		{name: "longer than the tool's bound", method: "GET", retryAfter: []string{"10"}, timeout: 5 * time.Second, waits: []time.Duration{10 * time.Second}, served: 2},
		{name: "no Retry-After", method: "GET", retryAfter: []string{"-"}, code: tool.RateLimited, served: 1},
		{name: "unreadable Retry-After", method: "GET", retryAfter: []string{"soon"}, code: tool.RateLimited, served: 1},
		{name: "once only", method: "PUT", keyed: true, retryAfter: []string{"1", "1"}, waits: []time.Duration{time.Second}, code: tool.RateLimited, served: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				if i < len(tt.retryAfter) {
					if v := tt.retryAfter[i]; v != "-" {
						w.Header().Set("Retry-After", v)
					}
					w.WriteHeader(429)
					return
				}
				jsonHandler(`1`)(w, r)
			})
			cfg := localConfig(t, s)
			cfg.Timeout = 30 * time.Second
			if tt.timeout > 0 {
				cfg.Timeout = tt.timeout
			}
			if !tt.now.IsZero() {
				cfg.Now = func() time.Time { return tt.now }
			}
			var waits []time.Duration
			cfg.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			h := entry(s, tt.method)
			if tt.keyed {
				h = keyed(h, "raw")
			}
			deadline := time.Minute
			if tt.deadline > 0 {
				deadline = tt.deadline
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			out, err := cfg.Do(ctx, Input{Method: tt.method, URL: s.url("/")}, []toolset.HTTPHost{h}, "key-1", tool.TraceContext{}, nil)
			if code, applied := codeOf(t, err); code != tt.code || applied {
				t.Fatalf("Do = %v (applied %v); want %q", err, applied, tt.code)
			}
			if err == nil && out.Sends != tt.served {
				t.Fatalf("the output counts %d sends; the service saw %d", out.Sends, tt.served)
			}
			if len(waits) != len(tt.waits) || len(waits) > 0 && waits[0] != tt.waits[0] {
				t.Fatalf("waits %v, want %v", waits, tt.waits)
			}
			got := s.seen()
			if len(got) != tt.served {
				t.Fatalf("served %d, want %d", len(got), tt.served)
			}
			if tt.keyed {
				for _, r := range got {
					if r.Header.Get("Idempotency-Key") != "key-1" {
						t.Fatalf("request without the call's key: %v", r.Header)
					}
				}
			}
		})
	}
}

// The tool's result matches the catalog's output schema; the response
// headers kept are the documented subset.
func TestTool(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("ETag", `"v2"`)
		h.Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		h.Set("Location", "/items/7?secret="+secret)
		h.Set("X-RateLimit-Remaining", "59")
		h.Set("RateLimit-Policy", `"default";q=100;w=60`)
		h.Set("Set-Cookie", "session="+secret)
		h.Set("X-Internal", secret)
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"id": 7}`))
	})
	run := localConfig(t, s).Tool()
	ts := &toolset.Toolset{HTTPHosts: []toolset.HTTPHost{entry(s, "POST")}}
	raw, err := run(context.Background(), &toolcall.Call{Input: json.RawMessage(`{"method":"POST","url":"` + s.url("/items") + `","body":{"name":"x"}}`), Toolset: ts, ExternalKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	fetchtest.CheckOutput(t, "http", raw)
	want := `{"status":201,"content_type":"application/json","bytes":9,"headers":{"ETag":"\"v2\"","Last-Modified":"Mon, 02 Jan 2006 15:04:05 GMT","Location-Host":"127.0.0.1","RateLimit-Policy":"\"default\";q=100;w=60","X-RateLimit-Remaining":"59"},"sends":1,"data":{"id":7}}`
	if string(raw) != want {
		t.Fatalf("output %s\nwant   %s", raw, want)
	}
	for _, tc := range []struct{ name, input string }{
		{"unknown field", `{"method":"GET","url":"` + s.url("/") + `","verb":"POST"}`},
		{"not an object", `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(context.Background(), &toolcall.Call{Input: json.RawMessage(tc.input), Toolset: ts})
			if code, _ := codeOf(t, err); code != tool.InputInvalid {
				t.Fatalf("err = %v", err)
			}
		})
	}
	_, err = run(context.Background(), &toolcall.Call{Input: json.RawMessage(`{"method":"POST","url":"` + s.url("/") + `"}`)})
	if code, _ := codeOf(t, err); code != tool.PermissionDenied {
		t.Fatalf("no toolset: %v", err)
	}
	if len(s.seen()) != 1 {
		t.Fatalf("served %d", len(s.seen()))
	}
}

// A response body never reaches an error message, whatever it holds: a
// CSV header row naming one column twice is the body's content too.
func TestCSVHeaderOfTheBodyStaysOutOfTheError(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		_, _ = w.Write([]byte(secret + "," + secret + "\n1,2\n"))
	})
	_, err := localConfig(t, s).Do(context.Background(), Input{Method: "GET", URL: s.url("/"), Accept: "csv"}, []toolset.HTTPHost{entry(s, "GET")}, "k", tool.TraceContext{}, nil)
	if code, _ := codeOf(t, err); code != tool.PermanentFailure {
		t.Fatalf("Do = %v, want %s", err, tool.PermanentFailure)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error carries the body: %v", err)
	}
}

// A Retry-After of more seconds than an int64 holds is still more than
// thirty seconds: the 429 is the call's answer, and nothing is sent again.
func TestRetryAfterBeyondInt64IsNotWaitedOut(t *testing.T) {
	for _, v := range []string{"9223372036854775808", "18446744073709551615", "99999999999999999999999"} {
		t.Run(v, func(t *testing.T) {
			s := newServer(t, statusHandler(http.StatusTooManyRequests, v))
			_, err := localConfig(t, s).Do(context.Background(), Input{Method: "GET", URL: s.url("/")}, []toolset.HTTPHost{entry(s, "GET")}, "k", tool.TraceContext{}, nil)
			if code, _ := codeOf(t, err); code != tool.RateLimited {
				t.Fatalf("Do = %v, want %s", err, tool.RateLimited)
			}
			if n := len(s.seen()); n != 1 {
				t.Fatalf("served %d requests, want 1", n)
			}
		})
	}
}

// A call may not set its host's idempotency header written with
// underscores for hyphens, even where its entry names that spelling: a
// CGI-style server would read it as the key the tool sends.
func TestIdempotencyHeaderWithUnderscoresIsRefused(t *testing.T) {
	s := newServer(t, jsonHandler(`1`))
	h := keyed(entry(s, "POST"), "raw")
	h.Headers = []string{"Idempotency_key"} // as a toolset that skipped CanonicalHTTPHost would hold it
	_, err := localConfig(t, s).Do(context.Background(), Input{Method: "POST", URL: s.url("/"), Headers: map[string]string{"Idempotency_Key": secret}}, []toolset.HTTPHost{h}, "k", tool.TraceContext{}, nil)
	if code, _ := codeOf(t, err); code != tool.PermissionDenied {
		t.Fatalf("Do = %v, want %s", err, tool.PermissionDenied)
	}
	if n := len(s.seen()); n != 0 {
		t.Fatalf("served %d requests, want none", n)
	}
}
