package webhook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a local HTTP server on 127.0.0.1 that records what it gets
// and answers with handle.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
}

func newReceiver(t *testing.T, tls bool, handle http.HandlerFunc) *receiver {
	rc := &receiver{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got, rc.bodies = append(rc.got, r), append(rc.bodies, b)
		rc.mu.Unlock()
		handle(w, r)
	})
	if tls {
		rc.srv = httptest.NewTLSServer(h)
	} else {
		rc.srv = httptest.NewServer(h)
	}
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// hostPort is the receiver's "127.0.0.1:port", the allow-list entry.
func (rc *receiver) hostPort() string { u, _ := url.Parse(rc.srv.URL); return u.Host }

func loopbackSender(t *testing.T, rc *receiver) *Sender {
	return &Sender{Rules: mustRules(t, []string{rc.hostPort()}, []string{"127.0.0.1/32"}, nil)}
}

func TestSendDeliversSignedPost(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	key := make([]byte, 32)
	body := []byte(`{"type":"call.unknown","timestamp":"2026-12-02T20:00:00Z","data":{}}`)
	at := time.Unix(1_796_241_600, 0)
	sig, err := Sign([][]byte{key}, "evt_a", at, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "evt_a")
	h.Set(HeaderTimestamp, "1796241600")
	h.Set(HeaderSignature, sig)
	a := loopbackSender(t, rc).Send(context.Background(), rc.srv.URL+"/hook?x=1", h, body)
	if a.Outcome != Delivered || a.Status != 204 || a.ErrorClass != "" {
		t.Fatalf("attempt = %+v", a)
	}
	r := rc.got[0]
	if r.Method != http.MethodPost || r.URL.RequestURI() != "/hook?x=1" || r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != UserAgent {
		t.Fatalf("request %s %s, headers %v", r.Method, r.URL, r.Header)
	}
	if err := Verify(key, r.Header.Get(HeaderID), r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), rc.bodies[0], at, 0); err != nil {
		t.Fatalf("the receiver cannot verify: %v", err)
	}
}

func TestSendClassifiesAnswers(t *testing.T) {
	for _, c := range []struct {
		status  int
		outcome Outcome
		class   string
	}{
		{200, Delivered, ""}, {410, Gone, ""}, {500, Retry, "status"}, {404, Retry, "status"}, {429, Retry, "status"},
	} {
		rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(c.status) })
		a := loopbackSender(t, rc).Send(context.Background(), rc.srv.URL, nil, []byte("{}"))
		if a.Status != c.status || a.Outcome != c.outcome || a.ErrorClass != c.class {
			t.Errorf("answer %d: attempt %+v", c.status, a)
		}
	}
}

// TestSendFollowsNoRedirect checks that a 3xx is a retry and its Location
// is never requested.
func TestSendFollowsNoRedirect(t *testing.T) {
	target := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {})
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	s := loopbackSender(t, rc)
	s.Rules.Allow = append(s.Rules.Allow, mustRules(t, []string{target.hostPort()}, nil, nil).Allow...)
	a := s.Send(context.Background(), rc.srv.URL, nil, []byte("{}"))
	if a.Status != 307 || a.Outcome != Retry || a.ErrorClass != "redirect" || target.count() != 0 {
		t.Fatalf("attempt %+v, redirect target requested %d times", a, target.count())
	}
}

// TestSendRefusesBeforeConnecting checks refusals by the rules: nothing
// reaches the receiver.
func TestSendRefusesBeforeConnecting(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {})
	res := &fakeResolver{answers: map[string][]netip.Addr{"meta.example.com": addrs("169.254.169.254"), "hook.example.com": addrs("127.0.0.1"),
		"pub.example.com": addrs("127.0.0.1", "93.184.215.14")}}
	port := strings.TrimPrefix(rc.hostPort(), "127.0.0.1:")
	for _, c := range []struct {
		name, url, class string
		exempt           []string
	}{
		{"name resolving to the metadata service", "https://meta.example.com:" + port + "/", "refused-address", []string{"127.0.0.1/32"}},
		{"loopback without the exemption", "https://hook.example.com:" + port + "/", "refused-address", nil},
		{"plain http to a name with an answer not exempted", "http://pub.example.com:" + port + "/", "refused-address", []string{"127.0.0.1/32"}},
		{"plain http to a name with nothing exempted", "http://hook.example.com:" + port + "/", "refused-url", nil},
		{"not listed", "https://other.example.com/", "refused-url", []string{"127.0.0.1/32"}},
		{"no such host", "https://gone.example.com:" + port + "/", "lookup", []string{"127.0.0.1/32"}},
	} {
		s := &Sender{Rules: mustRules(t, []string{"*.example.com:" + port}, c.exempt, nil)}
		s.Rules.Resolver = res
		a := s.Send(context.Background(), c.url, nil, []byte("{}"))
		if a.Outcome != Retry || a.ErrorClass != c.class || a.Status != 0 {
			t.Errorf("%s: attempt %+v, want class %s", c.name, a, c.class)
		}
	}
	if rc.count() != 0 {
		t.Fatalf("the receiver got %d requests", rc.count())
	}
}

