package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/toolgate/toolgate/shared/caller"
	ledgertable "github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// Per-item least privilege (docs/infra.md, "Least privilege"). dynalite
// does not evaluate IAM, so these are template assertions: the requests the
// functions' code makes, recorded from the code itself, are replayed
// against each role's statements in the synthesized template
// (TestCodeRequestsAllowed, with a small evaluator of the condition keys
// DynamoDB documents), requests the code never makes are refused
// (TestForgedRequestsDenied), and checkLedgerWriters says who may write
// which items.

// ledgerPrefixes are the key prefixes of the ledger table's items.
var ledgerPrefixes = []string{"RUN#", "TOOLSET#", "REVIEW#", "START#", "PROOF#", "BIND#", "SOLUTION#"}

// Attributes of review items by who may write them (docs/reviews.md).
var (
	// What was asked: only review-request writes it, when it creates the
	// review.
	reviewAskedAttributes = []string{"review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers", "input",
		"input_digest", "input_bytes", "timeout_seconds", "requester", "task_token", "created_at", "review_list_sk"}
	// The decision and its delivery: only review-decision writes them.
	reviewDecisionAttributes = []string{"approver", "authenticated", "decided_at", "reason", "decision_token",
		"delivery", "delivery_lease_until", "delivered_at", "delivery_error", "self_approval_refusals"}
	// The binding: only a tool function writes it.
	reviewBindingAttributes = []string{"bound_key", "bound_at"}
)

// ledgerWriters is every write of ledger items any principal may make: a
// write that no entry covers fails checkLedgerWriters.
var ledgerWriters = []struct {
	prefix  string
	who     func(principal string) bool
	actions []string
	// allow, when set, holds every attribute the write may name; forbid
	// (with allow nil) those it may not, and the write must then name its
	// attributes (dynamodb:Attributes). Neither: any attribute.
	allow, forbid []string
	what          string
}{
	{"RUN#", isTool, []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, nil, nil,
		"the dispatcher's call items and row items"},
	{"REVIEW#", is(fnReviewRequest), []string{"dynamodb:PutItem"}, nil,
		slices.Concat(reviewDecisionAttributes, reviewBindingAttributes), "review-request creates reviews"},
	{"REVIEW#", is(fnReviewDecision), []string{"dynamodb:UpdateItem"}, nil,
		slices.Concat(reviewAskedAttributes, reviewBindingAttributes), "review-decision records decisions"},
	{"BIND#", isTool, []string{"dynamodb:PutItem"}, []string{"pk", "sk", "bound_key", "bound_at", "expires_at"}, nil,
		"a tool function binds an approval to its call in the binding item, and writes no review item"},
	{"TOOLSET#", is(fnPublish), []string{"dynamodb:PutItem"}, []string{"pk", "sk", "body", "registered_at"}, nil,
		"the publish function registers toolsets (after the registration check)"},
	{"START#", is(fnReviewRequest), []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, nil, nil, "review-request records an execution's starter, and which child execution took its parent's record"},
	{"SOLUTION#", is(fnPublish), []string{"dynamodb:PutItem"}, []string{"pk", "sk", "version_arn", "version", "toolset_id", "output_bound_bytes", "run_timeout_seconds",
		"input_limit_bytes", "source_digest", "publisher", "published_at"}, nil, "the publish function records the version it published"},
	{"PROOF#", isFunction, []string{"dynamodb:PutItem"}, nil, nil, "every function records the caller proofs it accepts"},
}

func is(name string) func(string) bool { return func(p string) bool { return p == name } }

func isTool(p string) bool {
	return slices.ContainsFunc(functionSpecs, func(s functionSpec) bool { return s.Tool && s.Name == p })
}

func isFunction(p string) bool {
	return slices.ContainsFunc(functionSpecs, func(s functionSpec) bool { return s.Name == p })
}

// ledgerReadActions and the write actions are every DynamoDB action that
// reaches items.
var ledgerReadActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan",
	"dynamodb:PartiQLSelect"}

