package request

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// Handler is the review-request function. On the sfn lane it
// stores the pending review a review Task asks for and returns while the
// Task keeps waiting, records the park a park Task asks for (parkRoute),
// and answers a Solution's Starter Task; on the
// direct lane it serves LaneRequest, for a verified caller; on the start
// lane, toolgate run's StartRequest. NewHandler builds it.
type Handler struct {
	store   *dynamo.Store
	ledger  *ledger.Store
	log     *slog.Logger
	callers review.Callers
	// fixedLane is fixed on the local stack (one instance per lane);
	// empty: the invoked alias decides.
	fixedLane lane.Lane
	direct    DirectPolicy
	// executions describes a child run's execution (the version it runs),
	// the definition of the version a workflow step starts (its input
	// record) and the Solution version a reviewed run executes
	// (review.requested): Step Functions (stepfunctions.Executions), or nil
	// where no child run is started or checked and no event is recorded.
	executions review.Executions
	// account is the deployment's own AWS account (caller.EnvAccount): a
	// recorded starter of any other account is refused (checkStarter).
	// Empty, every recorded starter is refused.
	account string
	// region and stage are, with account, the start lane's StartScope:
	// empty, the start lane records nothing.
	region, stage string
	toolsets      ledger.ToolsetCache
	inputRecords  recordCache
	// externalKey is the stage's external key (shared/secrets), under
	// which a run's trace id is derived when it carries none
	// (shared/tracecontext): a review's place in its run's trace and a
	// child run's traceparent.
	externalKey []byte
	tracer      *tracing.Tracer
	webhooks    Emitter
	// endUsers says which starters may act for which end users, and
	// endUserKey is the stage's end-user key (shared/enduser Scope); nil:
	// every end user asked for is skipped.
	endUsers   enduser.Mapping
	endUserKey []byte
	// parks records parked calls from their PARKED rows (park route);
	// nil: a park Task is refused.
	parks *parkdynamo.Store
	// notices and ses send review notices (notice); ses nil or no
	// allow-list: none.
	notices functionconfig.ReviewNotices
	ses     SES
	// inbound is the inbound-start role, whose sessions start inbound and
	// scheduled runs with an origin (checkOrigin); zero: none.
	inbound InboundRole
}

// Deps are a Handler's collaborators.
type Deps struct {
	// Store is the review table (reviews, bindings, starts).
	Store *dynamo.Store
	// Ledger is the ledger table (toolsets, the input records' reads).
	Ledger *ledger.Store
	// Callers verifies caller and start proofs; nil: every one is refused.
	Callers review.Callers
	// Executions describes a child run's execution, the definition of
	// the version a workflow step starts and the Solution version a
	// reviewed run executes (stepfunctions.Executions); nil where no child
	// run is started or checked and no review.requested is recorded.
	Executions review.Executions
	// ExternalKey is the stage's external key (shared/secrets
	// LoadExternalKey), which trace ids are derived under as the
	// dispatcher derives them; nil derives them under the empty key
	// (tests only).
	ExternalKey []byte
	// Tracer exports the spans of reviews created and children started
	// (docs/tracing.md); nil exports none.
	Tracer *tracing.Tracer
	// EndUserKey is the stage's end-user key (shared/secrets LoadKeys of
	// cfg.EndUserKeyParam), under which an end user's scope is computed;
	// nil: no run's start records an end user (each asked for is skipped).
	EndUserKey []byte
	// Webhooks records each review's review.requested event
	// (store.Emitter, docs/webhooks.md); nil records none.
	Webhooks Emitter
	// Parks is the park store (shared/park/dynamo): the park route reads
	// a call's PARKED rows and records its park there; nil refuses every
	// park Task.
	Parks *parkdynamo.Store
	// SES sends review notices, from cfg.Notices's sender to the
	// addresses its allow-list admits (docs/reviews.md, "Review notices");
	// nil sends none.
	SES SES
	// InboundRole is the inbound-start role (ParseInboundRole of
	// EnvInboundRole): the start lane admits a start request's origin
	// only from its sessions, and requires one of them; zero admits no
	// origin.
	InboundRole InboundRole
	// Log defaults to slog.Default.
	Log *slog.Logger
}

// Emitter records a webhook event once and hands it to the events queue
// (shared/webhook/store Emitter.Emit): an error wrapping
// store.ErrLeftToRelay means it is recorded and the relay sends it.
type Emitter interface {
	Emit(ctx context.Context, ev webhook.Event) error
}

// NewHandler returns the function's handler: cfg's Lane (fixed on the
// local stack only), Direct, Callers.Account, Region, Stage, EndUsers and
// Notices, and d.
func NewHandler(cfg Config, d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Handler{store: d.Store, ledger: d.Ledger, log: d.Log, callers: d.Callers, fixedLane: cfg.Lane, direct: cfg.Direct,
		executions: d.Executions, account: cfg.Callers.Account, region: cfg.Region, stage: cfg.Stage, externalKey: d.ExternalKey, tracer: d.Tracer,
		endUsers: cfg.EndUsers, endUserKey: d.EndUserKey, webhooks: d.Webhooks, parks: d.Parks,
		notices: cfg.Notices, ses: d.SES, inbound: d.InboundRole}
}

// Handle is the Lambda handler. Failures are review codes (review.Edge),
// as the decision function's: REVIEW_INVALID_REQUEST for a malformed
// payload or a child's input its version refuses, REVIEW_UNAUTHENTICATED
// for a refused caller proof or start proof, REVIEW_FORBIDDEN for the
// wrong lane, a run id outside the caller's namespace, or a toolset that
// is not registered or does not hold the tool, REVIEW_UNAVAILABLE when
// DynamoDB, STS or Step Functions fails (the compiled Tasks retry it),
// and PARK_LIMIT for a park Task of a call that parked more than
// park.MaxParks times (parkRoute; docs/parking.md).
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	out, err := h.request(ctx, payload)
	if err != nil {
		h.log.WarnContext(ctx, "review request refused", "error", err.Error())
	}
	return out, review.Edge(err)
}

