package stack_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/resolver"
)

// loopItems is the number of items the size loops take (max_items).
const loopItems = 3

// sizeLoop is a Solution for the size test: a for_each, its last step,
// over the input's list of strings, whose body is one pass step with the
// values body and which collects collect. The size parameter n is the
// strings' maxLength when byMaxLength (policy.input_limit_bytes is then
// its largest), else policy.input_limit_bytes (the strings unbounded).
type sizeLoop struct {
	name, body, collect string
	byMaxLength         bool
}

func (l sizeLoop) solution(n int) string {
	limit, item := n, "{type: string}"
	if l.byMaxLength {
		limit, item = resolver.MaxInputLimitBytes, fmt.Sprintf("{type: string, maxLength: %d}", n)
	}
	return fmt.Sprintf(`solution: %s
version: 1
policy: {input_limit_bytes: %d}
input:
  type: object
  additionalProperties: false
  required: [items]
  properties:
    items: {type: array, maxItems: %d, items: %s}
steps:
  - id: each
    for_each:
      items: "${input.items}"
      as: item
      max_items: %d
      collect: %s
      steps:
        - id: copy
          pass: %s
`, l.name, limit, loopItems, item, loopItems, l.collect, l.body)
}

// worstInput is the largest input the Solution at size n admits, written
// mostly as U+0001, which JSON escapes to six bytes (\u0001), the most a
// character may take, as the bound assumes (Go and the local endpoint's
// JSON.stringify both write it so). By maxLength: every item at its longest. By input limit:
// the input at exactly n bytes (resolver.InputSize), one item holding
// all of it and the others empty, the worst split, since an iteration's
// state holds the whole input beside its item.
func (l sizeLoop) worstInput(t *testing.T, n int) map[string]any {
	t.Helper()
	items := make([]string, loopItems)
	if l.byMaxLength {
		for k := range items {
			items[k] = strings.Repeat("\x01", n)
		}
		return map[string]any{"items": items}
	}
	empty, _ := json.Marshal(map[string]any{"items": items})
	room := n - len(empty)
	items[0] = strings.Repeat("\x01", room/6) + strings.Repeat("a", room%6)
	in := map[string]any{"items": items}
	b, _ := json.Marshal(in)
	if size, err := resolver.InputSize(b); err != nil || size != n {
		t.Fatalf("the worst input is %d bytes (%v), want %d", size, err, n)
	}
	return in
}

// sizeAccepted compiles src and reports whether the resolver accepts it;
// a refusal for anything but [state-size] fails the test.
func sizeAccepted(t *testing.T, src string) bool {
	t.Helper()
	res := resolver.Compile("size.yaml", []byte(src), resolver.Options{})
	if res.OK() {
		return true
	}
	for _, d := range res.Diagnostics {
		if d.Severity == resolver.SeverityError && d.Rule != resolver.RuleStateSize {
			t.Fatalf("refused for another reason: %v", d)
		}
	}
	return false
}