// checkLedgerWriters: every statement that reaches ledger items on the
// table names the key prefixes it may (dynamodb:LeadingKeys), and every
// write it allows is one of ledgerWriters: only review-request creates
// reviews, only review-decision records a decision, a tool function
// writes only the binding, only the publish function registers toolsets.
func checkLedgerWriters(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	all := principalStatements(pj)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		for _, s := range all[p] {
			if s["Effect"] != "Allow" || !slices.ContainsFunc(strs(s["Resource"]), mayBeTable) {
				continue
			}
			sid := "without Sid"
			if id, ok := s["Sid"].(string); ok {
				sid = id
			}
			reaches := slices.Concat(ledgerReadActions, ledgerWriteActions)
			allowed := slices.DeleteFunc(slices.Clone(reaches), func(a string) bool { return !allowsAction(s, a) })
			if len(allowed) == 0 {
				continue
			}
			keys, restricted := conditionValues(s, "dynamodb:LeadingKeys")
			if !restricted {
				errs = append(errs, fmt.Errorf("%s: statement %s allows %s on every item of the ledger table: name the key prefixes its code uses (dynamodb:LeadingKeys)",
					p, sid, strings.Join(allowed, ", ")))
			}
			attrs, named := conditionValues(s, "dynamodb:Attributes")
			for _, prefix := range ledgerPrefixes {
				if restricted && !slices.ContainsFunc(keys, func(k string) bool { return mayStartWith(k, prefix) }) {
					continue
				}
				for _, a := range ledgerWriteActions {
					if allowsAction(s, a) && !writeCovered(p, prefix, a, attrs, named) {
						what := "any attribute"
						if named {
							what = strings.Join(attrs, ", ")
						}
						errs = append(errs, fmt.Errorf("%s: statement %s allows %s on %s items (%s), which no writer of ledgerWriters covers",
							p, sid, a, prefix, what))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// writeCovered: principal p may make write a on items of prefix naming
// attrs (any attribute unless named).
func writeCovered(p, prefix, a string, attrs []string, named bool) bool {
	for _, w := range ledgerWriters {
		if w.prefix != prefix || !w.who(p) || !slices.Contains(w.actions, a) {
			continue
		}
		switch {
		case w.allow != nil:
			// Every attribute pattern is one of allow, literally.
			if named && !slices.ContainsFunc(attrs, func(pat string) bool { return !slices.Contains(w.allow, pat) }) {
				return true
			}
		case w.forbid != nil:
			if named && !slices.ContainsFunc(attrs, func(pat string) bool {
				return slices.ContainsFunc(w.forbid, func(f string) bool { return wildcardMatch(pat, f, false) })
			}) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// mayStartWith: the IAM string pattern (* and ?) matches some string that
// starts with prefix.
func mayStartWith(pattern, prefix string) bool {
	// The pattern positions reachable after reading prefix; a star may
	// also match nothing.
	closure := func(states map[int]bool) map[int]bool {
		for i := range len(pattern) + 1 {
			if states[i] && i < len(pattern) && pattern[i] == '*' {
				states[i+1] = true
			}
		}
		return states
	}
	states := closure(map[int]bool{0: true})
	for i := 0; i < len(prefix); i++ {
		next := map[int]bool{}
		for st := range states {
			if st == len(pattern) {
				continue
			}
			switch pattern[st] {
			case '*':
				next[st] = true
			case '?':
				next[st+1] = true
			default:
				if pattern[st] == prefix[i] {
					next[st+1] = true
				}
			}
		}
		states = closure(next)
	}
	return len(states) > 0
}

func TestMayStartWith(t *testing.T) {
	for _, c := range []struct {
		pattern, prefix string
		want            bool
	}{
		{"REVIEW#*", "REVIEW#", true}, {"RUN#*", "REVIEW#", false}, {"*", "REVIEW#", true}, {"RE*", "REVIEW#", true},
		{"R?N#*", "RUN#", true}, {"REVIEW#rv_1", "REVIEW#", true}, {"REVIEWS#*", "REVIEW#", false}, {"*#", "PROOF#", true},
		{"TOOLSET", "TOOLSET#", false},
	} {
		if got := mayStartWith(c.pattern, c.prefix); got != c.want {
			t.Errorf("mayStartWith(%q, %q) = %v, want %v", c.pattern, c.prefix, got, c.want)
		}
	}
}

// TestLedgerWriterBreaks widens the functions' ledger statements in more
// ways than TestRulesCatchBreakage's one, and expects checkLedgerWriters to
// name each.
func TestLedgerWriterBreaks(t *testing.T) {
	setCondition := func(pj tmpl, fn, sid string, f func(c tmpl)) {
		for _, s := range policyStatementsOf(pj, fn) {
			if s["Sid"] == sid {
				f(s["Condition"].(tmpl))
				return
			}
		}
		panic("no statement " + sid + " for " + fn)
	}
	attrs := func(c tmpl) tmpl { return c["ForAllValues:StringLike"].(tmpl) }
	for _, c := range []struct {
		name string
		brk  func(pj tmpl)
		says string
	}{
		{"a table-wide write", func(pj tmpl) {
			addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
		}, "structured-data-fetch: statement without Sid allows dynamodb:PutItem on every item of the ledger table"},
		{"a tool writes a review", func(pj tmpl) {
			setCondition(pj, "SendEmailFunction", "BindApprovals", func(c tmpl) {
				attrs(c)["dynamodb:LeadingKeys"] = []any{"BIND#*", "REVIEW#*"}
			})
		}, "send-email: statement BindApprovals allows dynamodb:PutItem on REVIEW# items"},
		{"a tool's binding names no attributes", func(pj tmpl) {
			setCondition(pj, "WorkflowValidatorFunction", "BindApprovals", func(c tmpl) { delete(attrs(c), "dynamodb:Attributes") })
		}, "workflow-validator: statement BindApprovals allows dynamodb:PutItem on BIND# items (any attribute)"},
		{"review-request updates reviews", func(pj tmpl) {
			for _, s := range policyStatementsOf(pj, "ReviewRequestFunction") {
				if s["Sid"] == "CreateReviews" {
					s["Action"] = []any{"dynamodb:PutItem", "dynamodb:UpdateItem"}
				}
			}
		}, "review-request: statement CreateReviews allows dynamodb:UpdateItem on REVIEW# items"},
		{"review-decision binds", func(pj tmpl) {
			setCondition(pj, "ReviewDecisionFunction", "DecideReviews", func(c tmpl) {
				attrs(c)["dynamodb:Attributes"] = append(attrs(c)["dynamodb:Attributes"].([]any), "bound_key")
			})
		}, "review-decision: statement DecideReviews allows dynamodb:UpdateItem on REVIEW# items"},
		{"review-decision changes the inputs", func(pj tmpl) {
			setCondition(pj, "ReviewDecisionFunction", "DecideReviews", func(c tmpl) {
				attrs(c)["dynamodb:Attributes"] = append(attrs(c)["dynamodb:Attributes"].([]any), "input_*")
			})
		}, "review-decision: statement DecideReviews allows dynamodb:UpdateItem on REVIEW# items"},
		{"a wildcard prefix", func(pj tmpl) {
			setCondition(pj, "ReviewDecisionFunction", "RecordCallerProofs", func(c tmpl) { attrs(c)["dynamodb:LeadingKeys"] = []any{"*"} })
		}, "review-decision: statement RecordCallerProofs allows dynamodb:PutItem on RUN# items"},
		{"review-request registers toolsets", func(pj tmpl) {
			for _, s := range policyStatementsOf(pj, "ReviewRequestFunction") {
				if s["Sid"] == "Toolsets" {
					s["Action"] = []any{"dynamodb:GetItem", "dynamodb:PutItem"}
				}
			}
		}, "review-request: statement Toolsets allows dynamodb:PutItem on TOOLSET# items"},
		{"the publish function writes more of a toolset", func(pj tmpl) {
			setCondition(pj, "PublishFunction", "RegisterToolsets", func(c tmpl) {
				attrs(c)["dynamodb:Attributes"] = append(attrs(c)["dynamodb:Attributes"].([]any), "registered_by")
			})
		}, "publish: statement RegisterToolsets allows dynamodb:PutItem on TOOLSET# items"},
		{"a tool binds and writes more", func(pj tmpl) {
			setCondition(pj, "SendEmailFunction", "BindApprovals", func(c tmpl) {
				attrs(c)["dynamodb:Attributes"] = append(attrs(c)["dynamodb:Attributes"].([]any), "status")
			})
		}, "send-email: statement BindApprovals allows dynamodb:PutItem on BIND# items"},
		{"review-request writes calls", func(pj tmpl) {
			setCondition(pj, "ReviewRequestFunction", "RecordStarts", func(c tmpl) {
				attrs(c)["dynamodb:LeadingKeys"] = []any{"START#*", "RUN#*"}
			})
		}, "review-request: statement RecordStarts allows dynamodb:PutItem on RUN# items"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.brk(pj)
			err := checkLedgerWriters(nil, nil, nil, pj)
			if err == nil {
				t.Fatal("the broken template passed")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", c.says, err)
			}
		})
	}
}

// Values the code is run with.
const (
	testRunID   = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-digest:run-1"
	testKey     = testRunID + "/2"
	testToolset = "ts_0123456789abcdef0123456789abcdef"
	testReview  = "rv_0123456789abcdef0123456789abcdef"
)

// codeRequests runs, for each function, the store methods its code calls
// (shared/dispatch: the ledger's call methods, ToolsetCache's loads,
// dynamo.Store Get and Bind; request.Handler; decision.Service; every
// function's caller.ProofTable), each path after a failed condition too,
// and returns the DynamoDB requests they made.
func codeRequests(t *testing.T) map[string][]ddbRequest {
	ctx := context.Background()
	run := func(what string, fail int, f func(db *recorder)) func(*recorder) {
		return func(db *recorder) {
			db.what, db.fail = what, fail
			f(db)
			db.fail = 0
		}
	}
	ignore := func(...any) {}
	now := time.Now()
	rec := func() *ledgertable.Record {
		return &ledgertable.Record{Key: testKey, RunID: testRunID, Seq: "2", Step: "send", Tool: "send-email", ToolsetID: testToolset,
			InputDigest: "sha256:00", State: ledgertable.Failed, Attempts: 1, LeaseUntil: now}
	}
	row := &ledgertable.Row{RunID: testRunID, Seq: "2", Attempt: 1, Step: "send", Tool: "send-email", ToolsetID: testToolset,
		IdempotencyKey: testKey, Status: ledgertable.Refused, StartedAt: now, EndedAt: now}
	rv := &review.Review{ID: testReview, TaskToken: "token", DeliveryLeaseUntil: now}
	calls := []func(*recorder){
		run("ledger.Store.Claim", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Claim(ctx, &ledgertable.Record{Key: testKey, Step: "send", Tool: "send-email", LeaseUntil: now}))
		}),
		run("ledger.Store.Record", 0, func(db *recorder) { ignore(ledgertable.New(db, "toolgate-test").Record(ctx, testKey)) }),
		run("ledger.Store.Reclaim (condition failed)", 1, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Reclaim(ctx, rec(), now))
		}),
		run("ledger.Store.MarkUnknown", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").MarkUnknown(ctx, rec(), "TOOL_RETRY_REQUIRES_IDEMPOTENCY"))
		}),
		run("ledger.Store.Finish", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Finish(ctx, testKey, "tok", ledgertable.Completed, json.RawMessage(`{}`), row))
		}),
		run("ledger.Store.Finish (failed)", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Finish(ctx, testKey, "tok", ledgertable.Failed, nil, row))
		}),
		run("ledger.Store.Finish (condition failed)", 1, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Finish(ctx, testKey, "tok", ledgertable.Completed, json.RawMessage(`{}`), row))
		}),
		run("ledger.Store.Release", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").Release(ctx, testKey, "tok", "TOOL_TIMEOUT", row))
		}),
		run("ledger.Store.Touch", 0, func(db *recorder) { ignore(ledgertable.New(db, "toolgate-test").Touch(ctx, testKey)) }),
		run("ledger.Store.PutRow", 0, func(db *recorder) { ignore(ledgertable.New(db, "toolgate-test").PutRow(ctx, row)) }),
	}
	toolset := run("ledger.Store.Toolset", 0, func(db *recorder) { ignore(ledgertable.New(db, "toolgate-test").Toolset(ctx, testToolset)) })
	get := run("dynamo.Store.Get", 0, func(db *recorder) { ignore(dynamo.NewStore(db, "toolgate-test").Get(ctx, testReview)) })
	getApproval := run("dynamo.Store.GetApproval", 0, func(db *recorder) {
		ignore(dynamo.NewStore(db, "toolgate-test").GetApproval(ctx, testReview))
	})
	bind := []func(*recorder){
		run("dynamo.Store.Bind", 0, func(db *recorder) { ignore(dynamo.NewStore(db, "toolgate-test").Bind(ctx, rv, testKey)) }),
		run("dynamo.Store.Bind (condition failed)", 1, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").Bind(ctx, rv, testKey))
		}),
	}
	proofs := []func(*recorder){
		run("caller.ProofTable.Record", 0, func(db *recorder) {
			ignore(caller.ProofTable{DB: db, Table: "toolgate-test"}.Record(ctx, caller.ProofRecord{ID: "00ff", Binding: "b", ARN: "arn:aws:iam::123456789012:user/u", ExpiresAt: now}))
		}),
		run("caller.ProofTable.Record (condition failed)", 1, func(db *recorder) {
			ignore(caller.ProofTable{DB: db, Table: "toolgate-test"}.Record(ctx, caller.ProofRecord{ID: "00ff", Binding: "b", ARN: "arn:aws:iam::123456789012:user/u", ExpiresAt: now}))
		}),
	}
	request := []func(*recorder){
		toolset,
		run("dynamo.Store.Create", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").Create(ctx, &review.Review{ID: testReview, RunID: testRunID, Step: "review",
				Of: "send", Tool: "send-email", ToolsetID: testToolset, Reviewers: []string{"arn:aws:iam::123456789012:role/r"},
				Input: json.RawMessage(`{}`), InputDigest: "sha256:00", TimeoutSeconds: 60, Requester: "arn:aws:iam::123456789012:user/u", TaskToken: "token"}))
		}),
		run("dynamo.Store.Create (condition failed)", 1, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").Create(ctx, &review.Review{ID: testReview, RunID: testRunID, TimeoutSeconds: 60}))
		}),
		get,
		run("dynamo.Store.RecordStart", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").RecordStart(ctx, testRunID, "arn:aws:iam::123456789012:user/u"))
		}),
		run("dynamo.Store.Starter", 0, func(db *recorder) { ignore(dynamo.NewStore(db, "toolgate-test").Starter(ctx, testRunID)) }),
		run("dynamo.Store.RecordChildStart", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").RecordChildStart(ctx, testRunID+"-child", review.ChildRecord{
				Starter: "arn:aws:iam::123456789012:user/u", ParentRunID: testRunID, InputDigest: "sha256:00"}))
		}),
		run("dynamo.Store.ChildStart", 0, func(db *recorder) { ignore(dynamo.NewStore(db, "toolgate-test").ChildStart(ctx, testRunID)) }),
		run("dynamo.Store.TakeChildStart", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").TakeChildStart(ctx, testRunID, "2026-12-01T00:00:00Z"))
		}),
	}
	decision := []func(*recorder){
		get,
		run("dynamo.Store.Decide", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").Decide(ctx, rv, review.Approve, "arn:aws:iam::123456789012:user/a", true, "ok", time.Minute))
		}),
		run("dynamo.Store.Decide (condition failed)", 1, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").Decide(ctx, rv, review.Reject, "arn:aws:iam::123456789012:user/a", true, "no", time.Minute))
		}),
		run("dynamo.Store.ClaimDelivery", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").ClaimDelivery(ctx, rv, time.Minute))
		}),
		run("dynamo.Store.FinishDelivery", 0, func(db *recorder) {
			s := dynamo.NewStore(db, "toolgate-test")
			ignore(s.FinishDelivery(ctx, rv, review.Delivered, ""), s.FinishDelivery(ctx, rv, review.TaskEnded, "TaskTimedOut"),
				s.FinishDelivery(ctx, rv, review.Delivering, ""))
		}),
		run("dynamo.Store.NoteSelfApproval", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").NoteSelfApproval(ctx, testReview))
		}),
		run("dynamo.Store.List", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").List(ctx, review.Pending, nil))
		}),
		run("dynamo.Store.BoundKey", 0, func(db *recorder) {
			ignore(dynamo.NewStore(db, "toolgate-test").BoundKey(ctx, testReview))
		}),
	}
	publishing := []func(*recorder){
		// The publish function as it runs (resolver/publish Service):
		// Publish, Register and ShowToolset, each path, with its Step Functions and SSM
		// requests going to recorders (publishRequests).
		func(db *recorder) { publishRequests(t, db) },
		run("ledger.Store.RegisterToolset (condition failed)", 1, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").RegisterToolset(ctx, testCatalogToolset(t)))
		}),
		// A parent's workflow steps: the children's published versions.
		run("ledger.Store.PublishedSolution", 0, func(db *recorder) {
			ignore(ledgertable.New(db, "toolgate-test").PublishedSolution(ctx, "child"))
		}),
	}
	byKind := map[string][]func(*recorder){
		"tool":           slices.Concat(calls, []func(*recorder){toolset, getApproval}, bind, proofs),
		fnReviewRequest:  slices.Concat(request, proofs),
		fnReviewDecision: slices.Concat(decision, proofs),
		fnPublish:        slices.Concat(publishing, proofs),
	}
	out := map[string][]ddbRequest{}
	for _, spec := range functionSpecs {
		kind := spec.Name
		if spec.Tool {
			kind = "tool"
		}
		db := &recorder{}
		for _, f := range byKind[kind] {
			f(db)
		}
		if len(db.reqs) == 0 {
			t.Fatalf("%s: no request recorded", spec.Name)
		}
		out[spec.Name] = db.reqs
	}
	return out
}

