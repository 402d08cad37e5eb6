package platform

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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	instore "github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	ledgertable "github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/observed"
	shapedynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
	whstore "github.com/toolgate/toolgate/shared/webhook/store"
)

// Per-item least privilege (docs/infra.md, "Least privilege"), held to the
// table's declaration (shared/table). dynalite does not evaluate IAM, so
// these are template assertions, with iam_test.go's evaluator of
// DynamoDB's condition keys: every ledger statement is one declared access
// of its principal and no wider (checkLedgerAccesses, the ledger-accesses
// rule; TestLedgerAccessBreaks); every request the functions' code makes,
// recorded from the code itself, is allowed by the function's role, and
// every access of its principal allows one (TestCodeRequestsAllowed);
// requests no code makes and no access may ever allow are refused
// (TestForgedRequestsDenied).

// ledgerReadActions and ledgerWriteActions (infra_test.go) are every
// DynamoDB action that reaches items.
var ledgerReadActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan",
	"dynamodb:PartiQLSelect"}

// principalOf is the declaration's principal of a principal of the
// template (principalStatements' names): every tool function is
// table.ToolFunctions, another function or a managed policy the principal
// of its name, "" when the declaration names none. It reads the functions'
// kind, not functionSpec.Principal, so that a function given another's
// accesses fails the replay of its code.
func principalOf(name string) table.Principal {
	if specOf(name).Tool {
		return table.ToolFunctions
	}
	for _, a := range table.Accesses {
		if i := slices.Index(a.By, table.Principal(name)); i >= 0 {
			return a.By[i]
		}
	}
	return ""
}

// accessesOf are the accesses function name's role is given: its
// principal's, table.ParkingToolFunctions's when its calls can park, and
// table.LearningToolFunctions's when it learns result shapes.
func accessesOf(name string) []table.Access {
	out := table.Of(principalOf(name))
	if specOf(name).Parks {
		out = append(out, table.Of(table.ParkingToolFunctions)...)
	}
	if specOf(name).Learns {
		out = append(out, table.Of(table.LearningToolFunctions)...)
	}
	return out
}

// conditionValue returns the values of key under operator op of
// statement s's condition (nil when it has none).
func conditionValue(s tmpl, op, key string) []string {
	c, _ := s["Condition"].(tmpl)
	block, _ := c[op].(tmpl)
	return strs(block[key])
}

// checkLedgerAccesses: every statement that allows an item action
// (ledgerReadActions, ledgerWriteActions, in any form) on the ledger table
// or an index is the access of its principal's declaration (table.Of) whose
// Sid it has, and no wider: on the access's resource only (the table, or
// its index), with the access's actions only; on the table with
// dynamodb:LeadingKeys, of the access's "<prefix>*" patterns only (on an
// index, "<PKPrefix>*" only, if any); with dynamodb:Attributes of the
// access's only, when it names attributes; requiring the access's
// ReturnValues and Select. Every access of a principal has one statement.
func checkLedgerAccesses(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	all := principalStatements(pj)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		declared := accessesOf(p)
		count := map[string]int{}
		for _, s := range all[p] {
			res := strs(s["Resource"])
			_, notResource := s["NotResource"]
			onTable := notResource || slices.ContainsFunc(res, mayBeTable)
			onIndex := slices.ContainsFunc(res, func(r string) bool { return strings.HasPrefix(r, tableARN+"/index/") })
			allowed := slices.DeleteFunc(slices.Concat(ledgerReadActions, ledgerWriteActions), func(a string) bool { return !allowsAction(s, a) })
			if s["Effect"] != "Allow" || len(allowed) == 0 || !onTable && !onIndex {
				continue
			}
			sid, _ := s["Sid"].(string)
			if sid == "" {
				sid = "without Sid"
			}
			keys, keyed := conditionValues(s, "dynamodb:LeadingKeys")
			if onTable && !keyed {
				fail("%s: statement %s allows %s on every item of the ledger table: name the key prefixes its code uses (dynamodb:LeadingKeys)",
					p, sid, strings.Join(allowed, ", "))
			}
			i := slices.IndexFunc(declared, func(a table.Access) bool { return a.Sid == sid })
			if i < 0 {
				fail("%s: statement %s allows %s on the ledger table, which no access of %q declares (shared/table)",
					p, sid, strings.Join(allowed, ", "), principalOf(p))
				continue
			}
			a := declared[i]
			count[a.Sid]++
			resource, patterns := tableARN, []string{}
			for _, prefix := range a.Prefixes() {
				patterns = append(patterns, prefix+"*")
			}
			if a.Index != nil {
				resource, patterns = tableARN+"/index/"+a.Index.Name, []string{a.Index.PKPrefix + "*"}
			}
			if notResource || len(res) != 1 || res[0] != resource {
				fail("%s: statement %s is on %v, access %s on %s only", p, sid, res, a.Sid, resource)
			}
			for _, x := range allowed {
				if !slices.Contains(a.Actions, table.Action(x)) {
					fail("%s: statement %s allows %s, which access %s does not declare", p, sid, x, a.Sid)
				}
			}
			for _, k := range keys {
				if !slices.Contains(patterns, k) {
					fail("%s: statement %s: dynamodb:LeadingKeys %s reaches items access %s does not (%s)", p, sid, k, a.Sid, strings.Join(patterns, ", "))
				}
			}
			if attrs, named := conditionValues(s, "dynamodb:Attributes"); a.Attributes != nil && !named {
				fail("%s: statement %s names no dynamodb:Attributes: access %s names %s", p, sid, a.Sid, strings.Join(a.Attributes, ", "))
			} else if a.Attributes != nil {
				for _, n := range attrs {
					if !slices.Contains(a.Attributes, n) {
						fail("%s: statement %s allows attribute %s, which access %s does not name", p, sid, n, a.Sid)
					}
				}
			}
			if v := conditionValue(s, "StringEquals", "dynamodb:ReturnValues"); a.ReturnValues != "" && !slices.Equal(v, []string{a.ReturnValues}) {
				fail("%s: statement %s does not require dynamodb:ReturnValues %s (access %s)", p, sid, a.ReturnValues, a.Sid)
			}
			if v := conditionValue(s, "StringEqualsIfExists", "dynamodb:Select"); a.SpecificAttributes && !slices.Equal(v, []string{"SPECIFIC_ATTRIBUTES"}) {
				fail("%s: statement %s does not require dynamodb:Select SPECIFIC_ATTRIBUTES (access %s)", p, sid, a.Sid)
			}
		}
		for _, a := range declared {
			if count[a.Sid] != 1 {
				fail("%s: access %s has %d statements, want 1", p, a.Sid, count[a.Sid])
			}
		}
	}
	return errors.Join(errs...)
}