// largestAccepted is the largest size n (1 to
// resolver.MaxInputLimitBytes) at which the resolver accepts solution(n),
// by bisection: the bound grows with n, and n+1 is refused. It fails the
// test when no n is refused, since the bound would then be vacuous here.
func largestAccepted(t *testing.T, solution func(n int) string) int {
	t.Helper()
	lo, hi := 1, resolver.MaxInputLimitBytes
	if !sizeAccepted(t, solution(lo)) {
		t.Fatalf("refused even at size %d", lo)
	}
	if sizeAccepted(t, solution(hi)) {
		t.Fatalf("accepted at every size up to %d: the state-size bound refuses nothing", hi)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if sizeAccepted(t, solution(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// stateData is the largest state data in a run's history.
type stateData struct {
	bytes int
	event string // the event's type and state
}

// largestStateData reads the run's whole history and returns its largest
// JSON text among the execution's input and output, every state's input
// and output (a Map iteration's states included) and every Task's
// payload and result, with the number of Map iterations that started.
func (e *env) largestStateData(t *testing.T, run string) (stateData, int) {
	t.Helper()
	var largest stateData
	iterations := 0
	measure := func(typ, state string, text *string) {
		if n := len(aws.ToString(text)); n > largest.bytes {
			largest = stateData{n, typ + " " + state}
		}
	}
	var token *string
	for {
		h, err := e.sf.GetExecutionHistory(t.Context(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range h.Events {
			typ := string(ev.Type)
			switch {
			case ev.ExecutionStartedEventDetails != nil:
				measure(typ, "", ev.ExecutionStartedEventDetails.Input)
			case ev.ExecutionSucceededEventDetails != nil:
				measure(typ, "", ev.ExecutionSucceededEventDetails.Output)
			case ev.StateEnteredEventDetails != nil:
				measure(typ, aws.ToString(ev.StateEnteredEventDetails.Name), ev.StateEnteredEventDetails.Input)
			case ev.StateExitedEventDetails != nil:
				measure(typ, aws.ToString(ev.StateExitedEventDetails.Name), ev.StateExitedEventDetails.Output)
			case ev.TaskScheduledEventDetails != nil:
				measure(typ, aws.ToString(ev.TaskScheduledEventDetails.Resource), ev.TaskScheduledEventDetails.Parameters)
			case ev.TaskSucceededEventDetails != nil:
				measure(typ, aws.ToString(ev.TaskSucceededEventDetails.Resource), ev.TaskSucceededEventDetails.Output)
			case ev.MapIterationStartedEventDetails != nil:
				iterations++
			}
		}
		if h.NextToken == nil {
			return largest, iterations
		}
		token = h.NextToken
	}
}

// The state-size bound is sound for a for_each on a real run: at the
// largest size the resolver accepts for a loop that copies its item and
// the run's input in its body, or its item in collect, a run with the
// worst input (max_items items, the input at its limit or every item at
// its maxLength) succeeds and no state's data in its history passes Step
// Functions' 256 KiB. The local endpoint does not end a run with
// States.DataLimitExceeded, so the sizes are read from the history.
func TestForEachStateSizeBoundHoldsOnARealRun(t *testing.T) {
	bodyCopies := `{a: "${item}", b: "${item}", all: "${input}", index: "${for_each.index}"}`
	loops := []sizeLoop{
		{name: "size-body-copies", body: bodyCopies, collect: `{item: "${item}"}`},
		{name: "size-collect-copies", body: `{index: "${for_each.index}"}`, collect: `{a: "${item}", b: "${item}", c: "${item}", d: "${item}"}`},
		// The input at 128 KiB leaves no room for a copy of it.
		{name: "size-schema-items", body: `{a: "${item}", b: "${item}", c: "${item}", index: "${for_each.index}"}`, collect: `{item: "${item}"}`, byMaxLength: true},
	}
	e := sharedEnv(t)
	for _, l := range loops {
		t.Run(l.name, func(t *testing.T) {
			n := largestAccepted(t, l.solution)
			e.publish(t, l.name, l.solution(n))
			run := e.start(t, l.name, l.worstInput(t, n))
			if out := e.finish(t, run); out.Status != "SUCCEEDED" {
				t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
			}
			largest, iterations := e.largestStateData(t, run)
			t.Logf("accepted up to size %d (refused at %d); largest state data %d bytes (%s), %.2f of the %d allowed",
				n, n+1, largest.bytes, largest.event, float64(largest.bytes)/resolver.MaxStateBytes, resolver.MaxStateBytes)
			if iterations != loopItems {
				t.Fatalf("%d Map iterations in the history, want %d", iterations, loopItems)
			}
			if largest.bytes > resolver.MaxStateBytes {
				t.Fatalf("%s holds %d bytes of state data, over the %d Step Functions allows, in a Solution the resolver accepts (size %d)",
					largest.event, largest.bytes, resolver.MaxStateBytes, n)
			}
		})
	}
}