// knownDenied are requests the code makes that a role refuses on purpose
// (what the code would send instead is said), by "<What>: <action>", for
// the functions of the kind named: TestCodeRequestsAllowed requires each
// to be made and denied.
var knownDenied = map[string]struct {
	kind, why string
}{}

// TestCodeRequestsAllowed: every request the functions' code makes is
// allowed by the function's role in the synthesized template (but those of
// knownDenied, which must be denied), and every ledger statement of the
// role allows one of them (none is unused).
func TestCodeRequestsAllowed(t *testing.T) {
	all := principalStatements(platformJSON)
	for fn, reqs := range codeRequests(t) {
		t.Run(fn, func(t *testing.T) {
			stmts := all[fn]
			used := map[string]bool{}
			kind := fn
			if isTool(fn) {
				kind = "tool"
			}
			seen := map[string]bool{}
			for _, r := range reqs {
				by := allowedBy(stmts, r)
				if k, ok := knownDenied[r.What+": "+r.Action]; ok && k.kind == kind {
					seen[r.What+": "+r.Action] = true
					if len(by) > 0 {
						t.Errorf("allowed, but knownDenied says it is denied (%s): %s", k.why, r)
					}
					continue
				}
				if len(by) == 0 {
					t.Errorf("denied: %s", r)
				}
				for _, s := range by {
					used[text(s["Sid"])] = true
				}
			}
			for what, k := range knownDenied {
				if k.kind == kind && !seen[what] {
					t.Errorf("knownDenied %q: the code no longer makes it; remove it", what)
				}
			}
			for _, s := range stmts {
				if slices.ContainsFunc(strs(s["Action"]), func(a string) bool { return strings.HasPrefix(a, "dynamodb:") }) && !used[text(s["Sid"])] {
					t.Errorf("statement %s allows no request the code makes: %s", text(s["Sid"]), text(s))
				}
			}
		})
	}
}

