package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// parksFunction stands in for the review-decision Function URL's /parks
// routes: a fake, since the test checks only what the CLI sends and
// prints (the function is tested in functions/review-decision). It lists
// parks, and answers a resume of each with refuse's code, or RESUMED.
type parksFunction struct {
	srv    *httptest.Server
	parks  []park.View
	refuse map[string]review.Code // by park id
	mu     sync.Mutex
	posts  []string // the paths resumed, in order
	proofs int      // requests with a proof
}

func newParksFunction(t *testing.T, parks []park.View, refuse map[string]review.Code) *parksFunction {
	f := &parksFunction{parks: parks, refuse: refuse}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get(review.ProofHeader) != "" {
			f.proofs++
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/parks":
			if r.URL.Query().Get("status") != "parked" {
				t.Errorf("listed status %q", r.URL.Query().Get("status"))
			}
			_ = json.NewEncoder(w).Encode(park.ListResult{Parks: f.parks})
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/parks/"):
			raw, _ := io.ReadAll(r.Body)
			var b review.DecisionBody
			if err := json.Unmarshal(raw, &b); err != nil || b.Decision != review.Verdict(park.Resume) {
				t.Errorf("decision body %s (%v), want resume", raw, err)
			}
			id := strings.TrimPrefix(r.URL.Path, "/parks/")
			f.posts = append(f.posts, id)
			if code, ok := f.refuse[id]; ok {
				var eb review.ErrorBody
				eb.Error.Code, eb.Error.Message = code, "you may not resume park "+id
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(eb)
				return
			}
			_ = json.NewEncoder(w).Encode(park.DecideResult{ParkID: id, Status: park.StatusResumed, Changed: true, Message: "park " + id + " resumed"})
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// toolgate credentials set resumes, through review-decision, each
// PARKED park waiting on the credential it stored (its target and scope,
// credentials.expired, not past its deadline), once, each request with a
// proof of its own; a refused resume is reported on stderr and the set
// still exits 0. Without a review-decision function named it resumes
// nothing and says so.
func TestCredentialsSetResumesTheCallsParkedOnTheCredential(t *testing.T) {
	t.Parallel()
	const (
		mine    = "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa"
		refused = "pk_bbbbbbbbbbbbbbbbbbbbbbbbbb"
		other   = "pk_cccccccccccccccccccccccccc"
		runs    = "pk_dddddddddddddddddddddddddd"
		expired = "pk_eeeeeeeeeeeeeeeeeeeeeeeeee"
		schema  = "pk_ffffffffffffffffffffffffff"
	)
	view := func(id string, cause park.Cause, target, scope string) park.View {
		return park.View{ParkID: id, Status: park.StatusParked, Cause: cause, RunID: "arn:aws:states:us-east-1:000000000000:execution:toolgate-x_s:r-" + id[3:6],
			Step: "lookup", Tool: "crm.lookup_customer", Target: target, Scope: scope}
	}
	late := view(expired, park.CredentialsExpired, "crm", "toolset")
	late.Expired = true
	parks := newParksFunction(t, []park.View{
		view(mine, park.CredentialsExpired, "crm", "toolset"),
		view(refused, park.CredentialsExpired, "crm", "toolset"),
		view(other, park.CredentialsExpired, "billing", "toolset"),
		view(runs, park.CredentialsExpired, "crm", "run:r-1"),
		late,
		view(schema, park.SchemaChanged, "", ""),
	}, map[string]review.Code{refused: review.CodeForbidden})
	pub := newCredentialsFunction(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"credentials", "set", "--toolset", "crm", "--target", "crm", "--origin", "https://mcp.example.org", "--from-file", secret, "--url", pub.srv.URL}

	code, stdout, stderr := runWithStdin(nil, append(args, "--review-url", parks.srv.URL)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Join(parks.posts, " ") != mine+" "+refused {
		t.Fatalf("resumed %v, want %s then %s: the parks of target crm in the toolset scope, not past their deadline", parks.posts, mine, refused)
	}
	if parks.proofs != 3 {
		t.Errorf("%d requests carried a proof, want 3: the list and each resume", parks.proofs)
	}
	if !strings.Contains(stdout, "resumed park "+mine) || strings.Contains(stdout, refused) {
		t.Errorf("stdout %q: want %s resumed, and %s not", stdout, mine, refused)
	}
	if !strings.Contains(stderr, "park "+refused+" not resumed: "+string(review.CodeForbidden)) {
		t.Errorf("stderr %q: want the refused resume reported", stderr)
	}
	if strings.Contains(stdout+stderr, canary) {
		t.Fatal("the secret was printed")
	}

	parks.posts = nil
	code, _, stderr = runWithStdin(nil, args...)
	if code != ExitOK || len(parks.posts) != 0 || !strings.Contains(stderr, "were not looked for") {
		t.Fatalf("no review-decision named: exit %d, resumed %v, stderr %q", code, parks.posts, stderr)
	}
}
