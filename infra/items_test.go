package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/caller"
	ledgertable "github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// Per-item least privilege (docs/infra.md, "Least privilege"). dynalite
// does not evaluate IAM, so these are template assertions: the requests the
// functions' code makes, recorded from the code itself, are replayed
// against each role's statements in the synthesized template
// (TestCodeRequestsAllowed, with a small evaluator of the condition keys
// DynamoDB documents), requests the code never makes are refused
// (TestForgedRequestsDenied), and checkLedgerWriters says who may write
// which items.

// principalStatements returns every principal's identity policy
// statements: a function role by its function's name, the Solution
// execution role as solution-execution, a managed policy by its name
// without toolgate-<stage>- (publisher, reviewer, operator).
func principalStatements(pj tmpl) map[string][]tmpl {
	byRole := map[string]string{} // role logical ID without hash: principal
	for _, spec := range functionSpecs {
		byRole[symbol(roleOf(pj, spec.LogicalID))] = spec.Name
	}
	byRole["SolutionExecutionRole"] = "solution-execution"
	name := func(role string) string {
		if n, ok := byRole[role]; ok {
			return n
		}
		return role
	}
	out := map[string][]tmpl{}
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			role := strings.TrimSuffix(strings.TrimPrefix(text(r), "${"), "}")
			out[name(role)] = append(out[name(role)], statements(props(p)["PolicyDocument"])...)
		}
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if inline, ok := props(r)["Policies"].([]any); ok {
			for _, p := range inline {
				out[name(symbol(id))] = append(out[name(symbol(id))], statements(p.(tmpl)["PolicyDocument"])...)
			}
		}
	}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		n := strings.TrimPrefix(text(props(p)["ManagedPolicyName"]), "toolgate-test-")
		out[n] = append(out[n], statements(props(p)["PolicyDocument"])...)
	}
	return out
}

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

// conditionValues returns the values a statement's condition allows for a
// multivalued DynamoDB key (under ForAllValues:StringLike or
// ForAllValues:StringEquals), and whether it restricts the key at all.
func conditionValues(s tmpl, key string) ([]string, bool) {
	c, _ := s["Condition"].(tmpl)
	for _, op := range []string{"ForAllValues:StringLike", "ForAllValues:StringEquals"} {
		if block, ok := c[op].(tmpl); ok {
			if v, ok := block[key]; ok {
				return strs(v), true
			}
		}
	}
	return nil, false
}

// allowsAction: statement s (an Allow) allows action a in any form (IAM's
// wildcards and letter case, NotAction).
func allowsAction(s tmpl, a string) bool {
	match := func(p string) bool { return wildcardMatch(p, a, true) }
	if na, ok := s["NotAction"]; ok {
		return !slices.ContainsFunc(strs(na), match)
	}
	return slices.ContainsFunc(strs(s["Action"]), match)
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

// policyStatementsOf returns the statements (as the template holds them,
// for test-only mutations) of the role of the function with logical ID fn.
func policyStatementsOf(pj tmpl, fn string) []tmpl {
	role := symbol(roleOf(pj, fn))
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		if text(props(p)["Roles"]) == `["${`+role+`}"]` {
			return statements(props(p)["PolicyDocument"])
		}
	}
	panic("no policy for " + fn)
}

// ddbRequest is one DynamoDB request as IAM authorises it: the action, the
// resource, and the values of DynamoDB's condition keys.
type ddbRequest struct {
	What        string // the code that made it
	Action      string
	Resource    string   // the table's or an index's ARN, as the template renders it
	LeadingKeys []string // the partition key value
	Attributes  []string // every top-level attribute the request names
	// Whole: a read without a projection (no ProjectionExpression, no
	// AttributesToGet), which returns every attribute of the item.
	// dynamodb:Attributes "represents a list of the attribute names in a
	// request, or the attributes that are returned from a request"
	// (DynamoDB Developer Guide, "Using IAM policy conditions for
	// fine-grained access control"): so a statement that lists attributes
	// allows no whole read, whatever the item holds.
	Whole bool
	// ReturnValues of a write (NONE when it sends none); "" for a read.
	ReturnValues string
	Select       string // a Query's, when it sends one
}

