package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// fuzzAnswers are the resolver's answer sets FuzzDecide picks from.
var fuzzAnswers = [][]string{
	{"93.184.216.34"},
	{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
	{"93.184.216.34", "127.0.0.1"},
	{"::ffff:93.184.216.34"},
	{"169.254.169.254"},
	{},
}

func FuzzDecide(f *testing.F) {
	for _, c := range fetchtest.LoadCases(f, ssrfCases) {
		f.Add(c.URL, uint8(0))
		for _, r := range c.RedirectsTo {
			f.Add(r, uint8(1))
		}
	}
	for _, s := range []string{
		"https://api.example.com:8443/x", "http://[2606:4700::1]/", "https://a.b.example.com/?q=1#f",
		"http://127.0.0.1/", "HTTP://API.EXAMPLE.COM./", "http://api.example.com:443/", "https://bücher.example.com/",
		"http://api.example.com%2f@evil/", "http://api.example.com\t/", "http://[::ffff:8.8.8.8]/",
	} {
		f.Add(s, uint8(2))
	}
	list, err := hostlist.ParseList([]string{"api.example.com", "*.example.com", "8.8.8.8", "api.example.com:8443", "2606:4700::1", "127.0.0.1", "::ffff:8.8.8.8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string, pick uint8) {
		res := &fetchtest.Resolver{}
		for _, s := range fuzzAnswers[int(pick)%len(fuzzAnswers)] {
			res.Answers = append(res.Answers, netip.MustParseAddr(s))
		}
		cfg := &Config{Allow: list, Resolver: res}
		d := cfg.Decide(context.Background(), raw, list)
		for _, h := range res.Hosts() {
			if !onList(list, h) {
				t.Fatalf("Decide(%q) looked up %q, which is not on the list", raw, h)
			}
		}
		if len(res.Hosts()) > 1 {
			t.Fatalf("Decide(%q) looked up %d times", raw, len(res.Hosts()))
		}
		if !d.Allow {
			if d.Reason == "" || d.Code == "" || d.url != nil {
				t.Fatalf("Decide(%q) refused without reason or code: %+v", raw, d)
			}
			return
		}
		if d.Code != "" || d.Reason != "" {
			t.Fatalf("Decide(%q) allowed with %+v", raw, d)
		}
		if strings.ContainsAny(raw, "\\@ \t\r\n") {
			t.Fatalf("Decide(%q) allowed a URL with a backslash, @ or blank", raw)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" {
			t.Fatalf("Decide(%q) allowed what net/url reads as %#v, %v", raw, u, err)
		}
		if _, ok := list.Match(u.Scheme, u.Hostname(), u.Port()); !ok {
			t.Fatalf("Decide(%q) allowed a host:port not on the list", raw)
		}
		if h, err := hostlist.NormalizeHost(u.Hostname()); err != nil || h != d.Host {
			t.Fatalf("Decide(%q) host %q, net/url reads %q", raw, d.Host, u.Hostname())
		}
		if want := map[string]string{"http": "80", "https": "443"}[u.Scheme]; u.Port() != "" {
			want = u.Port()
			if d.Port != want {
				t.Fatalf("Decide(%q) port %q, want %q", raw, d.Port, want)
			}
		} else if d.Port != want {
			t.Fatalf("Decide(%q) port %q, want %q", raw, d.Port, want)
		}
		if len(d.Addrs) == 0 {
			t.Fatalf("Decide(%q) allowed with no address", raw)
		}
		for _, a := range d.Addrs {
			if ok, why := CheckAddr(a, nil); !ok {
				t.Fatalf("Decide(%q) allowed address %s: %s", raw, a, why)
			}
		}
		// The URL that is requested passes the same checks to the same place.
		again := (&Config{Allow: list, Resolver: &fetchtest.Resolver{Answers: res.Answers}}).Decide(context.Background(), d.url.String(), list)
		if !again.Allow || again.Host != d.Host || again.Port != d.Port {
			t.Fatalf("Decide(%q) allowed, but its request URL %q gives %+v", raw, d.url, again)
		}
	})
}

func FuzzSelect(f *testing.F) {
	for _, s := range []struct{ body, ptr string }{
		{`{"a": [1, {"b": "x"}]}`, "/a/1/b"}, {`{"a/b": {"m~n": 7}}`, "/a~1b/m~0n"}, {`{"a": 1, "a": {"c": 2}}`, "/a/c"},
		{`[1, 2]`, "/-"}, {`[1, 2]`, "/01"}, {`{"n": 1e400}`, "/n"}, {`{} {}`, ""}, {`{"a": }`, "/a"}, {`"\u00e9"`, ""},
		{`{"": {"": 3}}`, "//"}, {`{"\ud83d\ude00": 1, "\ud800x": 2, "\udc00": 3}`, "/\U0001F600"}, {`{"\ud800\ud800\udc00": 1}`, "/\ufffd\U00010000"}, {`[[[[]]]]`, "/0/0/0"}, {`{"a":[1,,2]}`, "/a"}, {` null `, ""}, {`{"\u0061": 1}`, "/a"},
	} {
		f.Add([]byte(s.body), s.ptr, uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, ptr string, chunk uint8) {
		toks, err := parsePointer(ptr)
		if err != nil {
			return
		}
		var r io.Reader = bytes.NewReader(body)
		if chunk%2 == 1 {
			r = iotest.HalfReader(r)
		}
		got, err := selectJSON(r, toks)
		valid := json.Valid(body)
		var pe *parseError
		var nm *noMatch
		switch {
		case !valid:
			if !errors.As(err, &pe) {
				t.Fatalf("selectJSON(%q) on invalid JSON = %s, %v", body, got, err)
			}
			return
		case errors.As(err, &pe):
			t.Fatalf("selectJSON(%q, %q) on valid JSON: %v", body, ptr, err)
		case !utf8.Valid(body):
			return // encoding/json reads invalid UTF-8 in names as U+FFFD; Fetch refuses such bodies
		}
		want, ok := reference(t, body, toks)
		if !ok {
			if !errors.As(err, &nm) {
				t.Fatalf("selectJSON(%q, %q) = %s, %v; the pointer does not resolve", body, ptr, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("selectJSON(%q, %q) = %v; want %v", body, ptr, err, want)
		}
		if !json.Valid(got) {
			t.Fatalf("selectJSON(%q, %q) = %q, not JSON", body, ptr, got)
		}
		if v := decode(t, got); !reflect.DeepEqual(v, want) {
			t.Fatalf("selectJSON(%q, %q) = %s; want %v", body, ptr, got, want)
		}
	})
}

// reference resolves toks in the encoding/json reading of body (last
// duplicate member wins).
func reference(t *testing.T, body []byte, toks []string) (any, bool) {
	v := decode(t, body)
	for _, tok := range toks {
		switch x := v.(type) {
		case map[string]any:
			m, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = m
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func decode(t *testing.T, b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func nestedDeeply(b []byte) bool {
	return bytes.Count(b, []byte("[")) >= maxDepth || bytes.Count(b, []byte("{")) >= maxDepth
}

func FuzzUTF8Check(f *testing.F) {
	for _, s := range []string{"", "héllo", "\xff", "\xe2\x82", "\xe2\x82\xac", "a\xf0\x9f\x98\x80b", "\xed\xa0\x80", "\xc0\xaf"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, step uint8) {
		var v utf8Check
		n := int(step%7) + 1
		for i := 0; i < len(b); i += n {
			v.write(b[i:min(i+n, len(b))])
		}
		if v.valid() != utf8.Valid(b) {
			t.Fatalf("utf8Check(%q, chunks of %d) = %v, utf8.Valid = %v", b, n, v.valid(), utf8.Valid(b))
		}
	})
}

func TestSelectDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		body := strings.Repeat("[", n) + strings.Repeat("]", n)
		_, err := selectJSON(strings.NewReader(body), nil)
		if (err == nil) != json.Valid([]byte(body)) {
			t.Fatalf("depth %d: selectJSON error %v, json.Valid %v", n, err, json.Valid([]byte(body)))
		}
	}
}

// FuzzRetryAfter: any header value gives a delay between 0 and a day,
// delay-seconds (digits only, RFC 9110 §10.2.3) within a day are read
// exactly, and past a day, however many digits, are a day.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "7", "86401", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", " 5", "1e3", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := RetryAfter(v, now)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("RetryAfter(%q) = %s, outside 0..24h", v, d)
		}
		digits := v != "" && strings.Trim(v, "0123456789") == ""
		if n, err := strconv.Atoi(v); digits && err == nil && n <= 86400 && d != time.Duration(n)*time.Second {
			t.Fatalf("RetryAfter(%q) = %s, want %d s", v, d, n)
		}
		if n, err := strconv.ParseUint(v, 10, 64); digits && (err != nil || n > 86400) && d != 24*time.Hour {
			t.Fatalf("RetryAfter(%q) = %s: delay-seconds past a day are a day", v, d)
		}
	})
}