// TestLedgerAccessBreaks widens the ledger statements in more ways than
// TestRulesCatchBreakage's one, and expects checkLedgerAccesses to name
// each.
func TestLedgerAccessBreaks(t *testing.T) {
	// stmt is principal p's statement sid in pj (principalStatements
	// shares pj's maps), like a statement's ForAllValues:StringLike block.
	stmt := func(pj tmpl, p, sid string) tmpl {
		for _, s := range principalStatements(pj)[p] {
			if s["Sid"] == sid {
				return s
			}
		}
		panic("no statement " + sid + " for " + p)
	}
	like := func(s tmpl) tmpl { return s["Condition"].(tmpl)["ForAllValues:StringLike"].(tmpl) }
	addAttr := func(s tmpl, n string) {
		like(s)["dynamodb:Attributes"] = append(like(s)["dynamodb:Attributes"].([]any), n)
	}
	for _, c := range []struct {
		name string
		brk  func(pj tmpl)
		says string
	}{
		{"a table-wide write", func(pj tmpl) {
			addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
		}, "structured-data-fetch: statement without Sid allows dynamodb:PutItem on every item of the ledger table"},
		{"a tool writes a review", func(pj tmpl) {
			like(stmt(pj, fnSendEmail, "BindApprovals"))["dynamodb:LeadingKeys"] = []any{"BIND#*", "REVIEW#*"}
		}, "send-email: statement BindApprovals: dynamodb:LeadingKeys REVIEW#* reaches items access BindApprovals does not"},
		{"a tool's binding names no attributes", func(pj tmpl) { delete(like(stmt(pj, fnValidator, "BindApprovals")), "dynamodb:Attributes") },
			"workflow-validator: statement BindApprovals names no dynamodb:Attributes"},
		{"a tool binds and writes more", func(pj tmpl) { addAttr(stmt(pj, fnSendEmail, "BindApprovals"), "status") },
			"send-email: statement BindApprovals allows attribute status"},
		{"a tool reads a review's inputs", func(pj tmpl) { addAttr(stmt(pj, fnMCPCall, "ReadApprovals"), "input") },
			"mcp-call: statement ReadApprovals allows attribute input"},
		{"a tool reads reviews as ALL_ATTRIBUTES", func(pj tmpl) {
			delete(stmt(pj, fnLambdaTool, "ReadApprovals")["Condition"].(tmpl), "StringEqualsIfExists")
		}, "lambda-tool: statement ReadApprovals does not require dynamodb:Select SPECIFIC_ATTRIBUTES"},
		{"a tool creates reviews", func(pj tmpl) {
			addStatement(pj, "StructuredDataFetchFunction", clone(stmt(pj, fnReviewRequest, "CreateReviews")))
		}, `structured-data-fetch: statement CreateReviews allows dynamodb:PutItem on the ledger table, which no access of "tool functions" declares`},
		{"a tool has two Calls statements", func(pj tmpl) {
			addStatement(pj, "SendEmailFunction", clone(stmt(pj, fnSendEmail, "Calls")))
		}, "send-email: access Calls has 2 statements, want 1"},
		{"review-request updates reviews", func(pj tmpl) {
			stmt(pj, fnReviewRequest, "CreateReviews")["Action"] = []any{"dynamodb:PutItem", "dynamodb:UpdateItem"}
		}, "review-request: statement CreateReviews allows dynamodb:UpdateItem, which access CreateReviews does not declare"},
		{"review-request registers toolsets", func(pj tmpl) {
			stmt(pj, fnReviewRequest, "Toolsets")["Action"] = []any{"dynamodb:GetItem", "dynamodb:Put*"}
		}, "review-request: statement Toolsets allows dynamodb:PutItem, which access Toolsets does not declare"},
		{"review-request writes calls", func(pj tmpl) {
			like(stmt(pj, fnReviewRequest, "RecordStarts"))["dynamodb:LeadingKeys"] = []any{"START#*", "RUN#*"}
		}, "review-request: statement RecordStarts: dynamodb:LeadingKeys RUN#* reaches items"},
		{"review-decision binds", func(pj tmpl) { addAttr(stmt(pj, fnReviewDecision, "DecideReviews"), "bound_key") },
			"review-decision: statement DecideReviews allows attribute bound_key"},
		{"review-decision changes the inputs", func(pj tmpl) { addAttr(stmt(pj, fnReviewDecision, "DecideReviews"), "input_*") },
			"review-decision: statement DecideReviews allows attribute input_*"},
		{"review-decision reads back whole reviews", func(pj tmpl) { delete(stmt(pj, fnReviewDecision, "DecideReviews")["Condition"].(tmpl), "StringEquals") },
			"review-decision: statement DecideReviews does not require dynamodb:ReturnValues NONE"},
		{"review-decision lists on the table", func(pj tmpl) { stmt(pj, fnReviewDecision, "ListReviews")["Resource"] = tableARNValue() },
			"review-decision: statement ListReviews is on [" + tableARN + "], access ListReviews on " + reviewIndexARN + " only"},
		{"a wildcard prefix", func(pj tmpl) {
			like(stmt(pj, fnReviewDecision, "RecordCallerProofs"))["dynamodb:LeadingKeys"] = []any{"*"}
		}, "review-decision: statement RecordCallerProofs: dynamodb:LeadingKeys * reaches items"},
		{"the publish function writes more of a toolset", func(pj tmpl) { addAttr(stmt(pj, fnPublish, "RegisterToolsets"), "registered_by") },
			"publish: statement RegisterToolsets allows attribute registered_by"},
		{"the Operator reads reviews", func(pj tmpl) {
			like(stmt(pj, "operator", "LedgerReads"))["dynamodb:LeadingKeys"] = []any{"RUN#*", "REVIEW#*"}
		}, "operator: statement LedgerReads: dynamodb:LeadingKeys REVIEW#* reaches items"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.brk(pj)
			if err := checkLedgerAccesses(nil, nil, nil, pj); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", c.says, err)
			}
		})
	}
}

// TestCodeRequestsAllowed: every request the functions' code makes is
// allowed by the function's role in the synthesized template, whose ledger
// statements are its principal's accesses (checkLedgerAccesses), and every
// access of the principal allows one of them (none is unused).
func TestCodeRequestsAllowed(t *testing.T) {
	all := principalStatements(platformJSON)
	for fn, reqs := range codeRequests(t) {
		t.Run(fn, func(t *testing.T) {
			used := map[string]bool{}
			for _, r := range reqs {
				by := allowedBy(all[fn], r)
				if len(by) == 0 {
					t.Errorf("denied: %s", r)
				}
				for _, s := range by {
					used[text(s["Sid"])] = true
				}
			}
			for _, a := range accessesOf(fn) {
				if !used[a.Sid] {
					t.Errorf("access %s allows no request the code makes", a.Sid)
				}
			}
		})
	}
}

// Forged requests, on the table: an item write with ReturnValues NONE
// naming attrs (the key attributes with them), a GetItem with a
// projection of them, a Query.
func forgedPut(what, key string, attrs ...string) ddbRequest {
	return ddbRequest{What: what, Action: "dynamodb:PutItem", Resource: tableARN, LeadingKeys: []string{key}, Attributes: append(attrs, "pk", "sk"), ReturnValues: "NONE"}
}

func forgedUpdate(what, key string, attrs ...string) ddbRequest {
	r := forgedPut(what, key, attrs...)
	r.Action = "dynamodb:UpdateItem"
	return r
}

func forgedGet(what, key string, attrs ...string) ddbRequest {
	return ddbRequest{What: what, Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{key}, Attributes: append(attrs, "pk", "sk")}
}

