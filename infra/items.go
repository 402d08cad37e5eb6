package main

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/table"
)

// Key prefixes of the ledger table's items: the start of the partition key
// pk (docs/ledger.md, docs/reviews.md, docs/identity.md). Every function
// role's ledger statement names the prefixes its code uses
// (dynamodb:LeadingKeys), so that no role reaches another's items.
const (
	// A run's call items (idempotency records with their attempts) and row
	// items: shared/ledger records.go and rows.go.
	prefixRun = "RUN#"
	// Registered toolsets: shared/ledger toolsets.go.
	prefixToolset = "TOOLSET#"
	// Reviews: shared/review store.go.
	prefixReview = "REVIEW#"
	// An execution's proven starter: shared/review store.go, RecordStart
	// and Starter.
	prefixStart = "START#"
	// A Solution's last published version: shared/ledger solutions.go.
	prefixSolution = "SOLUTION#"
	// Accepted caller proofs: shared/caller table.go.
	prefixProof = caller.ProofPrefix
	// Which call an approval authorised: shared/review store.go, Bind and
	// BoundKey.
	prefixBind = "BIND#"
)

// itemGrant allows DynamoDB item actions on the ledger items of one key
// prefix (Prefix), or Query on one of the table's indexes (Index): one
// statement of a role or managed policy.
type itemGrant struct {
	Sid     string
	Prefix  string // the items whose pk starts with it (dynamodb:LeadingKeys "<Prefix>*")
	Index   string // an index name, instead of Prefix: Query on that index
	Actions []string
	// Attributes, when set, are the only attributes a request may name
	// (dynamodb:Attributes): the key attributes, the attributes it writes
	// (an UpdateItem's update expression, a PutItem's item), those its
	// condition reads, those it projects. DynamoDB evaluates the key on the
	// attributes a request names, so on a read without a projection it
	// bounds nothing: reads of whole items carry no Attributes.
	Attributes []string
	// ReturnValues, when set, is the only ReturnValues an UpdateItem may ask
	// for (dynamodb:ReturnValues): NONE reads nothing back, so the
	// statement allows no attribute outside Attributes to be returned
	// either (ALL_OLD and ALL_NEW return the whole item).
	ReturnValues string
	// SpecificAttributes, on a read with Attributes, requires a request
	// that carries dynamodb:Select to ask for SPECIFIC_ATTRIBUTES
	// (StringEqualsIfExists). DynamoDB documents Select as a Query's and a
	// Scan's parameter, so a GetItem is bounded by Attributes; the same
	// guide says a read's Select "always has a value (ALL_ATTRIBUTES,
	// unless otherwise specified)", so where IAM sees one on a GetItem
	// without a projection, this denies it too (DynamoDB Developer Guide,
	// "Using IAM policy conditions for fine-grained access control").
	SpecificAttributes bool
}

