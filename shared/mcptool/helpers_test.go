package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// guard bounds every wait, so that a broken test fails rather than hangs;
// nothing is ordered by it.
const guard = 10 * time.Second

// mode is a local server configuration and the revision the client
// negotiates with it.
type mode struct {
	name     string
	opts     mcpserver.Options
	revision string
}

// modes: a server limited to 2025-11-25, with sessions, and a stateless one
// on 2026-07-28 (the SDK's default).
var modes = []mode{
	{"2025-11-25 sessions", mcpserver.Options{ProtocolVersions: []string{"2025-11-25"}}, "2025-11-25"},
	{"2026-07-28 stateless", mcpserver.Options{Stateless: true}, "2026-07-28"},
}

func start(t *testing.T, opts mcpserver.Options) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

// hostOf is the host and port of a server URL, as an allow-list entry.
func hostOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// config allows the local server's host and port, with the loopback
// exemption the local stack sets explicitly (TOOLGATE_MCP_ALLOW_ADDRESSES).
func config(t *testing.T, allow ...string) Config {
	t.Helper()
	l, err := hostlist.ParseList(allow)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Net: fetch.Config{Allow: l, AllowAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}, Timeout: guard}
}

func clientFor(t *testing.T, srv *mcpserver.Server) *Client {
	t.Helper()
	return New(config(t, hostOf(t, srv.URL())), nil)
}

// pin registers the server's tool as registration does (List, then
// toolset.MCPServer.Pin) under server key "crm".
func pin(t *testing.T, c *Client, srv *mcpserver.Server, name string) toolset.Tool {
	t.Helper()
	return pinURL(t, c, srv.URL(), name)
}

// pinURL is pin for the server at url.
func pinURL(t *testing.T, c *Client, url, name string) toolset.Tool {
	t.Helper()
	l, err := c.List(t.Context(), url)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	pinned, err := toolset.MCPServer{URL: url, Admit: []string{name}}.Pin("crm", l)
	if err != nil {
		t.Fatalf("Pin: %v", err)
	}
	return pinned["crm."+name]
}

// callOf is the dispatcher's Call of a pinned tool with input and
// external key key; the envelope's own key is another, which the server
// must never see.
func callOf(pinned toolset.Tool, input, key string, attempt int) *toolcall.Call {
	return &toolcall.Call{
		Envelope:    &tool.Envelope{Tool: "crm." + pinned.MCP.Name, IdempotencyKey: "arn:internal/" + key, Attempt: attempt},
		Input:       json.RawMessage(input),
		Pinned:      pinned,
		Attempt:     attempt,
		ExternalKey: key,
	}
}

// toolError returns err as a *tool.Error, failing the test otherwise.
func toolError(t *testing.T, err error) *tool.Error {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) || te == nil {
		t.Fatalf("error %T %v is not a *tool.Error", err, err)
	}
	return te
}

// wantError checks a failure's code, MaybeApplied and message.
func wantError(t *testing.T, err error, code tool.Code, applied bool, says ...string) *tool.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	te := toolError(t, err)
	if te.Code != code || te.MaybeApplied != applied {
		t.Errorf("got %s (maybe applied %v): %s; want %s (maybe applied %v)", te.Code, te.MaybeApplied, te.Message, code, applied)
	}
	for _, s := range says {
		if !strings.Contains(te.Message, s) {
			t.Errorf("message %q does not say %q", te.Message, s)
		}
	}
	return te
}

// deadline is a context whose deadline passes when pass is called: a
// dispatcher's deadline, ordered by an event instead of a clock.
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline(parent context.Context) *deadline {
	return &deadline{Context: parent, done: make(chan struct{})}
}

func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (d *deadline) pass() { d.once.Do(func() { close(d.done) }) }
