package starter

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/sqsbatch"
	"github.com/toolgate/toolgate/shared/tool"
)

// MaxConcurrency is how many records of one batch run at once: the
// event-source mapping's batch size is 10 (infra/platform).
const MaxConcurrency = 10

// FiringSlack is how long before its schedule's added_at a firing's
// scheduled time may be and still be the schedule's: the sources function
// stamps added_at (whole seconds) before it creates the EventBridge
// Scheduler schedule, whose firings are due after that, and a minute
// allows for a scheduled time given to the minute. An earlier firing was
// one of a removed schedule of the same name.
const FiringSlack = time.Minute

// NameKey derives the key under which runs' execution names are derived
// (inbound.ExecutionName) from the stage's external key:
// HMAC-SHA256(external key, inboundapi.ExecutionNameKeyInfo), a key of its
// own without a new secret (domain separation: no other use of the
// external key MACs this label).
func NameKey(externalKey []byte) []byte {
	m := hmac.New(sha256.New, externalKey)
	m.Write([]byte(inboundapi.ExecutionNameKeyInfo))
	return m.Sum(nil)
}

// Store is what the function reads and writes in the table
// (shared/inbound/store's Store).
type Store interface {
	Event(ctx context.Context, k store.EventKey) (store.Event, error)
	SourceRun(ctx context.Context, name string) (store.Source, error)
	Schedule(ctx context.Context, name string) (store.Schedule, error)
	PutFiring(ctx context.Context, k store.EventKey, now, expires time.Time) (*store.Event, error)
	MarkStarted(ctx context.Context, k store.EventKey, executionARN string, now time.Time) error
	MarkFailed(ctx context.Context, k store.EventKey, problems []string, now time.Time) error
}

// SFNAPI is the part of the Step Functions client the function uses:
// reading a state machine's definition, starting an execution, and
// asking whether one exists.
type SFNAPI interface {
	DescribeStateMachine(ctx context.Context, in *sfn.DescribeStateMachineInput, opts ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error)
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// StartRecorder records a run's start through review-request's start
// alias as session of the inbound-start role (Lane): req's Proof is
// signed there. An error wrapping ErrStartRecorded is the lane's
// REVIEW_FORBIDDEN [start-recorded]; any other error is transient for
// the caller (the message is retried).
type StartRecorder interface {
	RecordStart(ctx context.Context, session string, req review.StartRequest) error
}

// ErrStartRecorded is a StartRecorder's error (wrapped) when the
// execution name has a start record of another starter or input digest.
var ErrStartRecorded = errors.New("the execution name has a start record of another starter or input")

// Config is what New wires; every field but Now and Log is required.
type Config struct {
	Function FunctionConfig
	Store    Store
	SFN      SFNAPI
	Starts   StartRecorder
	// NameKey is NameKey(the stage's external key).
	NameKey []byte
	Now     func() time.Time // nil: time.Now
	Log     *slog.Logger     // nil: slog.Default()
}

// Handler is the inbound-start function's Lambda handler.
type Handler struct{ c Config }

// New returns the handler of c.
func New(c Config) *Handler {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Handler{c: c}
}

// Handle is the Lambda handler: an SQS batch of the inbound queue, whose
// records run at most MaxConcurrency at once. The answer names each
// record that failed for a reason that may pass (SQS partial batch
// responses: SQS delivers it again, and moves it to the dead-letter
// queue after the queue's maxReceiveCount, 5). A record done, refused
// for good (its event item FAILED) or undecodable is not named.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Run(ctx, ev, MaxConcurrency, h.Record, func(r events.SQSMessage, err error) {
		h.c.Log.WarnContext(ctx, "inbound record failed, to be retried", "message_id", r.MessageId, "error", err.Error())
	}), nil
}

// job is one event or firing to start a run for.
type job struct {
	key      store.EventKey
	solution string
	// input is the run's input: {source, event_id, event_type, payload}
	// or the schedule's input.
	input   json.RawMessage
	endUser string
	origin  review.StartOrigin
	// prefix, a and b name the execution (inbound.ExecutionName).
	prefix, a, b string
	session      string
}

// Record handles one message of the inbound queue: it starts the run its
// event or firing asks for, once (docs/webhooks.md, "How an event starts
// a run"; docs/schedules.md, "How a firing starts a run"). nil means the
// message is done: a run started (now or before), an event refused for
// good and recorded FAILED, or a message that never could start one
// (undecodable, an event item gone, a schedule removed), each logged. An
// error is transient: the message is to be delivered again.
func (h *Handler) Record(ctx context.Context, r events.SQSMessage) error {
	msg, err := inboundapi.DecodeMessage([]byte(r.Body))
	if err != nil {
		// Never retried: it would fail the same way on every receive.
		h.c.Log.WarnContext(ctx, "inbound message dropped: undecodable", "message_id", r.MessageId, "error", err.Error())
		return nil
	}
	var j *job
	switch origin, name, id := msg.Origin(); origin {
	case inboundapi.OriginSource:
		j, err = h.sourceJob(ctx, name, id)
	default:
		j, err = h.scheduleJob(ctx, name, id)
	}
	if err != nil || j == nil {
		return err
	}
	return h.start(ctx, j)
}