// forged are requests no code makes, by principal, which the declaration
// must never allow: a tool creating, deciding, binding in, or reading
// whole, the inputs, task token or requester of, a review; review-request
// deciding or binding; review-decision binding or changing what was
// asked; the publish function changing a toolset or touching calls,
// reviews or starts; items of another prefix, or of none.
var forged = map[table.Principal][]ddbRequest{
	table.ToolFunctions: {
		forgedPut("create a review", "REVIEW#rv_1", "status"),
		forgedUpdate("approve a review", "REVIEW#rv_1", "approver", "status"),
		forgedUpdate("mark a review APPROVED", "REVIEW#rv_1", "bound_key", "status"),
		forgedUpdate("move a review's deadline", "REVIEW#rv_1", "deadline", "expires_at"),
		forgedUpdate("change what was approved", "REVIEW#rv_1", "input_digest"),
		{What: "bind, reading the whole review back", Action: "dynamodb:UpdateItem", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"},
			Attributes: []string{"bound_at", "bound_key", "pk", "sk"}, ReturnValues: "ALL_NEW"},
		{What: "read a review whole", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedGet("read a review's inputs and task token", "REVIEW#rv_1", "input", "task_token"),
		forgedGet("read a review's requester", "REVIEW#rv_1", "requester"),
		{What: "read a review as ALL_ATTRIBUTES", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"},
			Attributes: []string{"pk", "sk", "status"}, Select: "ALL_ATTRIBUTES"},
		forgedPut("register a toolset", "TOOLSET#ts_1", "body"),
		forgedGet("read a toolset item whole", "TOOLSET#ts_1", "registered_at"),
		forgedPut("record a starter", "START#arn", "starter"),
		forgedGet("read a starter", "START#arn"),
		forgedUpdate("change a proof record", "PROOF#00", "arn"),
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
		{What: "query reviews", Action: "dynamodb:Query", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk"}},
		forgedPut("write an item of no prefix", "X"),
		forgedUpdate("mark a webhook event sent", "WHEVT#"+testEvent, "unsent", "sent_at"),
		forgedPut("record a webhook event as sent", "WHEVT#"+testEvent, "type", "data", "sent_at"),
		forgedGet("read a webhook event", "WHEVT#"+testEvent, "data"),
		// Another producer's event (a review.requested, a run.succeeded),
		// with only the attributes a call's event has.
		forgedPut("record another producer's webhook event", "WHEVT#"+testEvent, "type", "solution", "data", "produced_at", "unsent", "expires_at"),
		forgedUpdate("mark a call's webhook event sent", "WHCALL#"+testEvent, "unsent", "sent_at"),
		forgedGet("read webhook subscriptions' secrets", "WEBHOOK#SUBSCRIPTIONS", "secrets"),
		forgedPut("subscribe a webhook", "WEBHOOK#SUBSCRIPTIONS", "url", "secrets"),
		forgedPut("record a webhook attempt", "WHEVT#"+testEvent, "status_code", "outcome"),
		// The inbound items: an event planted or moved on, its body read,
		// a source or schedule added or read (its secrets).
		forgedPut("plant an inbound event", testInboundEvent, "status", "body", "body_sha256", "received_at", "unqueued", "expires_at"),
		forgedUpdate("mark an inbound event STARTED", testInboundEvent, "status", "execution_arn", "started_at"),
		forgedUpdate("mark an inbound event QUEUED", testInboundEvent, "status", "queued_at", "unqueued"),
		forgedGet("read an inbound event's body", testInboundEvent, "body"),
		forgedPut("add an inbound source", testInboundSources, "scheme", "solution", "secrets", "added_by"),
		forgedGet("read inbound sources' secrets", testInboundSources, "secrets"),
		forgedPut("add a schedule", testSchedules, "solution", "expression", "input", "state"),
		forgedUpdate("resume a schedule", testSchedules, "state", "version"),
	},
	table.WebhookReceiver: {
		forgedUpdate("mark an inbound event STARTED", testInboundEvent, "status", "execution_arn", "started_at"),
		forgedUpdate("mark an inbound event FAILED", testInboundEvent, "status", "problems", "failed_at"),
		forgedGet("read an inbound event's body", testInboundEvent, "body"),
		{What: "read an inbound event whole", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{testInboundEvent}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedGet("read a source's Solution and end user", testInboundSources, "solution", "end_user"),
		forgedUpdate("change a source's secrets", testInboundSources, "secrets", "version"),
		forgedPut("add an inbound source", testInboundSources, "scheme", "solution", "secrets"),
		forgedGet("read a schedule", testSchedules, "input"),
		forgedPut("record a starter", "START#arn", "starter"),
	},
	table.InboundStart: {
		forgedUpdate("change a source's Solution", testInboundSources, "solution"),
		forgedGet("read a source's secrets", testInboundSources, "secrets"),
		{What: "read a source whole", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{testInboundSources}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedUpdate("change a schedule's input", testSchedules, "input"),
		forgedUpdate("change a received event's type", testInboundEvent, "event_type"),
		forgedUpdate("change a received event's digest", testInboundEvent, "body_sha256"),
		forgedPut("record a starter", "START#arn", "starter"),
		forgedPut("create a review", "REVIEW#rv_1", "status"),
	},
	table.Sources: {
		forgedPut("plant an inbound event", testInboundEvent, "status", "body", "unqueued"),
		forgedUpdate("mark an inbound event STARTED", testInboundEvent, "status", "execution_arn"),
		forgedGet("read an inbound event's body", testInboundEvent, "body"),
		forgedPut("record a starter", "START#arn", "starter"),
	},
	table.ReviewRequest: {
		forgedUpdate("approve a review", "REVIEW#rv_1", "status"),
		forgedPut("create a decided review", "REVIEW#rv_1", "approver", "status"),
		forgedPut("create a bound review", "REVIEW#rv_1", "bound_key", "status"),
		forgedGet("read a call", "RUN#arn"),
		forgedUpdate("write a call", "RUN#arn", "state"),
		forgedUpdate("change a starter", "START#arn", "starter"),
		forgedPut("record a starter with more", "START#arn", "starter", "requester"),
		forgedPut("register a toolset", "TOOLSET#ts_1", "body"),
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
		forgedUpdate("change a recorded webhook event", "WHEVT#"+testEvent, "data"),
		forgedGet("read webhook subscriptions' secrets", "WEBHOOK#SUBSCRIPTIONS", "secrets"),
		forgedUpdate("disable a webhook subscription", "WEBHOOK#SUBSCRIPTIONS", "status"),
	},
	table.ReviewDecision: {
		forgedUpdate("bind an approval", "REVIEW#rv_1", "bound_key"),
		forgedUpdate("change what was asked", "REVIEW#rv_1", "input", "input_digest"),
		forgedUpdate("change the requester", "REVIEW#rv_1", "requester"),
		{What: "decide, reading the whole review back", Action: "dynamodb:UpdateItem", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"},
			Attributes: []string{"approver", "pk", "sk", "status"}, ReturnValues: "ALL_NEW"},
		forgedPut("create a review", "REVIEW#rv_1", "status"),
		forgedPut("write a binding", "BIND#rv_1", "bound_key"),
		// A park's PARKED row's review_id and its run's starter only; of
		// a call it reconciles, its state and approvers, never its result
		// (docs/fork.md, "Reconciling").
		forgedGet("read a call's result", "RUN#arn", "c", "r"),
		forgedGet("read a call's named result", "RUN#arn", "state", "result"),
		forgedGet("read a row's digests", "RUN#arn", "input_digest"),
		// A toolset's body only (an approval's edits pass its pinned
		// input schema), never the item whole.
		forgedGet("read a toolset item whole", "TOOLSET#ts_1", "registered_at"),
		forgedGet("read a starter's end user", "START#arn", "end_user"),
		forgedGet("read a start record whole", "START#arn", "starter", "input_digest"),
		{What: "list with the task tokens", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk", "task_token"}},
		{What: "query the table", Action: "dynamodb:Query", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk"}},
		forgedPut("register a toolset", "TOOLSET#ts_1", "body"),
	},
	table.Publish: {
		forgedUpdate("change a registered toolset", "TOOLSET#ts_1", "body"),
		forgedPut("register a toolset with more", "TOOLSET#ts_1", "body", "registered_by"),
		{What: "read a toolset item whole", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{"TOOLSET#ts_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedPut("write a call", "RUN#arn", "state"),
		{What: "read a call", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{"RUN#arn"}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedPut("create a review", "REVIEW#rv_1", "status"),
		{What: "read a review", Action: "dynamodb:GetItem", Resource: tableARN, LeadingKeys: []string{"REVIEW#rv_1"}, Attributes: []string{"pk", "sk"}, Whole: true},
		forgedPut("record a starter", "START#arn", "starter"),
		{What: "list reviews", Action: "dynamodb:Query", Resource: reviewIndexARN, Attributes: []string{"review_list_pk"}},
	},
}

// forgedAllowed returns the forged requests that pj's roles allow.
func forgedAllowed(pj tmpl) []string {
	all := principalStatements(pj)
	var out []string
	for _, spec := range functionSpecs {
		for _, r := range forged[principalOf(spec.Name)] {
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

// Values the code is run with.
const (
	testRunID   = "arn:aws:states:eu-west-1:123456789012:execution:toolgate-digest:run-1"
	testKey     = testRunID + "/2"
	testToolset = "ts_0123456789abcdef0123456789abcdef"
	testReview  = "rv_0123456789abcdef0123456789abcdef"
	testEvent   = "evt_abcdefghijklmnopqrstuvwxyz"
	testSub     = "sub_abcdefghijklmnopqrstuvwxyz"
)

// Inbound items' partition keys (shared/table: InboundEventPK,
// InboundSourcesPK, SchedulesPK).
var (
	testInboundEvent   = table.InboundEventPK(inboundapi.OriginSource, "billing", "evt_1")
	testInboundSources = table.InboundSourcesPK()
	testSchedules      = table.SchedulesPK()
)

// coverKey is the sealing key a tool function's store records covers
// with (ledger.Store.PutCover refuses a store without one).
func coverKey(t *testing.T) seal.Key {
	t.Helper()
	k, err := seal.NewKey([]byte(strings.Repeat("k", seal.MinKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// discardQueue is the events queue of a webhook Emitter under replay: it
// takes every message.
type discardQueue struct{}

func (discardQueue) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return &sqs.SendMessageOutput{}, nil
}

// codeRequests runs, for each function, the store methods its code calls
// (shared/dispatch: the ledger's call methods and park reads, ToolsetCache's loads,
// dynamo.Store GetApproval and Bind; request.Handler; decision.Service;
// the publish function's Service; every function's ledger.ProofTable),
// each path after a failed condition too, and returns the DynamoDB
// requests they made, by function name.
func codeRequests(t *testing.T) map[string][]ddbRequest {
	ctx, now, ignore := context.Background(), time.Now(), func(...any) {}
	// run records f's requests as what's, the first fail of them failing
	// their condition.
	run := func(what string, fail int, f func(db *recorder)) func(*recorder) {
		return func(db *recorder) {
			db.what, db.fail = what, fail
			f(db)
			db.fail = 0
		}
	}
	l := func(db *recorder) *ledgertable.Store { return ledgertable.New(db, "toolgate-test") }
	d := func(db *recorder) *dynamo.Store { return dynamo.NewStore(db, "toolgate-test") }
	rec := func() *ledgertable.Record {
		return &ledgertable.Record{Key: testKey, RunID: testRunID, Seq: "2", Step: "send", Tool: "send-email", ToolsetID: testToolset,
			InputDigest: "sha256:00", State: ledgertable.StateFailed, Attempts: 1, LeaseUntil: now}
	}
	row := &ledgertable.Row{RunID: testRunID, Seq: "2", Attempt: 1, Step: "send", Tool: "send-email", ToolsetID: testToolset,
		IdempotencyKey: testKey, Status: ledgertable.StatusRefused, StartedAt: now, EndedAt: now}
	rv := &review.Review{ID: testReview, TaskToken: "token", DeliveryLeaseUntil: now}
	user := "arn:aws:iam::123456789012:user/u"
	finish := func(db *recorder) {
		ignore(l(db).Finish(ctx, testKey, "tok", ledgertable.StateCompleted, json.RawMessage(`{}`), row))
	}
	toolset := run("ledger.Store.Toolset", 0, func(db *recorder) { ignore(l(db).Toolset(ctx, testToolset)) })
	// A tool function's dispatcher (shared/dispatch).
	dispatcher := []func(*recorder){
		run("ledger.Store.Claim", 0, func(db *recorder) {
			ignore(l(db).Claim(ctx, &ledgertable.Record{Key: testKey, ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2", Step: "send", Tool: "send-email", LeaseUntil: now}))
		}),
		run("ledger.Store.Record", 0, func(db *recorder) { ignore(l(db).Record(ctx, testKey)) }),
		run("ledger.Store.Reclaim (condition failed)", 1, func(db *recorder) { ignore(l(db).Reclaim(ctx, rec(), now)) }),
		run("ledger.Store.MarkUnknown", 0, func(db *recorder) { ignore(l(db).MarkUnknown(ctx, rec(), "TOOL_RETRY_REQUIRES_IDEMPOTENCY")) }),
		run("ledger.Store.Finish", 0, finish),
		run("ledger.Store.Finish (failed)", 0, func(db *recorder) { ignore(l(db).Finish(ctx, testKey, "tok", ledgertable.StateFailed, nil, row)) }),
		run("ledger.Store.Finish (condition failed)", 1, finish),
		run("ledger.Store.Release", 0, func(db *recorder) { ignore(l(db).Release(ctx, testKey, "tok", "TOOL_TIMEOUT", row)) }),
		run("ledger.Store.Touch", 0, func(db *recorder) { ignore(l(db).Touch(ctx, testKey)) }),
		run("ledger.Store.PutRow", 0, func(db *recorder) { ignore(l(db).PutRow(ctx, row)) }),
		run("ledger.Store.PutKeyPointer", 0, func(db *recorder) { ignore(l(db).PutKeyPointer(ctx, "AAAAAAAAAAAAAAAAAAAAAA", testRunID)) }),
		run("ledger.Store.PutKeyPointer (condition failed)", 1, func(db *recorder) {
			ignore(l(db).PutKeyPointer(ctx, "AAAAAAAAAAAAAAAAAAAAAA", testRunID))
		}),
		// A fork's call: its parent's candidate calls and its claim on one.
		run("ledger.Store.ParentCalls", 0, func(db *recorder) {
			ignore(l(db).ParentCalls(ctx, testRunID, "send", "sha256:"+strings.Repeat("00", 32)))
		}),
		run("ledger.Store.ClaimReuse", 0, func(db *recorder) { ignore(l(db).WithMAC(coverKey(t)).ClaimReuse(ctx, testRunID+"-fork/2", "2")) }),
		// Held by another key: the claim is read, its seal checked.
		run("ledger.Store.ClaimReuse (condition failed)", 1, func(db *recorder) {
			ignore(l(db).WithMAC(coverKey(t)).ClaimReuse(ctx, testRunID+"-fork/2", "2"))
		}),
		toolset,
		// A record whose outcome is unknown: its reconciliation, and the
		// finish by it (docs/fork.md, "Reconciling").
		run("ledger.Store.Reconciliation", 0, func(db *recorder) { ignore(l(db).Reconciliation(ctx, testKey)) }),
		run("ledger.Store.FinishReconciled", 0, func(db *recorder) {
			old := rec()
			old.State, old.Layout = ledgertable.StateUnknown, ledgertable.LayoutCompact
			ignore(l(db).FinishReconciled(ctx, old, &ledgertable.Reconciliation{Key: testKey, Outcome: ledgertable.NotApplied, Attempts: 1}))
			ignore(l(db).FinishReconciled(ctx, old, &ledgertable.Reconciliation{Key: testKey, Outcome: ledgertable.Applied, Result: json.RawMessage(`{}`), Attempts: 1}))
		}),
		run("dynamo.Store.GetApproval", 0, func(db *recorder) { ignore(d(db).GetApproval(ctx, testReview)) }),
		run("dynamo.Store.Bind", 0, func(db *recorder) { ignore(d(db).Bind(ctx, rv, testKey)) }),
		run("dynamo.Store.Bind (condition failed)", 1, func(db *recorder) { ignore(d(db).Bind(ctx, rv, testKey)) }),
	}
	// Parks (shared/park/dynamo): review-request records them from a
	// call's PARKED rows, review-decision reads, decides and lists them.
	// A dispatcher reads its park through ledger.Store.Park.
	pk := func(db *recorder) *parkdynamo.Store { return parkdynamo.New(db, "toolgate-test", nil) }
	parked := &park.Park{ID: park.ID(table.Row.Key(testRunID), table.RowSK("0000000000000000002", 1, [4]byte{})), RunID: testRunID,
		Step: "send", Seq: "2", IdempotencyKey: testKey, Tool: "send-email", ToolsetID: testToolset, Cause: park.CredentialsExpired,
		Target: "tickets", Scope: "toolset", RowSK: table.RowSK("0000000000000000002", 1, [4]byte{}), TaskToken: "token"}
	expired := *parked // past its deadline: review-decision records it TIMED_OUT
	expired.Deadline = now.Add(-time.Minute).Truncate(time.Second)
	parkRecord := []func(*recorder){
		run("dynamo.Store.ParkedRows", 0, func(db *recorder) { ignore(pk(db).ParkedRows(ctx, testRunID, "0000000000000000002")) }),
		run("dynamo.Store.Record", 0, func(db *recorder) { ignore(pk(db).Record(ctx, parked, 60)) }),
		run("dynamo.Store.Record (condition failed)", 1, func(db *recorder) {
			// The park as stored, PARKED under an older Task's token.
			db.item = map[string]types.AttributeValue{
				table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(parked.ID)}, table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue},
				"status": &types.AttributeValueMemberS{Value: "PARKED"}, "task_token": &types.AttributeValueMemberS{Value: "older"},
			}
			ignore(pk(db).Record(ctx, parked, 60))
			db.item = nil
		}),
	}
	parkDecide := []func(*recorder){
		run("dynamo.Store.Get (park)", 0, func(db *recorder) { ignore(pk(db).Get(ctx, parked.ID)) }),
		run("dynamo.Store.Decide", 0, func(db *recorder) { ignore(pk(db).Decide(ctx, parked.ID, park.StatusRejected, user, "no")) }),
		run("dynamo.Store.TimeOut", 0, func(db *recorder) { ignore(pk(db).TimeOut(ctx, &expired)) }),
		run("dynamo.Store.TimeOut (condition failed)", 1, func(db *recorder) { ignore(pk(db).TimeOut(ctx, &expired)) }),
		run("dynamo.Store.ListByStatus", 0, func(db *recorder) { ignore(pk(db).ListByStatus(ctx, park.StatusParked, nil)) }),
	}
	proof := func(db *recorder) {
		ignore(ledgertable.ProofTable{DB: db, Table: "toolgate-test"}.Record(ctx, caller.ProofRecord{ID: "00ff", Binding: "b", ARN: user, ExpiresAt: now}))
	}
	proofs := []func(*recorder){run("ledger.ProofTable.Record", 0, proof), run("ledger.ProofTable.Record (condition failed)", 1, proof)}
	get := run("dynamo.Store.Get", 0, func(db *recorder) { ignore(d(db).Get(ctx, testReview)) })
	request := []func(*recorder){
		toolset,
		run("dynamo.Store.Create", 0, func(db *recorder) {
			ignore(d(db).Create(ctx, &review.Review{ID: testReview, RunID: testRunID, Step: "review", Of: "send", Tool: "send-email",
				ToolsetID: testToolset, Reviewers: []string{"arn:aws:iam::123456789012:role/r"}, Input: json.RawMessage(`{}`),
				InputDigest: "sha256:00", TimeoutSeconds: 60, Requester: user, TaskToken: "token"}))
		}),
		// A review of an inbound or scheduled run names its origin's
		// holders (docs/identity.md, "Four eyes").
		run("dynamo.Store.Create (origin holders)", 0, func(db *recorder) {
			ignore(d(db).Create(ctx, &review.Review{ID: testReview, RunID: testRunID, Step: "review", Of: "send", Tool: "send-email",
				ToolsetID: testToolset, Input: json.RawMessage(`{}`), InputDigest: "sha256:00", TimeoutSeconds: 60, Requester: user, TaskToken: "token",
				OriginHolders: []string{user}}))
		}),
		run("dynamo.Store.Create (condition failed)", 1, func(db *recorder) {
			ignore(d(db).Create(ctx, &review.Review{ID: testReview, RunID: testRunID, TimeoutSeconds: 60}))
		}),
		get,
		run("dynamo.Store.RecordStart", 0, func(db *recorder) { ignore(d(db).RecordStart(ctx, testRunID, user)) }),
		run("dynamo.Store.Starter", 0, func(db *recorder) { ignore(d(db).Starter(ctx, testRunID)) }),
		run("dynamo.Store.StarterAndOrigin", 0, func(db *recorder) { ignore(d(db).StarterAndOrigin(ctx, testRunID)) }),
		run("dynamo.Store.RootOrigin", 0, func(db *recorder) { ignore(d(db).RootOrigin(ctx, testRunID)) }),
		run("dynamo.Store.RecordChildStart", 0, func(db *recorder) {
			ignore(d(db).RecordChildStart(ctx, testRunID+"-child", review.ChildRecord{Starter: user, ParentRunID: testRunID, InputDigest: "sha256:00"}))
		}),
		run("dynamo.Store.ChildStart", 0, func(db *recorder) { ignore(d(db).ChildStart(ctx, testRunID)) }),
		// A workflow step's child pointer, and a fork's child's reads of
		// the run's and its parent's (docs/fork.md, "Child runs").
		run("dynamo.Store.RecordChildPointer", 0, func(db *recorder) {
			ignore(d(db).RecordChildPointer(ctx, testRunID, review.ChildPointer{Step: "open", Seq: "4", ChildRunID: testRunID + "-child"}))
		}),
		run("dynamo.Store.RecordChildPointer (condition failed)", 1, func(db *recorder) {
			ignore(d(db).RecordChildPointer(ctx, testRunID, review.ChildPointer{Step: "open", Seq: "4", ChildRunID: testRunID + "-child"}))
		}),
		run("dynamo.Store.ChildPointers", 0, func(db *recorder) { ignore(d(db).ChildPointers(ctx, testRunID, "open", []int64{17})) }),
		run("dynamo.Store.TakeChildStart", 0, func(db *recorder) { ignore(d(db).TakeChildStart(ctx, testRunID, "2026-12-01T00:00:00Z")) }),
		// A fork's start (docs/fork.md): the parent's fork item.
		run("dynamo.Store.Fork", 0, func(db *recorder) { ignore(d(db).Fork(ctx, testRunID)) }),
		// A new review's e-mail notice (docs/reviews.md, "Review
		// notices"): claimed once, then SES's answer.
		run("dynamo.Store.ClaimNotice", 0, func(db *recorder) { ignore(d(db).ClaimNotice(ctx, testReview, 1, 1, now)) }),
		run("dynamo.Store.ClaimNotice (condition failed)", 1, func(db *recorder) { ignore(d(db).ClaimNotice(ctx, testReview, 1, 0, now)) }),
		run("dynamo.Store.FinishNotice", 0, func(db *recorder) {
			ignore(d(db).FinishNotice(ctx, testReview, "0100-message", ""), d(db).FinishNotice(ctx, testReview, "", "MessageRejected"))
		}),
		run("dynamo.Store.RecordForkStart", 0, func(db *recorder) {
			ignore(d(db).RecordForkStart(ctx, testRunID+"-fork", user, "sha256:00", review.EndUserRecord{}, review.ForkOrigin{From: testRunID, RerunReads: true}))
		}),
		// The start lane's record of an inbound start (its origin), and
		// the refresh of the same start again (docs/identity.md, "Four eyes").
		run("dynamo.Store.RecordOrRefreshRunStart", 0, func(db *recorder) {
			ignore(d(db).RecordOrRefreshRunStart(ctx, testRunID, review.RunStartEntry{Starter: user, InputDigest: "sha256:00",
				Origin: &review.StartOrigin{Kind: review.OriginSource, Name: "billing", AddedBy: user, Event: "evt_1", Holders: []string{user}}}))
		}),
		run("dynamo.Store.RecordOrRefreshRunStart (refresh)", 1, func(db *recorder) {
			// The record as stored: the same start, recorded before.
			db.item = map[string]types.AttributeValue{
				table.PK: &types.AttributeValueMemberS{Value: table.Start.Key(testRunID)}, table.SK: &types.AttributeValueMemberS{Value: table.Start.SKValue},
				"starter": &types.AttributeValueMemberS{Value: user}, "input_digest": &types.AttributeValueMemberS{Value: "sha256:00"},
				"deadline": &types.AttributeValueMemberN{Value: "1764700000"},
			}
			ignore(d(db).RecordOrRefreshRunStart(ctx, testRunID, review.RunStartEntry{Starter: user, InputDigest: "sha256:00"}))
			db.item = nil
		}),
	}
	decide := func(v review.Verdict, reason string) func(*recorder) {
		return func(db *recorder) {
			ignore(d(db).Decide(ctx, rv, v, "arn:aws:iam::123456789012:user/a", true, reason, time.Minute))
		}
	}
	// A gated park of testRunID's call 3.
	testPark := &park.Park{ID: park.ID("RUN#"+testRunID, "CALL#000003#1764700000000000000#0a1b2c3d"), RunID: testRunID,
		RowSK: "CALL#000003#1764700000000000000#0a1b2c3d", Gated: true, Status: park.StatusParked}
	decision := []func(*recorder){
		get,
		run("dynamo.Store.Decide", 0, decide(review.Approve, "ok")),
		run("dynamo.Store.Decide (condition failed)", 1, decide(review.Reject, "no")),
		// An approval with an answer and edits (docs/reviews.md), whose
		// merged input review-decision checks against the pinned toolset.
		run("dynamo.Store.DecideWith", 0, func(db *recorder) {
			ignore(d(db).DecideWith(ctx, rv, review.Approve, "arn:aws:iam::123456789012:user/a", true, "ok",
				dynamo.Approval{Answer: json.RawMessage(`"yes"`), Edits: json.RawMessage(`{"subject":"s"}`), ApprovedDigest: "sha256:00"}, time.Minute))
		}),
		toolset,
		run("dynamo.Store.ClaimDelivery", 0, func(db *recorder) { ignore(d(db).ClaimDelivery(ctx, rv, time.Minute)) }),
		run("dynamo.Store.FinishDelivery", 0, func(db *recorder) {
			ignore(d(db).FinishDelivery(ctx, rv, review.Delivered, ""), d(db).FinishDelivery(ctx, rv, review.TaskEnded, "TaskTimedOut"),
				d(db).FinishDelivery(ctx, rv, review.Delivering, ""))
		}),
		run("dynamo.Store.NoteSelfApproval", 0, func(db *recorder) { ignore(d(db).NoteSelfApproval(ctx, testReview)) }),
		run("dynamo.Store.List", 0, func(db *recorder) { ignore(d(db).List(ctx, review.Pending, nil)) }),
		run("dynamo.Store.BoundKey", 0, func(db *recorder) { ignore(d(db).BoundKey(ctx, testReview)) }),
		// Parks (docs/parking.md, "Deciding"): the run's starter, and the
		// review a gated park's PARKED row names.
		run("parkdynamo.Store.Starter", 0, func(db *recorder) {
			ignore(parkdynamo.New(db, "toolgate-test", nil).Starter(ctx, testRunID))
		}),
		run("parkdynamo.Store.ForkedFrom", 0, func(db *recorder) {
			ignore(parkdynamo.New(db, "toolgate-test", nil).ForkedFrom(ctx, testRunID))
		}),
		run("parkdynamo.Store.RowReview", 0, func(db *recorder) {
			ignore(parkdynamo.New(db, "toolgate-test", nil).RowReview(ctx, testPark))
		}),
		// run.fork (docs/fork.md): the fork item, once, and the parent's
		// calls without their results.
		run("dynamo.Store.Fork", 0, func(db *recorder) { ignore(d(db).Fork(ctx, testRunID)) }),
		run("dynamo.Store.RecordFork", 0, func(db *recorder) {
			ignore(d(db).RecordFork(ctx, review.Fork{ParentRunID: testRunID, ForkRunID: testRunID + "-fork", ForkedBy: user, ForkedAt: now, ParentStatus: "RUNNING"}))
		}),
		run("dynamo.Store.RecordFork (condition failed)", 1, func(db *recorder) {
			ignore(d(db).RecordFork(ctx, review.Fork{ParentRunID: testRunID, ForkRunID: testRunID + "-fork", ForkedBy: user, ForkedAt: now, ParentStatus: "RUNNING"}))
		}),
		run("ledger.Store.RunCalls", 0, func(db *recorder) { ignore(l(db).RunCalls(ctx, testRunID)) }),
		// A show (docs/reviews.md, "What a review's show answer carries"):
		// the review's own run's calls and rows, without their results.
		run("ledger.Store.RunRows", 0, func(db *recorder) { ignore(l(db).RunRows(ctx, testRunID)) }),
		// Reconciliations (docs/fork.md, "Reconciling"): the call's state
		// and approvers, its record once, and the first one after its
		// condition failed.
		run("ledger.Store.ReconcileTarget", 0, func(db *recorder) { ignore(l(db).ReconcileTarget(ctx, testKey)) }),
		run("ledger.Store.PutReconciliation", 0, func(db *recorder) {
			ignore(l(db).PutReconciliation(ctx, ledgertable.Reconciliation{Key: testKey, Outcome: ledgertable.Applied, Result: json.RawMessage(`{}`),
				Reason: "seen", ReconciledBy: user, StateBefore: ledgertable.StateUnknown, Attempts: 1}))
		}),
		run("ledger.Store.PutReconciliation (condition failed)", 1, func(db *recorder) {
			ignore(l(db).PutReconciliation(ctx, ledgertable.Reconciliation{Key: testKey, Outcome: ledgertable.NotApplied, Reason: "no", ReconciledBy: user, Attempts: 1}))
		}),
	}
	publishing := []func(*recorder){
		// The publish function as it runs (functions/publish/publish Service):
		// Publish, Register and ShowToolset, each path, with its Step
		// Functions and SSM requests going to recorders (publishRequests).
		func(db *recorder) { publishRequests(t, db) },
		run("ledger.Store.RegisterToolset (condition failed)", 1, func(db *recorder) { ignore(l(db).RegisterToolset(ctx, testCatalogToolset(t))) }),
		// A parent's workflow steps: the children's published versions.
		run("ledger.Store.PublishedSolution", 0, func(db *recorder) { ignore(l(db).PublishedSolution(ctx, "child")) }),
		// toolgate shapes: each pinned tool's shape partition.
		run("observed/dynamo.Store.List", 0, func(db *recorder) {
			ignore(shapedynamo.New(db, "toolgate-test").List(ctx, observed.Identity{Tool: "structured-data-fetch", Source: observed.SourceCatalog}))
		}),
	}
	// Credentials (shared/credential Store): the call-time read of a tool
	// function's dispatcher, and the publish function's management.
	c := func(db *recorder) *vault.Store { return vault.NewStore(db, "toolgate-test", nil) }
	credTarget := credential.Target{ToolsetName: "crm", Name: "tickets", Origin: "https://mcp.example.com"}
	sealed := vault.Sealed{Ciphertext: []byte{1}, Nonce: make([]byte, 12), EncryptedKey: []byte{2}, KeyID: "arn:aws:kms:us-east-1:123456789012:key/k"}
	credentialReads := []func(*recorder){
		run("vault.Store.Lookup", 0, func(db *recorder) {
			ignore(c(db).Lookup(ctx, credTarget, testToolset, credential.RunScope("run-1"), credential.EndUserScope([]byte("k"), "alice")))
		}),
	}
	credentialAdmin := []func(*recorder){
		run("vault.Store.Put", 0, func(db *recorder) {
			ignore(c(db).Put(ctx, vault.Item{Target: credTarget, Scope: credential.ScopeToolset, Sealed: sealed, SetBy: user}))
			ignore(c(db).Put(ctx, vault.Item{Target: credTarget, Scope: credential.RunScope("run-1"), Sealed: sealed, SetBy: user,
				ExecutionARN: testRunID, DeleteAfter: now, ExpiresAt: now}))
		}),
		run("vault.Store.Delete", 0, func(db *recorder) { ignore(c(db).Delete(ctx, credTarget, credential.ScopeToolset)) }),
		run("vault.Store.List", 0, func(db *recorder) { ignore(c(db).List(ctx, "crm")) }),
		run("vault.Store.Origins", 0, func(db *recorder) { ignore(c(db).Origins(ctx, "crm", "tickets")) }),
		run("vault.Store.MarkToolset", 0, func(db *recorder) { ignore(c(db).MarkToolset(ctx, credTarget, testToolset)) }),
		run("vault.Store.MarkToolset (condition failed)", 1, func(db *recorder) { ignore(c(db).MarkToolset(ctx, credTarget, testToolset)) }),
		run("vault.Store.Allow", 0, func(db *recorder) { ignore(c(db).Allow(ctx, credTarget, testToolset, user)) }),
		run("vault.Store.AllowRegistered", 0, func(db *recorder) { ignore(c(db).AllowRegistered(ctx, credTarget, user)) }),
		run("vault.Store.RunStart", 0, func(db *recorder) { ignore(c(db).RunStart(ctx, testRunID)) }),
		run("dynamo.Store.ListByStatus (a started run's parks)", 0, func(db *recorder) { ignore(pk(db).ListByStatus(ctx, park.StatusParked, nil)) }),
	}
	// Webhooks (shared/webhook/store): producers record events (a tool
	// function only records, through shared/webhook/outbox;
	// review-request, review-decision and webhook-delivery send and mark
	// them sent, Emitter.Emit); the webhooks function manages
	// subscriptions and reads attempts; webhook-delivery fans out,
	// delivers, records attempts, disables on 410 and relays.
	w := func(db *recorder) *whstore.Store { return whstore.New(db, "toolgate-test", nil) }
	ev := webhook.Event{ID: testEvent, Type: "review.requested", Solution: "digest", Data: json.RawMessage(`{"review_id":"rv_1"}`)}
	record := []func(*recorder){
		run("store.Store.RecordEvent", 0, func(db *recorder) { ignore(w(db).RecordEvent(ctx, ev)) }),
		run("store.Store.RecordEvent (condition failed)", 1, func(db *recorder) { ignore(w(db).RecordEvent(ctx, ev)) }),
	}
	callEv, err := webhook.NewEvent(webhook.CallUnknown, table.Call.Key(testRunID)+"\n"+table.CallSK("2"), "digest",
		webhook.CallData{Run: "run-1", Key: testKey, Tool: "send-email", Cause: "TOOL_TIMEOUT"}, now)
	if err != nil {
		t.Fatal(err)
	}
	recordOnly := []func(*recorder){
		run("outbox.Recorder.Emit", 0, func(db *recorder) { ignore((&outbox.Recorder{DB: db, Table: "toolgate-test"}).Emit(ctx, callEv)) }),
		run("outbox.Recorder.Emit (condition failed)", 1, func(db *recorder) {
			ignore((&outbox.Recorder{DB: db, Table: "toolgate-test"}).Emit(ctx, callEv))
		}),
	}
	emit := run("store.Emitter.Emit", 0, func(db *recorder) {
		ignore((&whstore.Emitter{Store: w(db), Queue: discardQueue{}, QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/q"}).Emit(ctx, ev))
	})
	secret := whstore.SealedSecret{Sealed: sealed}
	webhookAdmin := []func(*recorder){
		run("store.Store.Subscribe", 0, func(db *recorder) {
			ignore(w(db).Subscribe(ctx, whstore.Subscription{ID: testSub, URL: "https://hooks.example.com/", Events: []string{"run.*"},
				CreatedBy: user, Secrets: []whstore.SealedSecret{secret}}))
		}),
		run("store.Store.Subscriptions", 0, func(db *recorder) { ignore(w(db).Subscriptions(ctx)) }),
		run("store.Store.Subscription", 0, func(db *recorder) { ignore(w(db).Subscription(ctx, testSub)) }),
		run("store.Store.Disable", 0, func(db *recorder) { ignore(w(db).Disable(ctx, testSub, "no longer used")) }),
		run("store.Store.Attempts", 0, func(db *recorder) { ignore(w(db).Attempts(ctx, testEvent)) }),
		// deliveries --event reads the event; subscribe --solution whether
		// the Solution is published.
		run("store.Store.Event", 0, func(db *recorder) { ignore(w(db).Event(ctx, testEvent)) }),
		run("ledger.Store.PublishedSolution", 0, func(db *recorder) { ignore(l(db).PublishedSolution(ctx, "digest")) }),
	}
	webhookDelivery := []func(*recorder){
		run("store.Store.Event", 0, func(db *recorder) { ignore(w(db).Event(ctx, testEvent)) }),
		run("store.Store.Subscriptions", 0, func(db *recorder) { ignore(w(db).Subscriptions(ctx)) }),
		run("store.Store.Subscription", 0, func(db *recorder) { ignore(w(db).Subscription(ctx, testSub)) }),
		run("store.Store.RecordAttempt", 0, func(db *recorder) {
			ignore(w(db).RecordAttempt(ctx, testEvent, testSub, 1, webhook.Attempt{Status: 410, Outcome: "gone"}))
		}),
		run("store.Store.Disable", 0, func(db *recorder) { ignore(w(db).Disable(ctx, testSub, "410 Gone")) }),
		run("store.Store.Unsent", 0, func(db *recorder) { ignore(w(db).Unsent(ctx, now, 10)) }),
		run("store.Relay (a call's event)", 0, func(db *recorder) {
			db.found = []map[string]types.AttributeValue{{table.PK: &types.AttributeValueMemberS{Value: table.WebhookCallEvent.Key(callEv.ID)},
				table.SK: &types.AttributeValueMemberS{Value: table.WebhookCallEvent.SKValue}}}
			ignore(whstore.Relay(ctx, w(db), discardQueue{}, "https://sqs.eu-west-1.amazonaws.com/123456789012/q", now, 0))
		}),
		emit,
	}
	// The dispatcher of a function whose calls can park reads a park.
	parkReads := []func(*recorder){
		run("ledger.Store.Park", 0, func(db *recorder) { ignore(l(db).Park(ctx, "pk_abcdefghijklmnopqrstuvwxyz")) }),
		// The cover of an approved definition it records, and reads for
		// a later call of the tool (docs/parking.md, "Approvals that
		// cover later calls").
		run("ledger.Store.PutCover", 0, func(db *recorder) {
			ignore(l(db).WithMAC(coverKey(t)).PutCover(ctx, ledgertable.Cover{RunID: testRunID, Tool: "crm.lookup_customer",
				ParkID: "pk_abcdefghijklmnopqrstuvwxyz", PinnedDigest: "sha256:aa", CurrentDigest: "sha256:bb", DecidedBy: user}))
		}),
		run("ledger.Store.Cover", 0, func(db *recorder) { ignore(l(db).Cover(ctx, testRunID, "crm.lookup_customer", "sha256:bb")) }),
	}
	// The dispatcher of a function whose tools' result shapes are learned
	// reads a shape item and updates it (docs/declarations.md, "Observed
	// shapes"), after its condition failed too.
	sh := func(db *recorder) *shapedynamo.Store { return shapedynamo.New(db, "toolgate-test") }
	shapeID := observed.Identity{Tool: "structured-data-fetch", Source: observed.SourceCatalog, OutputSchemaDigest: "sha256:00", Host: "api.example.com"}
	learnedShape, err := observed.Observe(json.RawMessage(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	shapeLearning := []func(*recorder){
		run("observed/dynamo.Store.Get", 0, func(db *recorder) { ignore(sh(db).Get(ctx, shapeID)) }),
		run("observed/dynamo.Store.Put", 0, func(db *recorder) {
			ignore(sh(db).Put(ctx, shapeID, learnedShape, 0, 1))
			ignore(sh(db).Put(ctx, observed.Identity{Tool: "p-echo", Source: "platform:f"}, learnedShape, 3, 2))
		}),
		run("observed/dynamo.Store.Put (condition failed)", 1, func(db *recorder) { ignore(sh(db).Put(ctx, shapeID, learnedShape, 1, 1)) }),
	}
	// Inbound events and schedules (shared/inbound/store): the sources
	// function manages sources and schedules; webhook-receiver reads a
	// source's secrets, records deliveries, marks them queued and relays;
	// inbound-start reads what an event runs and ends the event.
	in := func(db *recorder) *instore.Store { return instore.New(db, "toolgate-test") }
	inSource := instore.Source{Name: "billing", Scheme: "stripe", Solution: "billing-sync", AddedBy: user,
		Secrets: []instore.Secret{{Sealed: sealed}}}
	inSchedule := instore.Schedule{Name: "nightly", Solution: "nightly-report", Expression: "rate(1 day)", AddedBy: user, Input: json.RawMessage(`{}`)}
	inEvent := instore.Event{Key: instore.EventKey{Origin: inboundapi.OriginSource, Name: "billing", ID: "evt_1"},
		EventType: "invoice.paid", Body: []byte(`{}`), ReceivedAt: now}
	inFiring := instore.EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "2026-12-03T18:00:00Z"}
	updateSecrets := func(db *recorder) {
		ignore(in(db).UpdateSecrets(ctx, "billing", []instore.Secret{{Sealed: sealed}}, 1, now))
	}
	rotateSecrets := func(db *recorder) {
		ignore(in(db).UpdateSecretsHeldBy(ctx, "billing", []instore.Secret{{Sealed: sealed}}, []string{user, "arn:aws:iam::123456789012:user/rotator"}, 1, now))
	}
	setState := func(db *recorder) { ignore(in(db).SetScheduleState(ctx, "nightly", inboundapi.StatePaused, 1, now)) }
	sourcesAdmin := []func(*recorder){
		run("store.Store.PutSource", 0, func(db *recorder) { ignore(in(db).PutSource(ctx, inSource)) }),
		run("store.Store.Source", 0, func(db *recorder) { ignore(in(db).Source(ctx, "billing")) }),
		run("store.Store.Sources", 0, func(db *recorder) { ignore(in(db).Sources(ctx)) }),
		run("store.Store.UpdateSecrets", 0, updateSecrets),
		run("store.Store.UpdateSecrets (condition failed)", 1, updateSecrets),
		run("store.Store.UpdateSecretsHeldBy", 0, rotateSecrets),
		run("store.Store.DeleteSource", 0, func(db *recorder) { ignore(in(db).DeleteSource(ctx, "billing")) }),
		run("store.Store.PutSchedule", 0, func(db *recorder) { ignore(in(db).PutSchedule(ctx, inSchedule)) }),
		run("store.Store.Schedule", 0, func(db *recorder) { ignore(in(db).Schedule(ctx, "nightly")) }),
		run("store.Store.Schedules", 0, func(db *recorder) { ignore(in(db).Schedules(ctx)) }),
		run("store.Store.SetScheduleState", 0, setState),
		run("store.Store.SetScheduleState (condition failed)", 1, setState),
		run("store.Store.DeleteSchedule", 0, func(db *recorder) { ignore(in(db).DeleteSchedule(ctx, "nightly")) }),
		// add --solution: whether the Solution is published.
		run("ledger.Store.PublishedSolution", 0, func(db *recorder) { ignore(l(db).PublishedSolution(ctx, "billing-sync")) }),
	}
	receive := func(db *recorder) { ignore(in(db).Receive(ctx, inEvent, now)) }
	markQueued := func(db *recorder) { ignore(in(db).MarkQueued(ctx, inEvent.Key, now)) }
	receiver := []func(*recorder){
		run("store.Store.SourceSecrets", 0, func(db *recorder) { ignore(in(db).SourceSecrets(ctx, "billing")) }),
		run("store.Store.Receive", 0, receive),
		run("store.Store.Receive (condition failed)", 1, receive),
		run("store.Store.MarkQueued", 0, markQueued),
		run("store.Store.MarkQueued (condition failed)", 1, markQueued),
		run("store.Store.Unqueued", 0, func(db *recorder) { ignore(in(db).Unqueued(ctx, now, 100)) }),
	}
	putFiring := func(db *recorder) { ignore(in(db).PutFiring(ctx, inFiring, now, now)) }
	markStarted := func(db *recorder) { ignore(in(db).MarkStarted(ctx, inEvent.Key, testRunID, now)) }
	inboundStart := []func(*recorder){
		run("store.Store.SourceRun", 0, func(db *recorder) { ignore(in(db).SourceRun(ctx, "billing")) }),
		run("store.Store.Schedule", 0, func(db *recorder) { ignore(in(db).Schedule(ctx, "nightly")) }),
		run("store.Store.Event", 0, func(db *recorder) { ignore(in(db).Event(ctx, inEvent.Key)) }),
		run("store.Store.PutFiring", 0, putFiring),
		run("store.Store.PutFiring (condition failed)", 1, putFiring),
		run("store.Store.MarkStarted", 0, markStarted),
		run("store.Store.MarkStarted (condition failed)", 1, markStarted),
		run("store.Store.MarkFailed", 0, func(db *recorder) { ignore(in(db).MarkFailed(ctx, inEvent.Key, []string{"refused"}, now)) }),
	}
	byPrincipal := map[table.Principal][]func(*recorder){
		table.Sources:         slices.Concat(sourcesAdmin, proofs),
		table.WebhookReceiver: receiver,
		table.InboundStart:    inboundStart,
		table.ToolFunctions:   slices.Concat(dispatcher, credentialReads, proofs, recordOnly),
		table.ReviewRequest:   slices.Concat(request, proofs, record, []func(*recorder){emit}, parkRecord),
		table.ReviewDecision:  slices.Concat(decision, proofs, record, []func(*recorder){emit}, parkDecide),
		table.Publish:         slices.Concat(publishing, credentialAdmin, proofs),
		table.Webhooks:        slices.Concat(webhookAdmin, proofs),
		table.WebhookDelivery: slices.Concat(webhookDelivery, record),
	}
	out := map[string][]ddbRequest{}
	for _, spec := range functionSpecs {
		db := &recorder{}
		for _, f := range byPrincipal[principalOf(spec.Name)] {
			f(db)
		}
		if spec.Parks {
			for _, f := range parkReads {
				f(db)
			}
		}
		if spec.Learns {
			for _, f := range shapeLearning {
				f(db)
			}
		}
		if len(db.reqs) == 0 {
			t.Fatalf("%s: no request recorded", spec.Name)
		}
		out[spec.Name] = db.reqs
	}
	return out
}
