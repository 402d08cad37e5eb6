package httptool

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/localtest/credtest"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// resolvedCredential is the toolset-scope credential holding secret for
// host entry h (which declares auth), as the http function's resolver
// gives it: sealed under local-kms's key, put on a table of dynalite, the
// toolset id allowed for it, and resolved by vault.Resolver
// (credtest.Resolved).
func resolvedCredential(t *testing.T, h toolset.HTTPHost, secret string) *credential.Credential {
	t.Helper()
	ts := &toolset.Toolset{Name: "crm-tools", HTTPHosts: []toolset.HTTPHost{h}}
	at, ok := ts.HTTPAuthTarget(h.Host)
	if !ok {
		t.Fatalf("entry %s declares no auth", h.Host)
	}
	return credtest.Resolved(t, credential.Target{ToolsetName: ts.Name, Name: at.Name, Origin: at.Origin, Auth: at.Auth}, secret)
}

// withAuth is h declaring an X-Api-Key credential bound to http://<h>.
func withAuth(h toolset.HTTPHost) toolset.HTTPHost {
	h.Auth = &toolset.Auth{Header: "X-Api-Key", OriginScheme: "http"}
	return h
}

// The credential of a host entry goes on every request to that entry's
// origin, redirects to the same origin included, and on no request to
// another allowed host a read is redirected to, even one whose entry
// names the same header.
func TestARedirectToAnotherAllowedHostCarriesNoCredential(t *testing.T) {
	const secret = "api-key-0123456789"
	other := newServer(t, jsonHandler(`1`))
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			w.Header().Set("Location", other.url("/"))
		} else {
			w.Header().Set("Location", "/same")
		}
		w.WriteHeader(302)
	})
	first, second := withAuth(entry(s, "GET")), entry(other, "GET")
	second.Headers = []string{"X-Api-Key"}
	cred := resolvedCredential(t, first, secret)
	if _, err := localConfig(t, s, other).Do(context.Background(), Input{Method: "GET", URL: s.url("/")}, []toolset.HTTPHost{first, second}, "k", tool.TraceContext{}, cred); err != nil {
		t.Fatal(err)
	}
	if seen := s.seen(); len(seen) != 2 || seen[0].Header.Get("X-Api-Key") != secret || seen[1].Header.Get("X-Api-Key") != secret {
		t.Fatalf("the entry's origin got %v", seen)
	}
	if seen := other.seen(); len(seen) != 1 || seen[0].Header.Get("X-Api-Key") != "" {
		t.Fatalf("the other host got the credential: %v", seen)
	}
}

// A call may not set the header its entry presents the credential in
// (Authorization is httprule.Forbidden anyway): TOOL_PERMISSION_DENIED,
// nothing sent.
func TestACallMayNotSetItsEntrysAuthHeader(t *testing.T) {
	s := newServer(t, jsonHandler(`1`))
	bearer := entry(s, "GET")
	bearer.Auth = &toolset.Auth{Header: "Authorization", Scheme: "Bearer", OriginScheme: "http"}
	for _, tc := range []struct {
		entry        toolset.HTTPHost
		header, says string
	}{
		{withAuth(entry(s, "GET")), "x-api-key", "carries " + s.host() + "'s credential"},
		{bearer, "Authorization", "rule http-header: the header Authorization may not be set"},
	} {
		in := Input{Method: "GET", URL: s.url("/"), Headers: map[string]string{tc.header: "mine"}}
		_, err := localConfig(t, s).Do(context.Background(), in, []toolset.HTTPHost{tc.entry}, "k", tool.TraceContext{}, nil)
		if te, ok := err.(*tool.Error); !ok || te.Code != tool.PermissionDenied || !strings.Contains(te.Message, tc.says) {
			t.Fatalf("header %s: %v", tc.header, err)
		}
	}
	if n := len(s.seen()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// A 401 with error="invalid_token" (RFC 6750 §3.1) to a request that
// carried the credential parks the call, cause credentials.expired, not
// applied; a 401 without error=, and a 403 insufficient_scope, are
// TOOL_PERMISSION_DENIED. A body echoing the credential in a success is
// redacted, and no message holds it.
func TestAHostRefusingTheCredential(t *testing.T) {
	const secret = "api-key-abcdef"
	for _, tc := range []struct {
		name, challenge string
		status          int
		code            tool.Code
		says            string
	}{
		{"invalid_token", `Bearer error="invalid_token"`, 401, tool.CallParked, credential.CauseExpired + ": "},
		{"401 without error", `Bearer realm="api"`, 401, tool.PermissionDenied, "refused the toolset-scope credential for"},
		{"insufficient_scope", `Bearer error="insufficient_scope"`, 403, tool.PermissionDenied, "refused the toolset-scope credential for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", tc.challenge)
				w.WriteHeader(tc.status)
			})
			e := withAuth(entry(s, "POST"))
			_, err := localConfig(t, s).Do(context.Background(), Input{Method: "POST", URL: s.url("/")}, []toolset.HTTPHost{e}, "k", tool.TraceContext{}, resolvedCredential(t, e, secret))
			te, ok := err.(*tool.Error)
			if !ok || te.Code != tc.code || te.MaybeApplied || !strings.Contains(te.Message, tc.says) || strings.Contains(te.Error(), secret) {
				t.Fatalf("Do: %v; want %s saying %q, not applied", err, tc.code, tc.says)
			}
		})
	}
	t.Run("an echo in a success", func(t *testing.T) {
		s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"you_sent":"` + r.Header.Get("X-Api-Key") + `"}`))
		})
		e := withAuth(entry(s, "GET"))
		out, err := localConfig(t, s).Do(context.Background(), Input{Method: "GET", URL: s.url("/")}, []toolset.HTTPHost{e}, "k", tool.TraceContext{}, resolvedCredential(t, e, secret))
		if err != nil || string(out.Data) != `{"you_sent":"…"}` {
			t.Fatalf("Do = %+v, %v", out, err)
		}
	})
}
