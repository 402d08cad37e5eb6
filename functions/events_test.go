// Package functions_test runs every event in testdata/events/<function>/
// against that function's real bootstrap under the Lambda Runtime Interface
// Emulator (what `sam local invoke -e` runs inside its container), with the
// ledger on dynalite. An event's name says its outcome: "ok-*.json"
// succeeds, "<CODE>-*.json" fails with exactly that tool error code.
//
// send-email is gated: its events' approvals name the reviews in
// testdata/events/send-email/reviews.jsonl, which the test stores first, as
// review-request and review-decision would have (one JSON object a line:
// review_id, run_id, of, input, decision; expired: its time is over;
// used_by: the idempotency key it already authorised).
package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/testkit"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/toolset"
)

const eventsDir = "../testdata/events"

// stack is what every function's events run against.
type stack struct {
	dynamo  *local.Process
	store   *ledger.Store
	reviews *dynamo.Store
	ses     *local.Process
	// data is where this run's data server listens (dataServer), which
	// the events reach as fixtureAddr.
	data string
}

// storeEventReviews stores the reviews of testdata/events/send-email/
// reviews.jsonl, decided by the approver the events' approvals name.
func storeEventReviews(t *testing.T, s *stack, ts *toolset.Toolset) {
	type eventReview struct {
		ReviewID string          `json:"review_id"`
		RunID    string          `json:"run_id"`
		Of       string          `json:"of"`
		Input    json.RawMessage `json:"input"`
		Decision review.Verdict  `json:"decision"`
		Expired  bool            `json:"expired"`
		UsedBy   string          `json:"used_by"`
	}
	ctx := context.Background()
	for _, f := range testkit.LoadJSONL[eventReview](t, filepath.Join(eventsDir, "send-email", "reviews.jsonl")) {
		r, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: f.ReviewID, RunID: f.RunID, Step: "approve", Of: f.Of, Tool: "send-email",
			ToolsetID: ts.ID, Input: f.Input, TimeoutSeconds: 3600})
		if err != nil {
			t.Fatal(err)
		}
		store := s.reviews
		if f.Expired {
			store = store.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) })
		}
		if _, _, err := store.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := store.Decide(ctx, r, f.Decision, "arn:aws:sts::123456789012:assumed-role/newsletter-editors/alice", true, "checked the recipients", time.Minute); err != nil || !ok {
			t.Fatalf("decide %s: %v %v", r.ID, ok, err)
		}
		if f.UsedBy != "" {
			cur := reviewtest.MustGet(t, store, r.ID)
			if ok, _, err := store.Bind(ctx, cur, f.UsedBy); err != nil || !ok {
				t.Fatalf("bind %s: %v %v", r.ID, ok, err)
			}
		}
	}
}

// function describes how to run one function for its events: the toolset
// its events pin (registered before they run) and its environment.
type function struct {
	// data starts the data server before the toolset is made, so that
	// fixtureAddr can be rewritten to where it listens.
	data       bool
	fetchHosts []string
	env        func(t *testing.T, s *stack) map[string]string
	// setup stores what the events need once the toolset is registered.
	setup func(t *testing.T, s *stack, ts *toolset.Toolset)
	// after checks the function's effects once all its events ran.
	after func(t *testing.T, s *stack)
}

// fixtureAddr is the data server's address as the event files name it (in
// URLs and in the toolset they pin), as `sam local invoke` sends them. The
// test's data server listens on a free port instead, and each event is
// sent with fixtureAddr, and the toolset id pinned for it, rewritten to
// that port's: a machine where another program holds 18080 runs them too.
const fixtureAddr = "127.0.0.1:18080"

