package request

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// MemberPark is the member of a park Task's payload that routes it to the
// park route (docs/parking.md, "Recording a park"); the payload's other
// member is MemberTaskToken.
const (
	MemberPark      = "park"
	MemberTaskToken = "task_token"
)

// maxParkPayloadBytes bounds a park Task's payload: its members are names,
// a run's execution ARN, a seq and a task token (at most 1024 bytes,
// AWS Step Functions API reference, SendTaskSuccess "taskToken").
const maxParkPayloadBytes = 16 << 10

// ParkAnswer is the park route's answer, which Step Functions ignores (a
// waitForTaskToken Task ends when review-decision sends its token): the
// park's id and status.
type ParkAnswer struct {
	ParkID string      `json:"park_id"`
	Status park.Status `json:"status"`
}

// parkTask is a decoded park Task's payload.
type parkTask struct {
	req   park.Request
	token string
}

// decodeParkTask parses a park Task's payload strictly: valid UTF-8,
// exactly the members park and task_token, park exactly park.Request's
// members, each once and none null; run_id an execution ARN, seq a
// tool.Seq, idempotency_key "<run_id>/<seq>", timeout_seconds 1 ..
// park.MaxTimeoutSeconds, the names not empty.
func decodeParkTask(data []byte) (*parkTask, error) {
	const what = "park request"
	if len(data) > maxParkPayloadBytes {
		return nil, fmt.Errorf("%s is %d bytes, over %d", what, len(data), maxParkPayloadBytes)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s is not valid UTF-8", what)
	}
	outer, err := tool.DecodeObject(what, data)
	if err != nil {
		return nil, err
	}
	if err := exactMembers(what, outer, MemberPark, MemberTaskToken); err != nil {
		return nil, err
	}
	var t parkTask
	if err := json.Unmarshal(outer[MemberTaskToken], &t.token); err != nil || t.token == "" {
		return nil, fmt.Errorf("%s field %q is not a non-empty string", what, MemberTaskToken)
	}
	inner, err := tool.DecodeObject(what+" field \"park\"", outer[MemberPark])
	if err != nil {
		return nil, err
	}
	if err := exactMembers(what+" field \"park\"", inner, tool.FieldNames(&t.req)...); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(outer[MemberPark]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t.req); err != nil {
		return nil, fmt.Errorf("%s field \"park\": %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	r := &t.req
	if _, ok := review.ParseExecutionARN(r.RunID); !ok {
		return nil, fmt.Errorf("%s: run_id %q is not an execution ARN", what, excerpt.Bytes(r.RunID, 200, "..."))
	}
	if err := tool.Seq(r.Seq).Valid(); err != nil {
		return nil, fmt.Errorf("%s: seq: %w", what, err)
	}
	if r.IdempotencyKey != tool.Seq(r.Seq).KeyIn(r.RunID) {
		return nil, fmt.Errorf("%s: idempotency_key is not <run_id>/<seq>", what)
	}
	for name, v := range map[string]string{"step": r.Step, "tool": r.Tool, "toolset_id": r.ToolsetID, "run_started_at": r.RunStartedAt} {
		if v == "" || len(v) > 1024 {
			return nil, fmt.Errorf("%s: %s is empty or over 1024 bytes", what, name)
		}
	}
	if r.TimeoutSeconds < 1 || r.TimeoutSeconds > park.MaxTimeoutSeconds {
		return nil, fmt.Errorf("%s: timeout_seconds %d is not 1 .. %d", what, r.TimeoutSeconds, park.MaxTimeoutSeconds)
	}
	return &t, nil
}

// exactMembers reports the first member of members missing from seen, or
// null there, or the first member of seen not among them.
func exactMembers(what string, seen map[string]json.RawMessage, members ...string) error {
	for _, m := range members {
		v, ok := seen[m]
		if !ok {
			return fmt.Errorf("%s field %q is missing", what, m)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			return fmt.Errorf("%s field %q must not be null", what, m)
		}
	}
	for k := range seen {
		if !slices.Contains(members, k) {
			return fmt.Errorf("%s field %q is not part of the park Task's payload", what, excerpt.Bytes(k, 40, "..."))
		}
	}
	return nil
}

// parkRoute records the park a park Task asks for (docs/parking.md,
// "Recording a park"): it decodes the payload strictly
// (REVIEW_INVALID_REQUEST), checks the run as a review Task's (an
// execution ARN, never a direct-lane run id; a gated step's run has a
// verified start of this deployment's account, REVIEW_FORBIDDEN) and the
// toolset (registered, holding the tool); finds the call's newest PARKED
// row of the payload's key and tool (one Query; none:
// REVIEW_INVALID_REQUEST), refusing a call that parked more than
// park.MaxParks times (PARK_LIMIT, nothing recorded); records the park
// once, the latest Task's token waiting (Store.Record); and records the
// cause's webhook event under the id the dispatcher would have used (the
// PARKED row's key). DynamoDB failing is REVIEW_UNAVAILABLE, which the
// park Task retries.
func (h *Handler) parkRoute(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	if h.parks == nil {
		return nil, review.Errorf(review.CodeInternal, "this function records no parks")
	}
	t, err := decodeParkTask(payload)
	if err != nil {
		return nil, review.Errorf(review.CodeInvalid, "%s", err.Error())
	}
	r := &t.req
	if lane.IsDirectRunID(r.RunID) {
		return nil, review.Errorf(review.CodeForbidden, "run id %q is a direct-lane run id; park Tasks run under their execution's ARN", excerpt.Bytes(r.RunID, 80, "..."))
	}
	if err := h.checkParkRun(ctx, r); err != nil {
		return nil, err
	}
	ts, err := h.toolsets.Load(ctx, h.ledger, r.ToolsetID, h.log)
	if err != nil {
		return nil, toolsetError(err)
	}
	pinned, ok := ts.Tools[r.Tool]
	if !ok {
		return nil, review.Errorf(review.CodeForbidden, "tool %s is not in toolset %s", r.Tool, r.ToolsetID)
	}
	row, err := h.parkedRow(ctx, r)
	if err != nil {
		return nil, err
	}
	p := &park.Park{
		ID: park.ID(row.PK, row.SK), RunID: r.RunID, Step: r.Step, Seq: r.Seq, IdempotencyKey: r.IdempotencyKey, Tool: r.Tool,
		ToolsetID: r.ToolsetID, Cause: row.Cause, Gated: r.Gated, PinnedDigest: row.PinnedDigest, CurrentDigest: row.CurrentDigest,
		ChangedPointers: row.ChangedPointers, AdditivePointers: park.AdditiveOf(row.ChangedPointers, row.AdditivePointers), Target: row.Target, Scope: row.Scope, RowSK: row.SK, TaskToken: t.token,
	}
	created, cur, err := h.parks.Record(ctx, p, r.TimeoutSeconds)
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the park could not be recorded")
	}
	h.log.InfoContext(ctx, "call parked", "park_id", cur.ID, "run_id", r.RunID, "step", r.Step, "seq", r.Seq, "tool", r.Tool,
		"cause", string(cur.Cause), "status", string(cur.Status), "created", created, "token_is_latest", cur.TaskToken == t.token)
	detail := "tool " + r.Tool
	if pinned.MCP != nil {
		detail = "MCP tool " + pinned.MCP.Server + "." + pinned.MCP.Name
	}
	if row.Cause == park.CredentialsExpired && row.Target != "" {
		detail = "target " + row.Target
	}
	// Recorded or found again (a retried Task): the event's id is the
	// PARKED row's, so it is recorded once either way.
	if err := h.emitParked(ctx, cur, row, detail); err != nil {
		return nil, err
	}
	return json.Marshal(ParkAnswer{ParkID: cur.ID, Status: cur.Status})
}

// checkParkRun checks a park Task's run: an execution of this
// deployment's account (when it is configured) and of a state machine of
// this stage's Solutions (when the stage is), and, as a review Task's
// run, for a gated step, one with a verified start (its Starter state) of
// a principal of this deployment's account. An ungated step's run may have
// none (a state machine published before a step that can park gave its
// Solution the Starter state); one it has is checked alike.
func (h *Handler) checkParkRun(ctx context.Context, r *park.Request) error {
	e, _ := review.ParseExecutionARN(r.RunID)
	prefix := tool.StateMachineName(h.stage, "")
	if h.account != "" && e.Account != h.account || h.stage != "" && (!strings.HasPrefix(e.StateMachine, prefix) || e.StateMachine == prefix) {
		return review.Errorf(review.CodeForbidden, "execution %s is not of a Solution of this deployment (state machines %s<solution>)", excerpt.Bytes(r.RunID, 200, "..."), prefix)
	}
	starter, err := h.store.Starter(ctx, r.RunID)
	switch {
	case errors.Is(err, review.ErrNotFound) && !r.Gated:
		return nil
	case errors.Is(err, review.ErrNotFound):
		return review.Errorf(review.CodeForbidden, "execution %s has no verified start: a Solution with gated tools starts with its Starter state (start runs with toolgate run)", excerpt.Bytes(r.RunID, 200, "..."))
	case err != nil:
		return review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	return h.checkStarter(ctx, r.RunID, starter)
}

// parkedRow is the newest PARKED row of r's call whose idempotency key
// and tool are r's (parkdynamo.Store.ParkedRows): REVIEW_INVALID_REQUEST
// when there is none or it names no cause, PARK_LIMIT when park.MaxParks
// parks of the key's earlier PARKED rows are recorded already
// (recordedParks).
func (h *Handler) parkedRow(ctx context.Context, r *park.Request) (*parkdynamo.Row, error) {
	rows, err := h.parks.ParkedRows(ctx, r.RunID, tool.Seq(r.Seq).SortKey())
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable")
	}
	var newest *parkdynamo.Row
	var earlier []string // the park ids of the key's other PARKED rows, newest first
	latest := h.parks.Now().Add(maxRowClockSkew).UnixNano()
	for i := range rows {
		row := &rows[i]
		if row.Status != string(park.StatusParked) || row.IdempotencyKey != r.IdempotencyKey {
			continue
		}
		if start, ok := table.RowSKStart(row.SK); !ok || start > latest {
			// No invocation of the call wrote it: a row started in the
			// future would be the newest of every later park.
			h.log.WarnContext(ctx, "a PARKED row started in the future is not a park", "run_id", r.RunID, "seq", r.Seq)
			continue
		}
		if newest == nil && row.Tool == r.Tool {
			newest = row
			continue
		}
		earlier = append(earlier, park.ID(row.PK, row.SK))
	}
	if newest == nil {
		return nil, review.Errorf(review.CodeInvalid, "no parked call: call %s of tool %s has no PARKED ledger row", excerpt.Bytes(r.IdempotencyKey, 300, "..."), r.Tool)
	}
	recorded, err := h.recordedParks(ctx, earlier)
	if err != nil {
		return nil, err
	}
	switch {
	case recorded >= park.MaxParks:
		return nil, review.Errorf(review.CodeParkLimit, "call %s parked %d times already, the most one call may", excerpt.Bytes(r.IdempotencyKey, 300, "..."), recorded)
	case newest.Cause != park.SchemaChanged && newest.Cause != park.CredentialsExpired:
		return nil, review.Errorf(review.CodeInvalid, "the PARKED row of call %s names no cause a park is recorded for", excerpt.Bytes(r.IdempotencyKey, 300, "..."))
	}
	return newest, nil
}

// recordedParks counts the parks among ids (park ids of a call's earlier
// PARKED rows, newest first) that were recorded: one consistent GetItem
// each (ReadParks), until park.MaxParks are found or maxParkLookups were
// asked. A call's bound counts parks, not rows: every tool role writes
// row items of the run's partition, so a PARKED row no park Task recorded
// may be another function's, and must not use up the call's parks
// (docs/parking.md, "Recording a park"). Real rows beyond the lookups
// go uncounted, which can only allow a call more parks, each of which a
// person decides.
func (h *Handler) recordedParks(ctx context.Context, ids []string) (int, error) {
	recorded := 0
	for i, id := range ids {
		if i == maxParkLookups || recorded == park.MaxParks {
			break
		}
		switch _, err := h.parks.Get(ctx, id); {
		case err == nil:
			recorded++
		case !errors.Is(err, parkdynamo.ErrNotFound):
			return 0, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable")
		}
	}
	return recorded, nil
}

// maxParkLookups bounds the GetItems recordedParks makes for one park:
// park.MaxParks real parks among three times as many rows no park Task
// recorded.
const maxParkLookups = 4 * park.MaxParks

// maxRowClockSkew bounds how far after review-request's clock a PARKED
// row's start may lie (docs/parking.md, "Recording a park"): the row was
// written before its park Task ran, by a function whose clock Lambda
// keeps in sync, so a row started later than this was written by no
// invocation of the call.
const maxRowClockSkew = time.Minute

// decideCommand is how a person decides park p, for its event.
func decideCommand(p *park.Park) string {
	if p.Cause == park.CredentialsExpired {
		return "toolgate credentials set ... then toolgate parked resume " + p.ID
	}
	return "toolgate parked approve " + p.ID + " | toolgate parked reject " + p.ID + " --reason TEXT"
}

// emitParked records park p's event, of its cause's type, with the id the
// dispatcher gives a PARKED row's event (webhook.EventID of the row's
// partition key, a newline and its sort key) and the dispatcher's payload
// (webhook.CallData) with the park's id and its decide command, for a run
// that is an execution (webhook.RunOf). Failing to record it is
// REVIEW_UNAVAILABLE (the Task retries); recorded but not handed to the
// queue, it is left to the relay.
func (h *Handler) emitParked(ctx context.Context, p *park.Park, row *parkdynamo.Row, detail string) error {
	if h.webhooks == nil {
		return nil
	}
	solution, run, ok := webhook.RunOf(p.RunID)
	if !ok {
		return nil
	}
	data := webhook.CallData{Run: run, Key: p.IdempotencyKey, Tool: p.Tool, Cause: string(p.Cause), Detail: excerpt.Bytes(detail, 500, "..."),
		ParkID: p.ID, DecideCommand: decideCommand(p)}
	ev, err := webhook.NewEvent(webhook.Type(p.Cause), table.Row.Key(p.RunID)+"\n"+row.SK, solution, data, time.Now())
	if err != nil {
		return review.Wrap(review.CodeInternal, err, "the %s event could not be built", p.Cause)
	}
	if err := h.webhooks.Emit(ctx, ev); errors.Is(err, store.ErrLeftToRelay) {
		h.log.WarnContext(ctx, "park event left to the relay", "park_id", p.ID, "event_id", ev.ID, "error", err)
	} else if err != nil {
		return review.Wrap(review.CodeUnavailable, err, "the %s event could not be recorded", p.Cause)
	}
	return nil
}
