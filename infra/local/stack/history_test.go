package stack_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// historyGolden is what a reviewed send's execution history shows, event
// by event (TestExecutionHistoryHoldsTokenAndReviewedInputOnlyInTaskPayloads).
const historyGolden = "testdata/reviewed-send.history"

// A run of e2e-digest (fetch, the review approve of send, send-email),
// approved, read back with GetExecutionHistory as a Publisher reads it
// (docs/infra.md, "What an execution's history shows"). Every value of
// the state data shows again in each state's entered and exited events;
// what leaves it is each Task's parameters and result. The task token is
// in one event only, the review Task's TaskScheduled, where Step Functions
// records the parameters that hand it to review-request; the reviewed
// input as a whole is in the two payloads that must carry it, the review
// Task's and the tool Task's, and never in the state data. Every event's
// data, by kind and field (values left out), is the golden file's, so a
// change that adds data to the history fails here.
func TestExecutionHistoryHoldsTokenAndReviewedInputOnlyInTaskPayloads(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-history", digestAs("e2e-history", "600"))
	run := e.start(t, "e2e-history", map[string]string{"recipient": "team@example.com"})
	id := e.pending(t, run, nil)
	e.decide(t, "approve", id)
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	// The token and the input as review-request stored them: the review
	// item, which no history reader may read.
	rv, err := dynamo.NewStore(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table).Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rv.TaskToken == "" || len(rv.Input) == 0 {
		t.Fatalf("review %s has no task token or no input", id)
	}
	events := e.history(t, run)

	t.Run("the task token is in the review Task's parameters only", func(t *testing.T) {
		var in []string
		for _, ev := range events {
			for _, d := range ev.data {
				if strings.Contains(d.text, rv.TaskToken) {
					in = append(in, ev.name+" "+d.field)
				}
			}
		}
		if want := []string{"approve TaskScheduled parameters"}; !slices.Equal(in, want) {
			t.Errorf("the task token is in %q, want %q", in, want)
		}
		for _, ev := range events {
			if ev.name == "approve TaskScheduled" {
				if got := findValue(ev.data[0].value, "", rv.TaskToken); !slices.Equal(got, []string{"Payload.task_token"}) {
					t.Errorf("in the review Task's parameters the token is at %q, want Payload.task_token only", got)
				}
			}
		}
		d, err := e.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(aws.ToString(d.Input)+aws.ToString(d.Output), rv.TaskToken) {
			t.Error("DescribeExecution shows the task token")
		}
	})

	t.Run("the reviewed input is whole only in the two payloads that carry it", func(t *testing.T) {
		var reviewed any
		if err := json.Unmarshal(rv.Input, &reviewed); err != nil {
			t.Fatal(err)
		}
		var at []string
		for _, ev := range events {
			for _, d := range ev.data {
				for _, p := range findValue(d.value, "", reviewed) {
					at = append(at, ev.name+" "+d.field+" "+p)
				}
			}
		}
		want := []string{"approve TaskScheduled parameters Payload.input", "send TaskScheduled parameters Payload.input"}
		if !slices.Equal(at, want) {
			t.Errorf("the reviewed input is at %q, want %q", at, want)
		}
		// Its strings that the state data does not hold (those the
		// bindings formatted) are in those two events and no other.
		var stateData strings.Builder
		for _, ev := range events {
			if ev.stateData {
				stateData.WriteString(ev.data[0].text)
			}
		}
		formatted := 0
		for _, s := range stringsOf(reviewed) {
			if strings.Contains(stateData.String(), s) {
				continue
			}
			formatted++
			var in []string
			for _, ev := range events {
				for _, d := range ev.data {
					if strings.Contains(d.text, s) {
						in = append(in, ev.name)
					}
				}
			}
			if want := []string{"approve TaskScheduled", "send TaskScheduled"}; !slices.Equal(in, want) {
				t.Errorf("the reviewed input's %q is in %q, want %q", s, in, want)
			}
		}
		if formatted == 0 {
			t.Fatalf("every string of the reviewed input %s is in the state data: the check above checks nothing", rv.Input)
		}
	})

	t.Run("each event shows the kinds of data the golden file lists", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("# GetExecutionHistory of a run of e2e-digest (fetch; the review approve of send, approved; send-email):\n")
		b.WriteString("# each event, the kinds of data it carries and their fields, values left out.\n")
		b.WriteString("# go test ./infra/local/stack -run TestExecutionHistoryHoldsTokenAndReviewedInputOnlyInTaskPayloads -update rewrites it.\n")
		for _, ev := range events {
			b.WriteString(ev.line() + "\n")
		}
		got := b.String()
		if *update {
			if err := os.MkdirAll(filepath.Dir(historyGolden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(historyGolden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(historyGolden)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want), got); d != "" {
			t.Errorf("the history shows other data than %s (-want +got); -update rewrites it:\n%s", historyGolden, d)
		}
		if strings.Contains(got, kindUnclassified) {
			t.Errorf("the history shows data of no known kind:\n%s", got)
		}
	})
}

// historyEvent is one event of an execution's history: its type, the
// state it belongs to, and its data (JSON text), each parsed.
type historyEvent struct {
	// name is "<state> <type>", or the type for an execution's events.
	name string
	// task is what the event's Task is: taskTool, taskReview, taskStart,
	// or "" for the state data.
	task string
	// stateData reports whether the data is the execution's or a state's
	// input or output.
	stateData bool
	data      []eventData
}

// eventData is one field of an event that holds JSON text: its name
// (input, output, parameters), its text and its value.
type eventData struct {
	field string
	text  string
	value any
}

// What a Task is, from its parameters.
const (
	taskTool   = "tool"   // a tool Task: its envelope has an idempotency key
	taskReview = "review" // a review Task: it hands review-request a task token
	taskStart  = "start"  // the Starter state: it sends the start proof
)

// history reads the run's whole history. Task events name the state of
// the TaskStateEntered before them: the run has no Map or Parallel state,
// so its states run one at a time.
func (e *env) history(t *testing.T, run string) []historyEvent {
	t.Helper()
	var events []historyEvent
	state, task := "", ""
	pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			h := historyEvent{name: string(ev.Type)}
			add := func(field string, text *string) {
				if text == nil {
					return
				}
				var v any
				if err := json.Unmarshal([]byte(*text), &v); err != nil {
					t.Fatalf("event %d %s: %s is not JSON: %v", ev.Id, ev.Type, field, err)
				}
				h.data = append(h.data, eventData{field, *text, v})
			}
			switch {
			case ev.StateEnteredEventDetails != nil:
				state = aws.ToString(ev.StateEnteredEventDetails.Name)
				h.name, h.stateData = state+" "+h.name, true
				add("input", ev.StateEnteredEventDetails.Input)
			case ev.StateExitedEventDetails != nil:
				h.name, h.stateData = aws.ToString(ev.StateExitedEventDetails.Name)+" "+h.name, true
				add("output", ev.StateExitedEventDetails.Output)
			case ev.ExecutionStartedEventDetails != nil:
				h.stateData = true
				add("input", ev.ExecutionStartedEventDetails.Input)
			case ev.ExecutionSucceededEventDetails != nil:
				h.stateData = true
				add("output", ev.ExecutionSucceededEventDetails.Output)
			case ev.TaskScheduledEventDetails != nil:
				add("parameters", ev.TaskScheduledEventDetails.Parameters)
				task = taskOf(h.data[0].value)
				h.name, h.task = state+" "+h.name, task
			case ev.TaskStartedEventDetails != nil:
				h.name, h.task = state+" "+h.name, task
			case ev.TaskSubmittedEventDetails != nil:
				h.name, h.task = state+" "+h.name, task
				add("output", ev.TaskSubmittedEventDetails.Output)
			case ev.TaskSucceededEventDetails != nil:
				h.name, h.task = state+" "+h.name, task
				add("output", ev.TaskSucceededEventDetails.Output)
			default:
				t.Fatalf("event %d %s: not expected in this run's history", ev.Id, ev.Type)
			}
			events = append(events, h)
		}
	}
	return events
}