// done reports whether an event or firing has nothing left to do.
func done(status string) bool { return status == store.StatusStarted || status == store.StatusFailed }

// sourceJob reads the event of source and id and its source. nil, nil:
// nothing to do (no item, or a run started or refused already). An event
// whose source is gone, or was added after the event's ReceivedAt (a
// source of the same name added since), is recorded FAILED.
func (h *Handler) sourceJob(ctx context.Context, source, id string) (*job, error) {
	k := store.EventKey{Origin: inboundapi.OriginSource, Name: source, ID: id}
	ev, err := h.c.Store.Event(ctx, k)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.c.Log.WarnContext(ctx, "inbound message dropped: no event item (never received, or past its retention)", "origin", k.Origin, "name", source, "event", id)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the event: %w", err)
	case done(ev.Status):
		h.c.Log.InfoContext(ctx, "inbound event already handled", "origin", k.Origin, "name", source, "event", id, "status", ev.Status)
		return nil, nil
	}
	src, err := h.c.Store.SourceRun(ctx, source)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, h.fail(ctx, k, fmt.Sprintf("the source %s was removed before the event started a run", source))
	case err != nil:
		return nil, fmt.Errorf("read the source: %w", err)
	}
	if ev.ReceivedAt.Before(src.AddedAt) {
		// Both whole seconds: the event was received for a source removed
		// since, whose secret signed it; the source of the same name now
		// is another one, whose Solution and end user it never asked for.
		return nil, h.fail(ctx, k, fmt.Sprintf("the event was received at %s, before the source %s was added at %s: it was an event of a removed source of the same name",
			ev.ReceivedAt.UTC().Format(time.RFC3339), source, src.AddedAt.UTC().Format(time.RFC3339)))
	}
	if !json.Valid(ev.Body) {
		return nil, h.fail(ctx, k, "the event's body is not JSON")
	}
	input, err := json.Marshal(sourceInput{Source: source, EventID: id, EventType: ev.EventType, Payload: ev.Body})
	if err != nil {
		return nil, h.fail(ctx, k, "the event's body is not JSON")
	}
	b := id
	if src.Scheme == string(inbound.GitHub) {
		// GitHub signs the body but not X-GitHub-Delivery: a body captured
		// and replayed under a new delivery id must name the same run.
		sum := sha256.Sum256(ev.Body)
		b = "sha256:" + hex.EncodeToString(sum[:])
	}
	return &job{key: k, solution: src.Solution, input: input, endUser: src.EndUser,
		// Whoever held one of the source's secrets could have signed this
		// event: the start record names them, and four eyes refuse them as
		// approvers of the run (docs/identity.md, "Four eyes").
		origin: review.StartOrigin{Kind: inboundapi.OriginSource, Name: source, AddedBy: src.AddedBy, Event: id, Holders: src.SecretHolders},
		prefix: inbound.PrefixInbound, a: source, b: b, session: inbound.SessionPrefixSource + source}, nil
}

// sourceInput is the run's input of a source's event.
type sourceInput struct {
	Source    string          `json:"source"`
	EventID   string          `json:"event_id"`
	EventType string          `json:"event_type"`
	Payload   json.RawMessage `json:"payload"`
}

