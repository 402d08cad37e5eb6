package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// A replay of a completed gated call is answered only after its approval
// is checked as a first call's is (docs/reviews.md, "The check before a
// gated tool runs"): the recorded result comes back under the approval it
// ran under (4 requests on dynalite: the review GetItem, the bind PutItem
// whose condition fails, the binding's GetItem that DynamoDB's answer
// would make needless, the claim UpdateItem), under an approval whose time
// has ended or whose review is gone (2: the review GetItem, the
// non-claiming read of the record), and under another approval of the
// same call that is unbound (which the replay binds, as a first use
// would). Any other approval is refused as for a first call, though the
// key holds the result: reading the record before the approval would
// answer these, which is why the replay's requests are not cut that way
// (docs/performance.md, "The requests of a gated call").
func TestGatedReplayChecksTheApprovalFirst(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rs := e.reviews()
	var calls atomic.Int64
	d := e.dispatcher(t, "test-gated", gatedTool(&calls))
	direct := dynamoClient(e.dynamo.Endpoint())

	// completed runs an approved call (seq 2: not a run's first call,
	// which also writes a key pointer) to its COMPLETED record and
	// returns it with the approval it ran under.
	completed := func(t *testing.T) (json.RawMessage, *review.Review) {
		t.Helper()
		p := envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"x"}`)
		r := reviewtest.Decided(t, rs, paramsFor(t, p), review.Approve)
		p = reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
		if out, err := d.Handle(ctx, p); err != nil || string(out) != `{"message_id":"m"}` {
			t.Fatalf("the approved call: %s %v", out, err)
		}
		return p, r
	}
	// another is a second approved review of the very call p is.
	another := func(t *testing.T, p json.RawMessage, params func(*review.Params)) *review.Review {
		t.Helper()
		ps := paramsFor(t, p)
		if params != nil {
			params(&ps)
		}
		return reviewtest.Decided(t, rs, ps, review.Approve)
	}
	type counts struct{ gets, puts, updates int64 }
	cases := []struct {
		name string
		// replay returns the replay of the completed call p (approved by
		// r).
		replay func(t *testing.T, p json.RawMessage, r *review.Review) json.RawMessage
		// refusal is what a refused replay's message says; "" when the
		// replay returns the recorded result with requests.
		refusal  string
		requests counts
		// after checks the review store after the replay (nil: nothing).
		after func(t *testing.T, p json.RawMessage, other *review.Review)
	}{
		{name: "the approval it ran under",
			replay:   func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage { return p },
			requests: counts{gets: 2, puts: 1, updates: 1}},
		{name: "its approval's time has ended",
			replay: func(t *testing.T, _ json.RawMessage, _ *review.Review) json.RawMessage {
				// A call that completed two minutes ago, under a review
				// that ended a minute ago.
				then := func() time.Time { return time.Now().Add(-2 * time.Minute) }
				p := envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"x"}`)
				params := paramsFor(t, p)
				params.TimeoutSeconds = 90
				r := reviewtest.Decided(t, rs.WithClock(func() time.Time { return time.Now().Add(-150 * time.Second) }), params, review.Approve)
				p = reviewtest.WithApproval(t, p, reviewtest.Approval(t, r))
				deps := e.deps(t, gatedTool(&calls), slog.New(slog.NewJSONHandler(io.Discard, nil)))
				deps.Ledger = e.store.WithMAC(mustSealKey(t, testMAC)).WithClock(then)
				earlier, err := New(Config{Mode: OneTool("test-gated"), MemoryMB: 128, LedgerSince: testSince, CompactSince: time.Now(), ExternalKeySecret: testSecret, Lane: d.cfg.Lane}, deps)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := earlier.Handle(ctx, p); err != nil {
					t.Fatalf("the call while its approval lasted: %v", err)
				}
				return p
			},
			requests: counts{gets: 1, updates: 1}},
		{name: "its review is gone",
			replay: func(t *testing.T, p json.RawMessage, r *review.Review) json.RawMessage {
				_, err := direct.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.store.Table()), Key: map[string]types.AttributeValue{
					table.PK: &types.AttributeValueMemberS{Value: table.Review.Key(r.ID)}, table.SK: &types.AttributeValueMemberS{Value: table.Review.SKValue}}})
				if err != nil {
					t.Fatal(err)
				}
				return p
			},
			requests: counts{gets: 1, updates: 1}},
		{name: "another approval of the call, unbound: the replay binds it",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				return reviewtest.WithApproval(t, p, reviewtest.Approval(t, another(t, p, nil)))
			},
			requests: counts{gets: 1, puts: 1, updates: 1},
			after: func(t *testing.T, p json.RawMessage, other *review.Review) {
				if bound, err := rs.BoundKey(ctx, other.ID); err != nil || bound != keyOf(t, p) {
					t.Fatalf("the other approval's binding after the replay: %q %v", bound, err)
				}
			}},
		{name: "another approval of the call, bound to another key",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				other := another(t, p, nil)
				if ok, _, err := rs.Bind(ctx, other, runIDOf(t, p)+"/99"); err != nil || !ok {
					t.Fatal(ok, err)
				}
				return reviewtest.WithApproval(t, p, reviewtest.Approval(t, other))
			},
			refusal: "already authorised another call"},
		{name: "another approval of the call, its Task ended",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				other := another(t, p, func(ps *review.Params) { ps.TaskToken = "token-" + review.NewID() })
				if err := rs.FinishDelivery(ctx, other, review.TaskEnded, "TaskTimedOut"); err != nil {
					t.Fatal(err)
				}
				return reviewtest.WithApproval(t, p, reviewtest.Approval(t, other))
			},
			refusal: "Task had ended"},
		{name: "an approval of another step",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				return reviewtest.WithApproval(t, p, reviewtest.Approval(t, another(t, p, func(ps *review.Params) { ps.Of = "other_step" })))
			},
			refusal: `approved step "other_step"`},
		{name: "a rejected review",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				r := reviewtest.Decided(t, rs, paramsFor(t, p), review.Reject)
				forged := strings.Replace(string(reviewtest.Approval(t, r)), `"reject"`, `"approve"`, 1)
				return reviewtest.WithApproval(t, p, json.RawMessage(forged))
			},
			refusal: "is rejected"},
		{name: "no approval",
			replay: func(t *testing.T, p json.RawMessage, _ *review.Review) json.RawMessage {
				var m map[string]json.RawMessage
				json.Unmarshal(p, &m)
				delete(m, "approval")
				out, _ := json.Marshal(m)
				return out
			},
			refusal: "carries no approval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, r := completed(t)
			replay := c.replay(t, p, r)
			var other *review.Review
			if c.after != nil {
				var env struct {
					Approval struct {
						ReviewID string `json:"review_id"`
					} `json:"approval"`
				}
				json.Unmarshal(replay, &env)
				other = &review.Review{ID: env.Approval.ReviewID}
			}
			before := calls.Load()
			e.db.reset()
			out, err := d.Handle(ctx, replay)
			if calls.Load() != before {
				t.Fatal("the tool ran again")
			}
			if c.refusal != "" {
				if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(messageOf(err), c.refusal) {
					t.Fatalf("replay: %s %v, want TOOL_PERMISSION_DENIED mentioning %q", out, err, c.refusal)
				}
				if rec := mustRecord(t, e.store, keyOf(t, replay)); rec.State != ledger.StateCompleted {
					t.Fatalf("the record after a refused replay: %+v", rec)
				}
				return
			}
			if err != nil || string(out) != `{"message_id":"m"}` {
				t.Fatalf("replay: %s %v, want the recorded result", out, err)
			}
			if got := (counts{e.db.gets.Load(), e.db.puts.Load(), e.db.updates.Load()}); got != c.requests {
				t.Errorf("replay's requests %+v, want %+v", got, c.requests)
			}
			if c.after != nil {
				c.after(t, replay, other)
			}
		})
	}
}
