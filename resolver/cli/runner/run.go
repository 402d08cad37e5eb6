package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/statemachines"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/tool"
)

// SFNAPI is the part of the Step Functions client running uses: finding
// the state machine (ListStateMachines), reading its definition
// (DescribeStateMachine), starting the execution (StartExecution) and
// following it (GetExecutionHistory, DescribeExecution).
type SFNAPI interface {
	ListStateMachines(ctx context.Context, in *sfn.ListStateMachinesInput, opts ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error)
	DescribeStateMachine(ctx context.Context, in *sfn.DescribeStateMachineInput, opts ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error)
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	GetExecutionHistory(ctx context.Context, in *sfn.GetExecutionHistoryInput, opts ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error)
}

// StartRecorder asks review-request, through its start alias, for the
// start record of the execution executionARN whose whole execution input
// has digest inputDigest (tool.InputDigest; review.StartRequest, with a
// caller proof bound to both). An error means nothing was recorded (or a
// record already exists for the name), and Start starts nothing.
type StartRecorder func(ctx context.Context, executionARN, inputDigest string) error

// Meta is the execution input's meta (docs/solutions.md, "The execution
// input"): the W3C traceparent the run's trace continues (a version-00
// traceparent, 55 characters, or empty: the run's trace id is then
// derived from its run id; docs/tracing.md), and end_user, the end-user
// id the run is asked to act for (toolgate run --end-user; shared/enduser
// CheckID), which the start request names too. Whether the run acts for
// it is the start record's word, never this member's: tools read their
// end user from the Starter's verified answer (docs/identity.md, "End
// users"). It carries no caller proof: the start is recorded before the
// execution starts (StartRecorder).
type Meta struct {
	Traceparent string `json:"traceparent,omitempty"`
	EndUser     string `json:"end_user,omitempty"`
}

// ExecutionInput is a run's execution input: the user's input and meta,
// apart.
type ExecutionInput struct {
	Input json.RawMessage `json:"input"`
	Meta  Meta            `json:"meta"`
}

// executionName matches what Step Functions accepts as an execution name
// (1 to 80 characters; no whitespace, brackets, wildcards or the
// characters " # % \ ^ | ~ ` $ & , ; : /, per StartExecution's name
// parameter), restricted here to letters, digits, "-" and "_".
var executionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// checkExecutionName refuses a run's execution name that is not
// executionName's or that starts with tool.ChildNamePrefix,
// inbound.PrefixInbound or inbound.PrefixSchedule.
func checkExecutionName(name string) error {
	if !executionName.MatchString(name) {
		return fmt.Errorf("execution name %q must be 1 to 80 letters, digits, - or _", name)
	}
	if strings.HasPrefix(name, tool.ChildNamePrefix) {
		return fmt.Errorf("execution name %q starts with %q, which only a workflow step's child runs are named with: choose another name", name, tool.ChildNamePrefix)
	}
	for _, p := range []string{inbound.PrefixInbound, inbound.PrefixSchedule} {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("execution name %q starts with %q, which only inbound and scheduled runs are named with (docs/identity.md, \"Four eyes\"): choose another name", name, p)
		}
	}
	return nil
}

// ErrStarterOutdated is Start's error for a state machine published by an
// earlier toolgate, whose Starter state reads a start proof from the
// execution input: toolgate run sends none (CHANGELOG.md, Migration:
// publish the Solution again).
var ErrStarterOutdated = inputrecord.ErrStarterOutdated

// ErrNoStartForEndUser is Start's refusal of an end user for a state
// machine without the Starter state: its runs have no start record, which
// is where an end user is recorded, and no tool of it presents
// credentials (a toolset declaring auth always gives the Starter).
var ErrNoStartForEndUser = errors.New("its runs record no start (no gated tools, workflow steps or credentials), so they cannot act for an end user: start it without --end-user")

// ErrNoStartForFork is StartFork's and Forkable's refusal of a state
// machine without the Starter state as a fork: its runs record no start,
// which is where a fork's parent is recorded, and its tool Tasks then send
// a start member without forked_from, so every call of the parent would
// be made again (docs/fork.md, "Forking a run").
var ErrNoStartForFork = errors.New("its runs record no start (no gated tools, workflow steps, parkable steps or credentials), so its calls could not learn the run they fork and every call of that run would be made again")

// Forkable refuses, with ErrNoStartForFork, a compiled definition (a
// resolver.Result's Definition) without the Starter state as the
// Solution of a fork; ErrStarterOutdated for a Starter that reads a
// start proof.
func Forkable(def []byte) error {
	starter, err := starterOf(def)
	switch {
	case err != nil:
		return err
	case !starter:
		return ErrNoStartForFork
	}
	return nil
}

// StartFork is Start for a fork (toolgate fork): record must ask for the
// start record naming the parent, and a state machine whose latest
// revision has no Starter state is refused with ErrNoStartForFork before
// anything is recorded or started, as Start refuses an end user there.
func StartFork(ctx context.Context, sf SFNAPI, stage, solution string, input []byte, name string, meta Meta, record StartRecorder) (string, error) {
	return start(ctx, sf, stage, solution, input, name, meta, record, true)
}