func (r ddbRequest) String() string {
	whole := ""
	if r.Whole {
		whole = " (whole item)"
	}
	return fmt.Sprintf("%s: %s on %s %v naming %v%s (ReturnValues %q, Select %q)", r.What, r.Action,
		strings.TrimPrefix(r.Resource, tableARN), r.LeadingKeys, r.Attributes, whole, r.ReturnValues, r.Select)
}

// recorder is a DynamoDB client that records each request as IAM sees it
// and answers as little as the code needs; fail makes the next requests
// fail with a conditional check failure, for the code's paths after one.
type recorder struct {
	what string
	reqs []ddbRequest
	fail int
	item map[string]types.AttributeValue // what reads and ALL_NEW answer
}

func (r *recorder) record(q ddbRequest) error {
	q.What = r.what
	slices.Sort(q.Attributes)
	q.Attributes = slices.Compact(q.Attributes)
	r.reqs = append(r.reqs, q)
	if r.fail > 0 {
		r.fail--
		return &types.ConditionalCheckFailedException{Message: new(string)}
	}
	return nil
}

func (r *recorder) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	names := keyNames(in.Key)
	names = append(names, in.AttributesToGet...)
	names = append(names, expressionAttributes(in.ProjectionExpression, in.ExpressionAttributeNames)...)
	whole := in.ProjectionExpression == nil && len(in.AttributesToGet) == 0
	err := r.record(ddbRequest{Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: leadingKey(in.Key), Attributes: names, Whole: whole})
	return &dynamodb.GetItemOutput{Item: r.item}, err
}

func (r *recorder) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	names := slices.Collect(maps.Keys(in.Item))
	names = append(names, expressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames)...)
	err := r.record(ddbRequest{Action: "dynamodb:PutItem", Resource: tableARN, LeadingKeys: leadingKey(in.Item),
		Attributes: names, ReturnValues: returnValues(string(in.ReturnValues))})
	return &dynamodb.PutItemOutput{}, err
}

func (r *recorder) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	names := keyNames(in.Key)
	names = append(names, expressionAttributes(in.UpdateExpression, in.ExpressionAttributeNames)...)
	names = append(names, expressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames)...)
	err := r.record(ddbRequest{Action: "dynamodb:UpdateItem", Resource: tableARN, LeadingKeys: leadingKey(in.Key),
		Attributes: names, ReturnValues: returnValues(string(in.ReturnValues))})
	return &dynamodb.UpdateItemOutput{Attributes: r.item}, err
}

func (r *recorder) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	resource := tableARN
	if in.IndexName != nil {
		resource = tableARN + "/index/" + *in.IndexName
	}
	var names []string
	for _, e := range []*string{in.KeyConditionExpression, in.FilterExpression, in.ProjectionExpression} {
		names = append(names, expressionAttributes(e, in.ExpressionAttributeNames)...)
	}
	var keys []string
	if v, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS); ok {
		keys = []string{v.Value}
	}
	err := r.record(ddbRequest{Action: "dynamodb:Query", Resource: resource, LeadingKeys: keys, Attributes: names, Select: string(in.Select)})
	return &dynamodb.QueryOutput{}, err
}

func keyNames(key map[string]types.AttributeValue) []string { return slices.Collect(maps.Keys(key)) }

func leadingKey(item map[string]types.AttributeValue) []string {
	if v, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		return []string{v.Value}
	}
	return nil
}

// returnValues is a write's ReturnValues as IAM sees it: NONE unless sent.
func returnValues(v string) string {
	if v == "" {
		return "NONE"
	}
	return v
}