// dataServer serves the documents the fetch events ask for, on a free
// 127.0.0.1 port, and returns its address.
func dataServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/digest.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"summary":{"count":3,"title":"Weekly digest"},"items":[1,2,3]}`)
	})
	mux.HandleFunc("/items.csv", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		io.WriteString(w, "id,title\n1,first\n2,second\n")
	})
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) {
		// Over the dispatcher's 64 KiB inline limit unless selected.
		fmt.Fprintf(w, `{"count":2,"blob":%q}`, strings.Repeat("x", 100_000))
	})
	mux.HandleFunc("/slow.json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"a":`)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(3 * time.Second): // the function's fetch bound is 1 s
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("code") == "429" {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("the events' data server: %v", err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

var functions = map[string]function{
	"workflow-validator": {},
	"structured-data-fetch": {
		data:       true,
		fetchHosts: []string{fixtureAddr},
		env: func(t *testing.T, s *stack) map[string]string {
			return map[string]string{
				"TOOLGATE_FETCH_ALLOW":           s.data + ",api.example.com",
				"TOOLGATE_FETCH_ALLOW_ADDRESSES": "127.0.0.1/32",
				"TOOLGATE_FETCH_TIMEOUT_SECONDS": "1",
			}
		},
	},
	"send-email": {
		env: func(t *testing.T, s *stack) map[string]string {
			s.ses = localtest.SES(t)
			return map[string]string{
				"TOOLGATE_SENDER":          "noreply@example.com",
				"TOOLGATE_RECIPIENT_ALLOW": "@example.com, ops@example.org",
				"AWS_ENDPOINT_URL_SESV2":   s.ses.Endpoint(),
			}
		},
		setup: storeEventReviews,
		after: func(t *testing.T, s *stack) {
			// Only the ok event sent anything: every refusal sent nothing.
			resp, err := http.Get(s.ses.Endpoint() + "/store")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var store struct{ Emails []struct{ Subject string } }
			if err := json.NewDecoder(resp.Body).Decode(&store); err != nil {
				t.Fatal(err)
			}
			if len(store.Emails) != 1 || store.Emails[0].Subject != "Weekly digest" {
				t.Fatalf("the SES emulator holds %+v, want the one ok event's mail", store.Emails)
			}
		},
	},
}

func TestEvents(t *testing.T) {
	dirs, err := os.ReadDir(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	p, db, table := localtest.SharedTable(t, "toolgate-events")
	s := &stack{dynamo: p, store: ledger.New(db, table), reviews: dynamo.NewStore(db, table)}
	for _, dir := range dirs {
		name := dir.Name()
		t.Run(name, func(t *testing.T) {
			fn, ok := functions[name]
			if !ok {
				t.Fatalf("testdata/events/%s: no function %s is known to this test", name, name)
			}
			entry, ok := catalog.Default().Lookup(name)
			if !ok {
				t.Fatalf("%s is not a catalog tool", name)
			}
			// pinned is the toolset the event files pin; ts, the one this
			// run registers and sends, with the data server's real address.
			pinned, err := toolset.FromCatalog(catalog.Default(), []string{name}, nil, fn.fetchHosts)
			if err != nil {
				t.Fatal(err)
			}
			ts, rewrite := pinned, strings.NewReplacer()
			if fn.data {
				s.data = dataServer(t)
				hosts := slices.Clone(fn.fetchHosts)
				for i, h := range hosts {
					if h == fixtureAddr {
						hosts[i] = s.data
					}
				}
				if ts, err = toolset.FromCatalog(catalog.Default(), []string{name}, nil, hosts); err != nil {
					t.Fatal(err)
				}
				rewrite = strings.NewReplacer(fixtureAddr, s.data, pinned.ID, ts.ID)
			}
			if _, err := s.store.RegisterToolset(context.Background(), ts); err != nil {
				t.Fatal(err)
			}
			if fn.setup != nil {
				fn.setup(t, s, ts)
			}
			vars := map[string]string{dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": s.dynamo.Endpoint()}
			if fn.env != nil {
				for k, v := range fn.env(t, s) {
					vars[k] = v
				}
			}
			bootstrap := localtest.Bootstrap(t, "./"+name)
			rie := localtest.RIE(t, entry.Function, bootstrap, time.Duration(entry.FunctionTimeoutSeconds)*time.Second, vars)
			events, _ := filepath.Glob(filepath.Join(eventsDir, name, "*.json"))
			if len(events) == 0 {
				t.Fatal("no events")
			}
			for _, ev := range events {
				t.Run(filepath.Base(ev), func(t *testing.T) {
					raw, err := os.ReadFile(ev)
					if err != nil {
						t.Fatal(err)
					}
					var env struct {
						ToolsetID string `json:"toolset_id"`
						Tool      string `json:"tool"`
					}
					if err := json.Unmarshal(raw, &env); err != nil {
						t.Fatal(err)
					}
					want := strings.SplitN(filepath.Base(ev), "-", 2)[0]
					if want != "TOOL_PERMISSION_DENIED" && env.ToolsetID != pinned.ID {
						t.Fatalf("event pins toolset %s, but %s's one-tool toolset is now %s: update the event", env.ToolsetID, name, pinned.ID)
					}
					got := invoke(t, rie, []byte(rewrite.Replace(string(raw))))
					if want == "ok" {
						want = ""
					}
					if got != want {
						t.Fatalf("outcome %q, want %q", got, want)
					}
				})
			}
			if fn.after != nil {
				fn.after(t, s)
			}
		})
	}
}

// invoke posts one event and returns "" on success or the errorType.
func invoke(t *testing.T, rie *local.Process, payload []byte) string {
	t.Helper()
	out, code, _ := localtest.Invoke(t, rie, payload)
	if code == "" && !json.Valid(out) {
		t.Fatalf("not JSON: %s", out)
	}
	return code
}