// Start starts an execution of a Solution published in stage with input as
// the user's input, under name (generated when empty), which fixes the
// execution's ARN. A name that is not executionName's, or starts with
// tool.ChildNamePrefix (the names of workflow steps' children, which
// review-request's start lane refuses: docs/identity.md, "Lanes"), is
// refused before anything is read, signed or started.
//
// Before anything is recorded or started, Start reads the state machine's
// definition (DescribeStateMachine) and checks input against the
// InputRecord the resolver wrote into it (resolver.ReadInputRecord): its
// size against policy.input_limit_bytes, then the Solution's input
// schema. A refused input is a *resolver.InputError, and nothing is
// started. When the definition has the Starter state (a Solution with
// gated tools or workflow steps), Start then has record write the start
// record for the execution ARN and the digest of the whole execution
// input ({input, meta}; tool.InputDigest), and starts the execution only
// once it is written (docs/identity.md, "Four eyes"); a definition whose
// Starter still reads a start proof is ErrStarterOutdated. A definition
// without the Starter records nothing: its run has no reviews, and no
// requester. The check reads the state machine's latest revision, the one
// StartExecution runs; a publish between the two is not noticed (the
// Starter of a revision published in between refuses a run without a
// record).
//
// meta is the execution input's meta as given (its digest is recorded with
// the rest of the input). A meta.EndUser that is no end-user id
// (enduser.CheckID), or one given for a definition without the Starter
// (which records no start, so no end user; ErrNoStartForEndUser), is
// refused before anything is recorded or started.
func Start(ctx context.Context, sf SFNAPI, stage, solution string, input []byte, name string, meta Meta, record StartRecorder) (string, error) {
	return start(ctx, sf, stage, solution, input, name, meta, record, false)
}