// scheduleJob records the firing of schedule at id, its scheduled time
// (inboundapi.ScheduledTimeLayout, as DecodeMessage checked it), with
// PutFiring and reads the schedule. nil, nil: nothing to do (the schedule
// removed, or the firing started or refused already). A firing of a
// paused schedule, or scheduled over FiringSlack before the schedule's
// AddedAt, is recorded FAILED.
func (h *Handler) scheduleJob(ctx context.Context, schedule, id string) (*job, error) {
	k := store.EventKey{Origin: inboundapi.OriginSchedule, Name: schedule, ID: id}
	sch, err := h.c.Store.Schedule(ctx, schedule)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Nothing is recorded: the firing's item would outlive its
		// schedule for nobody to read.
		h.c.Log.WarnContext(ctx, "schedule firing dropped: the schedule was removed", "origin", k.Origin, "name", schedule, "event", id)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the schedule: %w", err)
	}
	now := h.c.Now()
	existing, err := h.c.Store.PutFiring(ctx, k, now, now.Add(h.c.Function.Retention))
	switch {
	case err != nil:
		return nil, fmt.Errorf("record the firing: %w", err)
	case existing != nil && done(existing.Status):
		h.c.Log.InfoContext(ctx, "inbound event already handled", "origin", k.Origin, "name", schedule, "event", id, "status", existing.Status)
		return nil, nil
	}
	if at, perr := time.Parse(time.RFC3339, id); perr == nil && at.Before(sch.AddedAt.Add(-FiringSlack)) {
		// A firing of a removed schedule of the same name (redriven from
		// the dead-letter queue, say): the schedule now is another one,
		// whose Solution and input it never asked for.
		return nil, h.fail(ctx, k, fmt.Sprintf("the firing was scheduled at %s, before the schedule %s was added at %s: it was a firing of a removed schedule of the same name",
			id, schedule, sch.AddedAt.UTC().Format(time.RFC3339)))
	}
	if sch.State != inboundapi.StateEnabled {
		return nil, h.fail(ctx, k, fmt.Sprintf("the schedule %s was %s when its firing arrived", schedule, sch.State))
	}
	return &job{key: k, solution: sch.Solution, input: sch.Input, endUser: sch.EndUser,
		// The schedule's adder chose the run's input: its one holder.
		origin: review.StartOrigin{Kind: inboundapi.OriginSchedule, Name: schedule, AddedBy: sch.AddedBy, Event: id, Holders: []string{sch.AddedBy}},
		prefix: inbound.PrefixSchedule, a: schedule, b: id, session: inbound.SessionPrefixSchedule + schedule}, nil
}

// executionInput is a run's execution input: the input and meta, as
// toolgate run sends it (resolver/cli/runner ExecutionInput).
type executionInput struct {
	Input json.RawMessage `json:"input"`
	Meta  executionMeta   `json:"meta"`
}

type executionMeta struct {
	EndUser string `json:"end_user,omitempty"`
}

// start starts j's run: the definition read and the input checked against
// its record (refused: FAILED), the start recorded when the definition
// begins with the Starter state, the execution started (an input Step
// Functions refuses, InvalidExecutionInput: FAILED), and the item marked
// STARTED.
func (h *Handler) start(ctx context.Context, j *job) error {
	smARN := h.c.Function.StateMachineARN(j.solution)
	d, err := h.c.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(smARN)})
	var missing *sfntypes.StateMachineDoesNotExist
	switch {
	case errors.As(err, &missing):
		return h.fail(ctx, j.key, fmt.Sprintf("the Solution %s is not published on stage %s (no state machine %s)", j.solution, h.c.Function.Stage, smARN))
	case err != nil:
		return fmt.Errorf("describe state machine %s: %w", smARN, err)
	}
	def := []byte(aws.ToString(d.Definition))
	rec, err := inputrecord.Read(def)
	if err != nil {
		return h.fail(ctx, j.key, fmt.Sprintf("state machine %s: %v", smARN, err))
	}
	if err := rec.Check(j.input); err != nil {
		var ie *inputrecord.Error
		if errors.As(err, &ie) {
			return h.fail(ctx, j.key, ie.Lines()...)
		}
		// Not UTF-8, not JSON, or a schema that does not compile: the
		// error may quote the input, so it is not recorded.
		return h.fail(ctx, j.key, "the input could not be checked against the Solution's input record (not UTF-8 JSON, or a recorded schema that does not compile)")
	}
	starter, err := inputrecord.HasStarter(def)
	if err != nil {
		return h.fail(ctx, j.key, fmt.Sprintf("state machine %s: %v", smARN, err))
	}
	if j.endUser != "" && !starter {
		return h.fail(ctx, j.key, fmt.Sprintf("the Solution %s records no start (no gated tools, workflow steps or credentials), so its runs cannot act for end user %s", j.solution, j.endUser))
	}
	body, err := json.Marshal(executionInput{Input: j.input, Meta: executionMeta{EndUser: j.endUser}})
	if err != nil {
		return h.fail(ctx, j.key, "the input is not JSON")
	}
	name := inbound.ExecutionName(h.c.NameKey, j.prefix, j.a, j.b)
	execARN := h.c.Function.ExecutionARN(j.solution, name)
	if starter {
		_, digest, err := tool.InputDigest(body)
		if err != nil {
			return h.fail(ctx, j.key, "the input's digest: "+redactedDigestError(body))
		}
		origin := j.origin
		req := review.StartRequest{Action: review.StartAction, ExecutionARN: execARN, InputDigest: digest, EndUser: j.endUser, Origin: &origin}
		err = h.c.Starts.RecordStart(ctx, j.session, req)
		switch {
		case errors.Is(err, ErrStartRecorded):
			// Another input or starter holds the name. A run of that name
			// may have started (then this event is done); if none has,
			// the message is retried, and dead-lettered in the end.
			exists, derr := h.executionExists(ctx, execARN)
			switch {
			case derr != nil:
				return derr
			case !exists:
				return fmt.Errorf("record the start of %s: %w, and no such execution started", execARN, err)
			}
			return h.started(ctx, j, execARN)
		case err != nil:
			return fmt.Errorf("record the start of %s: %w", execARN, err)
		}
	}
	_, err = h.c.SFN.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(smARN), Name: aws.String(name), Input: aws.String(string(body))})
	var exists *sfntypes.ExecutionAlreadyExists
	var refused *sfntypes.InvalidExecutionInput
	switch {
	case errors.As(err, &exists):
		// Started before: by this message's earlier receive, or by a
		// duplicate message of the same event.
	case errors.As(err, &refused):
		// Step Functions' own reader refuses the input (the checks above
		// passed it): it would refuse every receive of the message alike.
		// Its message is not recorded: it may quote the input.
		return h.fail(ctx, j.key, "Step Functions refused the execution input (InvalidExecutionInput)")
	case err != nil:
		return fmt.Errorf("start execution %s: %w", execARN, err)
	}
	return h.started(ctx, j, execARN)
}

