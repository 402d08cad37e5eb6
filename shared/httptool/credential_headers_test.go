package httptool

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// A host that echoes the credential it was sent in a response header the
// tool keeps (ETag, RateLimit-*, X-RateLimit-*, ...) or in its
// Content-Type does not get it into the step's result (Output.Headers and
// Output.ContentType), hence the execution's history and the ledger's call
// record (docs/credentials.md, "At call time").
func TestKeptResponseHeadersAreRedactedOfTheCredential(t *testing.T) {
	const secret = "api-key-kept-header-canary"
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("X-Api-Key")
		w.Header().Set("ETag", `"`+k+`"`)
		w.Header().Set("X-RateLimit-Limit", k)
		w.Header().Set("Content-Type", "application/json; charset=utf-8; key="+k)
		_, _ = w.Write([]byte(`{}`))
	})
	e := withAuth(entry(s, "GET"))
	out, err := localConfig(t, s).Do(context.Background(), Input{Method: "GET", URL: s.url("/")}, []toolset.HTTPHost{e}, "k", tool.TraceContext{}, resolvedCredential(t, e, secret))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	raw, _ := json.Marshal(out)
	if strings.Contains(string(raw), secret) {
		t.Errorf("the step's result holds the credential: %s", raw)
	}
}