// expressionAttributes returns the top-level attributes an expression
// names: each document path's first element (a #placeholder resolved by
// names), never a value (:v), a function or a keyword.
func expressionAttributes(expr *string, names map[string]string) []string {
	if expr == nil {
		return nil
	}
	e := *expr
	var out []string
	ident := func(c byte) bool {
		return c == '_' || c == '#' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(e); {
		if !ident(e[i]) {
			i++
			continue
		}
		j := i
		for j < len(e) && ident(e[j]) {
			j++
		}
		tok := e[i:j]
		prev := strings.TrimRight(e[:i], " ")
		next := strings.TrimLeft(e[j:], " ")
		i = j
		switch {
		case strings.HasPrefix(tok, ":"), strings.HasSuffix(prev, "."), strings.HasPrefix(next, "("):
			continue // a value, a nested element, a function
		case tok[0] >= '0' && tok[0] <= '9':
			continue // a list index
		case slices.Contains([]string{"SET", "REMOVE", "ADD", "DELETE", "AND", "OR", "NOT", "BETWEEN", "IN"}, strings.ToUpper(tok)):
			continue
		case strings.HasPrefix(tok, "#"):
			out = append(out, names[tok])
		default:
			out = append(out, tok)
		}
	}
	return out
}

func TestExpressionAttributes(t *testing.T) {
	names := map[string]string{"#0": "attempt_log", "#1": "0123abcd", "#status": "status"}
	for expr, want := range map[string]string{
		"SET #0.#1 = :0, bound_at = :at ADD invocations :one":                   "attempt_log bound_at invocations",
		"attribute_not_exists(bound_key) AND #status = :approved":               "bound_key status",
		"SET #status = if_not_exists(#status, :s) REMOVE error_code, list[2].x": "status status error_code list",
		"begins_with(sk, :p) AND size(body) > :n":                               "sk body",
	} {
		if got := strings.Join(expressionAttributes(&expr, names), " "); got != want {
			t.Errorf("expressionAttributes(%q) = %q, want %q", expr, got, want)
		}
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

// allowedBy returns the statements of stmts that allow request r: an
// Allow whose actions and resources match it and whose every condition
// holds, as IAM evaluates DynamoDB's condition keys (a ForAllValues
// operator holds for a key the request does not carry; a plain operator
// does not, unless IfExists). No statement here uses Deny.
func allowedBy(stmts []tmpl, r ddbRequest) []tmpl {
	var out []tmpl
	for _, s := range stmts {
		if s["Effect"] != "Allow" || !allowsAction(s, r.Action) {
			continue
		}
		if _, ok := s["NotResource"]; ok || !slices.ContainsFunc(strs(s["Resource"]), func(p string) bool { return wildcardMatch(p, r.Resource, false) }) {
			continue
		}
		if conditionsHold(s, r) {
			out = append(out, s)
		}
	}
	return out
}

func conditionsHold(s tmpl, r ddbRequest) bool {
	context := map[string][]string{"dynamodb:LeadingKeys": r.LeadingKeys, "dynamodb:Attributes": r.Attributes}
	if r.ReturnValues != "" {
		context["dynamodb:ReturnValues"] = []string{r.ReturnValues}
	}
	if r.Select != "" {
		context["dynamodb:Select"] = []string{r.Select}
	}
	return conditionsHoldFor(s, context, r.Whole)
}

// conditionsHoldFor evaluates statement s's conditions on the request
// context (condition key: values). whole marks a read of every attribute
// (ddbRequest.Whole): a list of dynamodb:Attributes holds for it only when
// a pattern is "*". Bool and ArnLike compare as StringEquals and
// StringLike do.
func conditionsHoldFor(s tmpl, context map[string][]string, whole bool) bool {
	c, _ := s["Condition"].(tmpl)
	for op, block := range c {
		for key, want := range block.(tmpl) {
			patterns := strs(want)
			got, present := context[key]
			present = present && len(got) > 0
			base := strings.TrimSuffix(op, "IfExists")
			like := strings.HasSuffix(base, "Like")
			match := func(v string) bool {
				return slices.ContainsFunc(patterns, func(p string) bool { return like && wildcardMatch(p, v, false) || p == v })
			}
			var holds bool
			switch op {
			case "ForAllValues:StringLike", "ForAllValues:StringEquals":
				holds = !slices.ContainsFunc(got, func(v string) bool { return !match(v) })
				if key == "dynamodb:Attributes" && whole {
					holds = holds && slices.Contains(patterns, "*")
				}
			case "StringEquals", "StringLike", "Bool", "ArnLike", "ArnEquals":
				holds = present && len(got) == 1 && match(got[0])
			case "StringEqualsIfExists", "StringLikeIfExists", "BoolIfExists", "ArnLikeIfExists":
				holds = !present || len(got) == 1 && match(got[0])
			case "Null":
				// "true": the key is absent; "false": it is present.
				holds = len(patterns) == 1 && patterns[0] == strconv.FormatBool(!present)
			default:
				holds = false // an operator this evaluator does not know allows nothing here
			}
			if !holds {
				return false
			}
		}
	}
	return true
}

// TestIndexLeadingKeys: the index Query statements (review-decision's
// ListReviews, the Operator's LedgerIndexReads) name the index's partition
// key prefix in dynamodb:LeadingKeys only with toolgate:indexLeadingKeys.
// Off (the test configuration), they have none; on, they have it and keep
// their dynamodb:Attributes, every other ledger statement is the same,
// dynamo.Store.List's Query is still allowed, and an index Query of
// another partition key is denied.
func TestIndexLeadingKeys(t *testing.T) {
	cfg := testConfig()
	cfg.IndexLeadingKeys = true
	var on tmpl
	if err := try(func() {
		_, platform := newApp(awscdk.NewApp(nil), cfg, filepath.Join("testdata", "assets"))
		on = *assertions.Template_FromStack(platform.Stack, nil).ToJSON()
	}); err != nil {
		t.Fatal(err)
	}
	var list ddbRequest
	for _, r := range codeRequests(t)[fnReviewDecision] {
		if r.What == "dynamo.Store.List" {
			list = r
		}
	}
	other := list
	other.LeadingKeys = []string{table.Review.Key(testReview)}
	ledgerOnly := func(all map[string][]tmpl, index bool) map[string]string {
		out := map[string]string{}
		for p, stmts := range all {
			for _, s := range stmts {
				onIndex := slices.ContainsFunc(strs(s["Resource"]), func(r string) bool { return strings.HasPrefix(r, tableARN+"/index/") })
				if slices.ContainsFunc(strs(s["Resource"]), mayBeTable) && onIndex == index {
					out[p+" "+text(s["Sid"])] = text(s)
				}
			}
		}
		return out
	}
	if d := cmp.Diff(ledgerOnly(principalStatements(platformJSON), false), ledgerOnly(principalStatements(on), false)); d != "" {
		t.Errorf("the flag changes statements on the table (-off +on):\n%s", d)
	}
	for _, c := range []struct {
		name string
		pj   tmpl
		keys []string
	}{{"off", platformJSON, nil}, {"on", on, []string{table.ReviewsByStatus.PKPrefix + "*"}}} {
		all := principalStatements(c.pj)
		var sids []string
		for p, stmts := range all {
			for _, s := range stmts {
				if !slices.Contains(strs(s["Resource"]), reviewIndexARN) {
					continue
				}
				sids = append(sids, p+" "+text(s["Sid"]))
				if keys, _ := conditionValues(s, "dynamodb:LeadingKeys"); !slices.Equal(keys, c.keys) {
					t.Errorf("%s: %s %s: dynamodb:LeadingKeys %v, want %v", c.name, p, text(s["Sid"]), keys, c.keys)
				}
				if attrs, _ := conditionValues(s, "dynamodb:Attributes"); s["Sid"] == "ListReviews" && !slices.Equal(attrs, sorted(table.ReviewsByStatus.Attributes()...)) {
					t.Errorf("%s: ListReviews: dynamodb:Attributes %v, want the index's", c.name, attrs)
				}
			}
		}
		slices.Sort(sids)
		if want := []string{"operator LedgerIndexReads", fnReviewDecision + " ListReviews"}; !slices.Equal(sids, want) {
			t.Errorf("%s: index statements %v, want %v", c.name, sids, want)
		}
		if len(allowedBy(all[fnReviewDecision], list)) == 0 {
			t.Errorf("%s: denied: %s", c.name, list)
		}
		if got := len(allowedBy(all[fnReviewDecision], other)) > 0; got != (c.keys == nil) {
			t.Errorf("%s: %s allowed: %v", c.name, other, got)
		}
	}
}
