package httptool

import (
	"context"
	"net/http"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// A call span's context, as the dispatcher puts it on a claimed call.
var callTrace = tool.TraceContext{
	Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	Tracestate:  "vendor=opaque",
}

// Every request of a call carries its trace context, the first and each
// redirect hop, to another origin too; without a context, none.
func TestEveryRequestCarriesTheCallsTraceContext(t *testing.T) {
	for _, c := range []struct {
		name string
		tc   tool.TraceContext
	}{
		{"with tracestate", callTrace},
		{"without tracestate", tool.TraceContext{Traceparent: callTrace.Traceparent}},
		{"no context", tool.TraceContext{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := newServer(t, jsonHandler(`1`))
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/" {
					w.Header().Set("Location", "/same")
				} else {
					w.Header().Set("Location", other.url("/"))
				}
				w.WriteHeader(http.StatusFound)
			})
			in := Input{Method: "GET", URL: s.url("/")}
			if _, err := localConfig(t, s, other).Do(context.Background(), in, []toolset.HTTPHost{entry(s, "GET"), entry(other, "GET")}, "k", c.tc, nil); err != nil {
				t.Fatal(err)
			}
			hops := append(s.seen(), other.seen()...)
			if len(hops) != 3 {
				t.Fatalf("%d requests, want 3", len(hops))
			}
			for i, h := range hops {
				if got := h.Header.Values("traceparent"); c.tc.Traceparent == "" && len(got) != 0 || c.tc.Traceparent != "" && (len(got) != 1 || got[0] != c.tc.Traceparent) {
					t.Errorf("request %d: traceparent %q", i+1, got)
				}
				if got := h.Header.Values("tracestate"); c.tc.Tracestate == "" && len(got) != 0 || c.tc.Tracestate != "" && (len(got) != 1 || got[0] != c.tc.Tracestate) {
					t.Errorf("request %d: tracestate %q", i+1, got)
				}
				if h.Header.Get("baggage") != "" {
					t.Errorf("request %d carries baggage", i+1)
				}
			}
		})
	}
}

// A call cannot set the trace headers, even where its host's entry names
// them: refused with nothing sent. And toolgate's are set after the
// call's headers, so that one could not win if it got past the check.
func TestACallCannotSetTheTraceHeaders(t *testing.T) {
	s := newServer(t, jsonHandler(`1`))
	named := entry(s, "GET")
	named.Headers = []string{"traceparent", "tracestate", "baggage"}
	for _, name := range []string{"traceparent", "Tracestate", "TRACEPARENT"} {
		in := Input{Method: "GET", URL: s.url("/"), Headers: map[string]string{name: "00-11111111111111111111111111111111-2222222222222222-01"}}
		_, err := localConfig(t, s).Do(context.Background(), in, []toolset.HTTPHost{named}, "k", callTrace, nil)
		if code, _ := codeOf(t, err); code != tool.PermissionDenied {
			t.Errorf("%s: %v, want %s", name, err, tool.PermissionDenied)
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}

	req, err := http.NewRequest(http.MethodGet, s.url("/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, map[string]string{"Traceparent": "00-11111111111111111111111111111111-2222222222222222-01", "Tracestate": "mine=1"})
	setTrace(req, tool.TraceContext{Traceparent: callTrace.Traceparent})
	if got := req.Header.Values("traceparent"); len(got) != 1 || got[0] != callTrace.Traceparent || req.Header.Get("tracestate") != "" {
		t.Fatalf("headers after setTrace: %v", req.Header)
	}
}