// conditions is the grant's IAM condition block.
func (g itemGrant) conditions() map[string]any {
	all := map[string]any{}
	if g.Prefix != "" {
		all["dynamodb:LeadingKeys"] = []string{g.Prefix + "*"}
	}
	if g.Attributes != nil {
		all["dynamodb:Attributes"] = g.Attributes
	}
	c := map[string]any{}
	if len(all) > 0 {
		c["ForAllValues:StringLike"] = all
	}
	if g.ReturnValues != "" {
		// An UpdateItem always has ReturnValues (NONE when it sends none).
		c["StringEquals"] = map[string]any{"dynamodb:ReturnValues": g.ReturnValues}
	}
	if g.SpecificAttributes {
		c["StringEqualsIfExists"] = map[string]any{"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}
	}
	if len(c) == 0 {
		return nil
	}
	return c
}

// statement is the grant as a policy statement on the ledger table (or
// its index) named by l.
func (g itemGrant) statement(l ledgerARNs) awsiam.PolicyStatement {
	resource := l.Table
	if g.Index != "" {
		resource = l.index(g.Index)
	}
	return ledgerStatement(g.Sid, g.Actions, []*string{resource}, g.conditions())
}

// attrDeadline is a review's own end (epoch seconds), apart from its
// item's TTL (expires_at) once the review is decided: Create writes it,
// Decide's condition reads it, GetApproval reads it for CheckApproval
// (shared/review, dynamo.AttrDeadline, with items written before it
// existed read by expires_at).
const attrDeadline = "deadline"

// Attributes of review items (shared/review store.go) that the grants
// below name.
var (
	// Create's conditional PutItem: the pending review, and the index keys
	// of REVIEWS#PENDING; its condition reads pk. Never a decision
	// (approver, authenticated, decided_at, reason, decision_token,
	// delivery*) nor a binding (bound_key, bound_at).
	reviewCreateAttributes = []string{
		ledger.AttrPK, ledger.AttrSK, "review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers",
		"input", "input_digest", "input_bytes", "timeout_seconds", "requester", "task_token", "status", "created_at",
		attrDeadline, ledger.AttrExpiresAt, dynamo.AttrListPK, dynamo.AttrListSK,
	}
	// review-decision's UpdateItems: Decide (SET status, review_list_pk,
	// approver, authenticated, decided_at, reason, delivery,
	// delivery_lease_until, decision_token, expires_at; condition on
	// status, deadline and expires_at), ClaimDelivery (SET delivery_lease_until; condition on
	// delivery and delivery_lease_until), FinishDelivery (SET
	// delivery_lease_until, or delivery, delivered_at and delivery_error;
	// the same condition), NoteSelfApproval (ADD self_approval_refusals;
	// condition on pk). Never what was asked (input, input_digest, run_id,
	// of, tool, toolset_id, reviewers, requester) nor a binding.
	reviewDecideAttributes = []string{
		ledger.AttrPK, ledger.AttrSK, "status", attrDeadline, ledger.AttrExpiresAt, dynamo.AttrListPK, "approver", "authenticated",
		"decided_at", "reason", "decision_token", "delivery", "delivery_lease_until", "delivered_at", "delivery_error",
		"self_approval_refusals",
	}
	// Bind's conditional PutItem of the binding item (BIND#<review_id>):
	// pk, sk, bound_key, bound_at and expires_at. A tool role writes no
	// review item: an UpdateItem on one could return the whole review when
	// its condition fails (ReturnValuesOnConditionCheckFailure, which no
	// condition key governs).
	reviewBindAttributes = []string{ledger.AttrPK, ledger.AttrSK, "bound_key", "bound_at", ledger.AttrExpiresAt}
	// List's Query on the reviews-by-status index: the table's and the
	// index's keys and what the index projects (dynamo.Index), never a
	// review's input, reason or task token.
	reviewListAttributes = slices.Concat([]string{ledger.AttrPK, ledger.AttrSK, dynamo.AttrListPK, dynamo.AttrListSK},
		table.ReviewsByStatus.Projects)
)

// The grants of the functions' roles and the managed policies, each for
// exactly the requests of the code named in its comment. docs/infra.md
// ("Least privilege") tabulates them.
var (
	// The dispatcher (shared/dispatch, every tool function) on its calls'
	// items (shared/ledger): the claim (UpdateItem, ReturnValues ALL_NEW),
	// re-claim, MarkUnknown, finish and release (UpdateItem), Touch
	// (UpdateItem, ALL_NEW), Record and the read after a finish's failed
	// condition (GetItem), PutRow (PutItem of a row item). Whole items: the
	// dispatcher owns them, the claim and Touch read them back whole, and a
	// row item is put whole.
	grantCalls = itemGrant{Sid: "Calls", Prefix: prefixRun, Actions: []string{ddbGetItem, ddbPutItem, ddbUpdateItem}}
	// Loading a toolset (ledger.Store.Toolset: GetItem projecting body),
	// in every tool function and review-request; in the publish function,
	// RegisterToolset's read of the toolset already there when its
	// condition fails.
	grantToolsets = itemGrant{Sid: "Toolsets", Prefix: prefixToolset, Actions: []string{ddbGetItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "body"}}
	// ledger.Store.RegisterToolset, the publish function only: the
	// conditional PutItem (attribute_not_exists(pk)) of pk, sk, body and
	// registered_at, after the registration check. No other role, and no
	// policy for people, writes a toolset.
	grantRegisterToolsets = itemGrant{Sid: "RegisterToolsets", Prefix: prefixToolset, Actions: []string{ddbPutItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "body", "registered_at"}}
	// ledger.Store.RecordPublished: the PutItem of a Solution's last
	// published version and its bounds; PublishedSolution: its GetItem.
	grantRecordPublished = itemGrant{Sid: "RecordPublishedSolutions", Prefix: prefixSolution, Actions: []string{ddbPutItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "version_arn", "version", "toolset_id", "output_bound_bytes", "run_timeout_seconds",
			"input_limit_bytes", "source_digest", "publisher", "published_at"}}
	grantReadPublished = itemGrant{Sid: "ReadPublishedSolutions", Prefix: prefixSolution, Actions: []string{ddbGetItem}}
	// dynamo.Store.Get: a consistent GetItem of the whole review
	// (review-request compares a repeated request with it and answers the
	// direct lane's status; review-decision shows it).
	grantReadReviews = itemGrant{Sid: "ReadReviews", Prefix: prefixReview, Actions: []string{ddbGetItem}}
	// dynamo.Store.GetApproval, in the dispatcher of every tool function: a
	// consistent GetItem projecting dynamo.ApprovalAttributes, what
	// CheckApproval compares. Never the inputs, the task token, the reason
	// or the requester.
	grantReadApprovals = itemGrant{Sid: "ReadApprovals", Prefix: prefixReview, Actions: []string{ddbGetItem},
		Attributes: dynamo.ApprovalAttributes, SpecificAttributes: true}
	// dynamo.Store.Bind, in the dispatcher of every tool function (any
	// tool may be gated by policy.review_before): the binding item's
	// conditional PutItem (its answer to a failed condition is the binding
	// item alone), and the GetItem of it after a failed condition where the
	// answer leaves it out (dynalite).
	grantBindApprovals = itemGrant{Sid: "BindApprovals", Prefix: prefixBind, Actions: []string{ddbPutItem},
		Attributes: reviewBindAttributes}
	grantReadBindings = itemGrant{Sid: "ReadBindings", Prefix: prefixBind, Actions: []string{ddbGetItem}}
	// dynamo.Store.Create, review-request only: no other role puts a
	// review item.
	grantCreateReviews = itemGrant{Sid: "CreateReviews", Prefix: prefixReview, Actions: []string{ddbPutItem},
		Attributes: reviewCreateAttributes}
	// dynamo.Store Decide, ClaimDelivery, FinishDelivery and
	// NoteSelfApproval, review-decision only: no other role writes a
	// decision.
	grantDecideReviews = itemGrant{Sid: "DecideReviews", Prefix: prefixReview, Actions: []string{ddbUpdateItem},
		Attributes: reviewDecideAttributes, ReturnValues: "NONE"}
	// dynamo.Store.List: Query on the reviews-by-status index, with no
	// projection (the index's own).
	grantListReviews = itemGrant{Sid: "ListReviews", Index: dynamo.IndexName, Actions: []string{ddbQuery},
		Attributes: reviewListAttributes}
	// dynamo.Store.RecordStart and RecordChildStart: the conditional
	// PutItem of pk, sk, starter and expires_at, and for a child run the
	// parent's run id and the child input's digest (conditions on pk and
	// those).
	grantRecordStarts = itemGrant{Sid: "RecordStarts", Prefix: prefixStart, Actions: []string{ddbPutItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "starter", "parent_run_id", "input_digest", "state_machine_arn", "child_started_at", ledger.AttrExpiresAt}}
	// dynamo.Store.TakeChildStart: the conditional UpdateItem of a child
	// record's child_started_at (condition on parent_run_id and it),
	// reading nothing back.
	grantTakeChildStarts = itemGrant{Sid: "TakeChildStarts", Prefix: prefixStart, Actions: []string{ddbUpdateItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "child_started_at", "parent_run_id"}, ReturnValues: "NONE"}
	// dynamo.Store.Starter: GetItem of the whole start item.
	grantReadStarts = itemGrant{Sid: "ReadStarts", Prefix: prefixStart, Actions: []string{ddbGetItem}}
	// caller.ProofTable.Record: the conditional PutItem of pk, sk, binding,
	// arn and expires_at (condition on pk; ReturnValuesOnConditionCheckFailure
	// ALL_OLD, which no condition key governs).
	grantRecordProofs = itemGrant{Sid: "RecordCallerProofs", Prefix: prefixProof, Actions: []string{ddbPutItem},
		Attributes: []string{ledger.AttrPK, ledger.AttrSK, "binding", "arn", ledger.AttrExpiresAt}}
	// caller.ProofTable.Record after its condition failed without the old
	// item in the answer (dynalite): GetItem of the whole proof record.
	grantReadProofs = itemGrant{Sid: "ReadCallerProofs", Prefix: prefixProof, Actions: []string{ddbGetItem}}
)

// proofGrants are every function's: each verifies caller proofs.
var proofGrants = []itemGrant{grantRecordProofs, grantReadProofs}

// The grants of each kind of function.
var (
	// The tool functions: the dispatcher's calls, toolsets, approvals
	// (dynamo.Store GetApproval and Bind: a tool may be gated) and caller
	// proofs.
	toolGrants = slices.Concat([]itemGrant{grantCalls, grantToolsets, grantReadApprovals, grantBindApprovals, grantReadBindings}, proofGrants)
	// review-request (request.Handler): the run's toolset, the
	// review's Create and Get (a repeated request, the direct lane's
	// status), the execution's start (RecordStart, Starter) and caller
	// proofs. No RUN# item, no update of any item.
	reviewRequestGrants = slices.Concat([]itemGrant{grantToolsets, grantCreateReviews, grantReadReviews,
		grantRecordStarts, grantTakeChildStarts, grantReadStarts}, proofGrants)
	// review-decision (decision.Service): a review's Get, its decision and
	// delivery, the listing, the binding a show reports (BoundKey), and
	// caller proofs. No RUN#, TOOLSET# or START#
	// item.
	reviewDecisionGrants = slices.Concat([]itemGrant{grantReadReviews, grantDecideReviews, grantListReviews, grantReadBindings}, proofGrants)
	// The publish function (resolver/publish Service): a toolset's
	// registration (Publish registers the toolset its Solution pins;
	// Register one sent alone) and the read of it, the published versions
	// of Solutions (a parent's workflow steps start them), and caller
	// proofs. No RUN#, REVIEW# or START# item.
	publishGrants = slices.Concat([]itemGrant{grantRegisterToolsets, grantToolsets, grantRecordPublished, grantReadPublished}, proofGrants)
)