// forged are requests the functions' code never makes, which each role
// must refuse: creating or deciding reviews outside the one function that
// does it, binding outside the tools, changing what was asked, toolsets,
// other prefixes.
var forged = map[string][]ddbRequest{
	"tool": {
		{What: "create a review", Action: "dynamodb:PutItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "approve a review", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"approver", "pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "mark a review APPROVED", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"bound_key", "pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "move a review's deadline", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"deadline", "expires_at", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "read a review whole", Action: "dynamodb:GetItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		{What: "read a review's inputs and task token", Action: "dynamodb:GetItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"input", "pk", "sk", "task_token"}},
		{What: "read a review's requester", Action: "dynamodb:GetItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "requester", "sk"}},
		{What: "read a review as ALL_ATTRIBUTES", Action: "dynamodb:GetItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk", "status"}, Select: "ALL_ATTRIBUTES"},
		{What: "change what was approved", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"input_digest", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "bind, reading the whole review back", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"bound_at", "bound_key", "pk", "sk"}, ReturnValues: "ALL_NEW"},
		{What: "register a toolset", Action: "dynamodb:PutItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "read a toolset item whole", Action: "dynamodb:GetItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"pk", "registered_at", "sk"}},
		{What: "record a starter", Action: "dynamodb:PutItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk", "starter"}, ReturnValues: "NONE"},
		{What: "read a starter", Action: "dynamodb:GetItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk"}},
		{What: "change a proof record", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"PROOF#00"}, Attributes: []string{"arn", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
		{What: "query a run", Action: "dynamodb:Query", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk"}},
		{What: "write an item of no prefix", Action: "dynamodb:PutItem", LeadingKeys: []string{"X"}, Attributes: []string{"pk", "sk"}, ReturnValues: "NONE"},
	},
	fnReviewRequest: {
		{What: "approve a review", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "create a decided review", Action: "dynamodb:PutItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"approver", "pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "create a bound review", Action: "dynamodb:PutItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"bound_key", "pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "read a call", Action: "dynamodb:GetItem", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk"}},
		{What: "write a call", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk", "state"}, ReturnValues: "NONE"},
		{What: "change a starter", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk", "starter"}, ReturnValues: "NONE"},
		{What: "record a starter with more", Action: "dynamodb:PutItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk", "starter", "requester"}, ReturnValues: "NONE"},
		{What: "register a toolset", Action: "dynamodb:PutItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
	},
	fnReviewDecision: {
		{What: "bind an approval", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"bound_key", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "change what was asked", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"input", "input_digest", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "change the requester", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "requester", "sk"}, ReturnValues: "NONE"},
		{What: "decide, reading the whole review back", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"approver", "pk", "sk", "status"}, ReturnValues: "ALL_NEW"},
		{What: "create a review", Action: "dynamodb:PutItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "read a call", Action: "dynamodb:GetItem", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk"}},
		{What: "read a toolset", Action: "dynamodb:GetItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "sk"}},
		{What: "read a starter", Action: "dynamodb:GetItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk"}},
		{What: "list with the task tokens", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk", "task_token"}},
		{What: "query the table", Action: "dynamodb:Query", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk"}},
		{What: "register a toolset", Action: "dynamodb:PutItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "sk"}, ReturnValues: "NONE"},
	},
	fnPublish: {
		{What: "change a registered toolset", Action: "dynamodb:UpdateItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "sk"}, ReturnValues: "NONE"},
		{What: "register a toolset with more", Action: "dynamodb:PutItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"body", "pk", "registered_by", "sk"}, ReturnValues: "NONE"},
		{What: "read a toolset item whole", Action: "dynamodb:GetItem", LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		{What: "write a call", Action: "dynamodb:PutItem", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk", "state"}, ReturnValues: "NONE"},
		{What: "read a call", Action: "dynamodb:GetItem", LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk"}, Whole: true},
		{What: "create a review", Action: "dynamodb:PutItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk", "status"}, ReturnValues: "NONE"},
		{What: "read a review", Action: "dynamodb:GetItem", LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		{What: "record a starter", Action: "dynamodb:PutItem", LeadingKeys: []string{"START#arn"}, Attributes: []string{"pk", "sk", "starter"}, ReturnValues: "NONE"},
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
	},
}

// forgedAllowed returns the forged requests that pj's roles allow.
func forgedAllowed(pj tmpl) []string {
	all := principalStatements(pj)
	var out []string
	for _, spec := range functionSpecs {
		kind := spec.Name
		if spec.Tool {
			kind = "tool"
		}
		for _, r := range forged[kind] {
			if r.Resource == "" {
				r.Resource = tableARN
			}
			if by := allowedBy(all[spec.Name], r); len(by) > 0 {
				out = append(out, fmt.Sprintf("%s may %s (statement %s)", spec.Name, r, text(by[0]["Sid"])))
			}
		}
	}
	return out
}

func TestForgedRequestsDenied(t *testing.T) {
	for _, f := range forgedAllowed(platformJSON) {
		t.Error(f)
	}
	// The check bites: a table-wide write on the fetch role lets it
	// create reviews and register toolsets.
	pj := clone(platformJSON)
	addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
	got := strings.Join(forgedAllowed(pj), "\n")
	for _, want := range []string{"structured-data-fetch may create a review", "structured-data-fetch may register a toolset"} {
		if !strings.Contains(got, want) {
			t.Errorf("widened template: no %q in\n%s", want, got)
		}
	}
}