// taskOf tells a Task by its parameters.
func taskOf(parameters any) string {
	p, _ := parameters.(map[string]any)
	payload, _ := p["Payload"].(map[string]any)
	switch {
	case payload["task_token"] != nil:
		return taskReview
	case payload["check"] != nil:
		return taskStart
	case payload["idempotency_key"] != nil:
		return taskTool
	}
	return ""
}

// The kinds of data a history shows, in the order the golden file lists
// them.
const (
	kindRunInput       = "run input"
	kindStartProof     = "start proof"
	kindStarter        = "starter"
	kindRunMeta        = "run metadata"
	kindToolInput      = "tool input"
	kindToolResult     = "tool result"
	kindToolError      = "tool error"
	kindReviewedInput  = "reviewed input"
	kindTaskToken      = "task token"
	kindPendingReview  = "pending review"
	kindReviewDecision = "review decision"
	kindCallMeta       = "call metadata"
	kindRunOutput      = "run output"
	kindUnclassified   = "UNCLASSIFIED"
)

var kindOrder = []string{kindRunInput, kindStartProof, kindStarter, kindRunMeta, kindToolInput, kindToolResult, kindToolError,
	kindReviewedInput, kindTaskToken, kindPendingReview, kindReviewDecision, kindCallMeta, kindRunOutput, kindUnclassified}

