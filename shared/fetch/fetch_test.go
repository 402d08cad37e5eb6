package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// public is the address every name resolves to in these tests.
const public = "93.184.216.34"

func fetchOnce(t *testing.T, h http.HandlerFunc, in Input, tune func(*Config)) (*Output, error, *fetchtest.Upstream) {
	t.Helper()
	up := newUpstream(t, h)
	list := mustList(t, "api.example.com", "*.example.com", "api.example.com:8443", public)
	cfg := upstreamConfig(up, list, &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)})
	if tune != nil {
		tune(cfg)
	}
	if in.URL == "" {
		in.URL = "https://api.example.com/data"
	}
	out, err := Fetch(context.Background(), cfg, in, list)
	return out, err, up
}

func TestOutcomes(t *testing.T) {
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		h          http.HandlerFunc
		in         Input
		code       tool.Code
		retryAfter time.Duration // checked when > 0, to the second
		data       string        // compact JSON, checked on success
	}{
		{name: "json", h: jsonHandler(`{"a": [1, {"b": "x"}]}`), data: `{"a":[1,{"b":"x"}]}`},
		{name: "json select", h: jsonHandler(`{"a": [1, {"b": "x"}]}`), in: Input{Select: "/a/1/b"}, data: `"x"`},
		{name: "json select escaped names", h: jsonHandler(`{"a/b": {"m~n": 7}}`), in: Input{Select: "/a~1b/m~0n"}, data: `7`},
		{name: "json select last duplicate wins", h: jsonHandler(`{"a": {"b": 1}, "a": {"c": 2}}`), in: Input{Select: "/a/c"}, data: `2`},
		{name: "json select earlier duplicate hidden", h: jsonHandler(`{"a": {"b": 1}, "a": {"c": 2}}`), in: Input{Select: "/a/b"}, code: tool.PermanentFailure},
		{name: "json select missing member", h: jsonHandler(`{"a": 1}`), in: Input{Select: "/b"}, code: tool.PermanentFailure},
		{name: "json select past the end", h: jsonHandler(`[1, 2]`), in: Input{Select: "/2"}, code: tool.PermanentFailure},
		{name: "json select dash", h: jsonHandler(`[1, 2]`), in: Input{Select: "/-"}, code: tool.PermanentFailure},
		{name: "json select leading zero index", h: jsonHandler(`[1, 2]`), in: Input{Select: "/01"}, code: tool.PermanentFailure},
		{name: "json select into scalar", h: jsonHandler(`{"a": 1}`), in: Input{Select: "/a/b"}, code: tool.PermanentFailure},
		{name: "json with BOM", h: jsonHandler("\ufeff[true]"), data: `[true]`},
		{name: "json huge number kept", h: jsonHandler(`{"n": 1e400}`), in: Input{Select: "/n"}, data: `1e400`},
		{name: "bad json", h: jsonHandler(`{"a": }`), code: tool.PermanentFailure},
		{name: "truncated json", h: jsonHandler(`{"a": [1, 2`), code: tool.PermanentFailure},
		{name: "two json values", h: jsonHandler(`{} {}`), code: tool.PermanentFailure},
		{name: "empty json body", h: jsonHandler(``), code: tool.PermanentFailure},
		{name: "json not utf-8", h: jsonHandler("[\"\xff\"]"), code: tool.PermanentFailure},
		{name: "json bad in a skipped part", h: jsonHandler(`{"a": 1, "b": [1,,2]}`), in: Input{Select: "/a"}, code: tool.PermanentFailure},
		{name: "csv", h: textHandler("text/csv", "id,name\r\n1,Ada\r\n2,\"Lovelace, A.\"\r\n"), in: Input{Accept: "csv"},
			data: `[{"id":"1","name":"Ada"},{"id":"2","name":"Lovelace, A."}]`},
		{name: "csv header only", h: textHandler("text/csv", "id,name\n"), in: Input{Accept: "csv"}, data: `[]`},
		{name: "csv ragged row", h: textHandler("text/csv", "id,name\n1\n"), in: Input{Accept: "csv"}, code: tool.PermanentFailure},
		{name: "csv bare quote", h: textHandler("text/csv", "id\na\"b\n"), in: Input{Accept: "csv"}, code: tool.PermanentFailure},
		{name: "csv duplicate column", h: textHandler("text/csv", "id,id\n1,2\n"), in: Input{Accept: "csv"}, code: tool.PermanentFailure},
		{name: "csv empty", h: textHandler("text/csv", ""), in: Input{Accept: "csv"}, code: tool.PermanentFailure},
		{name: "text", h: textHandler("text/plain", "héllo\n"), in: Input{Accept: "text"}, data: `"héllo\n"`},
		{name: "text not utf-8", h: textHandler("text/plain", "h\xe9llo"), in: Input{Accept: "text"}, code: tool.PermanentFailure},
		{name: "429 seconds", h: statusHandler(429, "7"), code: tool.RateLimited, retryAfter: 7 * time.Second},
		{name: "429 http-date", h: statusHandler(429, httpDate), code: tool.RateLimited, retryAfter: 90 * time.Second},
		{name: "503", h: statusHandler(503, "2"), code: tool.UpstreamUnavailable, retryAfter: 2 * time.Second},
		{name: "500", h: statusHandler(500, ""), code: tool.UpstreamUnavailable},
		{name: "404", h: statusHandler(404, ""), code: tool.PermanentFailure},
		{name: "401", h: statusHandler(401, ""), code: tool.PermanentFailure},
		{name: "300 is not followed", h: statusHandler(300, ""), code: tool.PermanentFailure},
		{name: "redirect without location", h: statusHandler(302, ""), code: tool.PermanentFailure},
		{name: "304 not modified", h: statusHandler(304, ""), in: Input{Headers: map[string]string{"If-None-Match": `"v1"`}}, data: `null`},
		{name: "204 no content", h: statusHandler(204, ""), data: `null`},
		{name: "header outside the set", h: jsonHandler(`1`), in: Input{Headers: map[string]string{"Authorization": "Bearer x"}}, code: tool.PermissionDenied},
		{name: "header in another case", h: jsonHandler(`1`), in: Input{Headers: map[string]string{"accept": "x"}}, code: tool.PermissionDenied},
		{name: "cookie header", h: jsonHandler(`1`), in: Input{Headers: map[string]string{"Cookie": "a=b"}}, code: tool.PermissionDenied},
		{name: "header value with newline", h: jsonHandler(`1`), in: Input{Headers: map[string]string{"Accept": "a\r\nX-Evil: 1"}}, code: tool.InputInvalid},
		{name: "bad accept", h: jsonHandler(`1`), in: Input{Accept: "xml"}, code: tool.InputInvalid},
		{name: "bad pointer", h: jsonHandler(`1`), in: Input{Select: "a"}, code: tool.InputInvalid},
		{name: "bad pointer escape", h: jsonHandler(`1`), in: Input{Select: "/a~2"}, code: tool.InputInvalid},
		{name: "select with csv", h: jsonHandler(`1`), in: Input{Accept: "csv", Select: "/a"}, code: tool.InputInvalid},
		{name: "gzip decoded", h: gzipHandler(`{"z": 1}`), in: Input{Select: "/z"}, data: `1`},
		{name: "port named by the entry", h: jsonHandler(`2`), in: Input{URL: "https://api.example.com:8443/x"}, data: `2`},
		{name: "port not named", h: jsonHandler(`2`), in: Input{URL: "https://api.example.com:8080/x"}, code: tool.PermissionDenied},
		{name: "https default port for http", h: jsonHandler(`2`), in: Input{URL: "http://api.example.com:443/x"}, code: tool.PermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err, up := fetchOnce(t, tt.h, tt.in, nil)
			if got := code(t, err); got != tt.code {
				t.Fatalf("Fetch = %+v, %v; want code %q", out, err, tt.code)
			}
			if err != nil {
				if tt.code == tool.PermissionDenied || tt.code == tool.InputInvalid {
					if strings.Contains(tt.name, "header") || strings.Contains(tt.name, "accept") || strings.Contains(tt.name, "pointer") || strings.Contains(tt.name, "port") {
						if s := up.Served(); len(s) != 0 {
							t.Fatalf("refused input reached the server: %q", s)
						}
					}
				}
				var te *tool.Error
				errors.As(err, &te)
				if tt.retryAfter > 0 && (te.RetryAfter-tt.retryAfter).Abs() > time.Second {
					t.Fatalf("RetryAfter = %s, want %s", te.RetryAfter, tt.retryAfter)
				}
				t.Logf("%s: %s", te.Code, te.Message)
				return
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, out.Data); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.data {
				t.Fatalf("data = %s, want %s", buf.String(), tt.data)
			}
		})
	}
}

