package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// Backend is how the console reaches review-decision: the CLI implements
// it by signing each request with the reviewer's identity and a fresh
// caller proof (docs/identity.md), as `toolgate review` and `toolgate
// parked` do. A refusal by the function is returned as *Refusal; any
// other error is a failure to reach it.
type Backend interface {
	// List is the reviews of status "pending", "approved" or "rejected".
	List(ctx context.Context, status string) (review.ListResult, error)
	// Show is one review with its input and what the console shows of it.
	Show(ctx context.Context, id string) (review.View, error)
	// Decide decides review id, bound (review.DecideBinding) to digest,
	// the input digest the page showed (never read again at decision
	// time); answer and edits are nil when none.
	Decide(ctx context.Context, id string, verdict review.Verdict, digest, reason string, answer, edits json.RawMessage) (review.DecideResult, error)
	// ParkList is the parks of a status (park.Status, lower case).
	ParkList(ctx context.Context, status string) (park.ListResult, error)
	// ParkShow is one park.
	ParkShow(ctx context.Context, id string) (park.View, error)
	// ParkDecide approves, rejects or resumes park id, bound
	// (review.ParkDecideBinding) to digest, the current definition's
	// digest the page showed (never read again at decision time: a
	// definition changed again since is refused by review-decision).
	ParkDecide(ctx context.Context, id, decision, digest, reason string) (park.DecideResult, error)
}

// Refusal is review-decision's refusal of a request: its error code
// (shared/review Code) and its message, safe to show.
type Refusal struct {
	Code    string
	Message string
}

// Error is "CODE: message".
func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// CookieName begins the name of the console's session cookie: 32 random
// bytes, base64url, HttpOnly, SameSite=Strict, Path=/ (RFC 6265bis), set
// once the capability is used. The whole name is SessionCookieName(PORT).
const CookieName = "toolgate_console"

// SessionCookieName is the session cookie's name of the console on
// 127.0.0.1:port, "toolgate_console_PORT": a browser keeps one cookie per
// name, domain and path whatever the port (RFC 6265 §8.5), so under one
// name a second console (another stage, another shell) would overwrite
// the first one's cookie and lock it out.
func SessionCookieName(port int) string { return CookieName + "_" + strconv.Itoa(port) }

// CapabilityBytes and SessionBytes are the random bytes of the opening
// capability and of the session cookie: 256 bits each, beyond guessing;
// both are written base64url without padding (RFC 4648 §5), 43
// characters.
const (
	CapabilityBytes = 32
	SessionBytes    = 32
)

// CSP is the Content-Security-Policy (W3C CSP Level 3) of every console
// page: nothing but
// the console's own stylesheet, countdown script and frame; no form posts
// elsewhere, no base, never framed.
const CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; frame-src 'self'; child-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// ReferrerPolicy is the Referrer-Policy of every console answer
// (W3C Referrer Policy): same-origin sends no Referer to any other
// origin, and keeps the page's Origin on its own form posts, which the
// Origin check needs; under no-referrer a browser sends "Origin: null"
// on a form POST (WHATWG Fetch, "serializing a request origin").
const ReferrerPolicy = "same-origin"

// FrameCSP is the Content-Security-Policy of an e-mail's HTML part: inline
// styles only, and the sandbox directive without tokens (no script, no
// navigation, no form, an opaque origin).
const FrameCSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// Config is what a Server needs. Now and Random are injected for tests
// (nil: time.Now and crypto/rand).
type Config struct {
	Backend Backend
	// Port is the port the server's listener is bound to on 127.0.0.1:
	// the only Host and Origin it admits.
	Port   int
	Now    func() time.Time
	Random io.Reader
	// Log receives refusals by path and reason (never a capability,
	// cookie, token, proof or input); nil: discarded.
	Log *slog.Logger
}

// Server is the console's http.Handler.
type Server struct {
	b      Backend
	host   string
	origin string
	now    func() time.Time
	log    *slog.Logger
	mux    *http.ServeMux
	key    []byte // HMAC key of the CSRF tokens

	cookie string // the session cookie's name, SessionCookieName(port)

	mu         sync.Mutex
	capability string // "" once used
	session    string // the cookie's value once opened
}

//go:embed assets
var assets embed.FS

// New is a Server for cfg, with a fresh capability (OpenURL), session
// value and CSRF key. An error when cfg has no Backend, the port is not 1
// to 65535 or the randomness fails.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("console: no backend")
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("console: port %d is not 1 to 65535", cfg.Port)
	}
	s := &Server{b: cfg.Backend, host: "127.0.0.1:" + strconv.Itoa(cfg.Port), cookie: SessionCookieName(cfg.Port), now: cfg.Now, log: cfg.Log}
	s.origin = "http://" + s.host
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	rnd := cfg.Random
	if rnd == nil {
		rnd = rand.Reader
	}
	var err error
	if s.capability, err = randomToken(rnd, CapabilityBytes); err != nil {
		return nil, err
	}
	s.key = make([]byte, 32)
	if _, err := io.ReadFull(rnd, s.key); err != nil {
		return nil, fmt.Errorf("console: random: %w", err)
	}
	if s.session, err = randomToken(rnd, SessionBytes); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