// kindOf names the kind of data at path (leafPaths' form) of an event's
// field.
func (h historyEvent) kindOf(field, path string) string {
	under := func(prefix string) bool { return strings.HasPrefix(path, prefix) }
	switch {
	case h.name == "ExecutionSucceeded":
		return kindRunOutput
	case h.stateData:
		switch {
		case under("input."):
			return kindRunInput
		case path == "meta.start_proof":
			return kindStartProof
		case path == "meta.start.starter":
			return kindStarter
		case under("meta."):
			return kindRunMeta
		case under("steps.") && strings.Contains(path, ".output."):
			return kindToolResult
		case under("steps.") && strings.Contains(path, ".error."):
			return kindToolError
		case under("reviews."), under("decisions."):
			return kindReviewDecision
		}
	case h.task == taskTool && field == "parameters":
		switch {
		case under("Payload.input."):
			return kindToolInput
		case under("Payload.approval."):
			return kindReviewDecision
		}
		return kindCallMeta
	case h.task == taskTool:
		if under("Payload.") {
			return kindToolResult
		}
		return kindCallMeta
	case h.task == taskReview && field == "parameters":
		switch {
		case path == "Payload.task_token":
			return kindTaskToken
		case under("Payload.input."):
			return kindReviewedInput
		case path == "Payload.requester":
			return kindStarter
		}
		return kindCallMeta
	case h.task == taskReview && strings.HasSuffix(h.name, " TaskSubmitted"):
		if under("Payload.") {
			return kindPendingReview
		}
		return kindCallMeta
	case h.task == taskReview:
		return kindReviewDecision // what SendTaskSuccess sent
	case h.task == taskStart && field == "parameters":
		switch {
		case path == "Payload.start_proof":
			return kindStartProof
		case under("Payload.execution_input.input."):
			return kindRunInput
		case under("Payload.execution_input.meta"):
			return kindRunMeta
		}
		return kindCallMeta
	case h.task == taskStart:
		if path == "Payload.starter" {
			return kindStarter
		}
		return kindCallMeta
	}
	return kindUnclassified
}

// line is the event as the golden file lists it: its name, then per field
// the kinds of data it holds with their paths.
func (h historyEvent) line() string {
	var b strings.Builder
	b.WriteString(h.name)
	for _, d := range h.data {
		byKind := map[string][]string{}
		for _, p := range leafPaths(d.value) {
			k := h.kindOf(d.field, p)
			byKind[k] = append(byKind[k], p)
		}
		if len(byKind) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n    %s:", d.field)
		for _, k := range kindOrder {
			if ps := byKind[k]; len(ps) > 0 {
				fmt.Fprintf(&b, "\n        %s: %s", k, strings.Join(ps, " "))
			}
		}
	}
	return b.String()
}

// leafPaths are the paths of v's leaves, sorted, without duplicates:
// members joined by ".", an array's elements as "[]". Empty objects and
// arrays hold no data and are left out.
func leafPaths(v any) []string {
	seen := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x)
			}
		case []any:
			for _, x := range v {
				walk(prefix+"[]", x)
			}
		default:
			seen[prefix] = true
		}
	}
	walk("", v)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// findValue lists the paths (leafPaths' form, "" for v itself) at which v
// holds a value equal to want, sorted.
func findValue(v any, prefix string, want any) []string {
	var out []string
	if reflect.DeepEqual(v, want) {
		out = append(out, prefix)
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			out = append(out, findValue(x, join(k), want)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, findValue(x, prefix+"[]", want)...)
		}
	}
	slices.Sort(out)
	return out
}

// stringsOf lists the strings of a JSON value: its members' and
// elements' string values.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case map[string]any:
		var out []string
		for _, x := range v {
			out = append(out, stringsOf(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, stringsOf(x)...)
		}
		return out
	}
	return nil
}