// started marks j's item STARTED with the execution's ARN.
func (h *Handler) started(ctx context.Context, j *job, execARN string) error {
	if err := h.c.Store.MarkStarted(ctx, j.key, execARN, h.c.Now()); err != nil {
		return fmt.Errorf("mark the event started: %w", err)
	}
	h.c.Log.InfoContext(ctx, "inbound run started", "origin", j.key.Origin, "name", j.key.Name, "event", j.key.ID, "execution_arn", execARN)
	return nil
}

// executionExists asks Step Functions whether the execution arn exists.
func (h *Handler) executionExists(ctx context.Context, arn string) (bool, error) {
	_, err := h.c.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *sfntypes.ExecutionDoesNotExist
	switch {
	case errors.As(err, &missing):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("describe execution %s: %w", arn, err)
	}
	return true, nil
}

// fail records k FAILED with problems (lines that name rules, sizes and
// JSON Pointers, never a value of the input) and logs it; its error is
// MarkFailed's, which makes the message be retried.
func (h *Handler) fail(ctx context.Context, k store.EventKey, problems ...string) error {
	problems = bounded(problems)
	if err := h.c.Store.MarkFailed(ctx, k, problems, h.c.Now()); err != nil {
		return fmt.Errorf("mark the event failed: %w", err)
	}
	h.c.Log.WarnContext(ctx, "inbound event refused: no run started", "origin", k.Origin, "name", k.Name, "event", k.ID, "problems", problems)
	return nil
}

// redactedDigestError is what is recorded of tool.InputDigest's refusal
// of input, which has two causes: an object naming one member twice
// (RFC 8259 §4 leaves such names to each reader; RFC 8785, the digest's
// canonical form, refuses them), or a number it cannot digest exactly.
// It says which, never quoting a name or a number.
func redactedDigestError(input []byte) string {
	if nameTwice(input) {
		return "an object in the input names a member twice (RFC 8785 refuses it; tool.InputDigest)"
	}
	return "a number in the input cannot be digested exactly (tool.InputDigest)"
}

// nameTwice reports whether a JSON object in input (valid JSON) names
// one member twice.
func nameTwice(input []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	// names holds, per open object or array (nil), the names seen.
	var names []map[string]bool
	key := false // the next token of the innermost object is a name
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'):
			names = append(names, map[string]bool{})
			key = true
			continue
		case json.Delim('['):
			names = append(names, nil)
			key = false
			continue
		case json.Delim('}'), json.Delim(']'):
			names = names[:len(names)-1]
		default:
			if n, ok := t.(string); ok && key {
				if names[len(names)-1][n] {
					return true
				}
				names[len(names)-1][n] = true
				key = false
				continue
			}
		}
		// A value ended: in an object, a name comes next.
		key = len(names) > 0 && names[len(names)-1] != nil
	}
}

// bounded is problems as an event item holds them: at most
// store.MaxProblems lines (the last saying how many more there were),
// each cut to store.MaxProblemBytes at a character's start.
func bounded(problems []string) []string {
	out := make([]string, 0, min(len(problems), store.MaxProblems))
	for i, p := range problems {
		if i == store.MaxProblems-1 && len(problems) > store.MaxProblems {
			out = append(out, fmt.Sprintf("and %d more", len(problems)-i))
			break
		}
		if len(p) > store.MaxProblemBytes {
			cut := store.MaxProblemBytes - len("...")
			for cut > 0 && !utf8.RuneStart(p[cut]) {
				cut--
			}
			p = p[:cut] + "..."
		}
		out = append(out, p)
	}
	return out
}
