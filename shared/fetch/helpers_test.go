package fetch

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
)

// newUpstream starts a fetchtest.Upstream serving h whose Dial refuses
// what CheckAddr refuses.
func newUpstream(t testing.TB, h http.HandlerFunc) *fetchtest.Upstream {
	return fetchtest.NewUpstream(t, func(a netip.Addr) (bool, string) { return CheckAddr(a, nil) }, h)
}

// upstreamConfig returns a Config that uses the production decision code
// with the resolver r (a fetchtest.Resolver) and the upstream's Dial.
// AllowAddresses stays empty.
func upstreamConfig(u *fetchtest.Upstream, allow hostlist.List, r Resolver) *Config {
	return &Config{Allow: allow, Resolver: r, Dial: u.Dial, RootCAs: u.RootCAs(), Timeout: 10 * time.Second}
}

func mustList(t testing.TB, entries ...string) hostlist.List {
	t.Helper()
	l, err := hostlist.ParseList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// code returns the tool.Error code of err, failing the test for any other
// error type and for MaybeApplied (a GET has no side effect).
func code(t *testing.T, err error) tool.Code {
	t.Helper()
	if err == nil {
		return ""
	}
	var te *tool.Error
	if !errors.As(err, &te) || te != err {
		t.Fatalf("error %T %v is not a *tool.Error", err, err)
	}
	if te.MaybeApplied {
		t.Errorf("%v: MaybeApplied set on a GET", err)
	}
	if !te.Code.Known() || te.Message == "" {
		t.Errorf("error %+v has an unknown code or no message", te)
	}
	return te.Code
}

// onList reports whether host matches some entry of l at the entry's port.
func onList(l hostlist.List, host string) bool {
	for _, e := range l {
		port := "80"
		if e.Port != 0 {
			port = strconv.Itoa(e.Port)
		}
		if _, ok := (hostlist.List{e}).Match("http", host, port); ok {
			return true
		}
	}
	return false
}

func jsonHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}
