package caller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
)

// FuzzVerifyProof feeds the verifier arbitrary proofs. A proof reaches STS
// (here a server that refuses everything, as STS refuses what it cannot
// verify) only when it passes every rule checked before: the endpoint's
// host, path "/", GetCallerIdentity, the signed binding header, a date in
// the window. No error ever repeats a signature.
func FuzzVerifyProof(f *testing.F) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var reached atomic.Int64
	var last atomic.Value
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		last.Store(r.URL.String() + "|" + r.Header.Get(caller.BindingHeader))
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>`))
	}))
	defer sts.Close()
	v, err := caller.NewVerifier(caller.Config{Endpoint: sts.URL, AllowHTTP: true, Account: "000000000000"}, &memProofs{recs: map[string]caller.ProofRecord{}})
	if err != nil {
		f.Fatal(err)
	}
	v = v.WithClock(func() time.Time { return now })
	good := sts.URL + "/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256" +
		"&X-Amz-Credential=AKID%2F20261201%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date=20261201T115950Z&X-Amz-Expires=60" +
		"&X-Amz-SignedHeaders=host%3Bx-toolgate-binding&X-Amz-Signature=0123456789abcdef"
	f.Add(good)
	f.Add(strings.Replace(good, "Action=GetCallerIdentity", "Action=AssumeRole", 1))
	f.Add(strings.Replace(good, sts.URL, "https://sts.amazonaws.com", 1))
	f.Add(good + "&Action=GetCallerIdentity")
	f.Add("")
	f.Add("%zz")
	b := caller.Binding{Action: caller.ActionDecide, Target: "rv_1", Decision: "approve"}
	f.Fuzz(func(t *testing.T, proof string) {
		before := reached.Load()
		_, err := v.Verify(context.Background(), proof, b)
		if err == nil {
			t.Fatalf("a proof STS refused was accepted: %q", proof)
		}
		if u, perr := url.Parse(proof); perr == nil {
			if sig := u.Query().Get("X-Amz-Signature"); len(sig) > 8 && strings.Contains(err.Error(), sig) {
				t.Fatalf("the error repeats the signature: %v", err)
			}
		}
		if reached.Load() == before {
			return
		}
		u, perr := url.Parse(proof)
		if perr != nil {
			t.Fatalf("an unparsable proof reached STS: %q", proof)
		}
		q := u.Query()
		date, derr := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
		switch {
		case u.Scheme+"://"+u.Host != sts.URL, u.Path != "/":
			t.Fatalf("a proof for another endpoint reached STS: %q", proof)
		case q.Get("Action") != "GetCallerIdentity" || len(q["Action"]) != 1:
			t.Fatalf("another action reached STS: %q", proof)
		case !strings.Contains(";"+q.Get("X-Amz-SignedHeaders")+";", ";x-toolgate-binding;"):
			t.Fatalf("an unbound proof reached STS: %q", proof)
		case derr != nil || now.Sub(date) > caller.Window || date.Sub(now) > caller.Skew:
			t.Fatalf("a proof outside the window reached STS: %q", proof)
		}
		if got, _ := last.Load().(string); !strings.HasSuffix(got, "|"+b.Value()) {
			t.Fatalf("STS was asked with another binding: %q", got)
		}
	})
}
