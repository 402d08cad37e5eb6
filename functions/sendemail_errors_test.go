package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The send-email function under the RIE produces each of its error codes.
// The SES v2 emulator cannot answer with errors, so SES here is a fake: an
// httptest server answering with SES v2's real error responses (status,
// x-amzn-ErrorType, JSON body), chosen by the mail's subject.
func TestSendEmailErrorCodesUnderRIE(t *testing.T) {
	ses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Content struct {
				Simple struct{ Subject struct{ Data string } }
			}
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		answer := map[string][2]string{
			"throttle":  {"429", "TooManyRequestsException"},
			"broken":    {"500", "InternalFailure"},
			"rejected":  {"400", "MessageRejected"},
			"suspended": {"400", "AccountSuspendedException"},
		}[req.Content.Simple.Subject.Data]
		if answer[0] == "" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"MessageId":"fake-1"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", answer[1])
		var status int
		fmt.Sscan(answer[0], &status)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"message":"%s from the fake"}`, answer[1])
	}))
	defer ses.Close()

	p, db, table := localtest.SharedTable(t, "toolgate-ses")
	store := ledger.New(db, table)
	ts, _ := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
	if _, err := store.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	fn := localtest.RIE(t, "send-email", localtest.Bootstrap(t, "./send-email"), 30*time.Second, map[string]string{
		dispatch.EnvTable:           store.Table(),
		"AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(),
		"AWS_ENDPOINT_URL_SESV2":    ses.URL,
		"TOOLGATE_SENDER":           "noreply@example.com",
		"TOOLGATE_RECIPIENT_ALLOW":  "@example.com",
	})
	// Each call carries the approval of a review of exactly it; a retry is
	// the same envelope, approval included.
	reviews := dynamo.NewStore(db, store.Table())
	sent := map[string][]byte{}
	envelope := func(run, subject string) []byte {
		if b, ok := sent[run]; ok {
			return b
		}
		r := "run-ses-" + run
		b, _ := json.Marshal(map[string]any{"tool": "send-email", "toolset_id": ts.ID, "run_id": r, "seq": 1, "step": "send",
			"idempotency_key": r + "/1", "attempt": 1, "tolerate_duplicates": false,
			"input": map[string]any{"to": []string{"team@example.com"}, "subject": subject, "text": "t"}})
		sent[run] = reviewtest.Approve(t, reviews, b)
		return sent[run]
	}
	for subject, want := range map[string]string{
		"hello":     "",
		"throttle":  "TOOL_RATE_LIMITED",
		"broken":    "TOOL_UPSTREAM_UNAVAILABLE",
		"rejected":  "TOOL_PERMANENT_FAILURE",
		"suspended": "TOOL_PERMISSION_DENIED",
	} {
		if got := invoke(t, fn, envelope(subject, subject)); got != want {
			t.Errorf("subject %q: %q, want %q", subject, got, want)
		}
	}
	// A 5xx may have sent the mail: the key is UNKNOWN, and a retry of it
	// is refused rather than sent again.
	if got := invoke(t, fn, envelope("broken", "broken")); got != "TOOL_RETRY_REQUIRES_IDEMPOTENCY" {
		t.Fatalf("retry after a maybe-sent 5xx: %q", got)
	}
	rows := ledgertest.RunRows(t, store, "run-ses-broken")
	var statuses []string
	for _, r := range rows {
		statuses = append(statuses, string(r.Status))
	}
	if strings.Join(statuses, ",") != "UNKNOWN,UNKNOWN" {
		t.Fatalf("rows %v", statuses)
	}
}
