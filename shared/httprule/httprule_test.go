package httprule

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

func TestDecideGivesReadsNoReviewAndSideEffectsAtMostOnceUnlessKeyed(t *testing.T) {
	for _, c := range []struct {
		method string
		keyed  bool
		want   Contract
	}{
		{"GET", false, Contract{Policy: catalog.AtLeastOnce, Idempotent: true}},
		{"HEAD", true, Contract{Policy: catalog.AtLeastOnce, Idempotent: true}},
		{"POST", false, Contract{Review: true, Policy: catalog.AtMostOnce}},
		{"DELETE", false, Contract{Review: true, Policy: catalog.AtMostOnce}},
		{"PUT", true, Contract{Review: true, Policy: catalog.AtLeastOnce, Idempotent: true}},
		{"PATCH", true, Contract{Review: true, Policy: catalog.AtLeastOnce, Idempotent: true}},
		// Methods are case-sensitive: "get" is not a read, and an unknown
		// method is never relaxed, keyed or not.
		{"get", false, Contract{Review: true, Policy: catalog.AtMostOnce}},
		{"OPTIONS", true, Contract{Review: true, Policy: catalog.AtMostOnce}},
		{"", true, Contract{Review: true, Policy: catalog.AtMostOnce}},
	} {
		if got := Decide(c.method, c.keyed); got != c.want {
			t.Errorf("Decide(%q, %v) = %+v, want %+v", c.method, c.keyed, got, c.want)
		}
	}
}

func TestTakesBodyOnlyForPostPutPatch(t *testing.T) {
	for _, m := range Methods {
		want := m == "POST" || m == "PUT" || m == "PATCH"
		if TakesBody(m) != want {
			t.Errorf("TakesBody(%s) = %v", m, !want)
		}
	}
}

func TestForbiddenHeadersInAnyLetterCase(t *testing.T) {
	for _, h := range []string{"host", "AUTHORIZATION", "Cookie", "proxy-authorization", "Proxy-Connection",
		"content-length", "Transfer-Encoding", "TE", "Connection", "Upgrade", "x-http-method-override",
		"X-HTTP-Method", "X-Method-Override", "x-forwarded-for", "X-Forwarded-Host", "X-Real-IP", "Forwarded",
		"x-amz-security-token", "X-Amz-Date", "traceparent", "Baggage", "Expect"} {
		if bad, why := Forbidden(h); !bad || why == "" {
			t.Errorf("Forbidden(%q) = %v, %q", h, bad, why)
		}
	}
	for _, h := range []string{"Accept", "Content-Type", "If-Match", "X-GitHub-Api-Version", "Idempotency-Key", "X-Amzn-Trace"} {
		if bad, _ := Forbidden(h); bad {
			t.Errorf("Forbidden(%q) = true", h)
		}
	}
}

func TestCheckHeaderNameRefusesStandardForbiddenAndNonTokens(t *testing.T) {
	if err := CheckHeaderName("X-GitHub-Api-Version"); err != nil {
		t.Errorf("a custom header is refused: %v", err)
	}
	for name, want := range map[string]string{
		"content-type":  "standard header",
		"Authorization": "credentials",
		"X Bad":         "not a header name",
		"":              "not a header name",
		"X-Amz-Target":  "AWS",
	} {
		err := CheckHeaderName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHeaderName(%q) = %v, want it to say %q", name, err, want)
		}
	}
}

func TestCheckHeaderValueRefusesLineBreaksNULAndLongValues(t *testing.T) {
	for _, ok := range []string{"", "application/json", "W/\"etag\"", "tab\tok", "é"} {
		if err := CheckHeaderValue(ok); err != nil {
			t.Errorf("CheckHeaderValue(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"a\r\nX-Injected: 1", "a\nb", "a\x00b", "\xff\xfe", strings.Repeat("a", MaxHeaderValueBytes+1)} {
		if err := CheckHeaderValue(bad); err == nil {
			t.Errorf("CheckHeaderValue(%.40q) = nil", bad)
		}
	}
	if err := CheckHeaderValue(strings.Repeat("a", MaxHeaderValueBytes)); err != nil {
		t.Errorf("a value of exactly %d bytes is refused: %v", MaxHeaderValueBytes, err)
	}
}

// CGI-style servers (and the frameworks behind them) read a header named
// with underscores as the one named with hyphens (X_Forwarded_For and
// X-Forwarded-For both become HTTP_X_FORWARDED_FOR), so a forbidden
// header written with underscores is forbidden too.
func TestForbiddenHeadersWrittenWithUnderscores(t *testing.T) {
	for _, h := range []string{"X_HTTP_Method_Override", "x_http_method", "X_Method_Override", "X_Forwarded_For",
		"X-Forwarded_Host", "X_Real_IP", "X_Amz_Security_Token", "Proxy_Authorization", "Content_Length", "Transfer_Encoding"} {
		if bad, why := Forbidden(h); !bad || why == "" {
			t.Errorf("Forbidden(%q) = %v, %q", h, bad, why)
		}
		if err := CheckHeaderName(h); err == nil {
			t.Errorf("CheckHeaderName(%q) = nil", h)
		}
	}
}