func (h *Handler) request(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	l, err := lane.Of(ctx, h.fixedLane, lane.Start)
	if err != nil {
		return nil, review.Errorf(review.CodeForbidden, "%s", err.Error())
	}
	if l == lane.Start {
		// The start alias takes toolgate run's start requests, and nothing
		// else: a Publisher may invoke it, and no other alias.
		return h.recordRunStart(ctx, payload)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, review.Errorf(review.CodeInvalid, "review request is not a JSON object")
	}
	_, isLane := probe["action"]
	_, isStart := probe["start_proof"]
	_, isRunStart := probe["check"]
	_, isChildStart := probe["state_machine_arn"]
	_, isChildCheck := probe["execution_input"]
	_, isPark := probe[MemberPark]
	switch {
	case l == lane.Direct && isLane:
		return h.lane(ctx, payload)
	case l == lane.Direct:
		return nil, review.Errorf(review.CodeForbidden, "review Tasks and start Tasks come through the %s alias; this is the %s alias", lane.SFN, lane.Direct)
	case isLane:
		return nil, review.Errorf(review.CodeForbidden, "direct-lane requests come through the %s alias; this is the %s alias", lane.Direct, lane.SFN)
	case isStart:
		return h.start(ctx, payload)
	case isRunStart:
		return h.runStart(ctx, payload)
	case isChildStart:
		return h.childStart(ctx, payload)
	case isChildCheck:
		return h.childCheck(ctx, payload)
	case isPark:
		return h.parkRoute(ctx, payload)
	}
	r, err := review.DecodeTask(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(r.RunID) {
		return nil, review.Errorf(review.CodeForbidden, "run id %q is a direct-lane run id; review Tasks run under their execution's ARN", excerpt.Bytes(r.RunID, 80, "..."))
	}
	// The requester is the execution's proven starter, as its Starter
	// state recorded it: never the payload's word alone. An inbound or
	// scheduled run's review also names its origin's holders, whom four
	// eyes refuse as approvers as they refuse the requester
	// (docs/identity.md, "Four eyes").
	starter, origin, err := h.store.StarterAndOrigin(ctx, r.RunID)
	switch {
	case errors.Is(err, review.ErrNotFound):
		return nil, review.Errorf(review.CodeForbidden, "execution %s has no verified start: a Solution with gated tools starts with its Starter state (start runs with toolgate run)", excerpt.Bytes(r.RunID, 200, "..."))
	case err != nil:
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	case starter != r.Requester:
		return nil, review.Errorf(review.CodeForbidden, "the review Task names requester %s, but execution %s was started by %s", excerpt.Bytes(r.Requester, 200, "..."), excerpt.Bytes(r.RunID, 200, "..."), starter)
	}
	if err := h.checkStarter(ctx, r.RunID, starter); err != nil {
		return nil, err
	}
	if _, inbound := h.inbound.session(caller.Identity{ARN: starter, Principal: starter}); inbound && origin == nil {
		// A child run of an inbound or scheduled run inherits its
		// starter, the inbound session: its origin is its root run's.
		if origin, err = h.store.RootOrigin(ctx, r.RunID); err != nil && !errors.Is(err, review.ErrNotFound) {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		if origin == nil {
			return nil, review.Errorf(review.CodeForbidden, "execution %s was started by the inbound-start role's session %s, but no origin of its run is recorded: nobody could be told apart from who chose its input",
				excerpt.Bytes(r.RunID, 200, "..."), starter)
		}
	}
	switch {
	case origin != nil && len(origin.Holders) > 0:
		r.OriginHolders = origin.Holders
	case origin != nil:
		// A start recorded before holders were: its adder held the
		// first secret, or chose the schedule's input.
		r.OriginHolders = []string{origin.AddedBy}
	}
	return h.create(ctx, r, notifyOf(payload))
}

// recordRunStart answers a start request (the start alias): it refuses,
// before anything else, an execution its StartScope does not admit
// (REVIEW_FORBIDDEN with the reason word, StartScope.Admit); it verifies
// its caller proof (review.StartBindingOf: caller.ActionStart, the
// execution ARN, the whole execution input's digest, the end user, the
// fork and the origin; the deployment's account only), admits its origin
// (checkOrigin: [start-origin]) and its fork (checkFork: [start-fork]),
// and records the verified caller as the execution's starter, with the
// digest, a deadline, the fork, the origin and the end user asked for
// when the end-user mapping lets the starter act for it, else why not
// (endUser; dynamo.Store.RecordOrRefreshRunStart), once per execution
// ARN. The same start again (the same starter, digest, end user, fork
// and origin: a retried start) refreshes the record's deadline and is
// answered as the first was; anything else already recorded under the
// name is REVIEW_FORBIDDEN [start-recorded], and toolgate run then starts
// nothing. No proof is stored. The answer is a review.StartAnswer.
func (h *Handler) recordRunStart(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	req, err := review.DecodeStartRequest(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	scope := StartScope{Account: h.account, Region: h.region, Stage: h.stage}
	if reason, msg := scope.Admit(req.ExecutionARN); reason != "" {
		h.log.WarnContext(ctx, "run start refused: the execution is not one the start lane admits", "reason", reason, "execution_arn", req.ExecutionARN)
		return nil, review.Errorf(review.CodeForbidden, "%s [%s]", msg, reason)
	}
	if h.callers == nil {
		return nil, review.Errorf(review.CodeForbidden, "this function has no caller verifier")
	}
	id, err := h.callers.Verify(ctx, req.Proof, review.StartBindingOf(req))
	if err != nil {
		return nil, review.CallerError(fmt.Errorf("the start request: %w", err))
	}
	if err := h.checkOrigin(ctx, req, id); err != nil {
		return nil, err
	}
	asked := req.EndUser
	fork := review.ForkOrigin{From: req.ForkedFrom, RerunReads: req.RerunReads}
	if fork.From != "" {
		if asked, err = h.checkFork(ctx, req, id.Principal); err != nil {
			return nil, err
		}
	}
	eu := h.endUser(id.Principal, asked)
	entry := review.RunStartEntry{Starter: id.Principal, InputDigest: req.InputDigest, EndUser: eu, Fork: fork, Origin: req.Origin}
	refreshed, err := h.store.RecordOrRefreshRunStart(ctx, req.ExecutionARN, entry)
	if errors.Is(err, review.ErrStartConflict) {
		h.log.WarnContext(ctx, "run start refused: the execution name is recorded", "reason", ReasonStartRecorded, "execution_arn", req.ExecutionARN, "starter", id.Principal)
		return nil, review.Errorf(review.CodeForbidden, "execution %s already has a start record: an execution name is recorded once (only its starter's same start again, with the same input, renews it); start the run under another name [%s]",
			excerpt.Bytes(req.ExecutionARN, 200, "..."), ReasonStartRecorded)
	} else if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	var origin []any
	if o := req.Origin; o != nil {
		origin = []any{"origin_kind", o.Kind, "origin_name", o.Name}
	}
	h.log.InfoContext(ctx, "run start recorded", append([]any{"execution_arn", req.ExecutionARN, "starter", id.Principal, "input_digest", req.InputDigest,
		"end_user_scope", eu.Scope, "end_user_skipped", eu.Skipped, "forked_from", fork.From, "refreshed", refreshed}, origin...)...)
	return json.Marshal(review.StartAnswer{Starter: id.Principal, EndUser: review.EndUserAnswer(eu.Scope), EndUserSkipped: eu.Skipped, ForkedFrom: fork.From})
}

// ReasonStartFork: a start request names a parent it may not fork: the
// parent has no fork item naming this execution, or the verified starter
// is not the forker the item names (docs/fork.md, "Forking a run").
const ReasonStartFork = "start-fork"

// checkFork admits req's forked_from for starter: the parent's fork item
// (recorded by review-decision's run.fork, which authorised its forker as
// the parent's starter or a fork operator) must name req's execution as
// its fork, and starter must be its forker, who run.fork authorised; and
// rerun_reads must be the item's. It returns the end-user id the fork is
// to act for: its parent's ("" for none), which endUser checks against
// the mapping for starter as it would an id asked for. Any refusal is
// REVIEW_FORBIDDEN [start-fork], and nothing is recorded.
func (h *Handler) checkFork(ctx context.Context, req *review.StartRequest, starter string) (string, error) {
	refuse := func(format string, a ...any) error {
		h.log.WarnContext(ctx, "run start refused: its fork is not admitted", "reason", ReasonStartFork, "execution_arn", req.ExecutionARN, "forked_from", req.ForkedFrom)
		return review.Errorf(review.CodeForbidden, format+" [%s]", append(a, ReasonStartFork)...)
	}
	f, err := h.store.Fork(ctx, req.ForkedFrom)
	switch {
	case errors.Is(err, review.ErrNotFound):
		return "", refuse("%s was not forked: fork it with toolgate fork, which records the fork first", excerpt.Bytes(req.ForkedFrom, 200, "..."))
	case err != nil:
		return "", review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	case f.ForkRunID != req.ExecutionARN:
		return "", refuse("%s was forked as %s, not as %s", excerpt.Bytes(req.ForkedFrom, 200, "..."), excerpt.Bytes(f.ForkRunID, 200, "..."), excerpt.Bytes(req.ExecutionARN, 200, "..."))
	case f.ForkedBy != starter:
		return "", refuse("%s was forked by %s: only the forker starts the fork", excerpt.Bytes(req.ForkedFrom, 200, "..."), f.ForkedBy)
	case f.RerunReads != req.RerunReads:
		return "", refuse("the fork of %s was recorded with rerun_reads %v, and the start asks %v", excerpt.Bytes(req.ForkedFrom, 200, "..."), f.RerunReads, req.RerunReads)
	}
	parent, err := h.store.Start(ctx, req.ForkedFrom)
	switch {
	case errors.Is(err, review.ErrNotFound):
		return "", nil
	case err != nil:
		return "", review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	return parent.EndUser, nil
}

// endUser decides what starter's start record holds of the end user id
// asked for ("" for none: nothing): the id and its scope when the
// end-user mapping lets starter act for it, otherwise why it is skipped.
// A skipped end user does not stop the run: it runs without one, and its
// credentials are looked up in the run and toolset scopes only
// (docs/identity.md, "End users").
func (h *Handler) endUser(starter, id string) review.EndUserRecord {
	switch {
	case id == "":
		return review.EndUserRecord{}
	case h.endUserKey == nil:
		return review.EndUserRecord{Skipped: "this deployment has no end-user key (" + enduser.EnvKeyParam + "), so no run acts for an end user"}
	case !h.endUsers.MayActFor(starter, id):
		return review.EndUserRecord{Skipped: "the end-user mapping (endUserMapping) has no entry that lets " + starter + " act for this end user"}
	}
	return review.EndUserRecord{ID: id, Scope: enduser.Scope(h.endUserKey, id)}
}

// Reason words of a refused run start (docs/identity.md, "Four eyes").
const (
	// ReasonStartRecorded: the execution ARN has a start record already.
	ReasonStartRecorded = "start-recorded"
	// ReasonStartUnrecorded: the Starter found no start record of
	// toolgate run for its execution.
	ReasonStartUnrecorded = "start-unrecorded"
	// ReasonStartInput: the execution's input is not the recorded one.
	ReasonStartInput = "start-input"
	// ReasonStartLate: the execution started after the record's deadline.
	ReasonStartLate = "start-late"
)

// runStart answers a Solution's Starter Task (tool.RunStartCheck): the
// run's start is the record toolgate run wrote for $$.Execution.Id, if
// the digest of $$.Execution.Input is the recorded one and
// $$.Execution.StartTime is at most the record's deadline; it returns the
// recorded starter and end-user scope (tool.StartResult). Each refusal is REVIEW_UNAUTHENTICATED with its
// reason word. Reading the record writes nothing, so a retried Task, or a
// redriven execution (its StartTime unchanged), is answered the same.
func (h *Handler) runStart(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	arn, digest, started, err := review.DecodeRunStartCheck(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(arn) {
		return nil, review.Errorf(review.CodeForbidden, "%q is a direct-lane run id, not an execution", excerpt.Bytes(arn, 80, "..."))
	}
	rec, err := h.store.RunStart(ctx, arn)
	refuse := func(reason, format string, a ...any) error {
		h.log.WarnContext(ctx, "run start refused", "reason", reason, "execution_arn", arn)
		return review.Errorf(review.CodeUnauthenticated, format+" [%s]", append(a, reason)...)
	}
	switch {
	case errors.Is(err, review.ErrNotFound):
		return nil, refuse(ReasonStartUnrecorded, "execution %s has no start record: start runs with the current toolgate (toolgate run records the start before it starts the execution)", excerpt.Bytes(arn, 200, "..."))
	case err != nil:
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	case rec.InputDigest != digest:
		return nil, refuse(ReasonStartInput, "execution %s: its input is not the one recorded for its start (%s, not %s)", excerpt.Bytes(arn, 200, "..."), digest, rec.InputDigest)
	case started.After(rec.Deadline):
		return nil, refuse(ReasonStartLate, "execution %s started at %s, after its start record's deadline %s", excerpt.Bytes(arn, 200, "..."),
			started.UTC().Format(time.RFC3339Nano), rec.Deadline.UTC().Format(time.RFC3339))
	}
	if err := h.checkStarter(ctx, arn, rec.Starter); err != nil {
		return nil, err
	}
	h.log.InfoContext(ctx, "run start verified", "execution_arn", arn, "starter", rec.Starter, "end_user_scope", rec.EndUserScope)
	return json.Marshal(tool.StartResult{Starter: rec.Starter, EndUser: review.EndUserAnswer(rec.EndUserScope),
		ForkedFrom: rec.Fork.ForkedFromAnswer(), RerunReads: rec.Fork.RerunReads})
}

// start answers the Starter Task of a state machine published before
// start records (tool.StartCheck), for executions in flight across the
// upgrade: it verifies the start proof from the execution input's meta as
// bound to this execution and signed at most caller.Window before the
// execution started, records the starter (RecordStart) and returns it.
func (h *Handler) start(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	c, started, err := review.DecodeStart(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(c.ExecutionARN) {
		return nil, review.Errorf(review.CodeForbidden, "%q is a direct-lane run id, not an execution", excerpt.Bytes(c.ExecutionARN, 80, "..."))
	}
	if h.callers == nil {
		return nil, review.Errorf(review.CodeForbidden, "this function has no caller verifier")
	}
	id, err := h.callers.VerifyAt(ctx, c.StartProof, caller.Binding{Action: caller.ActionStart, Target: c.ExecutionARN}, started)
	if err != nil {
		return nil, review.CallerError(fmt.Errorf("the run's start proof: %w", err))
	}
	if err := h.store.RecordStart(ctx, c.ExecutionARN, id.Principal); errors.Is(err, review.ErrStartConflict) {
		return nil, review.Errorf(review.CodeForbidden, "execution %s was started by someone else", excerpt.Bytes(c.ExecutionARN, 200, "..."))
	} else if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	h.log.InfoContext(ctx, "run start verified", "execution_arn", c.ExecutionARN, "starter", id.Principal)
	return json.Marshal(tool.StartResult{Starter: id.Principal})
}

// childStart answers a workflow step's start-record Task: it names the
// child execution and records for it the parent's verified starter and
// end-user scope and the digest of the child's input (docs/solutions.md, "Workflow steps").
// The parent must have a verified start: a compiled Solution with a
// workflow step starts with its Starter state. The child's input must
// satisfy the input record of the version the step starts
// (checkChildInput): an input the child refuses is recorded for no
// execution, so the step starts nothing.
func (h *Handler) childStart(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	c, res, rec, err := review.DecodeChildStart(payload, h.externalKey)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	if lane.IsDirectRunID(rec.ParentRunID) {
		return nil, review.Errorf(review.CodeForbidden, "%q is a direct-lane run id, not an execution", excerpt.Bytes(rec.ParentRunID, 80, "..."))
	}
	parent, err := h.store.Start(ctx, rec.ParentRunID)
	rec.Starter, rec.EndUserScope = parent.Starter, parent.EndUserScope
	if errors.Is(err, review.ErrNotFound) {
		return nil, review.Errorf(review.CodeForbidden, "execution %s has no verified start: a Solution with a workflow step starts with its Starter state", excerpt.Bytes(rec.ParentRunID, 200, "..."))
	} else if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	if err := h.checkStarter(ctx, rec.ParentRunID, rec.Starter); err != nil {
		return nil, err
	}
	if err := h.checkChildInput(ctx, c); err != nil {
		return nil, err
	}
	if rec.Fork, err = h.childFork(ctx, c, parent.Fork); err != nil {
		return nil, err
	}
	if c.Conflict {
		var taken bool
		if res, taken, err = h.releaseChild(ctx, c, res); err != nil {
			return nil, err
		} else if taken {
			if err := h.recordChildPointer(ctx, c, res); err != nil {
				return nil, err
			}
			return json.Marshal(res)
		}
	}
	for {
		err := h.store.RecordChildStart(ctx, res.ExecutionARN, rec)
		if err == nil {
			break
		} else if !errors.Is(err, review.ErrStartConflict) {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		// A run's start (no parent: toolgate run's, or a Starter's from a
		// start proof) holds the name: the step did not write it, and it
		// passes to the next name, as for a name an execution holds.
		if _, err := h.store.ChildStart(ctx, res.ExecutionARN); err == nil {
			return nil, review.Errorf(review.CodeForbidden, "child execution %s is already recorded with another starter, parent or input", excerpt.Bytes(res.ExecutionARN, 200, "..."))
		} else if !errors.Is(err, review.ErrNotFound) {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		h.log.WarnContext(ctx, "child execution name held by a run's start record", "execution_arn", res.ExecutionARN, "parent_run_id", c.ParentRunID, "attempt", res.Attempt)
		if res, err = nextChildAttempt(c, res, "a run's start record"); err != nil {
			return nil, err
		}
	}
	if err := h.recordChildPointer(ctx, c, res); err != nil {
		return nil, err
	}
	h.log.InfoContext(ctx, "child start recorded", "execution_arn", res.ExecutionARN, "parent_run_id", rec.ParentRunID, "starter", rec.Starter,
		"step", c.Step, "forked_from", rec.Fork.From)
	// The workflow step's span, under the parent's context: the child
	// run's spans are under it (its meta.traceparent names it).
	if self, ok := tracecontext.Parse(tool.TraceContext{Traceparent: res.Traceparent}); ok {
		parent, _ := tracecontext.Parse(c.Traceparent.Context())
		h.traceSpan(ctx, "toolgate.child "+string(c.Seq), parent, self, start, attribute.String("toolgate.seq", string(c.Seq)))
	}
	return json.Marshal(res)
}

// childFork is what a workflow step of a fork records of its child's
// fork (docs/fork.md, "Child runs"): when the step's run (c.ParentRunID)
// is forked from P (runFork, its own start record's), the child is
// forked from P's k-th child of the same step and loop index path, in seq
// order, k being this child's place among the run's own children of that
// step and path (its child pointers at an earlier seq), with the run's
// rerun_reads. Two consistent Queries of child pointers: the run's own
// and P's. Nothing (zero) when the run is no fork, the payload names no
// step (a parent published before steps were named), P started fewer
// children there, or P's pointer does not name P's child at its seq
// (review.ChildPointer NamesChildOf). The payload never chooses it: a
// child start carries no forked_from member (DecodeChildStart). A ledger
// failure is REVIEW_UNAVAILABLE, and the Task retries.
func (h *Handler) childFork(ctx context.Context, c *tool.ChildStart, runFork review.ForkOrigin) (review.ForkOrigin, error) {
	if runFork.From == "" || c.Step == "" {
		return review.ForkOrigin{}, nil
	}
	path := c.Seq.LoopPath()
	ours, err := h.store.ChildPointers(ctx, c.ParentRunID, c.Step, path)
	if err != nil {
		return review.ForkOrigin{}, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	k, at := 0, c.Seq.SortKey()
	for _, p := range ours {
		if p.Seq.SortKey() < at {
			k++
		}
	}
	theirs, err := h.store.ChildPointers(ctx, runFork.From, c.Step, path)
	if err != nil {
		return review.ForkOrigin{}, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	if k >= len(theirs) {
		h.log.InfoContext(ctx, "fork's child: the parent started no such child; the child's calls run", "parent_run_id", c.ParentRunID,
			"forked_from", runFork.From, "step", c.Step, "seq", string(c.Seq), "ordinal", k+1)
		return review.ForkOrigin{}, nil
	}
	if p := theirs[k]; !p.NamesChildOf(runFork.From) {
		h.log.WarnContext(ctx, "fork's child: the parent's child pointer names no child of the parent at its seq; the child's calls run",
			"forked_from", runFork.From, "step", c.Step, "seq", string(p.Seq), "child_run_id", p.ChildRunID)
		return review.ForkOrigin{}, nil
	}
	return review.ForkOrigin{From: theirs[k].ChildRunID, RerunReads: runFork.RerunReads}, nil
}

// recordChildPointer records, for a payload that names its step, the
// run's child pointer to res's child (dynamo.Store.RecordChildPointer),
// after the child's start record: a fork of the run forks its own
// children from it. A pointer of a later attempt there already is
// REVIEW_FORBIDDEN; a ledger failure REVIEW_UNAVAILABLE.
func (h *Handler) recordChildPointer(ctx context.Context, c *tool.ChildStart, res tool.ChildStartResult) error {
	if c.Step == "" {
		return nil
	}
	err := h.store.RecordChildPointer(ctx, c.ParentRunID, review.ChildPointer{Step: c.Step, Seq: c.Seq, ChildRunID: res.ExecutionARN, Attempt: res.Attempt})
	switch {
	case errors.Is(err, dynamo.ErrLaterChild):
		return review.Errorf(review.CodeForbidden, "the run's child of step %s at seq %s is recorded for a later attempt than %d", c.Step, c.Seq, res.Attempt)
	case err != nil:
		return review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	return nil
}

// releaseChild answers a start under res's name that found the name in
// use (c.Conflict): when this step's child took the record for the name,
// the execution of that name is the child, and res is answered Taken;
// otherwise an execution the parent did not start holds the name, and
// releaseChild releases the record, so that it cannot take it after, and
// returns the next attempt's name, for the caller to record
// (nextChildAttempt).
func (h *Handler) releaseChild(ctx context.Context, c *tool.ChildStart, res tool.ChildStartResult) (tool.ChildStartResult, bool, error) {
	err := h.store.ReleaseChildStart(ctx, res.ExecutionARN, c.ParentRunID)
	switch {
	case errors.Is(err, review.ErrChildTaken):
		res.Taken = true
		return res, true, nil
	case errors.Is(err, review.ErrNotFound):
		return res, false, review.Errorf(review.CodeForbidden, "child execution %s was not recorded for parent %s", excerpt.Bytes(res.ExecutionARN, 200, "..."), excerpt.Bytes(c.ParentRunID, 200, "..."))
	case err != nil:
		return res, false, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	h.log.WarnContext(ctx, "child execution name held by an execution the parent did not start", "execution_arn", res.ExecutionARN, "parent_run_id", c.ParentRunID, "attempt", res.Attempt)
	res, err = nextChildAttempt(c, res, "an execution its parent did not start")
	return res, false, err
}

// nextChildAttempt names the attempt after res's, whose name is held
// (heldBy says by what: an execution, or a run's start record). The
// attempts are bounded (tool.MaxChildAttempts): past them the step fails
// REVIEW_FORBIDDEN.
func nextChildAttempt(c *tool.ChildStart, res tool.ChildStartResult, heldBy string) (tool.ChildStartResult, error) {
	next := res.Attempt + 1
	if next >= tool.MaxChildAttempts {
		return res, review.Errorf(review.CodeForbidden, "the %d names of this step's child were each held (the last by %s)", tool.MaxChildAttempts, heldBy)
	}
	name := tool.ChildAttemptName(c.ParentRunID, c.Seq, next)
	arn, err := review.ChildExecutionARN(c.StateMachineARN, name)
	if err != nil {
		return res, review.Errorf(review.CodeInvalid, "child start: state_machine_arn: %v", err)
	}
	return tool.ChildStartResult{ExecutionName: name, ExecutionARN: arn, Attempt: next, Traceparent: res.Traceparent}, nil
}

// childCheck answers a child run's start Task: the run's start is the
// record its parent wrote for this execution ARN, if the execution's input
// is the one recorded; it returns the parent's starter and end-user scope,
// and, for a fork's child, the child it is forked from and rerun_reads
// (childFork).
func (h *Handler) childCheck(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	c, err := review.DecodeChildCheck(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	arn := c.ExecutionARN
	rec, err := h.store.ChildStart(ctx, arn)
	if errors.Is(err, review.ErrNotFound) {
		return nil, review.Errorf(review.CodeUnauthenticated, "execution %s names a parent run, but no parent recorded its start: a child run starts only from its parent's workflow step", excerpt.Bytes(arn, 200, "..."))
	} else if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	if rec.InputDigest != c.InputDigest {
		return nil, review.Errorf(review.CodeUnauthenticated, "execution %s: its input is not the one its parent recorded (%s, not %s)", excerpt.Bytes(arn, 200, "..."), rec.InputDigest, c.InputDigest)
	}
	// The version the parent starts, and no other: an execution started
	// by hand on the unqualified ARN runs the latest revision.
	if h.executions == nil {
		return nil, review.Errorf(review.CodeForbidden, "this function cannot read executions: a child run cannot be verified")
	}
	version, err := h.executions.VersionOf(ctx, arn)
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "Step Functions could not describe the execution")
	}
	if version != rec.StateMachineARN {
		return nil, review.Errorf(review.CodeUnauthenticated, "execution %s runs %q, not the version %s its parent starts", excerpt.Bytes(arn, 200, "..."), excerpt.Bytes(version, 200, "..."), excerpt.Bytes(rec.StateMachineARN, 200, "..."))
	}
	// One execution takes the record: an execution name may be used again
	// 90 days after the execution closed.
	if err := h.store.TakeChildStart(ctx, arn, c.StartTime); errors.Is(err, review.ErrChildTaken) {
		return nil, review.Errorf(review.CodeUnauthenticated, "execution %s: another execution of that name took its parent's start record, or the parent released it", excerpt.Bytes(arn, 200, "..."))
	} else if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	if err := h.checkStarter(ctx, arn, rec.Starter); err != nil {
		return nil, err
	}
	h.log.InfoContext(ctx, "child run start verified", "execution_arn", arn, "parent_run_id", rec.ParentRunID, "starter", rec.Starter, "end_user_scope", rec.EndUserScope,
		"forked_from", rec.Fork.From)
	return json.Marshal(tool.StartResult{Starter: rec.Starter, EndUser: review.EndUserAnswer(rec.EndUserScope),
		ForkedFrom: rec.Fork.ForkedFromAnswer(), RerunReads: rec.Fork.RerunReads})
}

// checkStarter refuses a recorded starter of an account other than the
// deployment's (REVIEW_FORBIDDEN, [caller-account]). The verifier compares
// accounts before anything else now, but start records are kept a year and
// a day: one written before it did may name another account's principal,
// who would be the requester of every review of the run, and so someone
// the same person, signed in with the deployment's account, is not
// (docs/identity.md, "Accounts").
func (h *Handler) checkStarter(ctx context.Context, runID, starter string) error {
	if account := caller.AccountOf(starter); h.account == "" || account != h.account {
		h.log.WarnContext(ctx, "start record refused: its starter belongs to an account this deployment does not admit",
			"reason", string(caller.WrongAccount), "run_id", runID, "account", excerpt.Bytes(account, 40, "..."))
		return review.Errorf(review.CodeForbidden, "execution %s was started by %s, a principal of an account this deployment does not admit: start the run again with credentials of the deployment's account [%s]",
			excerpt.Bytes(runID, 200, "..."), excerpt.Bytes(starter, 200, "..."), caller.WrongAccount)
	}
	return nil
}

// create stores r after checking that its toolset is registered and pins
// its tool (a review that shows values names none), with its place in its run's trace (Review.PlaceInTrace: the
// traceparent its Task carried, or one derived from its run id). The
// review is noticed to the notify addresses its Task named, once (notice:
// the notice item's claim; the same Task asking again sends nothing
// more), and on the direct lane never.
func (h *Handler) create(ctx context.Context, r *review.Review, notify []string) (json.RawMessage, error) {
	start := time.Now()
	parent := r.PlaceInTrace(h.externalKey)
	ts, err := h.toolsets.Load(ctx, h.ledger, r.ToolsetID, h.log)
	if err != nil {
		return nil, toolsetError(err)
	}
	// A review that shows values reviews no tool: its toolset must be
	// registered, and nothing is pinned to check.
	if _, ok := ts.Tools[r.Tool]; !ok && !r.Shows() {
		return nil, review.Errorf(review.CodeForbidden, "tool %s is not in toolset %s", r.Tool, r.ToolsetID)
	}
	created, existing, err := h.store.Create(ctx, r)
	if err != nil && !dynamo.Transient(err) {
		// DynamoDB refused the item itself (a ValidationException): asking
		// again cannot help.
		return nil, review.Wrap(review.CodeInternal, err, "the review could not be stored")
	}
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	if !created {
		if !existing.SameRequest(r) {
			return nil, review.Errorf(review.CodeInvalid, "review %s exists with another request for the same task token", r.ID)
		}
		r = existing
	}
	h.log.InfoContext(ctx, "review requested", "review_id", r.ID, "run_id", r.RunID, "step", r.Step, "of", r.Of,
		"tool", r.Tool, "input_digest", r.InputDigest, "requester", r.Requester, "expires_at", review.FormatTime(r.ExpiresAt), "created", created)
	// Created or found again (a retried Task): the event's id is the
	// review's, so it is recorded once either way, and a Task retried
	// after a failed record records it then.
	if err := h.emitRequested(ctx, r); err != nil {
		return nil, err
	}
	// Once per review, whichever request claims it first: a Task retried
	// after a failed record above still notices its review.
	h.notice(ctx, r, notify)
	if created {
		if self, ok := r.Span(); ok {
			h.traceSpan(ctx, "toolgate.review.create", parent, self, start, attribute.String("toolgate.step", r.Step), attribute.String("toolgate.tool", r.Tool))
		}
	}
	return json.Marshal(review.RequestResult{ReviewID: r.ID, Status: r.Status, ExpiresAt: review.FormatTime(r.ExpiresAt)})
}

// emitRequested records r's review.requested event (webhook.EventID of
// the review id), for a review of a run of a Solution of this stage: the
// Solution from the state machine's name (toolgate-<stage>_<solution>),
// its version from the top-level Comment of the definition the execution
// runs (one DescribeStateMachineForExecution,
// stepfunctions.Executions.SolutionVersionOf): the revision the execution
// started on, whether it was started on a version or, as toolgate run
// starts it, on the state machine, so a run started before its Solution
// was published again names the version it runs (docs/webhooks.md, "The
// version a review names"). A Comment naming another Solution, or none,
// records no event. A direct-lane review has no Solution and gets none.
// Failing to describe the execution or record the event is
// REVIEW_UNAVAILABLE (the Task retries); an event recorded but not handed
// to the queue is left to the relay.
func (h *Handler) emitRequested(ctx context.Context, r *review.Review) error {
	if h.webhooks == nil {
		return nil
	}
	parts := strings.Split(r.RunID, ":")
	prefix := tool.StateMachineName(h.stage, "")
	if len(parts) != 8 || parts[5] != "execution" || h.stage == "" || !strings.HasPrefix(parts[6], prefix) || h.executions == nil {
		return nil
	}
	solution := strings.TrimPrefix(parts[6], prefix)
	named, version, err := h.executions.SolutionVersionOf(ctx, r.RunID)
	if err != nil {
		return review.Wrap(review.CodeUnavailable, err, "Step Functions could not describe the execution's state machine")
	}
	if version < 1 || named != solution {
		h.log.WarnContext(ctx, "review.requested not recorded: the execution runs no published version of its Solution", "review_id", r.ID,
			"solution", solution, "definition_solution", named)
		return nil
	}
	data := webhook.ReviewRequestedData{ReviewID: r.ID, Solution: solution, Version: version, Run: parts[7], Step: r.Step, Tool: r.Tool,
		ExpiresAt: review.FormatTime(r.ExpiresAt), DecideCommand: "toolgate review approve " + r.ID + " | toolgate review reject " + r.ID + " --reason TEXT"}
	ev, err := webhook.NewEvent(webhook.ReviewRequested, r.ID, solution, data, time.Now())
	if err != nil {
		return review.Wrap(review.CodeInternal, err, "the review.requested event could not be built")
	}
	if err := h.webhooks.Emit(ctx, ev); errors.Is(err, store.ErrLeftToRelay) {
		h.log.WarnContext(ctx, "review.requested left to the relay", "review_id", r.ID, "event_id", ev.ID, "error", err)
	} else if err != nil {
		return review.Wrap(review.CodeUnavailable, err, "the review.requested event could not be recorded")
	}
	return nil
}

// traceSpan exports a span of name under parent (none: a root of self's
// trace) whose own context is self (a span id every function derives
// alike: shared/review, "PlaceInTrace"), from start to now, and flushes
// it (at most tracing.FlushTimeout). Its attributes are names only.
func (h *Handler) traceSpan(ctx context.Context, name string, parent, self trace.SpanContext, start time.Time, attrs ...attribute.KeyValue) {
	o := tracing.SpanOptions{Parent: parent, TraceID: self.TraceID(), SpanID: self.SpanID(), Start: start, Kind: trace.SpanKindServer, Attributes: attrs}
	if err := h.tracer.Emit(ctx, name, o, ""); err != nil {
		h.log.WarnContext(ctx, "spans not exported", "error", err)
	}
}

func (h *Handler) lane(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	// Members by their exact names, once each (Go's decoder alone would
	// match any letter case and keep the last of duplicates).
	if !utf8.Valid(payload) {
		return nil, review.Errorf(review.CodeInvalid, "review request is not valid UTF-8")
	}
	members, err := tool.DecodeObject("review request", payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	known := tool.FieldNames(review.LaneRequest{})
	for k := range members {
		if !slices.Contains(known, k) {
			return nil, review.Errorf(review.CodeInvalid, "review request field %s is not part of a direct-lane request", strconv.Quote(excerpt.Bytes(k, 40, "...")))
		}
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var req review.LaneRequest
	if err := dec.Decode(&req); err != nil {
		return nil, review.Errorf(review.CodeInvalid, "review request: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if h.callers == nil {
		return nil, review.Errorf(review.CodeForbidden, "this function has no caller verifier")
	}
	switch req.Action {
	case review.LaneRequestAction:
		return h.laneRequest(ctx, req)
	case review.LaneStatusAction:
		if !review.ValidID(req.ReviewID) {
			return nil, review.Errorf(review.CodeInvalid, "%q is not a review id", excerpt.Bytes(req.ReviewID, 40, "..."))
		}
		who, err := h.callers.Verify(ctx, req.Proof, caller.Binding{Action: caller.ActionStatus, Target: req.ReviewID})
		if err != nil {
			return nil, review.CallerError(err)
		}
		r, err := h.store.Get(ctx, req.ReviewID)
		if errors.Is(err, review.ErrNotFound) || (err == nil && (r.TaskToken != "" || r.Requester != who.Principal)) {
			// A review Task's review, or another requester's, is not this
			// caller's to watch.
			return nil, review.Errorf(review.CodeInvalid, "there is no direct-lane review %s of yours", req.ReviewID)
		}
		if err != nil {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		st := review.LaneStatus{ReviewID: r.ID, Status: r.Status, ExpiresAt: review.FormatTime(r.ExpiresAt), Expired: r.Expired(h.store.Now())}
		if r.Status != review.Pending {
			d := r.Decision()
			st.Decision = &d
		}
		return json.Marshal(st)
	}
	return nil, review.Errorf(review.CodeInvalid, "review request: action %q is not request or status", excerpt.Bytes(req.Action, 40, "..."))
}

// laneRequest stores a direct-lane review for its verified requester, with
// the platform's reviewers for the tool.
func (h *Handler) laneRequest(ctx context.Context, req review.LaneRequest) (json.RawMessage, error) {
	switch {
	case req.ReviewID != "":
		return nil, review.Errorf(review.CodeInvalid, "review request: a new review's id is chosen by the function")
	case req.Input == nil:
		return nil, review.Errorf(review.CodeInvalid, "review request: input is missing")
	case len(req.Reviewers) > 0:
		return nil, review.Errorf(review.CodeInvalid, "review request: a direct-lane requester does not choose reviewers; the platform names them per tool (%s)", review.EnvDirectReviewers)
	}
	_, digest, err := tool.InputDigest(req.Input)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "review request: %s", tool.Classify(err).Message)
	}
	who, err := h.callers.Verify(ctx, req.Proof, review.RequestBinding(req, digest))
	if err != nil {
		return nil, review.CallerError(err)
	}
	if prefix := lane.DirectRunPrefix(who.ARN); !strings.HasPrefix(req.RunID, prefix) || len(req.RunID) == len(prefix) {
		return nil, review.Errorf(review.CodeForbidden, "run id %q is not in your direct-lane namespace %s<id>", excerpt.Bytes(req.RunID, 80, "..."), prefix)
	}
	reviewers := h.direct.Reviewers[req.Tool]
	if len(reviewers) == 0 {
		return nil, review.Errorf(review.CodeForbidden, "the direct lane is closed for %s: the platform names no direct-lane reviewers for it (%s)", excerpt.Bytes(req.Tool, 64, "..."), review.EnvDirectReviewers)
	}
	if max := h.direct.MaxTimeoutSeconds; req.TimeoutSeconds > max {
		return nil, review.Errorf(review.CodeInvalid, "review request: timeout_seconds %d is over the direct lane's %d", req.TimeoutSeconds, max)
	}
	r, err := review.New(review.Params{ID: review.NewID(), RunID: req.RunID, Step: req.Step, Of: req.Of, Tool: req.Tool, ToolsetID: req.ToolsetID,
		Input: req.Input, Reviewers: reviewers, TimeoutSeconds: req.TimeoutSeconds, Requester: who.Principal})
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	return h.create(ctx, r, nil)
}

// toolsetError maps the toolset cache's tool contract error to a review
// code: an unregistered or unreadable toolset is CodeForbidden, an
// unavailable ledger CodeUnavailable.
func toolsetError(err error) error {
	te := tool.Classify(err)
	switch te.Code {
	case tool.PermissionDenied:
		return review.Errorf(review.CodeForbidden, "%s", te.Message)
	case tool.UpstreamUnavailable:
		return review.Wrap(review.CodeUnavailable, err, "%s", te.Message)
	}
	return review.Wrap(review.CodeInternal, err, "internal error")
}