func randomToken(r io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("console: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// OpenURL is the URL that opens the console once:
// http://127.0.0.1:PORT/open?c=CAPABILITY.
func (s *Server) OpenURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origin + "/open?c=" + s.capability
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /open", s.open)
	m.HandleFunc("GET /{$}", s.list)
	m.HandleFunc("GET /static/{file}", s.static)
	m.HandleFunc("GET /reviews/{id}", s.showReview)
	m.HandleFunc("GET /reviews/{id}/html", s.emailHTML)
	m.HandleFunc("POST /reviews/{id}/decide", s.decideReview)
	m.HandleFunc("POST /reviews/{id}/preview", s.preview)
	m.HandleFunc("GET /parks/{id}", s.showPark)
	m.HandleFunc("POST /parks/{id}/decide", s.decidePark)
	s.mux = m
}

// ServeHTTP checks every request before any route runs, so a refused
// request never reaches the Backend: Host exactly 127.0.0.1:PORT (else
// 421, RFC 9110 §15.5.20); Sec-Fetch-Site (W3C Fetch Metadata Request
// Headers) same-origin, or none for a top-level GET navigation (else
// 403); Origin, when present and on every POST, http://127.0.0.1:PORT
// (RFC 6454; else 403); the session cookie (else 401); on POST a form
// field csrf holding the page's token (else 403). /open is checked for
// Host and Origin only, and refused from another site. Every answer
// carries CSP and the no-sniff, same-origin referrer, no-store and
// no-DNS-prefetch headers (docs/reviews.md, "The review console").
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", ReferrerPolicy)
	h.Set("Cache-Control", "no-store")
	h.Set("X-DNS-Prefetch-Control", "off")
	h.Set("X-Frame-Options", "DENY")
	if status, why := s.check(r); status != 0 {
		s.refuse(w, r, status, why)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Refusal texts shown in the page.
const (
	textNoSession = "open the console from the link toolgate review console printed"
	textUsed      = "this link was already used; run toolgate review console again"
)

// check is the status and reason of a refused request, 0 when admitted.
func (s *Server) check(r *http.Request) (int, string) {
	if r.Host != s.host {
		return http.StatusMisdirectedRequest, "wrong Host"
	}
	if o := r.Header.Get("Origin"); o != "" || r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o != s.origin {
			return http.StatusForbidden, "foreign or missing Origin"
		}
	}
	site := r.Header.Get("Sec-Fetch-Site")
	if r.URL.Path == "/open" {
		// Lenient on Fetch Metadata only, so that the printed URL pasted
		// in any browser opens; never from another site.
		if site != "" && site != "none" && site != "same-origin" {
			return http.StatusForbidden, "cross-site opening"
		}
		return 0, ""
	}
	switch site {
	case "same-origin":
	case "none":
		if r.Method != http.MethodGet || r.Header.Get("Sec-Fetch-Mode") != "navigate" || r.Header.Get("Sec-Fetch-Dest") != "document" {
			return http.StatusForbidden, "Sec-Fetch-Site none outside a top-level navigation"
		}
	case "":
		return http.StatusForbidden, "no Sec-Fetch-Site"
	default:
		return http.StatusForbidden, "Sec-Fetch-Site " + site
	}
	if !s.hasSession(r) {
		return http.StatusUnauthorized, "no session cookie"
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			return http.StatusBadRequest, "unreadable form"
		}
		if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(s.csrf(pagePath(r.URL.Path)))) {
			return http.StatusForbidden, "missing or wrong CSRF token"
		}
	}
	return 0, ""
}

// hasSession reports whether any cookie of the console's name holds the
// session: another server on 127.0.0.1 can set one of that name too
// (cookies ignore ports, RFC 6265 §8.5), with a longer Path that the
// browser sends first (§5.4), and it must not shadow the session.
func (s *Server) hasSession(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capability != "" {
		return false
	}
	for _, c := range r.CookiesNamed(s.cookie) {
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session)) == 1 {
			return true
		}
	}
	return false
}

// pagePath is the page a POST's form belongs to: /reviews/ID for
// /reviews/ID/decide.
func pagePath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return p
}

// csrf is the per-page CSRF token: HMAC-SHA256 under the server's key of
// the session cookie and the page path (cookies for 127.0.0.1 are shared
// by every port, so the cookie alone proves nothing).
func (s *Server) csrf(page string) string {
	m := hmac.New(sha256.New, s.key)
	s.mu.Lock()
	m.Write([]byte(s.session))
	s.mu.Unlock()
	m.Write([]byte{0})
	m.Write([]byte(page))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// refuse answers a refused request with a plain page and logs its path
// and reason, never its query, cookie or form.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.log.Warn("console request refused", "method", r.Method, "path", r.URL.Path, "reason", why, "status", status)
	text := "request refused: " + why
	if status == http.StatusUnauthorized {
		text = textNoSession
	}
	s.render(w, status, "refused", refusedPage{Title: http.StatusText(status), Text: text})
}

func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	got := r.URL.Query().Get("c")
	s.mu.Lock()
	ok := s.capability != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.capability)) == 1
	used := s.capability == ""
	if ok {
		s.capability = ""
	}
	session := s.session
	s.mu.Unlock()
	switch {
	case used:
		s.log.Warn("console capability used again", "path", r.URL.Path)
		s.render(w, http.StatusForbidden, "refused", refusedPage{Title: "Link already used", Text: textUsed})
		return
	case !ok:
		s.log.Warn("console opened with a wrong capability", "path", r.URL.Path)
		s.render(w, http.StatusForbidden, "refused", refusedPage{Title: "Wrong link", Text: textNoSession})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	var ctype string
	switch name {
	case "console.css":
		ctype = "text/css; charset=utf-8"
	case "countdown.js":
		ctype = "text/javascript; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}