// start is Start, and StartFork when fork is set.
func start(ctx context.Context, sf SFNAPI, stage, solution string, input []byte, name string, meta Meta, record StartRecorder, fork bool) (string, error) {
	if err := deployment.CheckStage(stage); err != nil {
		return "", err
	}
	if name != "" {
		if err := checkExecutionName(name); err != nil {
			return "", err
		}
	}
	if meta.EndUser != "" {
		if err := enduser.CheckID(meta.EndUser); err != nil {
			return "", fmt.Errorf("--end-user: %w", err)
		}
	}
	sm := deployment.StateMachineName(stage, solution)
	arn, err := statemachines.Find(ctx, sf, sm)
	if err != nil {
		return "", err
	}
	if arn == "" {
		return "", fmt.Errorf("state machine %s does not exist: publish the Solution first (toolgate publish)", sm)
	}
	def, err := describe(ctx, sf, arn)
	if err != nil {
		return "", err
	}
	if err := checkInput(arn, def, input); err != nil {
		return "", err
	}
	starter, err := starterOf(def)
	if err != nil {
		return "", fmt.Errorf("state machine %s: %w", sm, err)
	}
	if meta.EndUser != "" && !starter {
		return "", fmt.Errorf("state machine %s: %w", sm, ErrNoStartForEndUser)
	}
	if fork && !starter {
		return "", fmt.Errorf("state machine %s: %w", sm, ErrNoStartForFork)
	}
	if name == "" {
		name = NewName()
	}
	if err := checkExecutionName(name); err != nil {
		return "", err
	}
	execARN, err := executionARN(arn, name)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(ExecutionInput{Input: input, Meta: meta})
	if err != nil {
		return "", fmt.Errorf("the input: %w", err)
	}
	if starter {
		_, digest, err := tool.InputDigest(body)
		if err != nil {
			return "", fmt.Errorf("the input: %w", err)
		}
		if err := record(ctx, execARN, digest); err != nil {
			return "", fmt.Errorf("record the start of %s (nothing was started): %w", execARN, err)
		}
	}
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(string(body)), Name: aws.String(name)}
	out, err := sf.StartExecution(ctx, in)
	if err != nil {
		return "", fmt.Errorf("start execution of %s: %w", sm, err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// NewName is a new execution name as toolgate run chooses one:
// "run-<UTC, 20060102T150405Z>-<16 random hex digits>".
func NewName() string {
	var b [8]byte
	rand.Read(b[:])
	return "run-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// executionARN is the ARN of execution name of state machine arn:
// arn:PARTITION:states:REGION:ACCOUNT:stateMachine:NAME ->
// arn:PARTITION:states:REGION:ACCOUNT:execution:NAME:EXECUTION.
func executionARN(arn, name string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 7 || parts[5] != "stateMachine" {
		return "", fmt.Errorf("state machine ARN %q is not arn:...:stateMachine:NAME", arn)
	}
	parts[5] = "execution"
	return strings.Join(parts, ":") + ":" + name, nil
}

// ExecutionARN is the ARN the execution name of the stage's Solution
// solution will have, read before it starts (toolgate fork names the fork
// to review-decision first): an error when the state machine does not
// exist or name is not one Start takes.
func ExecutionARN(ctx context.Context, sf SFNAPI, stage, solution, name string) (string, error) {
	if err := checkExecutionName(name); err != nil {
		return "", err
	}
	sm := deployment.StateMachineName(stage, solution)
	arn, err := statemachines.Find(ctx, sf, sm)
	if err != nil {
		return "", err
	}
	if arn == "" {
		return "", fmt.Errorf("state machine %s does not exist: publish the Solution first (toolgate publish)", sm)
	}
	return executionARN(arn, name)
}

// CheckInput checks a run's input against the InputRecord of the state
// machine arn's definition (Start). It returns a *resolver.InputError for an
// input the record refuses, another error when the definition cannot be
// read or has no record.
func CheckInput(ctx context.Context, sf SFNAPI, arn string, input []byte) error {
	def, err := describe(ctx, sf, arn)
	if err != nil {
		return err
	}
	return checkInput(arn, def, input)
}

// describe returns the definition of state machine arn's latest revision.
func describe(ctx context.Context, sf SFNAPI, arn string) ([]byte, error) {
	d, err := sf.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil {
		return nil, fmt.Errorf("describe state machine %s: %w", arn, err)
	}
	return []byte(aws.ToString(d.Definition)), nil
}

func checkInput(arn string, def, input []byte) error {
	rec, err := resolver.ReadInputRecord(def)
	if err != nil {
		return fmt.Errorf("state machine %s: %w", arn, err)
	}
	return rec.Check(input)
}

// starterOf reports whether a compiled definition starts its runs with
// the Starter state, whose start toolgate run records
// (inputrecord.HasStarter, which inbound-start reads a definition with
// too); ErrStarterOutdated when that state still reads a start proof.
func starterOf(def []byte) (bool, error) { return inputrecord.HasStarter(def) }

// Event is one line of a run's progress.
type Event struct {
	Type  string // StateEntered, StateExited, TaskFailed, ...
	State string // the state's name, when the event has one
	// Resource is a scheduled Task's resource, such as
	// "invoke.waitForTaskToken" (a review Task).
	Resource string
	Error    string
	Cause    string
}

// Outcome is how an execution ended.
type Outcome struct {
	Status string // SUCCEEDED, FAILED, TIMED_OUT, ABORTED
	Output string
	Error  string
	Cause  string
}

// Follow polls an execution's history every interval, calling onEvent once
// per new event, until the execution ends or ctx is done. Each round
// describes the execution before it reads the history, so that the
// history read after a terminal status holds every event up to the end:
// read the other way round, a run that ended between the two reads would
// end the following without its last events.
func Follow(ctx context.Context, sf SFNAPI, executionARN string, interval time.Duration, onEvent func(Event)) (*Outcome, error) {
	seen := 0
	for {
		d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
		if err != nil {
			return nil, fmt.Errorf("describe execution: %w", err)
		}
		var events []sfntypes.HistoryEvent
		var token *string
		for {
			h, err := sf.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(executionARN), NextToken: token})
			if err != nil {
				return nil, fmt.Errorf("execution history: %w", err)
			}
			events = append(events, h.Events...)
			if h.NextToken == nil {
				break
			}
			token = h.NextToken
		}
		for _, e := range events[min(seen, len(events)):] {
			onEvent(toEvent(e))
		}
		seen = max(seen, len(events))
		if d.Status != sfntypes.ExecutionStatusRunning && d.Status != sfntypes.ExecutionStatusPendingRedrive {
			return &Outcome{Status: string(d.Status), Output: aws.ToString(d.Output), Error: aws.ToString(d.Error), Cause: aws.ToString(d.Cause)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(errors.New("stopped following the execution"), ctx.Err())
		case <-time.After(interval):
		}
	}
}

func toEvent(e sfntypes.HistoryEvent) Event {
	ev := Event{Type: string(e.Type)}
	switch {
	case e.StateEnteredEventDetails != nil:
		ev.State = aws.ToString(e.StateEnteredEventDetails.Name)
	case e.StateExitedEventDetails != nil:
		ev.State = aws.ToString(e.StateExitedEventDetails.Name)
	case e.TaskScheduledEventDetails != nil:
		ev.Resource = aws.ToString(e.TaskScheduledEventDetails.Resource)
	case e.TaskFailedEventDetails != nil:
		ev.Error, ev.Cause = aws.ToString(e.TaskFailedEventDetails.Error), aws.ToString(e.TaskFailedEventDetails.Cause)
	case e.ExecutionFailedEventDetails != nil:
		ev.Error, ev.Cause = aws.ToString(e.ExecutionFailedEventDetails.Error), aws.ToString(e.ExecutionFailedEventDetails.Cause)
	}
	return ev
}