// TestSendPlainHTTPToANameAnsweringOnlyExemptedAddresses checks that plain
// http may reach a name whose every answer is exempted (the local stack's
// receiver under a name of its resolve file), and connects to that answer.
func TestSendPlainHTTPToANameAnsweringOnlyExemptedAddresses(t *testing.T) {
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {})
	port := strings.TrimPrefix(rc.hostPort(), "127.0.0.1:")
	s := &Sender{Rules: mustRules(t, []string{"hook.example.com:" + port}, []string{"127.0.0.1/32"}, nil)}
	s.Rules.Resolver = &fakeResolver{answers: map[string][]netip.Addr{"hook.example.com": addrs("127.0.0.1")}}
	a := s.Send(context.Background(), "http://hook.example.com:"+port+"/in", nil, []byte("{}"))
	if a.Outcome != Delivered || rc.count() != 1 {
		t.Fatalf("attempt %+v, %d requests; want one delivered", a, rc.count())
	}
}

// TestSendOverTLS checks https to a name resolved to the exempted loopback
// (the test server's certificate names example.com), verified against the
// Client's roots, and refused without them.
func TestSendOverTLS(t *testing.T) {
	rc := newReceiver(t, true, func(w http.ResponseWriter, r *http.Request) {})
	port := strings.TrimPrefix(rc.hostPort(), "127.0.0.1:")
	rules := mustRules(t, []string{"example.com:" + port}, []string{"127.0.0.1/32"}, nil)
	rules.Resolver = &fakeResolver{answers: map[string][]netip.Addr{"example.com": addrs("127.0.0.1")}}
	endpoint := "https://example.com:" + port + "/hook"
	if a := (&Sender{Rules: rules, Client: rc.srv.Client()}).Send(context.Background(), endpoint, nil, []byte("{}")); a.Outcome != Delivered {
		t.Fatalf("with the server's roots: %+v", a)
	}
	if a := (&Sender{Rules: rules}).Send(context.Background(), endpoint, nil, []byte("{}")); a.Outcome != Retry || a.ErrorClass != "tls" {
		t.Fatalf("without the server's roots: %+v", a)
	}
	if rc.count() != 1 {
		t.Fatalf("the receiver got %d requests, want 1", rc.count())
	}
}

// TestSendGivesUpAtTheTimeout checks that a receiver that does not answer
// ends the attempt as a timeout; the handler is released by the test.
func TestSendGivesUpAtTheTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	s := loopbackSender(t, rc)
	s.Timeout = 50 * time.Millisecond
	if a := s.Send(context.Background(), rc.srv.URL, nil, []byte("{}")); a.Outcome != Retry || a.ErrorClass != "timeout" || a.Status != 0 {
		t.Fatalf("attempt %+v", a)
	}
}

// TestSendReadsAtMostMaxResponse checks that a large answer does not stop
// the attempt and that only MaxResponse bytes of it are read.
func TestSendReadsAtMostMaxResponse(t *testing.T) {
	wrote := make(chan int64, 1)
	rc := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		n, _ := io.Copy(w, bytes.NewReader(make([]byte, 64<<20)))
		wrote <- n
	})
	a := loopbackSender(t, rc).Send(context.Background(), rc.srv.URL, nil, []byte("{}"))
	if a.Outcome != Delivered {
		t.Fatalf("attempt %+v", a)
	}
	if n := <-wrote; n >= 64<<20 {
		t.Fatalf("the whole 64 MiB answer was read")
	}
}

// stallingResolver is a hand-written fake (no DNS stand-in stalls on
// demand): it answers only when the look-up's context ends.
type stallingResolver struct{}

func (stallingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestSendCountsAStalledLookupAsATimeout checks that a look-up that does
// not finish within Timeout ends the attempt as a timeout.
func TestSendCountsAStalledLookupAsATimeout(t *testing.T) {
	s := &Sender{Rules: mustRules(t, []string{"hooks.example.com"}, nil, nil), Timeout: 20 * time.Millisecond}
	s.Rules.Resolver = stallingResolver{}
	if a := s.Send(context.Background(), "https://hooks.example.com/", nil, []byte("{}")); a.Outcome != Retry || a.ErrorClass != "timeout" {
		t.Fatalf("attempt %+v", a)
	}
}