func textHandler(ctype, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write([]byte(body))
	}
}

func statusHandler(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		if code != 204 && code != 304 {
			_, _ = w.Write([]byte(`{"error": "x"}`))
		}
	}
}

func gzipHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			http.Error(w, "want gzip", 400)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte(body))
		_ = zw.Close()
	}
}

func TestRequestHeaders(t *testing.T) {
	var got http.Header
	h := func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		jsonHandler(`1`)(w, r)
	}
	in := Input{Headers: map[string]string{"Accept-Language": "de", "If-Modified-Since": "Mon, 02 Jan 2006 15:04:05 GMT"}}
	if _, err, _ := fetchOnce(t, h, in, nil); err != nil {
		t.Fatal(err)
	}
	if got.Get("Accept-Language") != "de" || got.Get("If-Modified-Since") == "" || got.Get("Accept") != "application/json" {
		t.Fatalf("headers %v", got)
	}
	if got.Get("Authorization") != "" || got.Get("Cookie") != "" || got.Get("Referer") != "" {
		t.Fatalf("unexpected headers %v", got)
	}
}

func TestConnectFaults(t *testing.T) {
	t.Run("dial fails", func(t *testing.T) {
		_, err, _ := fetchOnce(t, jsonHandler(`1`), Input{}, func(c *Config) {
			c.Dial = func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("connection refused") }
		})
		if code(t, err) != tool.UpstreamUnavailable {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.(*tool.Error).Message, "connection refused") {
			t.Fatalf("internal error text in the message: %v", err)
		}
	})
	t.Run("certificate not trusted", func(t *testing.T) {
		_, err, _ := fetchOnce(t, jsonHandler(`1`), Input{}, func(c *Config) { c.RootCAs = nil })
		if code(t, err) != tool.PermanentFailure {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("certificate for another name", func(t *testing.T) {
		up := newUpstream(t, jsonHandler(`1`))
		list := mustList(t, "api.other.test")
		cfg := upstreamConfig(up, list, &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)})
		_, err := Fetch(context.Background(), cfg, Input{URL: "https://api.other.test/"}, list)
		if code(t, err) != tool.PermanentFailure {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("connection dropped mid-body", func(t *testing.T) {
		_, err, _ := fetchOnce(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte(`[1,`))
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, Input{}, nil)
		if code(t, err) != tool.UpstreamUnavailable {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no such host", func(t *testing.T) {
		_, err, _ := fetchOnce(t, jsonHandler(`1`), Input{}, func(c *Config) { c.Resolver = &fetchtest.Resolver{} })
		if code(t, err) != tool.PermanentFailure {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestBounds(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 6<<20)
	t.Run("6 MB body with length refused", func(t *testing.T) {
		_, err, _ := fetchOnce(t, textHandler("text/plain", string(big)), Input{Accept: "text"}, nil)
		if code(t, err) != tool.PermissionDenied {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("6 MB chunked json body refused", func(t *testing.T) {
		_, err, _ := fetchOnce(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`"`))
			for i := 0; i < 6; i++ {
				_, _ = w.Write(big[:1<<20])
				w.(http.Flusher).Flush()
			}
			_, _ = w.Write([]byte(`"`))
		}, Input{}, nil)
		if code(t, err) != tool.PermissionDenied {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("body of exactly the bound accepted", func(t *testing.T) {
		body := `"` + string(big[:5<<20-2]) + `"`
		out, err, _ := fetchOnce(t, textHandler("application/json", body), Input{}, nil)
		if err != nil || out.Bytes != 5<<20 {
			t.Fatalf("Fetch = %v", err)
		}
	})
	t.Run("one byte over a small bound", func(t *testing.T) {
		_, err, _ := fetchOnce(t, textHandler("text/plain", "12345678901"), Input{Accept: "text"}, func(c *Config) { c.MaxBytes = 10 })
		if code(t, err) != tool.PermissionDenied {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("gzip bomb bounded after decoding", func(t *testing.T) {
		_, err, _ := fetchOnce(t, gzipHandler(string(big)), Input{Accept: "text"}, nil)
		if code(t, err) != tool.PermissionDenied {
			t.Fatalf("err = %v", err)
		}
	})
	slow := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[1,`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	t.Run("slow body times out", func(t *testing.T) {
		start := time.Now()
		_, err, _ := fetchOnce(t, slow, Input{}, func(c *Config) { c.Timeout = 200 * time.Millisecond })
		if code(t, err) != tool.Timeout {
			t.Fatalf("err = %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %s", d)
		}
	})
	t.Run("slow headers time out", func(t *testing.T) {
		_, err, _ := fetchOnce(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, Input{}, func(c *Config) { c.Timeout = 200 * time.Millisecond })
		if code(t, err) != tool.Timeout {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("slow look-up times out", func(t *testing.T) {
		_, err, _ := fetchOnce(t, jsonHandler(`1`), Input{}, func(c *Config) {
			c.Timeout = 100 * time.Millisecond
			c.Resolver = slowResolver{}
		})
		if code(t, err) != tool.Timeout {
			t.Fatalf("err = %v", err)
		}
	})
}

type slowResolver struct{}

func (slowResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, &net.DNSError{Err: "i/o timeout", IsTimeout: true}
}

func TestRedirects(t *testing.T) {
	chain := func(n int, last string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r"))
			if i < n {
				loc := fmt.Sprintf("/r%d", i+1)
				if i+1 == n && last != "" {
					loc = last
				}
				w.Header().Set("Location", loc)
				w.WriteHeader([]int{301, 302, 303, 307, 308}[i%5])
				return
			}
			jsonHandler(fmt.Sprintf(`{"at": %d}`, i))(w, r)
		}
	}
	tests := []struct {
		name   string
		h      http.HandlerFunc
		tune   func(*Config)
		code   tool.Code
		served int
	}{
		{name: "5 followed", h: chain(5, ""), served: 6},
		{name: "6th refused", h: chain(6, ""), code: tool.PermissionDenied, served: 6},
		{name: "limit 1", h: chain(2, ""), tune: func(c *Config) { c.MaxRedirects = 1 }, code: tool.PermissionDenied, served: 2},
		{name: "none followed", h: chain(1, ""), tune: func(c *Config) { c.MaxRedirects = -1 }, code: tool.PermissionDenied, served: 1},
		{name: "to 127.0.0.1 on the list", h: chain(1, "http://127.0.0.1/"), tune: func(c *Config) { c.Allow = append(c.Allow, mustList(t, "127.0.0.1")...) }, code: tool.PermissionDenied, served: 1},
		{name: "to 127.0.0.1 not on the list", h: chain(1, "http://127.0.0.1/x"), code: tool.PermissionDenied, served: 1},
		{name: "to [::ffff:127.0.0.1]", h: chain(1, "http://[::ffff:127.0.0.1]/"), code: tool.PermissionDenied, served: 1},
		{name: "scheme-relative to another host", h: chain(1, "//evil.test/"), code: tool.PermissionDenied, served: 1},
		{name: "scheme-relative to a listed host", h: chain(1, "//www.example.com/r9"), served: 2},
		{name: "absolute to a listed host over http", h: chain(1, "http://www.example.com/r9"), served: 2},
		{name: "backslash location", h: chain(1, `/\evil.test/`), code: tool.PermissionDenied, served: 1},
		{name: "backslashes location", h: chain(1, `\\evil.test`), code: tool.PermissionDenied, served: 1},
		{name: "location with blank", h: chain(1, " http://evil.test/"), code: tool.PermissionDenied, served: 1},
		{name: "opaque location", h: chain(1, "http:evil.test"), code: tool.PermissionDenied, served: 1},
		{name: "relative path", h: chain(1, "r9"), served: 2},
		{name: "relative dot segment", h: chain(1, "../r9"), code: tool.PermissionDenied, served: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err, up := fetchOnce(t, tt.h, Input{URL: "https://api.example.com/r0"}, tt.tune)
			if got := code(t, err); got != tt.code {
				t.Fatalf("Fetch = %+v, %v; want %q", out, err, tt.code)
			}
			if s := up.Served(); len(s) != tt.served {
				t.Fatalf("served %q, want %d requests", s, tt.served)
			}
			if err != nil {
				t.Logf("%v", err)
			}
		})
	}
}

// TestTool runs the toolcall.Func with the run's pinned fetch_hosts and
// checks the result against the catalog's output schema.
func TestTool(t *testing.T) {
	up := newUpstream(t, jsonHandler(`{"items": [{"id": 1}], "n": 1}`))
	cfg := upstreamConfig(up, mustList(t, "*.example.com"), &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)})
	run := cfg.Tool()
	call := func(fetchHosts []string, input string) (json.RawMessage, error) {
		return run(context.Background(), &toolcall.Call{Input: json.RawMessage(input), Toolset: &toolset.Toolset{FetchHosts: fetchHosts}})
	}
	raw, err := call([]string{"api.example.com"}, `{"url": "https://api.example.com/x", "select": "/items/0"}`)
	if err != nil {
		t.Fatal(err)
	}
	fetchtest.CheckOutput(t, "structured-data-fetch", raw)
	if string(raw) != `{"status":200,"content_type":"application/json","bytes":30,"data":{"id":1}}` {
		t.Fatalf("output %s", raw)
	}
	for _, tc := range []struct {
		name, input string
		hosts       []string
		code        tool.Code
	}{
		{"not pinned", `{"url": "https://other.example.com/x"}`, []string{"api.example.com"}, tool.PermissionDenied},
		{"no fetch_hosts", `{"url": "https://api.example.com/x"}`, nil, tool.PermissionDenied},
		{"bad fetch_hosts", `{"url": "https://api.example.com/x"}`, []string{"0x7f.1"}, tool.PermissionDenied},
		{"fetch_hosts wildcard over a public suffix", `{"url": "https://api.example.com/x"}`, []string{"*.co.uk", "*.example.com"}, tool.PermissionDenied},
		{"pinned wildcard over a public suffix", `{"url": "https://a.github.io/x"}`, []string{"*.github.io"}, tool.PermissionDenied},
		{"unknown field", `{"url": "https://api.example.com/x", "method": "POST"}`, []string{"api.example.com"}, tool.InputInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(tc.hosts, tc.input)
			if got := code(t, err); got != tc.code {
				t.Fatalf("err = %v, want %s", err, tc.code)
			}
		})
	}
	if _, err := (&Config{}).Tool()(context.Background(), &toolcall.Call{Input: json.RawMessage(`{"url": "https://api.example.com/"}`), Toolset: &toolset.Toolset{FetchHosts: []string{"api.example.com"}}}); code(t, err) != tool.PermissionDenied {
		t.Fatalf("no platform allow-list: %v", err)
	}
}
