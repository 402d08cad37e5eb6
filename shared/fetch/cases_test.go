package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
)

// ssrfCases is testdata/fetch/ssrf.jsonl, a copy of
// shared/cases/ssrf.jsonl (see its README for the fields).
const ssrfCases = "../../testdata/fetch/ssrf.jsonl"

// TestCases runs every case through Fetch against the local upstream: an
// allowed case must be served, a refused one must be TOOL_PERMISSION_DENIED
// before its refused target is reached. The same list is both the platform
// allow-list and the run's pinned fetch_hosts.
func TestCases(t *testing.T) {
	for i, c := range fetchtest.LoadCases(t, ssrfCases) {
		t.Run(fmt.Sprintf("%02d_%s", i, c.Why), func(t *testing.T) {
			list := c.List(t)
			res := c.Resolver(t)
			var final atomic.Bool
			var up *fetchtest.Upstream
			up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				n := len(up.Served()) - 1
				if n < len(c.RedirectsTo) {
					code := []int{307, 302, 301, 303, 308}[n%5]
					w.Header().Set("Location", c.RedirectsTo[n])
					w.WriteHeader(code)
					return
				}
				final.Store(true)
				jsonHandler(`{"ok": true}`)(w, r)
			})
			cfg := upstreamConfig(up, list, res)
			out, err := Fetch(context.Background(), cfg, Input{URL: c.URL}, list)
			got := code(t, err)
			served := up.Served()
			switch c.Expect {
			case "allow":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if out.Status != 200 || string(out.Data) != `{"ok": true}` || !final.Load() {
					t.Fatalf("output %+v", out)
				}
				if len(served) != len(c.RedirectsTo)+1 {
					t.Fatalf("served %q", served)
				}
			case "refuse":
				if got != tool.PermissionDenied {
					t.Fatalf("Fetch = %v, %v; want %s", out, err, tool.PermissionDenied)
				}
				t.Logf("reason: %s", err.(*tool.Error).Message)
				if final.Load() {
					t.Fatalf("the refused target was served: %q", served)
				}
				if len(c.RedirectsTo) == 0 && len(served) != 0 {
					t.Fatalf("a refused URL reached the server: %q", served)
				}
				if len(served) > len(c.RedirectsTo) {
					t.Fatalf("served %q", served)
				}
			}
			lookups := res.Hosts()
			for _, h := range lookups {
				if !onList(list, h) {
					t.Errorf("looked up %q, which is not on the allow-list", h)
				}
			}
			if _, err := netip.ParseAddr(strings.Trim(hostOf(c.URL), "[]")); err == nil && len(c.RedirectsTo) == 0 && len(lookups) != 0 {
				t.Errorf("an IP literal was looked up: %q", lookups)
			}
			if c.DNSSequence != nil && len(lookups) != 1 {
				t.Errorf("rebinding case: %d look-ups %q, want exactly 1", len(lookups), lookups)
			}
			// Decide alone agrees on the first URL, with a fresh resolver.
			if len(c.RedirectsTo) == 0 {
				dry := *cfg
				dry.Resolver = &fetchtest.Resolver{Answers: res.Answers, Seq: res.Seq}
				d := dry.Decide(context.Background(), c.URL, list)
				if d.Allow != (c.Expect == "allow") {
					t.Errorf("Decide = %+v", d)
				}
			}
		})
	}
}

// hostOf is a loose reading of a case URL's host, to tell IP literals.
func hostOf(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end >= 0 {
		rest = rest[:end]
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.HasSuffix(rest, "]") {
		rest = rest[:i]
	}
	return rest
}

// TestRebindingConnectsToCheckedAddress: the first answer is public, every
// later one is loopback; the single look-up's answer is what is dialled.
func TestRebindingConnectsToCheckedAddress(t *testing.T) {
	res := &fetchtest.Resolver{Seq: [][]netip.Addr{fetchtest.Addrs(t, "93.184.216.34"), fetchtest.Addrs(t, "127.0.0.1")}}
	up := newUpstream(t, jsonHandler(`[1]`))
	list := mustList(t, "rebind.example.com")
	out, err := Fetch(context.Background(), upstreamConfig(up, list, res), Input{URL: "http://rebind.example.com/"}, list)
	if err != nil || string(out.Data) != "[1]" {
		t.Fatalf("Fetch = %+v, %v", out, err)
	}
	if got := res.Hosts(); len(got) != 1 {
		t.Fatalf("look-ups %q, want 1", got)
	}
	if got := up.Dialled(); len(got) != 1 || got[0] != "93.184.216.34:80" {
		t.Fatalf("dialled %q", got)
	}
}
